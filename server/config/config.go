// Package config is the gateway's configuration: the YAML file and its
// ONCEGATE_* environment overrides, its defaults and validation, the
// business limits per intent, and what the configuration says of the
// targets (which ones the built-in simulators serve, which secrets are
// missing). It knows nothing of the server, the engine or the journal;
// main builds the targets from it.
package config

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/oncegate/oncegate/adapters"
)

// Config is the gateway's configuration: one YAML file, every key
// optional, environment variables (ONCEGATE_<PATH>) overriding it. Secrets
// never appear in it: keys ending in _env name the environment variable
// that holds them.
type Config struct {
	Listen  string `yaml:"listen"`
	DataDir string `yaml:"data_dir"`
	Contour string `yaml:"contour"`
	// SimListen is where serve's built-in simulators listen when it starts
	// them; "" picks a free loopback port each run. A fixed address keeps
	// fault-injection scripts working across restarts.
	SimListen string `yaml:"sim_listen"`
	// MaxConnections bounds the connections the listener holds open at
	// once: the API's, the admin UI's, health checks' and metrics' alike;
	// one more is answered 503 and closed. An open connection costs memory
	// even while idle, so this bounds what many clients can make the
	// process grow to.
	MaxConnections int `yaml:"max_connections"`
	// TimeZone is where the people who decide are: the admin pages and
	// their exports show times in it ("" = the system's).
	TimeZone   string           `yaml:"time_zone"`
	Targets    TargetsConfig    `yaml:"targets"`
	Retry      RetryConfig      `yaml:"retry"`
	Approval   ApprovalConfig   `yaml:"approval"`
	Retention  RetentionConfig  `yaml:"retention"`
	Reconciler ReconcilerConfig `yaml:"reconciler"`
	RateLimit  RateLimitConfig  `yaml:"rate_limit"`
	TLS        TLSConfig        `yaml:"tls"`
	Journal    JournalConfig    `yaml:"journal"`
	// TrustedProxies are the addresses or CIDR ranges of the firm's own
	// reverse proxies: from them, and only from them, X-Forwarded-For
	// names the client (for sign-in throttling and the audit trail).
	TrustedProxies []string `yaml:"trusted_proxies"`
	// Limits are business limits per intent: each value given here
	// replaces the one its definition declares (server/intent).
	Limits map[string]IntentLimits `yaml:"limits"`
	// Duplicates change intents' duplicate rules: each value given here
	// replaces the one its definition declares (server/intent).
	Duplicates map[string]DuplicateOverride `yaml:"duplicates"`
	// IntentsDir is the directory of the firm's intent definitions, one
	// YAML file per intent version; "" for the built-ins only.
	IntentsDir string `yaml:"intents_dir"`
	// BuiltinIntents says which built-in intents are served: all (the
	// default), none, or a list of their names.
	BuiltinIntents BuiltinIntents `yaml:"builtin_intents"`
	// Webhooks are the endpoints told of operations' outcomes.
	Webhooks []Webhook `yaml:"webhooks"`
	// Notify tells people when something waits for them (notify.go).
	Notify NotifyConfig `yaml:"notify"`
	// Events are the rules that turn a source's notices into operations
	// (events.go).
	Events []EventRule `yaml:"events"`

	file string // the file it was loaded from, for messages with a line
}

// BuiltinIntents is builtin_intents: nil or [all] for every built-in,
// [none] or [] for none, or the names to keep. In YAML it is all, none or
// a list; in the environment, all, none or names separated by commas.
type BuiltinIntents []string

// UnmarshalYAML reads all, none or a list of names.
func (b *BuiltinIntents) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Value != "all" && n.Value != "none" {
			return fmt.Errorf("builtin_intents: %q must be all, none or a list of built-in intents", n.Value)
		}
		*b = BuiltinIntents{n.Value}
		return nil
	case yaml.SequenceNode:
		list := BuiltinIntents{}
		if err := n.Decode((*[]string)(&list)); err != nil {
			return fmt.Errorf("builtin_intents: must be all, none or a list of built-in intents")
		}
		*b = list
		return nil
	}
	return fmt.Errorf("builtin_intents: must be all, none or a list of built-in intents")
}

// ProxyNets parses TrustedProxies: an address is a range of one.
func (c Config) ProxyNets() ([]*net.IPNet, error) {
	var nets []*net.IPNet
	for _, p := range c.TrustedProxies {
		n, err := parseNet(p)
		if err != nil {
			return nil, err
		}
		nets = append(nets, n)
	}
	return nets, nil
}

// parseNet parses an address (a range of one) or a CIDR range.
func parseNet(p string) (*net.IPNet, error) {
	if ip := net.ParseIP(p); ip != nil {
		bits := 8 * len(ip.To16())
		if ip.To4() != nil {
			ip, bits = ip.To4(), 32
		}
		return &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)}, nil
	}
	_, n, err := net.ParseCIDR(p)
	if err != nil {
		return nil, fmt.Errorf("%q is neither an address nor a CIDR range", p)
	}
	return n, nil
}

// JournalConfig says where the journal is. By default it is the embedded
// SQLite file in data_dir; a postgres:// URL in the environment variable
// URLEnv (ONCEGATE_JOURNAL_URL unless set) names a PostgreSQL database that several gateways share.
type JournalConfig struct {
	URLEnv string `yaml:"url_env"`
}

// JournalURL is the PostgreSQL journal's URL from env, "" for the
// embedded journal. It holds a password: never log it.
func (c Config) JournalURL(env func(string) string) string {
	if c.Journal.URLEnv == "" {
		return ""
	}
	return env(c.Journal.URLEnv)
}

// TLSConfig names a certificate and key (PEM files); with both set the
// gateway serves HTTPS only and marks its cookies Secure.
type TLSConfig struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// Enabled reports whether TLS is configured.
func (t TLSConfig) Enabled() bool { return t.CertFile != "" }

// RateLimitConfig bounds each agent token's request rate.
type RateLimitConfig struct {
	PerSecond float64 `yaml:"per_second"`
	Burst     int     `yaml:"burst"`
}

// ReconcilerConfig governs the background reconciliation of unknown
// outcomes.
type ReconcilerConfig struct {
	IntervalMS   int `yaml:"interval_ms"`    // how often due rows are looked for
	ReviewAfter  int `yaml:"review_after"`   // failed lookups before a person is asked
	MaxBackoffMS int `yaml:"max_backoff_ms"` // longest wait between lookups of one row
}

// RetryConfig is the retry policy of target calls.
type RetryConfig struct {
	MaxAttempts    int     `yaml:"max_attempts"`
	InitialDelayMS int     `yaml:"initial_delay_ms"`
	Multiplier     float64 `yaml:"multiplier"`
	MaxDelayMS     int     `yaml:"max_delay_ms"`
	Jitter         *bool   `yaml:"jitter"`
}

// ApprovalConfig governs approvals of money intents.
type ApprovalConfig struct {
	TTL Duration `yaml:"ttl"`
}

// RetentionConfig says how long terminal operations are kept: per
// target, or Default where a target's is unset. A retry that comes after
// its key was purged is a new operation, so a target's retention should
// outlast both its own key window and the agents' retries.
type RetentionConfig struct {
	Default  Duration `yaml:"default"`
	OneC     Duration `yaml:"onec"`
	Bitrix24 Duration `yaml:"bitrix24"`
	YooKassa Duration `yaml:"yookassa"`
}

// Duration is a time.Duration written as "24h", "90s" in YAML.
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("%q is not a duration like 90s, 15m or 24h", n.Value)
	}
	*d = Duration(v)
	return nil
}

// DefaultMaxConnections is max_connections unless configured: with this
// many idle keep-alive connections open the gateway stays within its
// memory goal, 64 MB (docs/performance.md).
const DefaultMaxConnections = 512

// Default is the embedded default: loopback, a journal under
// ./oncegate-data, contour test, built-in simulators as targets.
func Default() Config {
	jitter := true
	return Config{
		Listen:     "127.0.0.1:8080",
		DataDir:    "./oncegate-data",
		Contour:    "test",
		Targets:    defaultTargets(),
		Retry:      RetryConfig{MaxAttempts: 4, InitialDelayMS: 500, Multiplier: 2, MaxDelayMS: 5000, Jitter: &jitter},
		Approval:   ApprovalConfig{TTL: Duration(24 * time.Hour)},
		Retention:  RetentionConfig{Default: Duration(720 * time.Hour)},
		Reconciler: ReconcilerConfig{IntervalMS: 1000, ReviewAfter: 5, MaxBackoffMS: 300000},
		RateLimit:  RateLimitConfig{PerSecond: 50, Burst: 100},
		Journal:    JournalConfig{URLEnv: "ONCEGATE_JOURNAL_URL"},
		Limits:     map[string]IntentLimits{}, // the definitions' own

		MaxConnections: DefaultMaxConnections,
	}
}

// Load reads the YAML file at path (none when path is ""), over the
// defaults, then applies ONCEGATE_* environment overrides from env, then
// checks the result. Limits may name only the currencies listed in
// currencies (upper-case ISO 4217 codes: those the targets send, which
// main takes from the payments adapter). Errors name the key and what is
// wrong with it.
func Load(path string, env func(string) string, currencies []string) (Config, error) {
	cfg := Default()
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return Config{}, fmt.Errorf("config: %w", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
			return Config{}, fmt.Errorf("config %s: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		cfg.file = path
	}
	cfg.Targets = cfg.Targets.withBuiltIn()
	if err := applyEnv(reflect.ValueOf(&cfg).Elem(), "ONCEGATE", env); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	if err := cfg.validate(currencies); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	cfg.Limits = normalizeLimits(cfg.Limits)
	return cfg, nil
}

// normalizeLimits returns limits with every currency code upper-cased, as
// the codes of requests are, so "rub" in the configuration limits RUB. It
// builds new slices and maps, leaving the decoded ones as they were.
func normalizeLimits(limits map[string]IntentLimits) map[string]IntentLimits {
	out := make(map[string]IntentLimits, len(limits))
	for name, l := range limits {
		if l.Currencies != nil {
			curs := make([]string, len(l.Currencies))
			for i, cur := range l.Currencies {
				curs[i] = strings.ToUpper(cur)
			}
			l.Currencies = curs
		}
		if l.AmountCeiling != nil {
			ceiling := make(map[string]int64, len(l.AmountCeiling))
			for cur, v := range l.AmountCeiling {
				ceiling[strings.ToUpper(cur)] = v
			}
			l.AmountCeiling = ceiling
		}
		out[name] = l
	}
	return out
}

// applyEnv sets every field from PREFIX_<YAML PATH> (upper case, "." as
// "_"), e.g. ONCEGATE_TARGETS_ONEC_BASE_URL, when that variable is set.
func applyEnv(v reflect.Value, prefix string, env func(string) string) error {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := prefix + "_" + strings.ToUpper(strings.Split(f.Tag.Get("yaml"), ",")[0])
		fv := v.Field(i)
		if ts, ok := fv.Interface().(TargetsConfig); ok {
			if err := applyTargetsEnv(ts, env); err != nil {
				return err
			}
			continue
		}
		if fv.Kind() == reflect.Struct {
			if err := applyEnv(fv, name, env); err != nil {
				return err
			}
			continue
		}
		raw := env(name)
		if raw == "" {
			continue
		}
		if err := setFromString(fv, raw); err != nil {
			return fmt.Errorf("%s=%q: %w", name, raw, err)
		}
	}
	return nil
}

func setFromString(v reflect.Value, raw string) error {
	switch v.Interface().(type) {
	case Duration:
		d, err := time.ParseDuration(raw)
		if err != nil {
			return errors.New("not a duration like 90s, 15m or 24h")
		}
		v.Set(reflect.ValueOf(Duration(d)))
		return nil
	case *bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return errors.New("not a boolean")
		}
		v.Set(reflect.ValueOf(&b))
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(raw)
	case reflect.Int:
		n, err := strconv.Atoi(raw)
		if err != nil {
			return errors.New("not an integer")
		}
		v.SetInt(int64(n))
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.String {
			return fmt.Errorf("cannot be set from the environment")
		}
		var list []string
		for _, s := range strings.Split(raw, ",") {
			if s = strings.TrimSpace(s); s != "" {
				list = append(list, s)
			}
		}
		v.Set(reflect.ValueOf(list).Convert(v.Type()))
	case reflect.Float64:
		n, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return errors.New("not a number")
		}
		v.SetFloat(n)
	default:
		return fmt.Errorf("cannot be set from the environment")
	}
	return nil
}

var (
	contourPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)
	envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// receiptEnumPattern is a YooKassa receipt enum value.
	receiptEnumPattern = regexp.MustCompile(`^[a-z_]{1,64}$`)
)

// validate checks every setting, naming each that is wrong; currencies
// are the ISO 4217 codes the gateway knows.
func (c Config) validate(currencies []string) error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		bad("listen", "%q is not host:port", c.Listen)
	}
	if _, _, err := net.SplitHostPort(c.SimListen); c.SimListen != "" && err != nil {
		bad("sim_listen", "%q is not host:port", c.SimListen)
	}
	if c.DataDir == "" {
		bad("data_dir", "must not be empty")
	}
	if !contourPattern.MatchString(c.Contour) {
		bad("contour", "%q must be 1-32 characters of A-Z a-z 0-9 _ -", c.Contour)
	}
	checkZone(bad, "time_zone", c.TimeZone)
	c.validateTargets(bad)
	checkEnv(bad, "journal.url_env", c.Journal.URLEnv)
	c.validateRetry(bad)
	c.validateKeeping(bad)
	if c.Reconciler.IntervalMS < 10 || c.Reconciler.IntervalMS > 600000 {
		bad("reconciler.interval_ms", "%d must be between 10 and 600000", c.Reconciler.IntervalMS)
	}
	if c.Reconciler.ReviewAfter < 1 {
		bad("reconciler.review_after", "must be at least 1")
	}
	c.validateListener(bad)
	c.validateLimits(bad, currencies)
	c.validateWebhooks(bad)
	c.validateNotify(bad)
	c.validateEvents(bad)
	if c.Reconciler.MaxBackoffMS < c.Reconciler.IntervalMS {
		bad("reconciler.max_backoff_ms", "must be at least interval_ms")
	}
	return errors.Join(errs...)
}

// Location is where the admin pages show times: time_zone, or the
// system's zone when it names none.
func (c Config) Location() *time.Location {
	if c.TimeZone == "" {
		return time.Local
	}
	loc, err := time.LoadLocation(c.TimeZone)
	if err != nil {
		return time.Local // refused at load (validate): not reached
	}
	return loc
}

// validateRetry checks the retry policy's bounds.
func (c Config) validateRetry(bad func(key, format string, args ...any)) {
	r := c.Retry
	if r.MaxAttempts < 1 || r.MaxAttempts > 20 {
		bad("retry.max_attempts", "%d must be between 1 and 20", r.MaxAttempts)
	}
	if r.InitialDelayMS < 0 || r.InitialDelayMS > 60000 {
		bad("retry.initial_delay_ms", "%d must be between 0 and 60000", r.InitialDelayMS)
	}
	if r.Multiplier < 1 || r.Multiplier > 10 {
		bad("retry.multiplier", "%v must be between 1 and 10", r.Multiplier)
	}
	if r.MaxDelayMS < r.InitialDelayMS || r.MaxDelayMS > 300000 {
		bad("retry.max_delay_ms", "%d must be between initial_delay_ms and 300000", r.MaxDelayMS)
	}
}

// validateKeeping checks how long approvals wait and keys are kept.
func (c Config) validateKeeping(bad func(key, format string, args ...any)) {
	if c.Approval.TTL <= 0 {
		bad("approval.ttl", "must be positive")
	}
	if c.Retention.Default < Duration(24*time.Hour) {
		bad("retention.default", "must be at least 24h: a retry that comes after its key was purged runs again, and payment providers keep keys for 24h")
	}
	for name, d := range map[string]Duration{"onec": c.Retention.OneC, "bitrix24": c.Retention.Bitrix24, "yookassa": c.Retention.YooKassa} {
		if d != 0 && d < Duration(24*time.Hour) {
			bad("retention."+name, "must be at least 24h (or unset for retention.default): a retry that comes after its key was purged runs again")
		}
	}
}

// validateListener checks what stands in front of the API: the
// connection limit, trusted proxies, TLS and the rate limit.
func (c Config) validateListener(bad func(key, format string, args ...any)) {
	if c.MaxConnections < 1 {
		bad("max_connections", "%d must be at least 1", c.MaxConnections)
	}
	if _, err := c.ProxyNets(); err != nil {
		bad("trusted_proxies", "%v", err)
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		bad("tls", "cert_file and key_file go together")
	}
	if c.TLS.Enabled() {
		if _, err := tls.LoadX509KeyPair(c.TLS.CertFile, c.TLS.KeyFile); err != nil {
			bad("tls", "cannot load the certificate and key: %v", err)
		}
	}
	if c.RateLimit.PerSecond <= 0 || c.RateLimit.Burst < 1 {
		bad("rate_limit", "per_second must be positive and burst at least 1")
	}
}

// validateLimits checks the intents' business limits against the
// currencies the gateway knows.
func (c Config) validateLimits(bad func(key, format string, args ...any), currencies []string) {
	// Currency codes are compared with requests' codes, which normalization
	// upper-cases: any spelling of a known code is accepted here (and
	// upper-cased by normalizeLimits), anything else is refused, so that a
	// limit never silently matches nothing.
	checkCurrency := func(key, cur string) {
		if !slices.Contains(currencies, strings.ToUpper(cur)) {
			bad(key, "%q is not a three-letter ISO 4217 currency code the gateway knows (%s)", cur, strings.Join(currencies, ", "))
		}
	}
	for name, l := range c.Limits {
		if l.MaxItems < 0 || l.MaxQuantity < 0 {
			bad("limits."+name, "max_items and max_quantity must not be negative")
		}
		for _, cur := range l.Currencies {
			checkCurrency("limits."+name+".currencies", cur)
		}
		spelled := map[string]string{} // upper-case code → the key as written
		for cur, v := range l.AmountCeiling {
			checkCurrency("limits."+name+".amount_ceiling."+cur, cur)
			if v <= 0 {
				bad("limits."+name+".amount_ceiling."+cur, "must be positive")
			}
			if other, dup := spelled[strings.ToUpper(cur)]; dup {
				bad("limits."+name+".amount_ceiling", "%s and %s are the same currency", min(cur, other), max(cur, other))
			}
			spelled[strings.ToUpper(cur)] = cur
		}
	}
}

// RetryPolicy is the configured retry policy.
func (c Config) RetryPolicy() adapters.RetryPolicy {
	return adapters.RetryPolicy{
		MaxAttempts:  c.Retry.MaxAttempts,
		InitialDelay: time.Duration(c.Retry.InitialDelayMS) * time.Millisecond,
		Multiplier:   c.Retry.Multiplier,
		MaxDelay:     time.Duration(c.Retry.MaxDelayMS) * time.Millisecond,
		Jitter:       c.Retry.Jitter == nil || *c.Retry.Jitter,
	}
}
