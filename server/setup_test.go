package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/server"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/engine/enginetest"
	"github.com/oncegate/oncegate/server/intent"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// gateway is a real Echo app over a real journal file, talking over
// loopback to real simulators.
type gateway struct {
	t      testing.TB
	srv    *server.Server
	store  *store.Store
	sim    *sim.Server
	simURL string // the simulators' base URL
	url    string
	token  string // scopes read, draft, write, post
	client *http.Client
	// stop shuts the gateway down gracefully and returns Serve's error.
	stop func() error
	// The workers' events: the reconciler settled a row, the executor ran
	// an approved operation or ended an expired approval.
	reconciled, executed, expired *event
}

// event tells every test waiting on one kind of worker event that one
// happened.
type event struct {
	mu   sync.Mutex
	next chan struct{} // closed at the next event
}

func newEvent() *event { return &event{next: make(chan struct{})} }

// wait returns a channel closed at the next event.
func (e *event) wait() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.next
}

func (e *event) fire() {
	e.mu.Lock()
	defer e.mu.Unlock()
	close(e.next)
	e.next = make(chan struct{})
}

// relay fires e at each value sig carries, until done is closed.
func relay[T any](sig <-chan T, e *event, done <-chan struct{}) {
	for {
		select {
		case <-sig:
			e.fire()
		case <-done:
			return
		}
	}
}

// await waits for cond to hold, checking it at each event e, and fails
// after 10 s of events that did not make it hold.
func await(tb testing.TB, what string, e *event, cond func() bool) {
	tb.Helper()
	timeout := time.After(10 * time.Second)
	for {
		next := e.wait() // before cond: an event in between is not missed
		if cond() {
			return
		}
		select {
		case <-next:
		case <-timeout:
			tb.Fatalf("timed out waiting for %s", what)
		}
	}
}

// testConfig is the default configuration with timeouts and delays small
// enough for tests.
func testConfig() config.Config {
	cfg := config.Default()
	cfg.Targets["onec"].TimeoutMS = 1000
	cfg.Targets["crm"].TimeoutMS = 1000
	cfg.Targets["payments"].TimeoutMS = 1000
	cfg.Retry.InitialDelayMS = 10
	cfg.Retry.MaxDelayMS = 40
	return cfg
}

// fastConfig makes the background workers and timeouts quick.
func fastConfig() config.Config {
	cfg := testConfig()
	cfg.Targets["onec"].TimeoutMS = 300
	cfg.Targets["payments"].TimeoutMS = 300
	cfg.Reconciler.IntervalMS = 50
	cfg.Reconciler.MaxBackoffMS = 100
	cfg.Reconciler.ReviewAfter = 2
	return cfg
}

func charge(order string, amount int) []byte {
	b, _ := json.Marshal(map[string]any{
		"schema_version": "1.0", "intent": "payment.charge",
		"payload": map[string]any{"account_id": "merchant-account-17", "order_id": order, "amount_minor": amount, "currency": "RUB"},
	})
	return b
}

// payer submits a charge with a pay token.
func (g *gateway) charge(token, key, order string, amount int) reply {
	g.t.Helper()
	return g.do("POST", "/v1/operations", token, map[string]string{"Idempotency-Key": key}, charge(order, amount))
}

func (g *gateway) approval(key string) store.Approval {
	g.t.Helper()
	a, err := g.store.ApprovalByKey(context.Background(), key)
	if err != nil {
		g.t.Fatal(err)
	}
	return a
}

func setup(tb testing.TB) *gateway { return setupWith(tb, testConfig()) }

func setupWith(tb testing.TB, cfg config.Config) *gateway {
	tb.Helper()
	return serveOver(tb, cfg, openJournal(tb))
}

// openJournal opens a new journal, closed at cleanup (storetest.Open).
func openJournal(tb testing.TB) *store.Store {
	tb.Helper()
	return storetest.Open(tb)
}

// simulated serves the simulators over loopback and builds the three
// targets at them with cfg's call timeouts: what serve builds for a
// configuration that points at no real system.
func simulated(tb testing.TB, cfg config.Config) adapterstest.Simulated {
	tb.Helper()
	ms := func(target string) time.Duration {
		return time.Duration(cfg.Targets[target].TimeoutMS) * time.Millisecond
	}
	return adapterstest.Start(tb, adapterstest.Timeouts{OneC: ms("onec"), CRM: ms("crm"), Payments: ms("payments")})
}

// mustCatalog loads the whitelist cfg names (intents_dir,
// builtin_intents, limits) for targets and binds it to them, as serve does.
func mustCatalog(tb testing.TB, cfg config.Config, targets map[string]adapters.Target) *intent.Catalog {
	tb.Helper()
	c, err := intent.Load(intent.Options{Dir: cfg.IntentsDir, Builtins: cfg.BuiltinIntents, Targets: slices.Collect(maps.Keys(targets)), Limits: cfg.Limits})
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.Bind(targets); err != nil {
		tb.Fatal(err)
	}
	return c
}

// serveOver runs the gateway with cfg over the journal st.
func serveOver(tb testing.TB, cfg config.Config, st *store.Store) *gateway {
	tb.Helper()
	return serveAt(tb, cfg, st, simulated(tb, cfg))
}

// serveAt runs the gateway with cfg over the journal st and the targets
// at sims, which other gateways may share.
func serveAt(tb testing.TB, cfg config.Config, st *store.Store, sims adapterstest.Simulated) *gateway {
	tb.Helper()
	ctx := context.Background()
	targets := sims.Targets
	// The gateway's log: all of it for a test being debugged, its last
	// lines when a test fails (a rare failure in CI says what happened).
	var logTo io.Writer = os.Stderr
	if os.Getenv("ONCEGATE_TEST_LOG") == "" {
		kept := &enginetest.Log{}
		logTo = kept
		tb.Cleanup(func() {
			if tb.Failed() {
				tb.Logf("the gateway's log, last lines:\n%s", kept.Tail(60))
			}
		})
	}
	log := slog.New(slog.NewTextHandler(logTo, nil))
	srv := server.New(cfg, st, targets, mustCatalog(tb, cfg, targets), log)
	if len(cfg.Webhooks) > 0 {
		secrets, err := cfg.WebhookSecrets(func(name string) string { return testWebhookSecrets[name] })
		if err != nil {
			tb.Fatal(err)
		}
		if err := srv.SetWebhookSecrets(secrets); err != nil {
			tb.Fatal(err)
		}
	}
	signals := srv.InitTestSignals()
	if err := srv.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	reconciled, executed, expired := newEvent(), newEvent(), newEvent()
	relaying := make(chan struct{})
	tb.Cleanup(func() { close(relaying) })
	go relay(signals.Reconciled, reconciled, relaying)
	go relay(signals.Executed, executed, relaying)
	go relay(signals.Expired, expired, relaying)
	// Serve for real: the HTTP server and the background workers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(serveCtx, ln) }()
	var once sync.Once
	var serveErr error
	shutdown := func() error {
		once.Do(func() { stop(); serveErr = <-served })
		return serveErr
	}
	tb.Cleanup(func() {
		if err := shutdown(); err != nil {
			tb.Errorf("serve: %v", err)
		}
	})

	secret, _, err := st.CreateToken(ctx, "agent-a", []string{"read", "draft", "write", "post"})
	if err != nil {
		tb.Fatal(err)
	}
	return &gateway{t: tb, srv: srv, store: st, sim: sims.Sim, simURL: sims.URL, url: "http://" + ln.Addr().String(), token: secret, client: &http.Client{}, stop: shutdown,
		reconciled: reconciled, executed: executed, expired: expired}
}

// MustToken makes another agent token.
func (g *gateway) MustToken(agent string, scopes ...string) string {
	g.t.Helper()
	secret, _, err := g.store.CreateToken(context.Background(), agent, scopes)
	if err != nil {
		g.t.Fatal(err)
	}
	return secret
}

// reply is an answer as an agent sees it.
type reply struct {
	Code   int
	Header http.Header
	Body   map[string]any
	Raw    string
}

// str returns a top-level string field of the body.
func (r reply) str(field string) string {
	s, _ := r.Body[field].(string)
	return s
}

// errCode, errField and errMessage return the first error's code, field
// and message, or "".
func (r reply) errCode() string    { return r.firstError("code") }
func (r reply) errField() string   { return r.firstError("field") }
func (r reply) errMessage() string { return r.firstError("message") }

func (r reply) firstError(member string) string {
	errs, _ := r.Body["errors"].([]any)
	if len(errs) == 0 {
		return ""
	}
	e, _ := errs[0].(map[string]any)
	s, _ := e[member].(string)
	return s
}

// do sends a request with the agent's token.
func (g *gateway) do(method, path, token string, header map[string]string, body []byte) reply {
	g.t.Helper()
	h := http.Header{}
	if body != nil {
		h.Set("Content-Type", "application/json")
	}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		h.Set(k, v)
	}
	return g.send(method, path, h, body)
}

// send sends a request with exactly header: no token or media type of
// its own, and a header may hold several lines.
func (g *gateway) send(method, path string, header http.Header, body []byte) reply {
	g.t.Helper()
	req, err := http.NewRequest(method, g.url+path, bytes.NewReader(body))
	if err != nil {
		g.t.Fatal(err)
	}
	req.Header = header
	resp, err := g.client.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{Code: resp.StatusCode, Header: resp.Header, Raw: string(raw)}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &r.Body); err != nil {
			g.t.Fatalf("%s %s: answer is not JSON: %s", method, path, raw)
		}
	}
	return r
}

// post submits an operation with key in the Idempotency-Key header.
func (g *gateway) post(key string, envelope map[string]any) reply {
	g.t.Helper()
	body, _ := json.Marshal(envelope)
	h := map[string]string{}
	if key != "" {
		h["Idempotency-Key"] = key
	}
	return g.do("POST", "/v1/operations", g.token, h, body)
}

// invoice is an invoice.create envelope for order with quantity, its
// currency spelt in lower case as in docs/api.md's example.
func invoice(order string, quantity float64) map[string]any {
	payload := adapterstest.InvoicePayload(order, quantity)
	payload["currency"] = "rub"
	return map[string]any{"schema_version": "1.0", "intent": "invoice.create", "actor_id": "user-42", "payload": payload}
}

// row reads the journal row of key.
func (g *gateway) row(key string) store.Operation {
	g.t.Helper()
	op, err := g.store.Get(context.Background(), key)
	if err != nil {
		g.t.Fatalf("journal row %s: %v", key, err)
	}
	return op
}

func (g *gateway) inject(f sim.Fault) {
	g.t.Helper()
	if err := g.sim.Inject(f); err != nil {
		g.t.Fatal(err)
	}
}

// answerFields are the fields (docs/api.md, Answers) that every answer to a
// POST or GET of an operation carries, whatever its outcome.
var answerFields = []string{"operation_key", "request_id", "operation", "state", "status", "target_system", "target_object_id", "result", "errors", "fingerprint", "attempt_count", "replayed"}

// expect asserts an answer's HTTP status, state and first error code,
// that it carries every field of the answer, and that its status is the
// state (200, 202) or the HTTP status as a number (a problem answer).
func expect(tb testing.TB, r reply, code int, state, errCode string) {
	tb.Helper()
	if r.Code != code || r.str("state") != state || r.errCode() != errCode {
		tb.Fatalf("got HTTP %d state %q code %q, want %d %q %q; body %s", r.Code, r.str("state"), r.errCode(), code, state, errCode, r.Raw)
	}
	for _, f := range answerFields {
		if _, ok := r.Body[f]; !ok {
			tb.Fatalf("the answer lacks %q: %s", f, r.Raw)
		}
	}
	expectStatusMember(tb, r)
}

// expectStatusMember asserts an answer's status member: the state in a
// 200 or 202 answer, the HTTP status as a number in a problem answer
// (RFC 9457 section 3.1.3).
func expectStatusMember(tb testing.TB, r reply) {
	tb.Helper()
	if r.Code < 400 {
		if got, want := r.Body["status"], r.Body["state"]; got != want {
			tb.Fatalf("HTTP %d: status %v, want the state %v; body %s", r.Code, got, want, r.Raw)
		}
		return
	}
	if got, want := r.Body["status"], float64(r.Code); got != want {
		tb.Fatalf("problem answer: status %v (%T), want the HTTP status %v as a number; body %s", got, got, want, r.Raw)
	}
}
