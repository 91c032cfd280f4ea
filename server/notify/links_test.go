package notify_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/engine/enginetest"
	"github.com/oncegate/oncegate/server/notify"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// Chat ids of people writing to the bot: long enough not to turn up in
// a log by chance.
const (
	annaChat  = 740123981
	borisChat = 740123982
	strayChat = 740123983
)

// code issues user name a code to link their chat.
func (r *rig) code(name string) string {
	r.t.Helper()
	code, _, err := r.st.NewTelegramLink(context.Background(), name)
	if err != nil {
		r.t.Fatal(err)
	}
	return code
}

// answers waits for n messages the bot sent to chat, and a little more
// so a further one would be seen.
func (r *rig) answers(chat string, n int) []string {
	r.t.Helper()
	var out []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		out = nil
		for _, m := range r.tg.Messages() {
			if m.ChatID == chat {
				out = append(out, m.Text)
			}
		}
		if len(out) >= n {
			break
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%d answers in chat %s, want %d; the log:\n%s", len(out), chat, n, r.logs)
		}
	}
	time.Sleep(100 * time.Millisecond)
	out = nil
	for _, m := range r.tg.Messages() {
		if m.ChatID == chat {
			out = append(out, m.Text)
		}
	}
	return out
}

// chatOf is the Telegram chat notices reach name in.
func (r *rig) chatOf(name string) string {
	r.t.Helper()
	c, err := r.st.ContactOf(context.Background(), name)
	if err != nil {
		r.t.Fatal(err)
	}
	return c.Telegram
}

// noLeaks fails the test if a message the bot sent holds a code, or the
// log holds a code, a chat id or the bot's token.
func (r *rig) noLeaks(codes ...string) {
	r.t.Helper()
	log := r.logs.String()
	for _, m := range r.tg.Messages() {
		for _, c := range codes {
			if strings.Contains(strings.ToUpper(m.Text), c) {
				r.t.Errorf("the bot's message in chat %s holds a code:\n%s", m.ChatID, m.Text)
			}
		}
	}
	for _, s := range append(codes, botToken, "740123") {
		if strings.Contains(strings.ToUpper(log), strings.ToUpper(s)) {
			r.t.Errorf("the log holds %q:\n%s", s, log)
		}
	}
	r.noSecrets()
}

const (
	linked  = "Готово: уведомления oncegate для %s будут приходить сюда.\nDone: oncegate notices for %s come here."
	unknown = "Код не подошёл или устарел: получите новый на своей странице в oncegate.\nThis code is unknown or expired: get a new one on your page in oncegate."
)

func linkedReply(name string) string { return strings.ReplaceAll(linked, "%s", name) }

// A person who sends the bot /start with their code (what the t.me link
// sends), or the code alone in any case, has their chat linked and is
// told so there; the notices then reach them in it.
func TestTelegramStartCodeLinksTheChat(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.person("anna", store.RoleAccountant, "", "")
	r.person("boris", store.RoleAccountant, "", "")
	anna, boris := r.code("anna"), r.code("boris")
	r.start()
	r.tg.Say(annaChat, "/start "+anna)
	r.tg.Say(borisChat, "  "+strings.ToLower(boris[:4]+"-"+boris[4:])+" ")

	if got := r.answers("740123981", 1); len(got) != 1 || got[0] != linkedReply("anna") {
		t.Fatalf("anna's answers %q", got)
	}
	if got := r.answers("740123982", 1); len(got) != 1 || got[0] != linkedReply("boris") {
		t.Fatalf("boris's answers %q", got)
	}
	if a, b := r.chatOf("anna"), r.chatOf("boris"); a != "740123981" || b != "740123982" {
		t.Fatalf("chats linked: anna %q, boris %q", a, b)
	}
	r.approval("o-41")
	r.settle()
	if got := r.answers("740123981", 2); len(got) != 2 || !strings.Contains(got[1], "Ждёт вашего решения") {
		t.Fatalf("anna's messages after the approval %q", got)
	}
	// Anna's message read again (a restart before its update was
	// confirmed): her chat is linked, and she is told so, not that the
	// code is unknown.
	r.tg.Say(annaChat, "/start "+anna)
	if got := r.answers("740123981", 3); len(got) != 3 || !strings.Contains(got[2], "уже привязан") || !strings.Contains(got[2], "anna") {
		t.Fatalf("anna's answer to her spent code %q", got)
	}
	r.noLeaks(anna, boris)
}

// A code no one was given, or one already spent, links nothing and is
// answered that it is unknown or expired; any other message is answered
// how to link; a group is not answered.
func TestTelegramWrongOrSpentCodeLinksNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.person("anna", store.RoleAccountant, "", "")
	code := r.code("anna")
	wrong := "ABCD2345"
	if code == wrong {
		wrong = "ABCD2346"
	}
	r.start()
	r.tg.Say(strayChat, "/start "+wrong)
	if got := r.answers("740123983", 1); len(got) != 1 || got[0] != unknown {
		t.Fatalf("a wrong code's answers %q", got)
	}
	if c := r.chatOf("anna"); c != "" {
		t.Fatalf("a wrong code linked %q", c)
	}
	r.tg.Say(annaChat, "/start "+code)
	r.answers("740123981", 1)
	r.tg.Say(strayChat, "/start "+code)
	r.tg.Say(strayChat, code)
	if got := r.answers("740123983", 3); len(got) != 3 || got[1] != unknown || got[2] != unknown {
		t.Fatalf("a spent code's answers %q", got)
	}
	if c := r.chatOf("anna"); c != "740123981" {
		t.Fatalf("a spent code moved anna's chat to %q", c)
	}
	r.tg.Say(strayChat, "Здравствуйте! Как получать уведомления?")
	r.tg.Say(strayChat, "/start")
	got := r.answers("740123983", 5)
	for _, hint := range got[3:] {
		if !strings.Contains(hint, "/start") || !strings.Contains(hint, adminURL+"/admin/me") || hint == unknown {
			t.Fatalf("the answer to a message without a code %q", hint)
		}
	}
	r.noLeaks(code, wrong)
}

// A Bot API that fails for a while (502, then 409 as another process
// reads the same bot) delays the link but does not stop the reading: the
// chat is linked once it answers.
func TestTelegramLinkWhileBotAPIDown(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.person("anna", store.RoleAccountant, "", "")
	code := r.code("anna")
	r.tg.Down(4)
	r.start()
	for deadline := time.Now().Add(10 * time.Second); !r.tg.Polling(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the bot's messages are not read after it came back (%d calls); the log:\n%s", r.tg.Calls(), r.logs)
		}
	}
	if calls := r.tg.Calls(); calls < 5 {
		t.Fatalf("%d calls of the Bot API, want the four refused and one held", calls)
	}
	// Another reader of the bot: its long poll ends the dispatcher's with
	// 409 Conflict, and the dispatcher's next one ends it.
	resp, err := http.Post(r.botURL+"/bot"+botToken+"/getUpdates", "application/json", strings.NewReader(`{"timeout": 5}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("the other reader's long poll answered %d, want 409 as the dispatcher polled again", resp.StatusCode)
	}
	r.tg.Say(annaChat, "/start "+code)
	if got := r.answers("740123981", 1); len(got) != 1 || got[0] != linkedReply("anna") {
		t.Fatalf("anna's answers %q", got)
	}
	if c := r.chatOf("anna"); c != "740123981" {
		t.Fatalf("anna's chat %q", c)
	}
	if log := r.logs.String(); !strings.Contains(log, "HTTP 502") || !strings.Contains(log, "read again") {
		t.Errorf("the failing reads are not logged:\n%s", log)
	}
	r.noLeaks(code)
}

// The dispatcher ends at once when its context is done, its long poll
// of the bot's messages held.
func TestRunEndsWhileReadingTheBot(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.d.Run(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); !r.tg.Polling(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("the bot's messages are not read")
		}
	}
	start := time.Now()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not end within 5 s of its context")
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Run ended %v after its context", took)
	}
}

// A Bot API that cannot be reached is read again and again, and the log
// says so without the bot's token or the address that holds it.
func TestTelegramUnreachableLogsNoToken(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	cfg := config.NotifyConfig{AdminURL: adminURL, Telegram: config.NotifyTelegram{BotTokenEnv: "BOT", BaseURL: closed}}
	secrets, err := config.Config{Notify: cfg}.NotifySecrets(func(string) string { return botToken })
	if err != nil {
		t.Fatal(err)
	}
	logs := &enginetest.Log{}
	d, err := notify.New(storetest.Open(t), cfg, secrets, nil, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	d.LinkRetry = 5 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	d.Run(ctx)
	log := logs.String()
	if !strings.Contains(log, "the Bot API could not be reached") {
		t.Fatalf("the log does not say the Bot API is unreachable:\n%s", log)
	}
	for _, s := range []string{botToken, "/bot", ln.Addr().String()} {
		if strings.Contains(log, s) {
			t.Errorf("the log holds %q:\n%s", s, log)
		}
	}
}
