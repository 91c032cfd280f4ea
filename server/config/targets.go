package config

import (
	"bytes"
	"cmp"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The target instances the built-in intents name. They always exist: one
// that nothing configures is served by the built-in simulator of its kind.
const (
	TargetOneC     = "onec"     // kind onec
	TargetCRM      = "crm"      // kind bitrix24
	TargetPayments = "payments" // kind yookassa
)

// The kinds of target system; main builds each kind's adapter.
const (
	KindOneC      = "onec"       // 1C's published HTTP service
	KindOneCOData = "onec_odata" // 1C over its standard OData interface
	KindBitrix24  = "bitrix24"   // Bitrix24 REST through an inbound webhook
	KindYooKassa  = "yookassa"   // YooKassa API v3
)

// Kinds are the kinds of target, in the order errors list them.
var Kinds = []string{KindOneC, KindOneCOData, KindBitrix24, KindYooKassa}

// legacyKeys are the keys of targets: from before targets were named.
// Without a kind each still means the built-in instance of its kind.
var legacyKeys = map[string]struct{ name, kind string }{
	"onec":     {TargetOneC, KindOneC},
	"bitrix24": {TargetCRM, KindBitrix24},
	"yookassa": {TargetPayments, KindYooKassa},
}

// kindSettings are the settings each kind takes, by their YAML keys, beside
// those every target takes (kind, timeout_ms, settle_ms, retention).
var kindSettings = map[string][]string{
	KindOneC:      {"base_url", "username_env", "password_env"},
	KindOneCOData: {"base_url", "username_env", "password_env", "time_zone", "references", "key_field"},
	KindBitrix24:  {"webhook_url_env", "rate", "time_zone", "references", "application_token_env", "notices_from"},
	KindYooKassa:  {"base_url", "shop_id", "secret_key_env", "read_timeout_ms", "receipts", "shop_name", "notices_from"},
}

var commonSettings = []string{"kind", "timeout_ms", "settle_ms", "retention"}

// targetNamePattern is a target instance's name: definitions point at it,
// and ONCEGATE_TARGETS_<NAME>_… overrides its settings.
var targetNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// TargetsConfig are the target instances by name. A firm may declare as
// many as it has systems (two 1C bases, say); the built-in instances
// onec, crm and payments always exist.
type TargetsConfig map[string]*Target

// Kinds are the instances' kinds, by name.
func (t TargetsConfig) Kinds() map[string]string {
	out := make(map[string]string, len(t))
	for name, tg := range t {
		out[name] = tg.Kind
	}
	return out
}

// Target is one named target instance: a system of one kind and how it
// is reached. Only the settings of its kind may be set; a target whose
// kind's address is unset is served by the built-in simulator.
type Target struct {
	// Kind is the kind of system: onec, onec_odata, bitrix24 or yookassa.
	Kind string `yaml:"kind"`
	// Key is the key it is configured under in targets: its name, or the
	// old key (bitrix24, yookassa) that means it. Messages name the key.
	Key string `yaml:"-"`

	// TimeoutMS bounds one call. YooKassa may take up to 30 s before it
	// answers 500, so a yookassa target waits 35 s by default.
	TimeoutMS int `yaml:"timeout_ms"`
	// SettleMS is how long the system may take to commit a request after
	// the gateway stopped waiting (never less than the timeout): nothing
	// is sent again, and a look-up's "not found" is not trusted, before it
	// has passed.
	SettleMS int `yaml:"settle_ms"`
	// Retention is how long its final operations are kept (unset:
	// retention.default).
	Retention Duration `yaml:"retention"`

	// BaseURL is where the 1C service, the OData interface or the YooKassa
	// API is.
	BaseURL     string `yaml:"base_url"`
	UsernameEnv string `yaml:"username_env"`
	PasswordEnv string `yaml:"password_env"`
	// TimeZone is the 1C base's or the portal's time zone (onec_odata,
	// bitrix24), for fields mapped with date: local. 1C's dates are
	// naive local times.
	TimeZone string `yaml:"time_zone"`
	// References say how an external id of each kind is found at the
	// system (onec_odata: a catalog and its field; bitrix24: an entity).
	References map[string]Reference `yaml:"references"`
	// KeyField (onec_odata) is the documents' string attribute, limited
	// in length, where each operation's key is written and by which its
	// document is found: the guard for a base that does not keep the
	// Ref_Key the gateway sends. An intent's map.key_field overrides it.
	KeyField string `yaml:"key_field"`

	// WebhookURLEnv names the variable holding the Bitrix24 inbound
	// webhook's URL (itself a secret).
	WebhookURLEnv string `yaml:"webhook_url_env"`
	// ApplicationTokenEnv names the variable holding the portal's
	// application token, which its outbound events carry and the gateway
	// checks (a secret).
	ApplicationTokenEnv string `yaml:"application_token_env"`
	// NoticesFrom are the addresses or CIDR ranges the source's notices
	// may come from (YooKassa publishes its own); none: any. The client's
	// address is read through trusted_proxies.
	NoticesFrom []string `yaml:"notices_from"`
	// Rate is the portal's request rate, which every call of the gateway
	// (adds, look-ups, checks) waits its turn under: a cloud portal allows
	// 2 a second with a bucket of 50 (Enterprise: 5 and 250) and refuses
	// beyond it. Gateways sharing a portal share its rate. A per_second of
	// 0 paces nothing.
	Rate RateLimitConfig `yaml:"rate"`

	ShopID       string `yaml:"shop_id"`
	SecretKeyEnv string `yaml:"secret_key_env"`
	// ReadTimeoutMS bounds a YooKassa read (a payment, a page of a list);
	// never more than TimeoutMS.
	ReadTimeoutMS int `yaml:"read_timeout_ms"`
	// Receipts is for a shop that issues 54-FZ receipts through YooKassa.
	Receipts YooKassaReceiptsConfig `yaml:"receipts"`
	// ShopName is the shop as the firm's people know it (Интернет-магазин
	// «Ромашка»): the approvals say whom a payment goes to by it. The
	// shop is the target (shop_id); an account_id is the customer's saved
	// card, charged in the shop's favour.
	ShopName string `yaml:"shop_name"`
}

// Reference is how an external id of one kind is found at a target.
type Reference struct {
	Catalog string `yaml:"catalog"` // onec_odata: the catalog, e.g. Catalog_Контрагенты
	By      string `yaml:"by"`      // onec_odata: its field holding the id, e.g. Code
	Entity  string `yaml:"entity"`  // bitrix24: the CRM entity, e.g. contact
}

// YooKassaReceiptsConfig is how a shop that issues 54-FZ receipts through
// YooKassa («Чеки от ЮKassa» or an online cash register) sends them.
type YooKassaReceiptsConfig struct {
	// Required: every payment.charge and payment.refund must carry a
	// receipt; one without is refused before a person is asked to approve.
	Required bool `yaml:"required"`
	// TaxSystemCode is the shop's tax system, 1-6 (0: none sent).
	TaxSystemCode int `yaml:"tax_system_code"`
	// VatCode is the VAT code, 1-12, of a receipt line that names none.
	VatCode int `yaml:"vat_code"`
	// PaymentSubject and PaymentMode are a line's defaults, e.g.
	// commodity and full_payment.
	PaymentSubject string `yaml:"payment_subject"`
	PaymentMode    string `yaml:"payment_mode"`
}

// NewTarget is a target of kind named name with the kind's defaults: at
// the built-in simulator until its address is set.
func NewTarget(name, kind string) *Target {
	t := &Target{Kind: kind, Key: name, TimeoutMS: 5000}
	switch kind {
	case KindBitrix24:
		t.SettleMS, t.Rate = 30000, RateLimitConfig{PerSecond: 2, Burst: 50}
	case KindYooKassa:
		t.ShopID, t.TimeoutMS, t.ReadTimeoutMS, t.SettleMS = "demo-shop", 35000, 10000, 60000
	}
	return t
}

// defaultTargets are the built-in instances, at the simulators.
func defaultTargets() TargetsConfig {
	return TargetsConfig{
		TargetOneC:     NewTarget(TargetOneC, KindOneC),
		TargetCRM:      NewTarget(TargetCRM, KindBitrix24),
		TargetPayments: NewTarget(TargetPayments, KindYooKassa),
	}
}

// withBuiltIn is ts with the built-in instances it lacks at their
// defaults (a file's empty targets: leaves none).
func (ts TargetsConfig) withBuiltIn() TargetsConfig {
	if ts == nil {
		ts = TargetsConfig{}
	}
	for name, t := range defaultTargets() {
		if ts[name] == nil {
			ts[name] = t
		}
	}
	return ts
}

// builtIn are the built-in instances in the order they are listed.
var builtIn = []string{TargetOneC, TargetCRM, TargetPayments}

// builtInAllowed are the kinds each built-in instance may be: those its
// built-in intents run on (1C's intents run on either of 1C's kinds).
var builtInAllowed = map[string][]string{TargetOneC: {KindOneC, KindOneCOData}, TargetCRM: {KindBitrix24}, TargetPayments: {KindYooKassa}}

// builtInKinds are the built-in instances' kinds, which their keys need
// not repeat.
var builtInKinds = map[string]string{TargetOneC: KindOneC, TargetCRM: KindBitrix24, TargetPayments: KindYooKassa}

// Names are the instances' names: the built-in ones first, then the
// firm's in alphabetical order.
func (ts TargetsConfig) Names() []string {
	var names, own []string
	for _, n := range builtIn {
		if ts[n] != nil {
			names = append(names, n)
		}
	}
	for n := range ts {
		if !slices.Contains(builtIn, n) {
			own = append(own, n)
		}
	}
	slices.Sort(own)
	return append(names, own...)
}

// Simulated reports whether nothing in t points at a real system, so the
// built-in simulator of its kind serves it. A target whose configuration
// names an environment variable is real even when the variable is empty:
// CheckSecrets refuses it.
func (t *Target) Simulated() bool {
	if t.Kind == KindBitrix24 {
		return t.WebhookURLEnv == ""
	}
	return t.BaseURL == ""
}

// Setting is the configuration key of t's setting named by its YAML key,
// e.g. targets.buh.password_env.
func (t *Target) Setting(key string) string { return "targets." + t.Key + "." + key }

// UnmarshalYAML reads the targets: map. A key with a kind is an instance
// of that name; the old keys onec, bitrix24 and yookassa without one mean
// the instances onec, crm and payments (crm and payments without one are
// of their built-in kinds too). An instance configured twice, a
// kind unknown, or a setting its kind does not take are refused, naming
// the key. The built-in instances not configured keep their defaults.
func (ts *TargetsConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: targets: must be a map of named targets", n.Line)
	}
	if *ts == nil {
		*ts = defaultTargets()
	}
	written := map[string]string{} // instance name → the key it was configured under
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		t, err := decodeTarget(k.Value, v)
		if err != nil {
			if strings.HasPrefix(err.Error(), "line ") {
				return err // it names the setting's own line
			}
			return fmt.Errorf("line %d: %w", k.Line, err)
		}
		name := nameOf(k.Value, t.Kind)
		if other, dup := written[name]; dup {
			return fmt.Errorf("line %d: targets.%s: the target %s is configured already, as targets.%s; configure each target once", k.Line, k.Value, name, other)
		}
		written[name] = k.Value
		(*ts)[name] = t
	}
	return nil
}

// nameOf is the instance a key of targets: with kind means: the old keys
// bitrix24 and yookassa always mean crm and payments.
func nameOf(key, kind string) string {
	if l, ok := legacyKeys[key]; ok && l.kind == kind {
		return l.name
	}
	return key
}

// decodeTarget reads the target configured under key from v: its kind's
// defaults, then what v sets, strictly.
func decodeTarget(key string, v *yaml.Node) (*Target, error) {
	if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
		v = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: v.Line}
	}
	if v.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("targets.%s: must be a map of the target's settings", key)
	}
	kind := ""
	for i := 0; i+1 < len(v.Content); i += 2 {
		if v.Content[i].Value == "kind" {
			kind = v.Content[i+1].Value
		}
	}
	legacy, isLegacy := legacyKeys[key]
	switch {
	case kind == "" && isLegacy:
		kind = legacy.kind
	case kind == "" && builtInKinds[key] != "":
		kind = builtInKinds[key]
	case kind == "":
		return nil, fmt.Errorf("targets.%s.kind: not set; say which kind of system it is (%s)", key, strings.Join(Kinds, ", "))
	case !slices.Contains(Kinds, kind):
		return nil, fmt.Errorf("targets.%s.kind: %q is not a kind of target (%s)", key, kind, strings.Join(Kinds, ", "))
	case isLegacy && key != legacy.name && kind != legacy.kind:
		return nil, fmt.Errorf("targets.%s: this key means the target %s, of kind %s; name a target of kind %s otherwise", key, legacy.name, legacy.kind, kind)
	}
	if !targetNamePattern.MatchString(key) {
		return nil, fmt.Errorf("targets.%s: a target's name is 1-32 characters of a-z 0-9 _, starting with a letter", key)
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		s := v.Content[i].Value
		if !slices.Contains(commonSettings, s) && !slices.Contains(kindSettings[kind], s) {
			return nil, fmt.Errorf("line %d: targets.%s.%s: not a setting of a target of kind %s (its settings: %s)", v.Content[i].Line, key, s, kind,
				strings.Join(append(slices.Clone(commonSettings[1:]), kindSettings[kind]...), ", "))
		}
	}
	// Decoded again, strictly: a node's own Decode would let an unknown
	// key inside rate, receipts or references pass unnoticed.
	raw, err := yaml.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("targets.%s: %w", key, err)
	}
	t := NewTarget(nameOf(key, kind), kind)
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(t); err != nil {
		return nil, fmt.Errorf("targets.%s: %s", key, lineRef.ReplaceAllString(strings.TrimPrefix(err.Error(), "yaml: "), ""))
	}
	t.Kind, t.Key = kind, key
	return t, nil
}

// lineRef is a line number in a YAML error about a target decoded on its
// own, which is not the file's line.
var lineRef = regexp.MustCompile(`line \d+: `)

// applyTargetsEnv sets each target's settings from
// ONCEGATE_TARGETS_<NAME>_<KEY>, and the built-in crm's and payments'
// also from the old ONCEGATE_TARGETS_BITRIX24_… and …_YOOKASSA_…. A
// variable setting what the target's kind does not take is refused.
func applyTargetsEnv(ts TargetsConfig, env func(string) string) error {
	for _, name := range ts.Names() {
		t := ts[name]
		var prefixes []string
		for key, l := range legacyKeys {
			if l.name == name && key != name && l.kind == t.Kind {
				prefixes = append(prefixes, "ONCEGATE_TARGETS_"+strings.ToUpper(key))
			}
		}
		prefixes = append(prefixes, "ONCEGATE_TARGETS_"+strings.ToUpper(name))
		v := reflect.ValueOf(t).Elem()
		for _, prefix := range prefixes {
			for i := range v.NumField() {
				key := strings.Split(v.Type().Field(i).Tag.Get("yaml"), ",")[0]
				if key == "-" || key == "kind" {
					continue
				}
				varName := prefix + "_" + strings.ToUpper(key)
				allowed := slices.Contains(commonSettings, key) || slices.Contains(kindSettings[t.Kind], key)
				fv := v.Field(i)
				if fv.Kind() == reflect.Struct {
					if !allowed {
						continue
					}
					if err := applyEnv(fv, varName, env); err != nil {
						return err
					}
					continue
				}
				raw := env(varName)
				if raw == "" {
					continue
				}
				if !allowed {
					return fmt.Errorf("%s: %s is not a setting of a target of kind %s", varName, key, t.Kind)
				}
				if err := setFromString(fv, raw); err != nil {
					return fmt.Errorf("%s=%q: %w", varName, raw, err)
				}
			}
		}
	}
	return nil
}

// TargetRetention is how long target name's final operations are kept:
// its own retention, else the old retention.onec, retention.bitrix24 or
// retention.yookassa of a built-in target, else 0 (retention.default).
func (c Config) TargetRetention(name string) time.Duration {
	var own Duration
	if t := c.Targets[name]; t != nil {
		own = t.Retention
	}
	_, legacy := c.legacyRetention(name)
	return time.Duration(cmp.Or(own, legacy))
}

// legacyRetention is the old retention.onec, retention.bitrix24 or
// retention.yookassa of built-in target name: its key and value (none for
// any other target).
func (c Config) legacyRetention(name string) (key string, d Duration) {
	switch name {
	case TargetOneC:
		return "retention.onec", c.Retention.OneC
	case TargetCRM:
		return "retention.bitrix24", c.Retention.Bitrix24
	case TargetPayments:
		return "retention.yookassa", c.Retention.YooKassa
	}
	return "", 0
}

// Zone is the instance's time zone, nil when it names none.
func (t *Target) Zone() (*time.Location, error) {
	if t.TimeZone == "" {
		return nil, nil
	}
	zone, err := time.LoadLocation(t.TimeZone)
	if err != nil {
		return nil, fmt.Errorf("%s: %q is not a time zone such as Europe/Moscow", t.Setting("time_zone"), t.TimeZone)
	}
	return zone, nil
}
