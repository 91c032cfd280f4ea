package server_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/store"
)

// A person's own page, in the browser: from the header to "My notices",
// a channel turned off is not written to any more, a one-time code shown
// once links the Telegram chat the bot gets it from (here linked as the
// bot's reader does), and the chat is unlinked again.
func TestMyNoticesInBrowser(t *testing.T) {
	t.Parallel()
	root := startBrowser(t)
	cfg := fastConfig()
	cfg.Notify = config.NotifyConfig{AdminURL: "https://oncegate.firm.example",
		Email:    config.NotifyEmail{SMTPURLEnv: "ONCEGATE_TEST_SMTP", From: "oncegate@firm.example"},
		Telegram: config.NotifyTelegram{BotTokenEnv: "ONCEGATE_TEST_BOT", BotName: "@firm_notices_bot"}}
	g := setupWith(t, cfg)
	g.mustUsers(t, map[string]string{"anna": store.RoleAccountant})
	ctx := context.Background()
	if err := g.store.SetContact(ctx, "anna", store.Contact{Email: "anna@firm.example"}); err != nil {
		t.Fatal(err)
	}
	shots, err := os.MkdirTemp("", "oncegate-me-screens-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", shots)
	b := g.newTab(t, root, shots)
	b.signIn("anna")
	checked := func(ch string) bool {
		on, err := run(b, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector('[data-testid="channel-%s"]').checked`, ch)))
		if err != nil {
			t.Fatal(err)
		}
		return on
	}

	b.do(chromedp.Click(tid("my-notices")), chromedp.WaitVisible(tid("me-page")))
	if got := b.text(tid("my-email")); got != "anna@firm.example" {
		t.Fatalf("the e-mail shown: %q", got)
	}
	if !checked("email") || !checked("telegram") || b.count(`[data-testid="channel-telegram-no-address"]`) != 1 || b.count(`[data-testid="channel-email-no-address"]`) != 0 {
		t.Fatal("both channels kept, Telegram without an address: not so on the page")
	}
	b.shot("me-ru")

	// Telegram off: saved, and shown so.
	b.do(chromedp.Click(tid("channel-telegram")), chromedp.Click(tid("channels-save")), chromedp.WaitVisible(tid("flash")))
	if off, err := g.store.NotifyOff(ctx, "anna"); err != nil || fmt.Sprint(off) != "[telegram]" {
		t.Fatalf("channels off after saving: %v %v", off, err)
	}
	if checked("telegram") || !checked("email") {
		t.Fatal("the page does not show Telegram off and e-mail on")
	}

	// A code, shown once, with the bot's link; the bot's reader links the chat.
	b.do(chromedp.Click(tid("telegram-get-code")), chromedp.WaitVisible(tid("telegram-code")))
	code := strings.TrimSpace(strings.TrimPrefix(b.text(tid("telegram-code")), "/start"))
	if len(code) != 8 {
		t.Fatalf("the code shown: %q", b.text(tid("telegram-code")))
	}
	href, err := run(b, chromedp.Evaluate[string](`document.querySelector('[data-testid="telegram-open-bot"]').href`))
	if err != nil || href != "https://t.me/firm_notices_bot?start="+code {
		t.Fatalf("the bot's link: %q %v", href, err)
	}
	b.shot("me-code")
	if name, err := g.store.LinkTelegram(ctx, code, "5005"); err != nil || name != "anna" {
		t.Fatalf("the code links: %q %v", name, err)
	}
	b.open("/admin/me")
	b.do(chromedp.WaitVisible(tid("telegram-linked")))
	if b.count(`[data-testid="telegram-code"]`) != 0 {
		t.Fatal("the code is shown again")
	}

	// Unlinked: the chat is gone.
	b.do(chromedp.Click(tid("telegram-unlink")), chromedp.WaitVisible(tid("telegram-not-linked")))
	if c, _ := g.store.ContactOf(ctx, "anna"); c.Telegram != "" || c.Email != "anna@firm.example" {
		t.Fatalf("after unlinking: %+v", c)
	}

	b.open("/admin/lang/en?next=%2Fadmin%2Fme")
	b.do(chromedp.WaitVisible(tid("me-page")))
	if got := b.text("h1"); got != "My notices" {
		t.Fatalf("the English title: %q", got)
	}
	b.shot("me-en")
}
