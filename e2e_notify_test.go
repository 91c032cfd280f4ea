package main

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters/sim"
)

// serve with notify: tells the accountant of a card charge waiting for
// approval, once by e-mail and once in Telegram, with the card's link and
// neither channel's secret anywhere: not in the messages, not in the log.
func TestServeSendsNotices(t *testing.T) {
	t.Parallel()
	const pass, token = "e2e-smtp-pass-of-notices", "555000111:E2E-bot-token-kept-secret"
	mail, err := sim.StartSMTP("127.0.0.1:0", sim.SMTPOptions{User: "notices", Password: pass})
	if err != nil {
		t.Fatal(err)
	}
	defer mail.Close()
	tg := sim.NewTelegram(token)
	bot := httptest.NewServer(tg)
	defer bot.Close()
	notify := fmt.Sprintf("notify:\n  admin_url: https://oncegate.firm.example\n"+
		"  email: { smtp_url_env: E2E_SMTP_URL, from: oncegate@firm.example }\n"+
		"  telegram: { bot_token_env: E2E_BOT_TOKEN, base_url: %q }\n", bot.URL)
	// serve's own simulators stand in for the targets: no simulator
	// binary to start.
	r := newRig(t, withConfigFile("contour: test\n"+rigRetry+notify), notStarted(),
		withEnv("E2E_SMTP_URL=smtp://notices:"+pass+"@"+mail.Addr(), "E2E_BOT_TOKEN="+token))
	runBinary(t, append(r.env, "ONCEGATE_PASSWORD=a-long-enough-password"), "user", "add", "--config", r.config, "--data", r.dataDir,
		"--role", "accountant", "--email", "anna@firm.example", "--telegram", "1001", "anna")
	r.serve()

	const key = "test:payment.charge:notify-1:v1"
	code, body, err := r.post(key, `{"schema_version":"1.0","intent":"payment.charge","payload":{"account_id":"merchant-account-17","order_id":"notify-1","amount_minor":125000,"currency":"RUB"}}`)
	if err != nil || code != 202 || body["status"] != "awaiting_approval" {
		t.Fatalf("charge: %d %v %v", code, body, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(mail.Messages()) < 1 || len(tg.Messages()) < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d e-mails, %d Telegram messages; the gateway said%s", len(mail.Messages()), len(tg.Messages()), r.gateway.dump(t))
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // a second message would be here by now
	m, msgs := mail.Messages(), tg.Messages()
	link := "https://oncegate.firm.example/admin/operations/test%3Apayment.charge%3Anotify-1%3Av1"
	if len(m) != 1 || m[0].To[0] != "anna@firm.example" || !strings.Contains(m[0].Body, link) || !strings.Contains(m[0].Body, "1\u00a0250,00\u00a0₽") {
		t.Fatalf("e-mails %+v", m)
	}
	if len(msgs) != 1 || msgs[0].ChatID != "1001" || !strings.Contains(msgs[0].Text, link) {
		t.Fatalf("Telegram messages %+v", msgs)
	}
	for _, s := range []string{m[0].Raw, msgs[0].Text, r.gateway.output()} {
		if strings.Contains(s, pass) || strings.Contains(s, token) {
			t.Errorf("a secret in:\n%s", s)
		}
	}
}
