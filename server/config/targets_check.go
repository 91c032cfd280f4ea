package config

import (
	"cmp"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// validateTargets checks every target's settings, each error naming the
// key as configured.
func (c Config) validateTargets(bad func(key, format string, args ...any)) {
	for _, name := range builtIn {
		if c.Targets[name] == nil {
			bad("targets."+name, "the built-in target %s is missing", name)
		}
	}
	for _, name := range c.Targets.Names() {
		c.validateTarget(bad, name, c.Targets[name])
	}
}

// validateTarget checks target name's settings: its kind first, for the
// rest depends on it; then its name, the settings every target takes, and
// those of its kind.
func (c Config) validateTarget(bad func(key, format string, args ...any), name string, t *Target) {
	v := targetCheck{bad: bad, name: name, configured: cmp.Or(t.Key, name), t: t}
	if !slices.Contains(Kinds, t.Kind) {
		bad(v.key("kind"), "%q is not a kind of target (%s)", t.Kind, strings.Join(Kinds, ", "))
		return
	}
	v.checkName()
	legacyKey, legacy := c.legacyRetention(name)
	v.checkCommon(legacyKey, legacy)
	switch t.Kind {
	case KindOneC:
		v.checkOneC()
	case KindOneCOData:
		v.checkOneC()
		v.checkOneCOData()
	case KindBitrix24:
		v.checkBitrix24()
	case KindYooKassa:
		v.checkYooKassa()
	}
}

// targetCheck is the validation of one target, t, named name and
// configured under the key configured (its name or an old key), whose
// errors go to bad.
type targetCheck struct {
	bad              func(key, format string, args ...any)
	name, configured string
	t                *Target
}

// key is the setting s of the target, as configured.
func (v targetCheck) key(s string) string { return "targets." + v.configured + "." + s }

// checkName refuses a name that cannot be a target's, and a built-in
// target of a kind the built-in intents cannot run on.
func (v targetCheck) checkName() {
	if !targetNamePattern.MatchString(v.name) {
		v.bad("targets."+v.name, "a target's name is 1-32 characters of a-z 0-9 _, starting with a letter")
	}
	if kinds, ok := builtInAllowed[v.name]; ok && !slices.Contains(kinds, v.t.Kind) {
		v.bad(v.key("kind"), "%s is a built-in target, which the built-in intents run on: its kind is %s, not %s", v.name, strings.Join(kinds, " or "), v.t.Kind)
	}
}

// checkCommon checks the settings every target takes: timeout_ms,
// settle_ms and retention, which the old legacyKey (of a built-in target)
// must not say too.
func (v targetCheck) checkCommon(legacyKey string, legacy Duration) {
	t := v.t
	checkTimeout(v.bad, v.key("timeout_ms"), t.TimeoutMS)
	if t.SettleMS < 0 || t.SettleMS > 3600000 {
		v.bad(v.key("settle_ms"), "%d must be between 0 and 3600000", t.SettleMS)
	}
	if t.Retention != 0 && t.Retention < Duration(24*time.Hour) {
		v.bad(v.key("retention"), "must be at least 24h (or unset for retention.default): a retry that comes after its key was purged runs again")
	}
	if t.Retention != 0 && legacy != 0 {
		v.bad(v.key("retention"), "%s says it too; set one of them", legacyKey)
	}
}

// checkOneC checks how 1C is reached, over its HTTP service or OData.
func (v targetCheck) checkOneC() {
	checkURL(v.bad, v.key("base_url"), v.t.BaseURL)
	checkEnv(v.bad, v.key("username_env"), v.t.UsernameEnv)
	checkEnv(v.bad, v.key("password_env"), v.t.PasswordEnv)
}

// attributeName is a 1C attribute's name as the OData interface gives it.
var attributeName = regexp.MustCompile(`^[\p{L}_][\p{L}\p{N}_]*$`)

// checkOneCOData checks what OData adds: the base's time zone, and a
// catalog and its field for each kind of reference.
func (v targetCheck) checkOneCOData() {
	checkZone(v.bad, v.key("time_zone"), v.t.TimeZone)
	if k := v.t.KeyField; k != "" && !attributeName.MatchString(k) {
		v.bad(v.key("key_field"), "%q must name a string attribute of the documents (a name of letters, digits and _)", k)
	}
	v.checkReferences("needs catalog and by (the catalog and its field holding the id)", func(r Reference) bool {
		return r.Catalog != "" && r.By != "" && r.Entity == ""
	})
}

// checkBitrix24 checks a portal's settings: its webhook, time zone and
// rate, and a CRM entity for each kind of reference.
func (v targetCheck) checkBitrix24() {
	t := v.t
	checkEnv(v.bad, v.key("webhook_url_env"), t.WebhookURLEnv)
	checkZone(v.bad, v.key("time_zone"), t.TimeZone)
	if r := t.Rate; r.PerSecond < 0 || (r.PerSecond > 0 && r.Burst < 1) {
		v.bad(v.key("rate"), "per_second must not be negative, and burst must be at least 1 when it is set")
	}
	v.checkReferences("needs entity (the CRM entity: contact, company, …)", func(r Reference) bool {
		return r.Entity != "" && r.Catalog == "" && r.By == ""
	})
}

// checkReferences refuses, with want, each reference that is not as its
// kind of target has them (valid).
func (v targetCheck) checkReferences(want string, valid func(Reference) bool) {
	for kind, r := range v.t.References {
		if !valid(r) {
			v.bad(v.key("references."+kind), want)
		}
	}
}

// checkYooKassa checks a shop's settings: the API, its credentials, the
// read timeout, receipts and the shop's name.
func (v targetCheck) checkYooKassa() {
	t := v.t
	checkURL(v.bad, v.key("base_url"), t.BaseURL)
	checkEnv(v.bad, v.key("secret_key_env"), t.SecretKeyEnv)
	checkTimeout(v.bad, v.key("read_timeout_ms"), t.ReadTimeoutMS)
	v.checkReceipts()
	checkShopName(v.bad, v.key("shop_name"), t.ShopName)
	if t.BaseURL != "" && (t.ShopID == "" || t.SecretKeyEnv == "") {
		v.bad("targets."+v.configured, "base_url needs shop_id and secret_key_env")
	}
}

// checkReceipts checks the defaults of a shop's 54-FZ receipts.
func (v targetCheck) checkReceipts() {
	rc := v.t.Receipts
	if rc.TaxSystemCode < 0 || rc.TaxSystemCode > 6 {
		v.bad(v.key("receipts.tax_system_code"), "%d must be between 1 and 6 (0: none sent)", rc.TaxSystemCode)
	}
	if rc.VatCode < 0 || rc.VatCode > 12 {
		v.bad(v.key("receipts.vat_code"), "%d must be between 1 and 12", rc.VatCode)
	}
	for _, s := range []struct{ key, v string }{{"receipts.payment_subject", rc.PaymentSubject}, {"receipts.payment_mode", rc.PaymentMode}} {
		if s.v != "" && !receiptEnumPattern.MatchString(s.v) {
			v.bad(v.key(s.key), "%q must be a YooKassa value such as commodity or full_payment", s.v)
		}
	}
}

// maxShopName bounds a shop's name, in characters.
const maxShopName = 200

// checkShopName refuses a shop's name that is not one line of text an
// accountant can read.
func checkShopName(bad func(key, format string, args ...any), key, name string) {
	switch {
	case name == "":
	case strings.TrimSpace(name) == "":
		bad(key, "is blank; name the shop as the firm's people know it, e.g. Интернет-магазин «Ромашка», or leave it unset")
	case utf8.RuneCountInString(name) > maxShopName:
		bad(key, "is longer than %d characters", maxShopName)
	case !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl):
		bad(key, "must be one line of text, without control characters")
	case strings.TrimSpace(name) != name:
		bad(key, "starts or ends with spaces")
	}
}

// checkURL refuses a setting that is not an absolute http(s) URL, or one
// holding credentials.
func checkURL(bad func(key, format string, args ...any), key, raw string) {
	if raw == "" {
		return
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad(key, "%q is not an absolute http(s) URL", raw)
	} else if u.User != nil {
		bad(key, "must not hold credentials; name an environment variable in the *_env key instead")
	}
}

// checkEnv refuses an _env setting that is not a variable's name (a
// secret written in its place is not repeated).
func checkEnv(bad func(key, format string, args ...any), key, name string) {
	if name != "" && !envNamePattern.MatchString(name) {
		bad(key, "is not an environment variable name; name the variable that holds the secret, never the secret itself (the value is not repeated here)")
	}
}

// checkZone refuses a time zone the machine's database does not know.
func checkZone(bad func(key, format string, args ...any), key, zone string) {
	if zone == "" {
		return
	}
	if _, err := time.LoadLocation(zone); err != nil {
		bad(key, "%q is not a time zone such as Europe/Moscow", zone)
	}
}

// checkTimeout refuses a call timeout outside 1 ms to 10 minutes.
func checkTimeout(bad func(key, format string, args ...any), key string, ms int) {
	if ms < 1 || ms > 600000 {
		bad(key, "%d must be between 1 and 600000", ms)
	}
}
