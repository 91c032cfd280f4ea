package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/config/configtest"
)

// A notify: block that could not reach anyone, or link anywhere, is
// refused at load, each error naming its setting.
func TestNotifyRefused(t *testing.T) {
	t.Parallel()
	const admin = "  admin_url: https://oncegate.firm.example\n"
	for _, c := range []struct{ name, yaml, want string }{
		{"NoFrom", "notify:\n" + admin + "  email: {smtp_url_env: SMTP}\n", "notify.email.from: give the address"},
		{"BadFrom", "notify:\n" + admin + "  email: {smtp_url_env: SMTP, from: oncegate}\n", `notify.email.from: "oncegate" is not an e-mail address`},
		{"FromWithoutServer", "notify:\n" + admin + "  email: {from: oncegate@firm.example}\n", "notify.email.smtp_url_env: name the environment variable"},
		{"BadEnvName", "notify:\n" + admin + "  telegram: {bot_token_env: 'BOT-TOKEN'}\n", "notify.telegram.bot_token_env"},
		{"NoAdminURL", "notify:\n  telegram: {bot_token_env: BOT}\n", "notify.admin_url: give the address people open the admin UI at"},
		{"AdminURLNotURL", "notify:\n  admin_url: oncegate.firm.example\n  telegram: {bot_token_env: BOT}\n", "notify.admin_url: \"oncegate.firm.example\" must be an https:// URL"},
		{"PlainBotAPI", "notify:\n" + admin + "  telegram: {bot_token_env: BOT, base_url: 'http://bot.firm.example'}\n", "notify.telegram.base_url: is plain HTTP outside this machine"},
		{"Bitrix24NotAPortal", "notify:\n" + admin + "  bitrix24: {target: onec}\n", `notify.bitrix24.target: "onec" is no target of kind bitrix24`},
		{"Digest", "notify:\n" + admin + "  telegram: {bot_token_env: BOT}\n  digest_window: 5s\n", "notify.digest_window: 5s must be between 1m and 24h"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Load(configtest.Write(t, c.yaml), configtest.NoEnv, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("load: %v, want %q", err, c.want)
			}
		})
	}
}

// The channels' secrets come from their variables; a missing or
// malformed one is an error naming the setting and the variable, never
// the value.
func TestNotifySecrets(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(configtest.Write(t, "notify:\n  admin_url: https://oncegate.firm.example\n"+
		"  email: {smtp_url_env: SMTP, from: 'Oncegate <oncegate@firm.example>'}\n  telegram: {bot_token_env: BOT}\n"), configtest.NoEnv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Notify.EmailOn() || !cfg.Notify.TelegramOn() {
		t.Fatal("a channel configured is not on")
	}
	if after, window := cfg.Notify.Digest(); after != 10 || window != 10*time.Minute {
		t.Errorf("digest defaults %d within %v", after, window)
	}
	const pass, token = "pa55-w0rd-of-the-mail", "123456789:AAbbCCddEEffGGhhIIjjKKllMMnn"
	env := map[string]string{"SMTP": "smtp://notices:" + pass + "@mail.firm.example", "BOT": token}
	s, err := cfg.NotifySecrets(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if s.SMTP.Addr() != "mail.firm.example:587" || s.SMTP.User != "notices" || s.SMTP.Password != pass || s.SMTP.ImplicitTLS || s.BotToken != token {
		t.Fatalf("secrets read as %+v", s)
	}
	env["SMTP"] = "smtps://mail.firm.example"
	if s, err := cfg.NotifySecrets(func(k string) string { return env[k] }); err != nil || !s.SMTP.ImplicitTLS || s.SMTP.Port != "465" {
		t.Fatalf("smtps: %+v, %v", s.SMTP, err)
	}
	for _, bad := range []struct{ k, v, want string }{
		{"SMTP", "", "notify.email.smtp_url_env: the variable SMTP is empty or unset"},
		{"SMTP", "http://notices:" + pass + "@mail.firm.example", "notify.email.smtp_url_env: the variable SMTP holds a URL that is neither smtp:// nor smtps://"},
		{"SMTP", "smtp://notices:" + pass + "@/x", "notify.email.smtp_url_env: the variable SMTP"},
		{"BOT", "not-a-token-" + pass, "notify.telegram.bot_token_env: the variable BOT does not hold a bot token"},
	} {
		e := map[string]string{"SMTP": env["SMTP"], "BOT": token}
		e[bad.k] = bad.v
		_, err := cfg.NotifySecrets(func(k string) string { return e[k] })
		if err == nil || !strings.Contains(err.Error(), bad.want) || strings.Contains(err.Error(), pass) {
			t.Errorf("%s=%q: %v, want %q and no secret", bad.k, bad.v, err, bad.want)
		}
	}
}
