package config

import (
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"strings"
	"time"
)

// NotifyConfig is notify: how people are told that something waits for
// them (an approval, an operation to review), by e-mail and Telegram.
type NotifyConfig struct {
	// AdminURL is where people open the admin UI, e.g.
	// https://oncegate.firm.example: each notice links the card under it.
	AdminURL string         `yaml:"admin_url"`
	Email    NotifyEmail    `yaml:"email"`
	Telegram NotifyTelegram `yaml:"telegram"`
	Bitrix24 NotifyBitrix24 `yaml:"bitrix24"`
	// DigestAfter is how many messages one person gets on a channel
	// within DigestWindow before the rest wait and go as one digest
	// (default 10 within 10m).
	DigestAfter  int      `yaml:"digest_after"`
	DigestWindow Duration `yaml:"digest_window"`
}

// NotifyEmail is notify.email: the mail server's URL, from an
// environment variable (smtp://user:password@host:port, STARTTLS when
// the server offers it; smtps:// for TLS from the first byte), and the
// sender's address.
type NotifyEmail struct {
	SMTPURLEnv string `yaml:"smtp_url_env"`
	From       string `yaml:"from"`
}

// NotifyTelegram is notify.telegram: the bot's token, from an environment
// variable; BaseURL is the Bot API's address ("" for
// https://api.telegram.org), set for a simulator or a firm's proxy.
type NotifyTelegram struct {
	BotTokenEnv string `yaml:"bot_token_env"`
	BaseURL     string `yaml:"base_url"`
	// BotName is the bot's @username (without the @): a person's page
	// links https://t.me/<bot_name>?start=<code> to link their chat.
	BotName string `yaml:"bot_name"`
}

// NotifyBitrix24 is notify.bitrix24: the portal's own notifications,
// through the inbound webhook of Target (a target of kind bitrix24), to
// the portal's user with the person's e-mail address.
type NotifyBitrix24 struct {
	Target string `yaml:"target"`
}

// TelegramAPI is the Bot API's default address.
const TelegramAPI = "https://api.telegram.org"

// Digest defaults.
const (
	DefaultDigestAfter  = 10
	DefaultDigestWindow = 10 * time.Minute
)

// EmailOn and TelegramOn report whether the channel is configured.
func (n NotifyConfig) EmailOn() bool { return n.Email.SMTPURLEnv != "" }

// TelegramOn reports whether notices go to Telegram.
func (n NotifyConfig) TelegramOn() bool { return n.Telegram.BotTokenEnv != "" }

// Bitrix24On reports whether notices go to the Bitrix24 portal.
func (n NotifyConfig) Bitrix24On() bool { return n.Bitrix24.Target != "" }

// On reports whether any channel is configured.
func (n NotifyConfig) On() bool { return n.EmailOn() || n.TelegramOn() || n.Bitrix24On() }

// Digest is how many messages one person gets within how long before the
// rest go as one digest.
func (n NotifyConfig) Digest() (after int, window time.Duration) {
	after, window = n.DigestAfter, time.Duration(n.DigestWindow)
	if after == 0 {
		after = DefaultDigestAfter
	}
	if window == 0 {
		window = DefaultDigestWindow
	}
	return after, window
}

// TelegramBase is the Bot API's address notices are sent to.
func (n NotifyConfig) TelegramBase() string {
	if n.Telegram.BaseURL == "" {
		return TelegramAPI
	}
	return strings.TrimSuffix(n.Telegram.BaseURL, "/")
}

// validateNotify checks notify: a channel named whole, an admin URL to
// link to, digest bounds.
func (c Config) validateNotify(bad func(key, format string, args ...any)) {
	n := c.Notify
	checkEnv(bad, "notify.email.smtp_url_env", n.Email.SMTPURLEnv)
	checkEnv(bad, "notify.telegram.bot_token_env", n.Telegram.BotTokenEnv)
	switch {
	case n.Email.From != "" && n.Email.SMTPURLEnv == "":
		bad("notify.email.smtp_url_env", "name the environment variable holding the mail server's URL (smtp://user:password@host:587)")
	case n.Email.SMTPURLEnv != "" && n.Email.From == "":
		bad("notify.email.from", "give the address notices are sent from, e.g. oncegate@firm.example")
	case n.Email.From != "":
		if a, err := mail.ParseAddress(n.Email.From); err != nil || !strings.Contains(a.Address, "@") {
			bad("notify.email.from", "%q is not an e-mail address like oncegate@firm.example", n.Email.From)
		}
	}
	if n.Telegram.BaseURL != "" {
		u, err := url.Parse(n.Telegram.BaseURL)
		switch {
		case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
			bad("notify.telegram.base_url", "must be an https:// URL (the Bot API's address)")
		case u.Scheme == "http" && !loopback(u.Hostname()):
			bad("notify.telegram.base_url", "is plain HTTP outside this machine: the bot's token would travel in the clear; use https://")
		case u.User != nil || u.RawQuery != "":
			bad("notify.telegram.base_url", "must carry no user, password or query; the token comes from bot_token_env")
		}
	}
	if n.Telegram.BaseURL != "" && !n.TelegramOn() {
		bad("notify.telegram.bot_token_env", "name the environment variable holding the bot's token")
	}
	if name := n.Bitrix24.Target; name != "" {
		if t, ok := c.Targets[name]; !ok || t.Kind != KindBitrix24 {
			bad("notify.bitrix24.target", "%q is no target of kind bitrix24; name the portal's target, e.g. crm", name)
		}
	}
	if n.On() || n.AdminURL != "" {
		u, err := url.Parse(n.AdminURL)
		switch {
		case n.AdminURL == "":
			bad("notify.admin_url", "give the address people open the admin UI at, e.g. https://oncegate.firm.example: each notice links its card there")
		case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
			bad("notify.admin_url", "%q must be an https:// URL, e.g. https://oncegate.firm.example", n.AdminURL)
		case u.User != nil || u.RawQuery != "" || u.Fragment != "":
			bad("notify.admin_url", "must carry no user, password, query or fragment")
		}
	}
	if n.DigestAfter < 0 || n.DigestAfter > 1000 {
		bad("notify.digest_after", "%d must be between 1 and 1000", n.DigestAfter)
	}
	if w := time.Duration(n.DigestWindow); w != 0 && (w < time.Minute || w > 24*time.Hour) {
		bad("notify.digest_window", "%v must be between 1m and 24h", w)
	}
}

// SMTP is the mail server notices go through, from notify.email's
// variable. Password is a secret: never log it.
type SMTP struct {
	Host, Port     string
	User, Password string
	// ImplicitTLS: smtps://, TLS from the first byte; else STARTTLS when
	// the server offers it.
	ImplicitTLS bool
}

// Addr is host:port.
func (s SMTP) Addr() string { return net.JoinHostPort(s.Host, s.Port) }

// NotifySecrets are the channels' secrets, read from the environment.
type NotifySecrets struct {
	SMTP     *SMTP  // nil without e-mail
	BotToken string // "" without Telegram
}

// NotifySecrets reads the configured channels' secrets from env: a
// missing or malformed one is an error naming its setting and variable,
// never the value.
func (c Config) NotifySecrets(env func(string) string) (NotifySecrets, error) {
	var out NotifySecrets
	n := c.Notify
	if n.EmailOn() {
		const key = "notify.email.smtp_url_env"
		v := strings.TrimSpace(env(n.Email.SMTPURLEnv))
		if v == "" {
			return NotifySecrets{}, fmt.Errorf("%s: the variable %s is empty or unset", key, n.Email.SMTPURLEnv)
		}
		s, err := parseSMTP(v)
		if err != nil {
			return NotifySecrets{}, fmt.Errorf("%s: the variable %s %s", key, n.Email.SMTPURLEnv, err)
		}
		out.SMTP = &s
	}
	if n.TelegramOn() {
		const key = "notify.telegram.bot_token_env"
		v := strings.TrimSpace(env(n.Telegram.BotTokenEnv))
		if v == "" {
			return NotifySecrets{}, fmt.Errorf("%s: the variable %s is empty or unset", key, n.Telegram.BotTokenEnv)
		}
		if id, rest, ok := strings.Cut(v, ":"); !ok || id == "" || len(rest) < 20 || strings.ContainsAny(v, "/?# \t") {
			return NotifySecrets{}, fmt.Errorf("%s: the variable %s does not hold a bot token of the form 123456789:AA… (as @BotFather gives it)", key, n.Telegram.BotTokenEnv)
		}
		out.BotToken = v
	}
	return out, nil
}

// parseSMTP reads smtp[s]://[user[:password]@]host[:port]; its errors
// never quote the URL, which holds the password.
func parseSMTP(raw string) (SMTP, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return SMTP{}, fmt.Errorf("does not hold a URL like smtp://user:password@mail.firm.example:587")
	}
	s := SMTP{Host: u.Hostname(), Port: u.Port()}
	switch u.Scheme {
	case "smtp":
		if s.Port == "" {
			s.Port = "587"
		}
	case "smtps":
		s.ImplicitTLS = true
		if s.Port == "" {
			s.Port = "465"
		}
	default:
		return SMTP{}, fmt.Errorf("holds a URL that is neither smtp:// nor smtps://")
	}
	if s.Host == "" {
		return SMTP{}, fmt.Errorf("holds a URL without the mail server's host")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return SMTP{}, fmt.Errorf("holds a URL with a path or query; give smtp://user:password@host:port only")
	}
	if u.User != nil {
		s.User = u.User.Username()
		s.Password, _ = u.User.Password()
	}
	return s, nil
}
