package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters/bitrix24"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/engine/enginetest"
	"github.com/oncegate/oncegate/server/intent"
	"github.com/oncegate/oncegate/server/notify"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

const (
	smtpPass = "smtp-pass-0f-the-notices"
	botToken = "987654321:BOT-token-that-is-a-secret-42"
	adminURL = "https://oncegate.firm.example"
)

// rig is a journal with its notifier, the mail server and the Bot API
// simulated over loopback, and a dispatcher started on demand.
type rig struct {
	t    *testing.T
	st   *store.Store
	mail *sim.SMTPSim
	tg   *sim.TelegramSim
	d    *notify.Dispatcher
	logs *enginetest.Log // the dispatcher's log
	// botURL is the Bot API simulator's address.
	botURL string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	st := storetest.Open(t)
	mail, err := sim.StartSMTP("127.0.0.1:0", sim.SMTPOptions{User: "notices", Password: smtpPass})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mail.Close() })
	tg := sim.NewTelegram(botToken)
	hs := httptest.NewServer(tg)
	t.Cleanup(hs.Close)
	cfg := config.NotifyConfig{
		AdminURL: adminURL,
		Email:    config.NotifyEmail{SMTPURLEnv: "SMTP", From: "Oncegate <oncegate@firm.example>"},
		Telegram: config.NotifyTelegram{BotTokenEnv: "BOT", BaseURL: hs.URL},
	}
	env := map[string]string{"SMTP": "smtp://notices:" + smtpPass + "@" + mail.Addr(), "BOT": botToken}
	secrets, err := config.Config{Notify: cfg}.NotifySecrets(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	st.SetNotifier(notify.Notifier(cfg, intent.Builtin(), nil))
	logs := &enginetest.Log{}
	d, err := notify.New(st, cfg, secrets, nil, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	d.Idle = 20 * time.Millisecond
	d.Schedule = []time.Duration{30 * time.Millisecond, 30 * time.Millisecond, 30 * time.Millisecond}
	d.LinkRetry = 20 * time.Millisecond
	return &rig{t: t, st: st, mail: mail, tg: tg, d: d, logs: logs, botURL: hs.URL}
}

// start runs the dispatcher until the test ends.
func (r *rig) start() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { r.d.Run(ctx) })
	r.t.Cleanup(func() { cancel(); wg.Wait() })
}

// person adds a user of role reachable at email and chat ("" for none).
func (r *rig) person(name, role, email, chat string) {
	r.t.Helper()
	ctx := context.Background()
	if _, err := r.st.CreateUser(ctx, name, role, "a-long-enough-password"); err != nil {
		r.t.Fatal(err)
	}
	if err := r.st.SetContact(ctx, name, store.Contact{Email: email, Telegram: chat}); err != nil {
		r.t.Fatal(err)
	}
}

// approval makes a card charge of 1 250,00 ₽ wait for its approval.
func (r *rig) approval(order string) string {
	r.t.Helper()
	key := "test:payment.charge:" + order + ":v1"
	payload, _ := json.Marshal(map[string]any{"amount_minor": 125000, "currency": "RUB", "order_id": order,
		"customer_id": "customer-1042", "description": "paid by card 4111 1111 1111 1111"})
	d, _, err := r.st.Claim(context.Background(), store.ClaimRequest{
		Key: key, Intent: "payment.charge", Fingerprint: strings.Repeat("1", 64), TargetSystem: "payments", Agent: "agent-a",
		Payload: payload, AwaitApproval: true, ApprovalTTL: time.Hour, Owner: "run-1", Lease: 30 * time.Second,
	})
	if err != nil || d != store.DecisionAwaitingApproval {
		r.t.Fatalf("claim %s: %v, %v", key, d, err)
	}
	return key
}

// settle waits until no notice is pending, then a little more, so a
// message sent twice would be seen.
func (r *rig) settle() {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ns, err := r.st.Notices(context.Background(), "", 1000)
		if err != nil {
			r.t.Fatal(err)
		}
		pending := 0
		for _, n := range ns {
			if n.State == store.NoticePending {
				pending++
			}
		}
		if pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%d notices still pending", pending)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
}

// mailsTo counts the e-mails to address.
func (r *rig) mailsTo(address string) []sim.Mail {
	var out []sim.Mail
	for _, m := range r.mail.Messages() {
		for _, to := range m.To {
			if to == address {
				out = append(out, m)
			}
		}
	}
	return out
}

// noSecrets fails the test if any message holds a secret: the bot's
// token, the mail server's password, the card number of the payload's
// description.
func (r *rig) noSecrets() {
	r.t.Helper()
	var texts []string
	for _, m := range r.mail.Messages() {
		texts = append(texts, m.Raw, m.Subject, m.Body)
	}
	for _, m := range r.tg.Messages() {
		texts = append(texts, m.Text)
	}
	for _, s := range texts {
		for _, secret := range []string{smtpPass, botToken, "4111 1111", "customer-1042", "paid by card"} {
			if strings.Contains(s, secret) {
				r.t.Errorf("a message holds %q:\n%s", secret, s)
			}
		}
	}
}

// An approval waiting reaches each accountant once on each channel they
// gave, saying what waits and linking its card; no one of another role
// or disabled hears of it.
func TestApprovalWaitingReachesEachApprover(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.person("anna", store.RoleAccountant, "anna@firm.example", "1001")
	r.person("boris", store.RoleAccountant, "boris@firm.example", "")
	r.person("vera", store.RoleAuditor, "vera@firm.example", "1003")
	r.person("gleb", store.RoleAccountant, "gleb@firm.example", "1004")
	if err := r.st.DisableUser(context.Background(), "gleb"); err != nil {
		t.Fatal(err)
	}
	r.start()
	key := r.approval("o-17")
	r.settle()

	for addr, want := range map[string]int{"anna@firm.example": 1, "boris@firm.example": 1, "vera@firm.example": 0, "gleb@firm.example": 0} {
		if got := len(r.mailsTo(addr)); got != want {
			t.Errorf("%s got %d e-mails, want %d", addr, got, want)
		}
	}
	chats := map[string]int{}
	for _, m := range r.tg.Messages() {
		chats[m.ChatID]++
	}
	if fmt.Sprint(chats) != "map[1001:1]" {
		t.Errorf("Telegram messages by chat %v, want one to 1001", chats)
	}
	link := adminURL + "/admin/operations/" + strings.ReplaceAll(key, ":", "%3A")
	m := r.mailsTo("anna@firm.example")
	if len(m) == 1 {
		for _, want := range []string{"Ждёт вашего решения", "1\u00a0250,00\u00a0₽", "Заказ: o-17", link, "₽1,250.00"} {
			if !strings.Contains(m[0].Body, want) {
				t.Errorf("the e-mail lacks %q:\n%s", want, m[0].Body)
			}
		}
		if !strings.Contains(m[0].Subject, "1\u00a0250,00\u00a0₽") || m[0].From != "oncegate@firm.example" {
			t.Errorf("subject %q from %q", m[0].Subject, m[0].From)
		}
	}
	if tg := r.tg.Messages(); len(tg) == 1 && !strings.Contains(tg[0].Text, link) {
		t.Errorf("the Telegram message lacks the card's link:\n%s", tg[0].Text)
	}
	r.noSecrets()
}

// A mail server down for a while: the e-mail is tried again and arrives
// once it is back, exactly once; the journal keeps the tries.
func TestMailServerDownThenUp(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.person("anna", store.RoleAccountant, "anna@firm.example", "")
	r.mail.Down(2)
	r.tg.Down(2)
	r.start()
	r.approval("o-18")
	r.settle()
	if got := len(r.mailsTo("anna@firm.example")); got != 1 {
		t.Fatalf("%d e-mails after the mail server came back, want 1", got)
	}
	ns, err := r.st.Notices(context.Background(), "anna", 10)
	if err != nil || len(ns) != 1 || ns[0].State != store.NoticeSent || ns[0].Attempts != 3 {
		t.Fatalf("notices %+v, %v; want one sent on the third try", ns, err)
	}
	if strings.Contains(ns[0].LastError, smtpPass) || !strings.Contains(ns[0].LastError, "421") {
		t.Errorf("the journal's error %q", ns[0].LastError)
	}
	r.noSecrets()
}

// Fifty approvals for one person are one digest, not fifty e-mails: how
// many wait, the first of them with their cards, and the queue's link.
func TestFiftyApprovalsAreADigest(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.person("anna", store.RoleAccountant, "anna@firm.example", "1001")
	for i := range 50 {
		r.approval(fmt.Sprintf("o-%d", 100+i))
	}
	r.start()
	r.settle()
	m := r.mailsTo("anna@firm.example")
	if len(m) != 1 {
		t.Fatalf("%d e-mails for fifty approvals, want one digest", len(m))
	}
	for _, want := range []string{"уведомлений: 50", "notices: 50", "… и ещё 30", adminURL + "/admin/approvals", "1\u00a0250,00\u00a0₽"} {
		if !strings.Contains(m[0].Body, want) {
			t.Errorf("the digest lacks %q:\n%s", want, m[0].Body)
		}
	}
	if tg := r.tg.Messages(); len(tg) != 1 || !strings.Contains(tg[0].Text, "notices: 50") {
		t.Errorf("%d Telegram messages for fifty approvals, want one digest", len(tg))
	}
	r.noSecrets()
}

// claim claims an invoice of order for run-1 (executing it), held instead
// when an earlier operation has the same business key.
func (r *rig) invoice(order string, hold bool) (store.Decision, string) {
	r.t.Helper()
	key := "test:invoice.create:" + order + ":v1"
	payload, _ := json.Marshal(map[string]any{"order_id": order, "customer_id": "customer-1042", "amount_minor": 990000, "currency": "RUB"})
	req := store.ClaimRequest{
		Key: key, Intent: "invoice.create", Fingerprint: strings.Repeat("2", 64), TargetSystem: "onec", Agent: "agent-a",
		Payload: payload, Owner: "run-1", Lease: 30 * time.Second,
	}
	if hold {
		req.Duplicates = &store.DuplicateCheck{BusinessKey: strings.Repeat("b", 64), Window: time.Hour, Action: store.DuplicateHold}
	}
	d, _, err := r.st.Claim(context.Background(), req)
	if err != nil {
		r.t.Fatalf("claim %s: %v", key, err)
	}
	return d, key
}

// A suspected duplicate held reaches whoever may settle it (admins,
// operators, accountants); an operation the reconciler gave up on reaches
// whoever may review it (admins, operators). An auditor hears of neither.
func TestHeldDuplicateAndReviewReachTheirRoles(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.person("adm", store.RoleAdmin, "adm@firm.example", "")
	r.person("acc", store.RoleAccountant, "acc@firm.example", "")
	r.person("ops", store.RoleOperator, "ops@firm.example", "")
	r.person("aud", store.RoleAuditor, "aud@firm.example", "")
	r.start()
	ctx := context.Background()

	// The first invoice of the business event runs, and its outcome is
	// lost: unknown, then flagged after one failed look-up.
	if d, _ := r.invoice("inv-1", true); d != store.DecisionExecute {
		t.Fatalf("the first invoice: %v", d)
	}
	if d, _ := r.invoice("inv-2", true); d != store.DecisionAwaitingApproval {
		t.Fatalf("the second invoice of the same business event: %v, want held", d)
	}
	key := "test:invoice.create:inv-1:v1"
	if err := r.st.MarkUnknown(ctx, key, "run-1", "", store.Failure{Code: "TARGET_TIMEOUT", Message: "no answer"}, r.st.Now()); err != nil {
		t.Fatal(err)
	}
	op, err := r.st.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.st.TakeForReconcile(ctx, op, "run-2", time.Minute); err != nil {
		t.Fatal(err)
	}
	if flagged, err := r.st.LookupFailed(ctx, key, "run-2", "", "", 1, r.st.Now().Add(time.Hour)); err != nil || !flagged {
		t.Fatalf("look-up failed: flagged %v, %v", flagged, err)
	}
	r.settle()

	subjects := func(addr string) []string {
		var out []string
		for _, m := range r.mailsTo(addr) {
			out = append(out, strings.SplitN(m.Subject, ":", 2)[0])
		}
		return out
	}
	const held, review = "Задержано как возможный дубль", "Исход не установлен, нужна проверка"
	for addr, want := range map[string]string{
		"adm@firm.example": fmt.Sprint([]string{held, review}),
		"ops@firm.example": fmt.Sprint([]string{held, review}),
		"acc@firm.example": fmt.Sprint([]string{held}),
		"aud@firm.example": fmt.Sprint([]string(nil)),
	} {
		if got := fmt.Sprint(subjects(addr)); got != want {
			t.Errorf("%s was told %s, want %s", addr, got, want)
		}
	}
	r.noSecrets()
}

// With notify.bitrix24, an approval waiting is the portal's own
// notification to the portal's user with the accountant's e-mail, once;
// someone the portal does not know gets none, and the journal says why.
func TestPortalNotified(t *testing.T) {
	t.Parallel()
	s := sim.New()
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	if resp, err := http.Post(hs.URL+"/_sim/bitrix24/users", "application/json", strings.NewReader(`{"email": "anna@firm.example"}`)); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	portal, err := bitrix24.New(bitrix24.Config{WebhookURL: hs.URL + "/bitrix24" + sim.Bitrix24WebhookPath(), Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.NotifyConfig{AdminURL: adminURL, Bitrix24: config.NotifyBitrix24{Target: "crm"}}
	st := storetest.Open(t)
	st.SetNotifier(notify.Notifier(cfg, intent.Builtin(), nil))
	d, err := notify.New(st, cfg, config.NotifySecrets{}, portal.Secrets(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	d.SetPortal(portal)
	d.Idle, d.Schedule = 20*time.Millisecond, []time.Duration{20 * time.Millisecond}
	r := &rig{t: t, st: st, d: d}
	r.person("anna", store.RoleAccountant, "anna@firm.example", "1001")
	r.person("boris", store.RoleAccountant, "boris@firm.example", "")
	r.start()
	key := r.approval("o-31")
	r.settle()

	resp, err := http.Get(hs.URL + "/_sim/bitrix24/notifications")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct{ Notifications []sim.Bitrix24Notification }
	json.NewDecoder(resp.Body).Decode(&got)
	if len(got.Notifications) != 1 || !strings.Contains(got.Notifications[0].Message, strings.ReplaceAll(key, ":", "%3A")) {
		t.Fatalf("portal notifications %+v, want one with the card's link", got.Notifications)
	}
	ns, _ := st.Notices(context.Background(), "boris", 10)
	if len(ns) != 1 || ns[0].State != store.NoticeFailed || !strings.Contains(ns[0].LastError, "no active user") {
		t.Fatalf("boris's notice %+v", ns)
	}
}

// A process waiting for a person to finish undoing a step reaches the
// admins and operators, linking the process's page.
func TestProcessNeedsReviewReachesOperators(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.person("olga", store.RoleOperator, "olga@firm.example", "")
	r.person("anna", store.RoleAccountant, "anna@firm.example", "")
	r.start()
	ctx := context.Background()
	const key = "test:order.fulfil:order-n1:v1"
	if _, _, err := r.st.BeginProcess(ctx, store.Process{Key: key, Intent: "order.fulfil", IntentVersion: 1, IntentDigest: "d", Fingerprint: "f",
		Agent: "agent-a", Scopes: []string{"write"}, Payload: []byte(`{"order_id":"order-n1"}`)}, "run-1", time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := r.st.MoveProcess(ctx, key, "run-1", store.ProcessNeedsReview, "invoice", "APPROVAL_DENIED", "denied"); err != nil {
		t.Fatal(err)
	}
	r.settle()
	mails := r.mailsTo("olga@firm.example")
	if len(mails) != 1 || !strings.Contains(mails[0].Body, adminURL+"/admin/processes/test:order.fulfil:order-n1:v1") || !strings.Contains(mails[0].Body, "order-n1") {
		t.Fatalf("the operator's mails: %+v", mails)
	}
	if n := len(r.mailsTo("anna@firm.example")); n != 0 {
		t.Errorf("%d mails to an accountant", n)
	}
	r.noSecrets()
}

// A webhook endpoint paused after failing for days reaches the admins,
// linking the webhooks page; no one else.
func TestPausedWebhookReachesAdmins(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.person("ivan", store.RoleAdmin, "ivan@firm.example", "")
	r.person("olga", store.RoleOperator, "olga@firm.example", "")
	r.start()
	if err := r.st.StopEndpoint(context.Background(), "erp", "paused", "every delivery failed for five days"); err != nil {
		t.Fatal(err)
	}
	r.settle()
	mails := r.mailsTo("ivan@firm.example")
	if len(mails) != 1 || !strings.Contains(mails[0].Body, adminURL+"/admin/webhooks") || !strings.Contains(mails[0].Subject, "erp") {
		t.Fatalf("the admin's mails: %+v", mails)
	}
	if n := len(r.mailsTo("olga@firm.example")); n != 0 {
		t.Errorf("%d mails to an operator", n)
	}
	r.noSecrets()
}

// A channel whose latest notice did not go through is named, with its
// error, for the dashboard's warning; once one goes through it is not.
func TestFailingChannelShown(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.person("anna", store.RoleAccountant, "anna@firm.example", "")
	r.mail.Down(1000)
	r.start()
	r.approval("o-19")
	deadline := time.Now().Add(10 * time.Second)
	for {
		failing, err := r.st.FailingChannels(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if msg, ok := failing[store.ChannelEmail]; ok {
			if !strings.Contains(msg, "421") || strings.Contains(msg, smtpPass) {
				t.Fatalf("the failing channel's error %q", msg)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the failing mail server is not shown")
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.mail.Down(0)
	r.settle() // the first one sent on a later try, or failed for good
	r.approval("o-20")
	r.settle()
	if failing, err := r.st.FailingChannels(context.Background()); err != nil || len(failing) != 0 {
		t.Fatalf("after a notice went through: %v %v", failing, err)
	}
}
