package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/store"
)

// The verification steps of the idempotency article, one test each,
// against the real app, a real journal file and the 1C simulator.

// (1) A key and its payload give one result.
func TestExecuteOnce(t *testing.T) {
	t.Parallel()
	g := setup(t)
	const key = "test:invoice.create:order-demo-1:v1"
	r := g.post(key, invoice("order-demo-1", 2))
	expect(t, r, http.StatusOK, "succeeded", "")
	if r.str("operation_key") != key || r.str("operation") != "invoice.create" || r.str("target_system") != "onec" {
		t.Fatalf("answer = %s", r.Raw)
	}
	if !strings.HasPrefix(r.str("target_object_id"), "INV-") || r.Body["replayed"] != false || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("answer = %s", r.Raw)
	}
	if got := r.Body["attempt_count"]; got != 1.0 {
		t.Fatalf("attempt_count = %v, want 1", got)
	}
	op := g.row(key)
	if op.Status != store.StatusSucceeded || op.TargetObjectID != r.str("target_object_id") || op.Agent != "agent-a" || op.ActorID != "user-42" {
		t.Fatalf("journal row = %+v", op)
	}
	if op.Fingerprint != r.str("fingerprint") || len(op.Fingerprint) != 64 {
		t.Fatalf("fingerprint %q vs answer %q", op.Fingerprint, r.str("fingerprint"))
	}
}

// (2) the same key and payload replay with Idempotent-Replayed: true,
// (3) with the same target_object_id, and (4) the target counts one effect.
func TestReplay(t *testing.T) {
	t.Parallel()
	g := setup(t)
	const key = "test:invoice.create:order-demo-2:v1"
	first := g.post(key, invoice("order-demo-2", 2))
	expect(t, first, http.StatusOK, "succeeded", "")
	for range 3 {
		again := g.post(key, invoice("order-demo-2", 2))
		expect(t, again, http.StatusOK, "succeeded", "")
		if again.Header.Get("Idempotent-Replayed") != "true" || again.Body["replayed"] != true {
			t.Fatalf("replay not marked: %v %s", again.Header, again.Raw)
		}
		if got, want := again.str("target_object_id"), first.str("target_object_id"); got != want {
			t.Fatalf("replayed object %q, first %q", got, want)
		}
	}
	if got := g.sim.Effects(sim.OneC, key); got != 1 {
		t.Fatalf("effects at 1C = %d, want 1", got)
	}
	if got := g.sim.Calls(sim.OneC, key); got != 1 {
		t.Fatalf("calls to 1C = %d, want 1", got)
	}
}

// (5) The same key with a changed quantity is refused and makes no effect.
func TestPayloadMismatch(t *testing.T) {
	t.Parallel()
	g := setup(t)
	const key = "test:invoice.create:order-demo-3:v1"
	expect(t, g.post(key, invoice("order-demo-3", 2)), http.StatusOK, "succeeded", "")
	r := g.post(key, invoice("order-demo-3", 3))
	expect(t, r, http.StatusUnprocessableEntity, "rejected", "IDEMPOTENCY_KEY_PAYLOAD_MISMATCH")
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("content type %q", ct)
	}
	if r.str("type") == "" || r.str("title") == "" || r.str("detail") == "" {
		t.Fatalf("problem fields missing: %s", r.Raw)
	}
	if got := g.sim.Calls(sim.OneC, key); got != 1 {
		t.Fatalf("calls to 1C = %d, want 1", got)
	}
	if got := g.row(key).Status; got != store.StatusSucceeded {
		t.Fatalf("row status %s", got)
	}
	// The refusal is of this request; the key's own operation is told,
	// so the agent does not conclude that nothing happened.
	first := g.row(key).TargetObjectID
	ko, _ := r.Body["key_operation"].(map[string]any)
	if ko["state"] != "succeeded" || ko["target_object_id"] != first || first == "" {
		t.Fatalf("key_operation %v, want succeeded with object %q: %s", r.Body["key_operation"], first, r.Raw)
	}
	if msg := r.errMessage(); !strings.Contains(msg, "is succeeded, object "+first) {
		t.Fatalf("the mismatch does not say what the key's operation is: %q", msg)
	}
}

// An operation awaiting approval says when the decision is due; a denial
// carries the person's reason and what the agent may do.
func TestApprovalAnswersSayWhatNext(t *testing.T) {
	t.Parallel()
	g := setup(t)
	payer := g.MustToken("agent-pay", "pay")
	const key = "test:payment.charge:order-next-1:v1"
	r := g.charge(payer, key, "order-next-1", 125000)
	expect(t, r, http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")
	due := g.approval(key).ExpiresAt.UTC().Format(time.RFC3339)
	if r.str("approval_expires_at") != due || !strings.Contains(r.errMessage(), "by "+due) {
		t.Fatalf("awaiting approval: approval_expires_at %q, message %q; want %s", r.str("approval_expires_at"), r.errMessage(), due)
	}
	get := g.do("GET", "/v1/operations/"+key, payer, nil, nil)
	if get.str("approval_expires_at") != due {
		t.Fatalf("GET of an operation awaiting approval: approval_expires_at %q, want %s", get.str("approval_expires_at"), due)
	}

	if err := g.store.DecideApproval(context.Background(), g.approval(key).ID, false, "anna", "wrong order number"); err != nil {
		t.Fatal(err)
	}
	r = g.charge(payer, key, "order-next-1", 125000)
	expect(t, r, http.StatusUnprocessableEntity, "failed_final", "APPROVAL_DENIED")
	if msg := r.errMessage(); !strings.Contains(msg, `"wrong order number"`) || !strings.Contains(msg, "new key") {
		t.Fatalf("a denial does not carry the reason and what to do: %q", msg)
	}
	if _, ok := r.Body["approval_expires_at"]; ok {
		t.Fatalf("a decided operation still names an approval deadline: %s", r.Raw)
	}
}

// (6) A response lost after the target committed leads to unknown;
// (7) the retry reconciles by key and makes no second effect.
func TestLostResponseReconciles(t *testing.T) {
	t.Parallel()
	g := setup(t)
	const key = "test:invoice.create:order-demo-4:v1"
	g.inject(sim.Fault{Target: sim.OneC, Fault: sim.FaultDropResponse, Times: 1})
	r := g.post(key, invoice("order-demo-4", 2))
	expect(t, r, http.StatusAccepted, "unknown", "OUTCOME_UNKNOWN")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After on unknown")
	}
	if got := g.row(key).Status; got != store.StatusUnknown {
		t.Fatalf("journal status %s, want unknown", got)
	}
	if got := g.sim.Effects(sim.OneC, key); got != 1 {
		t.Fatalf("effects = %d, want 1 (the target committed)", got)
	}

	r = g.post(key, invoice("order-demo-4", 2))
	expect(t, r, http.StatusOK, "succeeded", "")
	if !strings.HasPrefix(r.str("target_object_id"), "INV-") {
		t.Fatalf("no object id: %s", r.Raw)
	}
	if got := g.sim.Calls(sim.OneC, key); got != 1 {
		t.Fatalf("execute calls = %d, want 1: reconciliation must look up, not execute", got)
	}
	if got := g.sim.Effects(sim.OneC, key); got != 1 {
		t.Fatalf("effects = %d, want 1", got)
	}
	op := g.row(key)
	if op.Status != store.StatusSucceeded || op.TargetObjectID != r.str("target_object_id") {
		t.Fatalf("journal row = %+v", op)
	}
}

// A lost request (the target reset before reading it) is retried with
// backoff within the same call and succeeds once.
func TestRetryTransient(t *testing.T) {
	t.Parallel()
	g := setup(t)
	const key = "test:invoice.create:order-retry:v1"
	g.inject(sim.Fault{Target: sim.OneC, Fault: sim.FaultStatus, Status: 503, Times: 1})
	g.inject(sim.Fault{Target: sim.OneC, Fault: sim.FaultReset, Times: 1})
	r := g.post(key, invoice("order-retry", 1))
	expect(t, r, http.StatusOK, "succeeded", "")
	if got := r.Body["attempt_count"]; got != 3.0 {
		t.Fatalf("attempt_count = %v, want 3", got)
	}
	if got := g.sim.Effects(sim.OneC, key); got != 1 {
		t.Fatalf("effects = %d, want 1", got)
	}
}

// Retries spent: 503 failed_retryable with Retry-After; the next request
// with the key runs again and succeeds once.
func TestRetriesSpent(t *testing.T) {
	t.Parallel()
	g := setup(t)
	const key = "test:invoice.create:order-down:v1"
	g.inject(sim.Fault{Target: sim.OneC, Fault: sim.FaultStatus, Status: 502, Times: 4})
	r := g.post(key, invoice("order-down", 1))
	expect(t, r, http.StatusServiceUnavailable, "failed_retryable", "TARGET_UNAVAILABLE")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	if got := g.row(key).Status; got != store.StatusFailedRetryable {
		t.Fatalf("journal status %s", got)
	}
	r = g.post(key, invoice("order-down", 1))
	expect(t, r, http.StatusOK, "succeeded", "")
	if got, _ := r.Body["attempt_count"].(float64); got < 5 {
		t.Fatalf("attempt_count = %v, want at least 5 (4 spent, then this one)", got)
	}
	if got := g.sim.Effects(sim.OneC, key); got != 1 {
		t.Fatalf("effects = %d, want 1", got)
	}
}

// A refusal by the target at execute is failed_final and replays with the
// same HTTP status and code; nothing the target said reaches the agent.
func TestFinalFailureReplays(t *testing.T) {
	t.Parallel()
	g := setup(t)
	const key = "test:invoice.create:order-refused:v1"
	g.inject(sim.Fault{Target: sim.OneC, Fault: sim.FaultTargetError, Times: 1})
	r := g.post(key, invoice("order-refused", 1))
	expect(t, r, http.StatusUnprocessableEntity, "failed_final", "TARGET_INTERNAL_ERROR")
	again := g.post(key, invoice("order-refused", 1))
	expect(t, again, http.StatusUnprocessableEntity, "failed_final", "TARGET_INTERNAL_ERROR")
	if again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatal("failed_final replay not marked")
	}
	if got := g.sim.Calls(sim.OneC, key); got != 1 {
		t.Fatalf("calls = %d, want 1", got)
	}
}

// (8) Many parallel identical requests make exactly one call to the
// target; the rest get 409 IDEMPOTENCY_KEY_IN_USE or the replay.
func TestParallelDuplicates(t *testing.T) {
	t.Parallel()
	g := setup(t)
	const key = "test:invoice.create:order-race:v1"
	// Slow the one real call down so that the others overlap it.
	g.inject(sim.Fault{Target: sim.OneC, Fault: sim.FaultDelay, DelayMS: 150, Times: 1})
	const n = 24
	var wg sync.WaitGroup
	replies := make([]reply, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			replies[i] = g.post(key, invoice("order-race", 2))
		}()
	}
	close(start)
	wg.Wait()
	counts := map[string]int{}
	var object string
	for _, r := range replies {
		switch {
		case r.Code == 200 && r.str("state") == "succeeded":
			counts["succeeded"]++
			if object == "" {
				object = r.str("target_object_id")
			} else if object != r.str("target_object_id") {
				t.Fatalf("two objects: %s and %s", object, r.str("target_object_id"))
			}
		case r.Code == 409 && r.errCode() == "IDEMPOTENCY_KEY_IN_USE" && r.str("state") == "started":
			counts["in_use"]++
			if r.Header.Get("Retry-After") == "" {
				t.Fatal("409 without Retry-After")
			}
		default:
			t.Fatalf("unexpected answer %d %s", r.Code, r.Raw)
		}
	}
	if got := g.sim.Calls(sim.OneC, key); got != 1 {
		t.Fatalf("calls to the target = %d, want exactly 1 (answers %v)", got, counts)
	}
	if got := g.sim.Effects(sim.OneC, key); got != 1 {
		t.Fatalf("effects = %d, want 1", got)
	}
	if counts["succeeded"] < 1 || counts["in_use"] < 1 {
		t.Fatalf("answers %v: want one executor and overlapping duplicates", counts)
	}
	t.Logf("answers: %v", counts)
}

// A delay past the client timeout leaves the outcome unknown; the retries
// look the key up and, since 1C dedupes by key, may send it again while
// the first attempt is still on its way. One effect throughout.
func TestTimeoutAfterSend(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Targets["onec"].TimeoutMS = 300
	g := setupWith(t, cfg)
	const key = "test:invoice.create:order-slow:v1"
	g.inject(sim.Fault{Target: sim.OneC, Fault: sim.FaultDelay, DelayMS: 450, Times: 1})
	expect(t, g.post(key, invoice("order-slow", 1)), http.StatusAccepted, "unknown", "OUTCOME_UNKNOWN")
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := g.post(key, invoice("order-slow", 1))
		if r.Code == http.StatusOK {
			expect(t, r, http.StatusOK, "succeeded", "")
			break
		}
		// Unknown, or 409 while the reconciler holds the lease for a look-up.
		if !(r.Code == http.StatusConflict && r.str("state") == "started") {
			expect(t, r, http.StatusAccepted, "unknown", "OUTCOME_UNKNOWN")
		}
		if time.Now().After(deadline) {
			t.Fatal("never resolved")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := g.sim.Effects(sim.OneC, key); got != 1 {
		t.Fatalf("effects = %d, want 1", got)
	}
}

// (10) Every refusal before execution returns its code and binds nothing:
// the same key then executes normally.
func TestRefusalsLeaveKeyFree(t *testing.T) {
	t.Parallel()
	g := setup(t)
	readOnly := g.MustToken("agent-read", "read")
	good := func(order string) []byte { b, _ := json.Marshal(invoice(order, 1)); return b }
	with := func(order string, edit func(map[string]any)) []byte {
		env := invoice(order, 1)
		edit(env)
		b, _ := json.Marshal(env)
		return b
	}
	cases := []struct {
		name    string
		token   string
		header  map[string]string
		body    []byte
		code    int
		errCode string
	}{
		{"NoToken", "", nil, good("o-1"), 401, "UNAUTHENTICATED"},
		{"BadToken", "og_not-a-token", nil, good("o-1"), 401, "UNAUTHENTICATED"},
		{"WrongScope", readOnly, nil, good("o-1"), 403, "PERMISSION_DENIED"},
		{"MediaType", g.token, map[string]string{"Content-Type": "text/plain"}, good("o-1"), 415, "UNSUPPORTED_MEDIA_TYPE"},
		{"TooLarge", g.token, nil, with("o-1", func(e map[string]any) { e["actor_id"] = strings.Repeat("x", 70<<10) }), 413, "PAYLOAD_TOO_LARGE"},
		{"NoKey", g.token, map[string]string{"Idempotency-Key": ""}, good("o-1"), 400, "IDEMPOTENCY_KEY_MISSING"},
		{"WrongContour", g.token, map[string]string{"Idempotency-Key": "prod:invoice.create:o-1:v1"}, good("o-1"), 400, "IDEMPOTENCY_KEY_INVALID"},
		{"KeyIntentMismatch", g.token, map[string]string{"Idempotency-Key": "test:payment.charge:o-1:v1"}, good("o-1"), 400, "IDEMPOTENCY_KEY_INVALID"},
		{"CardInKey", g.token, map[string]string{"Idempotency-Key": "test:invoice.create:4111111111111111:v1"}, good("o-1"), 400, "IDEMPOTENCY_KEY_INVALID"},
		{"TokenInKey", g.token, map[string]string{"Idempotency-Key": "test:invoice.create:og_not-a-token-but-shaped-like-one:v1"}, good("o-1"), 400, "IDEMPOTENCY_KEY_INVALID"},
		{"TooFewSegments", g.token, map[string]string{"Idempotency-Key": "test:invoice.create"}, good("o-1"), 400, "IDEMPOTENCY_KEY_INVALID"},
		{"NoVersion", g.token, map[string]string{"Idempotency-Key": "test:invoice.create:o-1:one"}, good("o-1"), 400, "IDEMPOTENCY_KEY_INVALID"},
		{"BadCharacter", g.token, map[string]string{"Idempotency-Key": "test:invoice.create:o/1:v1"}, good("o-1"), 400, "IDEMPOTENCY_KEY_INVALID"},
		{"KeyCarriersDiffer", g.token, nil, with("o-1", func(e map[string]any) { e["request_id"] = "test:invoice.create:o-2:v1" }), 400, "IDEMPOTENCY_KEY_INVALID"},
		{"UnknownIntent", g.token, nil, with("o-1", func(e map[string]any) { e["intent"] = "invoice.delete" }), 400, "INTENT_NOT_ALLOWED"},
		{"UnknownEnvelopeField", g.token, nil, with("o-1", func(e map[string]any) { e["method"] = "Documents.Invoice.Create" }), 400, "UNKNOWN_FIELD"},
		{"UnknownPayloadField", g.token, nil, with("o-1", func(e map[string]any) { e["payload"].(map[string]any)["posted"] = true }), 400, "UNKNOWN_FIELD"},
		{"BadQuantity", g.token, nil, with("o-1", func(e map[string]any) {
			e["payload"].(map[string]any)["items"].([]any)[0].(map[string]any)["quantity"] = 0
		}), 400, "VALIDATION_ERROR"},
		{"SchemaVersion", g.token, nil, with("o-1", func(e map[string]any) { e["schema_version"] = "2.0" }), 400, "UNSUPPORTED_SCHEMA"},
		{"NotJSON", g.token, nil, []byte(`{"schema_version": "1.0",`), 400, "VALIDATION_ERROR"},
	}
	const key = "test:invoice.create:o-1:v1"
	for _, c := range cases {
		h := map[string]string{"Idempotency-Key": key}
		for k, v := range c.header {
			h[k] = v
		}
		if v, ok := h["Idempotency-Key"]; ok && v == "" {
			delete(h, "Idempotency-Key")
		}
		r := g.do("POST", "/v1/operations", c.token, h, c.body)
		if r.Code != c.code || r.errCode() != c.errCode || r.str("state") != "rejected" {
			t.Errorf("%s: got %d %q %q, want %d %q rejected; body %s", c.name, r.Code, r.errCode(), r.str("state"), c.code, c.errCode, r.Raw)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("%s: content type %q", c.name, ct)
		}
		if strings.Contains(r.Raw, "og_not-a-token") || strings.Contains(r.Raw, "4111111111111111") {
			t.Errorf("%s: the answer echoes a secret: %s", c.name, r.Raw)
		}
	}
	if _, err := g.store.Get(t.Context(), key); err == nil {
		t.Fatal("a refused request left a journal row")
	}
	if got := g.sim.Calls(sim.OneC, key); got != 0 {
		t.Fatalf("a refused request reached the target %d times", got)
	}
	r := g.post(key, invoice("o-1", 1))
	expect(t, r, http.StatusOK, "succeeded", "")
	if r.Body["replayed"] != false {
		t.Fatalf("key was bound by a refusal: %s", r.Raw)
	}
}

// A media type that could be read two ways is refused: two Content-Type
// lines (which one did the client mean?) or a charset other than UTF-8
// (the body would be read as something its sender did not write). The key
// stays free and nothing reaches the target; UTF-8 spelled out is fine.
func TestAmbiguousMediaType(t *testing.T) {
	t.Parallel()
	g := setup(t)
	body, _ := json.Marshal(invoice("o-1", 1))
	const key = "test:invoice.create:o-1:v1"
	send := func(types ...string) reply {
		t.Helper()
		return g.send("POST", "/v1/operations", http.Header{"Authorization": {"Bearer " + g.token}, "Idempotency-Key": {key}, "Content-Type": types}, body)
	}
	for name, types := range map[string][]string{
		"TwoLines":        {"application/json", "text/plain"},
		"TwoJSONLines":    {"application/json", "application/json"},
		"Latin1":          {"application/json; charset=latin1"},
		"Windows1251":     {"application/json; charset=windows-1251"},
		"NoContentType":   nil,
		"NotJSONFirstOne": {"text/plain", "application/json"},
	} {
		if r := send(types...); r.Code != http.StatusUnsupportedMediaType || r.errCode() != "UNSUPPORTED_MEDIA_TYPE" {
			t.Errorf("%s: got %d %q, want 415 UNSUPPORTED_MEDIA_TYPE; body %s", name, r.Code, r.errCode(), r.Raw)
		}
	}
	if got := g.sim.Calls(sim.OneC, key); got != 0 {
		t.Fatalf("a refused request reached the target %d times", got)
	}
	expect(t, send("application/json; charset=UTF-8"), http.StatusOK, "succeeded", "")
}

// A key sent twice is ambiguous: two Idempotency-Key lines (the same or
// different values) are refused like two keys joined on one line, and
// bind nothing.
func TestKeyHeaderTwice(t *testing.T) {
	t.Parallel()
	g := setup(t)
	body, _ := json.Marshal(invoice("twice-1", 1))
	send := func(keys ...string) reply {
		t.Helper()
		return g.send("POST", "/v1/operations", http.Header{"Authorization": {"Bearer " + g.token}, "Content-Type": {"application/json"}, "Idempotency-Key": keys}, body)
	}
	const a, b = "test:invoice.create:twice-1:v1", "test:invoice.create:twice-2:v1"
	for name, keys := range map[string][]string{
		"TwoLines":     {a, b},
		"SameTwice":    {a, a},
		"JoinedOnLine": {a + ", " + b},
	} {
		if r := send(keys...); r.Code != http.StatusBadRequest || r.errCode() != "IDEMPOTENCY_KEY_INVALID" {
			t.Errorf("%s: got %d %q, want 400 IDEMPOTENCY_KEY_INVALID; body %s", name, r.Code, r.errCode(), r.Raw)
		}
	}
	if got := g.sim.Calls(sim.OneC, a) + g.sim.Calls(sim.OneC, b); got != 0 {
		t.Fatalf("an ambiguous key reached the target %d times", got)
	}
	expect(t, send(a), http.StatusOK, "succeeded", "")
}

// The key may come as an RFC 8941 string or as request_id alone.
func TestKeyCarriers(t *testing.T) {
	t.Parallel()
	g := setup(t)
	body, _ := json.Marshal(invoice("o-q", 1))
	r := g.do("POST", "/v1/operations", g.token, map[string]string{"Idempotency-Key": `"test:invoice.create:o-q:v1"`}, body)
	expect(t, r, http.StatusOK, "succeeded", "")
	if r.str("operation_key") != "test:invoice.create:o-q:v1" {
		t.Fatalf("key %q", r.str("operation_key"))
	}
	env := invoice("o-r", 1)
	env["request_id"] = "test:invoice.create:o-r:v1"
	r = g.post("", env)
	expect(t, r, http.StatusOK, "succeeded", "")
	if r.str("request_id") != "test:invoice.create:o-r:v1" {
		t.Fatalf("request_id %q", r.str("request_id"))
	}
}

// Another agent cannot use, or even see, a key it does not own.
func TestForeignKey(t *testing.T) {
	t.Parallel()
	g := setup(t)
	other := g.MustToken("agent-b", "write", "read")
	const key = "test:invoice.create:o-f:v1"
	expect(t, g.post(key, invoice("o-f", 1)), http.StatusOK, "succeeded", "")
	body, _ := json.Marshal(invoice("o-f", 1))
	r := g.do("POST", "/v1/operations", other, map[string]string{"Idempotency-Key": key}, body)
	expect(t, r, http.StatusConflict, "rejected", "IDEMPOTENCY_KEY_FOREIGN")
	r = g.do("GET", "/v1/operations/"+key, other, nil, nil)
	expect(t, r, http.StatusNotFound, "rejected", "OPERATION_NOT_FOUND")
	if got := g.sim.Calls(sim.OneC, key); got != 1 {
		t.Fatalf("calls = %d", got)
	}
}

func TestOperationGet(t *testing.T) {
	t.Parallel()
	g := setup(t)
	const key = "test:invoice.create:o-g:v1"
	posted := g.post(key, invoice("o-g", 1))
	r := g.do("GET", "/v1/operations/"+key, g.token, nil, nil)
	expect(t, r, http.StatusOK, "succeeded", "")
	for _, f := range []string{"operation_key", "operation", "target_object_id", "fingerprint", "target_system"} {
		if r.str(f) != posted.str(f) {
			t.Errorf("GET %s = %q, POST said %q", f, r.str(f), posted.str(f))
		}
	}
	r = g.do("GET", "/v1/operations/test:invoice.create:never:v1", g.token, nil, nil)
	expect(t, r, http.StatusNotFound, "rejected", "OPERATION_NOT_FOUND")
	r = g.do("GET", "/v1/operations/"+key, "", nil, nil)
	expect(t, r, http.StatusUnauthorized, "rejected", "UNAUTHENTICATED")
}

func TestIntentList(t *testing.T) {
	t.Parallel()
	g := setup(t)
	r := g.do("GET", "/v1/intents", g.token, nil, nil)
	if r.Code != 200 {
		t.Fatalf("GET /v1/intents: %d %s", r.Code, r.Raw)
	}
	list, _ := r.Body["intents"].([]any)
	var names []string
	for _, x := range list {
		in := x.(map[string]any)
		names = append(names, in["name"].(string))
		schema, _ := in["schema"].(map[string]any)
		if schema["additionalProperties"] != false {
			t.Errorf("%s: schema allows unknown fields", in["name"])
		}
	}
	want := "invoice.create sales_order.create_draft sales_order.get_status sales_order.post crm.callback.create payment.charge payment.refund"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("intents %q, want %q", got, want)
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	g := setup(t)
	for _, p := range []string{"/healthz", "/readyz"} {
		if r := g.do("GET", p, "", nil, nil); r.Code != 200 {
			t.Errorf("%s: %d %s", p, r.Code, r.Raw)
		}
	}
	r := g.do("GET", "/v1/nothing-here", g.token, nil, nil)
	expect(t, r, http.StatusNotFound, "rejected", "NOT_FOUND")
	// The published contract needs no token.
	r = g.do("GET", "/v1/openapi.json", "", nil, nil)
	if r.Code != 200 || r.str("openapi") != "3.1.0" {
		t.Fatalf("GET /v1/openapi.json: %d %.200s", r.Code, r.Raw)
	}
}

// Money intents wait for a person: 202 awaiting_approval, nothing sent.
func TestMoneyAwaitsApproval(t *testing.T) {
	t.Parallel()
	g := setup(t)
	payer := g.MustToken("agent-pay", "pay")
	const key = "test:payment.charge:order-48291:v1"
	body := []byte(`{"schema_version":"1.0","intent":"payment.charge","payload":{"account_id":"merchant-account-17","order_id":"order-48291","amount_minor":125000,"currency":"rub"}}`)
	r := g.do("POST", "/v1/operations", payer, map[string]string{"Idempotency-Key": key}, body)
	expect(t, r, http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")
	if got, want := r.str("fingerprint"), "28a4262860864e5110d391a4556da2ad2f539ae2f87e52871f80cb7381d86aa6"; got != want {
		t.Fatalf("fingerprint %s, want the example of docs/api.md, The fingerprint: %s", got, want)
	}
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	if got := g.row(key).Status; got != store.StatusAwaitingApproval {
		t.Fatalf("journal status %s", got)
	}
	// The write token cannot pay.
	r = g.do("POST", "/v1/operations", g.token, map[string]string{"Idempotency-Key": "test:payment.charge:order-2:v1"}, body)
	expect(t, r, http.StatusForbidden, "rejected", "PERMISSION_DENIED")
	_ = fmt.Sprint()

	// A charge that cannot be made never reaches an accountant: the saved
	// payment method is checked first.
	for account, code := range map[string]string{"merchant-account-99": "REFERENCE_NOT_FOUND", "merchant-account-blocked-1": "REFERENCE_INACTIVE"} {
		key := "test:payment.charge:order-" + account + ":v1"
		bad := []byte(`{"schema_version":"1.0","intent":"payment.charge","payload":{"account_id":"` + account + `","order_id":"order-9","amount_minor":100,"currency":"RUB"}}`)
		r := g.do("POST", "/v1/operations", payer, map[string]string{"Idempotency-Key": key}, bad)
		expect(t, r, http.StatusUnprocessableEntity, "failed_final", code)
		if r.errField() != "account_id" {
			t.Fatalf("%s: field %q", account, r.errField())
		}
		if _, err := g.store.ApprovalByKey(context.Background(), key); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s: an approval was asked for: %v", account, err)
		}
	}
}

// GET /metrics reports decisions, target calls and the journal's state.
func TestMetrics(t *testing.T) {
	t.Parallel()
	g := setup(t)
	const key = "test:invoice.create:order-metrics:v1"
	expect(t, g.post(key, invoice("order-metrics", 1)), http.StatusOK, "succeeded", "")
	expect(t, g.post(key, invoice("order-metrics", 1)), http.StatusOK, "succeeded", "")
	expect(t, g.post("test:crm.callback:create:metrics-1:v1", callback("customer-1042")), http.StatusOK, "succeeded", "")
	req, _ := http.NewRequest("GET", g.url+"/metrics", nil)
	resp, err := g.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, resp.Body)
	body := b.String()
	for _, want := range []string{
		`oncegate_operation_decisions_total{decision="execute",intent="invoice.create"} 1`,
		`oncegate_operation_decisions_total{decision="replay",intent="invoice.create"} 1`,
		`oncegate_operations{status="succeeded"} 2`,
		`oncegate_target_call_seconds_count{call="execute",outcome="ok",target="onec"} 1`,
		`oncegate_http_requests_total{code="200",route="/v1/operations"} 3`,
		// Targets are named as the API names them (target_system), not by
		// their adapter.
		`oncegate_target_call_seconds_count{call="execute",outcome="ok",target="crm"} 1`,
		// Every decision and call kind is in the help text.
		`refused.`,
		`call (execute, lookup, validate, read, check_object)`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(body, `target="bitrix24"`) {
		t.Error("metrics name a target by its adapter, bitrix24, where the API says crm")
	}
}

// A target that cannot be asked during the checks before anything is
// journaled answers as a transient failure (docs/api.md, Error codes: 503
// failed_retryable, Retry-After) and leaves the key free.
func TestPrecheckTargetUnavailable(t *testing.T) {
	t.Parallel()
	g := setup(t)
	payer := g.MustToken("agent-pay", "pay")
	const key = "test:payment.charge:precheck-down:v1"
	g.inject(sim.Fault{Target: sim.YooKassa, Fault: sim.FaultStatus, Status: 503, Times: 50, On: sim.OnLookup})
	r := g.do("POST", "/v1/operations", payer, map[string]string{"Idempotency-Key": key}, charge("precheck-down", 1000))
	expect(t, r, http.StatusServiceUnavailable, "failed_retryable", "TARGET_UNAVAILABLE")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	if _, err := g.store.Get(context.Background(), key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the key was journaled: %v", err)
	}
}

// A replay of the very bytes of an earlier replay is answered from memory
// exactly as the journal would answer it, and still only to a token that
// may send the intent and to the agent that owns the key; a request that
// differs in any byte goes through every check again.
func TestReplayOfSameBytes(t *testing.T) {
	t.Parallel()
	g := setup(t)
	const key = "test:invoice.create:order-bytes:v1"
	env := invoice("order-bytes", 2)
	body, _ := json.Marshal(env)
	h := map[string]string{"Idempotency-Key": key}
	expect(t, g.do("POST", "/v1/operations", g.token, h, body), http.StatusOK, "succeeded", "")
	second := g.do("POST", "/v1/operations", g.token, h, body)
	third := g.do("POST", "/v1/operations", g.token, h, body)
	expect(t, third, http.StatusOK, "succeeded", "")
	if third.Raw != second.Raw || third.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replays differ:\n%s\n%s\n%v", second.Raw, third.Raw, third.Header)
	}

	reader := g.MustToken("agent-a", "read")
	expect(t, g.do("POST", "/v1/operations", reader, h, body), http.StatusForbidden, "rejected", "PERMISSION_DENIED")
	other := g.MustToken("agent-b", "read", "draft", "write", "post")
	expect(t, g.do("POST", "/v1/operations", other, h, body), http.StatusConflict, "rejected", "IDEMPOTENCY_KEY_FOREIGN")

	env["actor_id"] = "user-43"
	changed, _ := json.Marshal(env)
	expect(t, g.do("POST", "/v1/operations", g.token, h, changed), http.StatusOK, "succeeded", "")
	bad := append([]byte(`{"extra":1,`), body[1:]...)
	expect(t, g.do("POST", "/v1/operations", g.token, h, bad), http.StatusBadRequest, "rejected", "UNKNOWN_FIELD")
	env["payload"].(map[string]any)["items"].([]any)[0].(map[string]any)["quantity"] = 3
	mismatch, _ := json.Marshal(env)
	expect(t, g.do("POST", "/v1/operations", g.token, h, mismatch), http.StatusUnprocessableEntity, "rejected", "IDEMPOTENCY_KEY_PAYLOAD_MISMATCH")
	expect(t, g.do("POST", "/v1/operations", g.token, h, append(body, ' ')), http.StatusOK, "succeeded", "")
	if got := g.sim.Calls(sim.OneC, key); got != 1 {
		t.Fatalf("calls to 1C = %d, want 1", got)
	}
}
