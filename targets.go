package main

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/bitrix24"
	"github.com/oncegate/oncegate/adapters/onec"
	"github.com/oncegate/oncegate/adapters/onecodata"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
	"github.com/oncegate/oncegate/server/config"
)

// The composition root: main builds the concrete targets from the
// configuration and hands them to the server, which knows them only as
// adapters.Target.

// simulators are the built-in simulators that the targets the
// configuration leaves out talk to.
type simulators struct {
	URL            string // where they answer, e.g. http://127.0.0.1:9001
	YooKassaSecret string // the secret key the YooKassa simulator accepts
	// Bitrix24Webhook is the path of the webhook the Bitrix24 simulator
	// accepts, below /bitrix24: "/rest/<user>/<secret>/".
	Bitrix24Webhook string
	// ODataUser and ODataPassword are the credentials the OData
	// simulator accepts (any user, its one password).
	ODataUser, ODataPassword string
	// Log is where the targets built report what an operator must see at
	// once (a 1C base ignoring the gateway's keys); nil reports nowhere.
	Log *slog.Logger
}

// buildTargets makes the adapter of every target instance the
// configuration names, keyed by its name; this is the one place that
// switches on a target's kind. Secrets are read from the environment
// variables the configuration names; a target configured at a real system
// without its secret is refused (config.Config.CheckSecrets). A target
// the configuration leaves at its kind's simulator talks to sims, with the
// simulators' own credentials. Errors name the configuration key, never a
// secret.
func buildTargets(c config.Config, sims simulators, env func(string) string) (map[string]adapters.Target, error) {
	if err := c.CheckSecrets(env); err != nil {
		return nil, err
	}
	out := make(map[string]adapters.Target, len(c.Targets))
	for _, name := range c.Targets.Names() {
		t, err := buildTarget(c.Targets[name], sims, env)
		if err != nil {
			return nil, err
		}
		out[name] = t
	}
	return out, nil
}

// buildTarget makes one target instance's adapter, by its kind.
func buildTarget(t *config.Target, sims simulators, env func(string) string) (adapters.Target, error) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	switch t.Kind {
	case config.KindOneC:
		oc := onec.Config{BaseURL: t.BaseURL, Timeout: ms(t.TimeoutMS)}
		if oc.BaseURL == "" {
			oc.BaseURL = sims.URL + "/onec"
		} else {
			if t.UsernameEnv != "" {
				oc.Username = env(t.UsernameEnv)
			}
			if t.PasswordEnv != "" {
				oc.Password = env(t.PasswordEnv)
			}
		}
		one, err := onec.New(oc)
		if err != nil {
			return nil, fmt.Errorf("targets.%s: %w", t.Key, err)
		}
		return one, nil

	case config.KindBitrix24:
		webhook := sims.URL + "/bitrix24" + sims.Bitrix24Webhook
		if t.WebhookURLEnv != "" {
			webhook = env(t.WebhookURLEnv)
		}
		bc := bitrix24.Config{WebhookURL: webhook, Timeout: ms(t.TimeoutMS),
			Rate: adapters.Rate{PerSecond: t.Rate.PerSecond, Burst: t.Rate.Burst}}
		if len(t.References) > 0 {
			bc.References = bitrix24.DefaultReferences()
			for kind, r := range t.References {
				bc.References[kind] = r.Entity
			}
		}
		zone, err := t.Zone()
		if err != nil {
			return nil, err
		}
		bc.TimeZone = zone
		crm, err := bitrix24.New(bc)
		if err != nil {
			return nil, fmt.Errorf("targets.%s (the URL in $%s): %w", t.Key, t.WebhookURLEnv, err)
		}
		return crm, nil

	case config.KindYooKassa:
		rc := t.Receipts
		yc := yookassa.Config{BaseURL: t.BaseURL, ShopID: t.ShopID, Timeout: ms(t.TimeoutMS), ReadTimeout: ms(t.ReadTimeoutMS),
			Receipts: yookassa.Receipts{Required: rc.Required, TaxSystemCode: rc.TaxSystemCode, VatCode: rc.VatCode, PaymentSubject: rc.PaymentSubject, PaymentMode: rc.PaymentMode}}
		if yc.BaseURL == "" {
			// The built-in simulator knows only its own secret.
			yc.BaseURL, yc.SecretKey = sims.URL+"/yookassa/v3", sims.YooKassaSecret
		} else {
			yc.SecretKey = env(t.SecretKeyEnv)
		}
		pay, err := yookassa.New(yc)
		if err != nil {
			return nil, fmt.Errorf("targets.%s: %w", t.Key, err)
		}
		return pay, nil

	case config.KindOneCOData:
		oc := onecodata.Config{Instance: t.Key, BaseURL: t.BaseURL, Timeout: ms(t.TimeoutMS), Log: sims.Log, KeyField: t.KeyField}
		if oc.BaseURL == "" {
			// The built-in simulator knows only its own password.
			oc.BaseURL, oc.Username, oc.Password = sims.URL+sim.ODataPath, sims.ODataUser, sims.ODataPassword
		} else {
			oc.Username, oc.Password = env(t.UsernameEnv), env(t.PasswordEnv)
		}
		zone, err := t.Zone()
		if err != nil {
			return nil, err
		}
		oc.Zone = zone
		refs, err := odataReferences(t)
		if err != nil {
			return nil, err
		}
		oc.References = refs
		one, err := onecodata.New(oc)
		if err != nil {
			return nil, fmt.Errorf("targets.%s: %w", t.Key, err)
		}
		return one, nil
	}
	return nil, fmt.Errorf("targets.%s.kind: %q is not a kind of target (%s)", t.Key, t.Kind, strings.Join(config.Kinds, ", "))
}

// odataReferences are how an onec_odata target finds each kind of
// external id: the defaults (organizations, counterparties, products and
// warehouses by Code), each kind the configuration names replaced by its
// catalog and by (a property, or several joined by "+": ИНН+КПП).
func odataReferences(t *config.Target) (map[string]onecodata.Reference, error) {
	refs := onecodata.DefaultReferences()
	for kind, r := range t.References {
		by, err := onecodata.ParseBy(r.By)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.Setting("references."+kind+".by"), err)
		}
		if !strings.HasPrefix(r.Catalog, "Catalog_") {
			return nil, fmt.Errorf("%s: %q is not a catalog's entity set (Catalog_…, e.g. Catalog_Контрагенты)", t.Setting("references."+kind+".catalog"), r.Catalog)
		}
		refs[kind] = onecodata.Reference{Catalog: r.Catalog, By: by}
	}
	return refs, nil
}

// builtInSimulators is what buildTargets needs of the simulators running
// at url: where they answer and the credentials they accept.
func builtInSimulators(url string) simulators {
	return simulators{URL: url, YooKassaSecret: sim.YooKassaSecret(), Bitrix24Webhook: sim.Bitrix24WebhookPath(),
		ODataUser: "oncegate", ODataPassword: sim.ODataPassword}
}

// publishAtSimulator makes the built-in 1C simulator publish the firm's
// own intents bound to the simulated 1C instances, as the firm's module
// would with their handlers added: the demo serves declared intents with
// no further step.
func publishAtSimulator(s *sim.Server, simulated []string, targets map[string]adapters.Target) error {
	if s == nil {
		return nil
	}
	for _, name := range simulated {
		if c, ok := targets[name].(*onec.Client); ok {
			if err := s.PublishOneC(c.DeclaredRoutes()...); err != nil {
				return fmt.Errorf("targets.%s: the built-in simulator: %w", name, err)
			}
		}
	}
	return nil
}

// eventTokens are the credentials the notices of each Bitrix24 portal
// carry: the application token its variable holds, or, for a portal the
// built-in simulator plays, simToken, the simulator's own.
func eventTokens(c config.Config, env func(string) string, simToken string) map[string]string {
	out := map[string]string{}
	for _, name := range c.Targets.Names() {
		t := c.Targets[name]
		switch {
		case t.Kind != config.KindBitrix24:
		case t.Simulated():
			out[name] = simToken
		case t.ApplicationTokenEnv != "":
			out[name] = env(t.ApplicationTokenEnv)
		}
	}
	return out
}
