package main

import (
	"fmt"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/bitrix24"
	"github.com/oncegate/oncegate/adapters/onec"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/contract"
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
}

// buildTargets makes the adapters of the three target systems. Secrets
// are read from the environment variables the configuration names; a
// target configured at a real system without its secret is refused
// (config.Config.CheckSecrets). A target the configuration leaves out talks to sims,
// with the simulators' own credentials. Errors name the configuration
// key, never a secret.
func buildTargets(c config.Config, sims simulators, env func(string) string) (map[string]adapters.Target, error) {
	if err := c.CheckSecrets(env); err != nil {
		return nil, err
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	t := c.Targets

	oc := onec.Config{BaseURL: t.OneC.BaseURL, Timeout: ms(t.OneC.TimeoutMS)}
	if oc.BaseURL == "" {
		oc.BaseURL = sims.URL + "/onec"
	} else {
		if t.OneC.UsernameEnv != "" {
			oc.Username = env(t.OneC.UsernameEnv)
		}
		if t.OneC.PasswordEnv != "" {
			oc.Password = env(t.OneC.PasswordEnv)
		}
	}
	one, err := onec.New(oc)
	if err != nil {
		return nil, fmt.Errorf("targets.onec: %w", err)
	}

	webhook := sims.URL + "/bitrix24" + sims.Bitrix24Webhook
	if t.Bitrix24.WebhookURLEnv != "" {
		webhook = env(t.Bitrix24.WebhookURLEnv)
	}
	crm, err := bitrix24.New(bitrix24.Config{WebhookURL: webhook, Timeout: ms(t.Bitrix24.TimeoutMS),
		Rate: adapters.Rate{PerSecond: t.Bitrix24.Rate.PerSecond, Burst: t.Bitrix24.Rate.Burst}})
	if err != nil {
		return nil, fmt.Errorf("targets.bitrix24 (the URL in $%s): %w", t.Bitrix24.WebhookURLEnv, err)
	}

	rc := t.YooKassa.Receipts
	yc := yookassa.Config{BaseURL: t.YooKassa.BaseURL, ShopID: t.YooKassa.ShopID, Timeout: ms(t.YooKassa.TimeoutMS), ReadTimeout: ms(t.YooKassa.ReadTimeoutMS),
		Receipts: yookassa.Receipts{Required: rc.Required, TaxSystemCode: rc.TaxSystemCode, VatCode: rc.VatCode, PaymentSubject: rc.PaymentSubject, PaymentMode: rc.PaymentMode}}
	if yc.BaseURL == "" {
		// The built-in simulator knows only its own secret.
		yc.BaseURL, yc.SecretKey = sims.URL+"/yookassa/v3", sims.YooKassaSecret
	} else {
		yc.SecretKey = env(t.YooKassa.SecretKeyEnv)
	}
	pay, err := yookassa.New(yc)
	if err != nil {
		return nil, fmt.Errorf("targets.yookassa: %w", err)
	}
	return map[string]adapters.Target{contract.TargetOneC: one, contract.TargetCRM: crm, contract.TargetPayments: pay}, nil
}

// builtInSimulators is what buildTargets needs of the simulators running
// at url: where they answer and the credentials they accept.
func builtInSimulators(url string) simulators {
	return simulators{URL: url, YooKassaSecret: sim.YooKassaSecret(), Bitrix24Webhook: sim.Bitrix24WebhookPath()}
}
