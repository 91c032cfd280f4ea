package admin_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters/redact"
	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/store"
)

// The operator reads on the review page what the target answered on the
// last failed look-up — kept in the audit trail, not only in the log —
// with a secret it echoed masked; a later failure that said nothing
// shows no older answer as if it were the last.
func TestReviewShowsLastAnswer(t *testing.T) {
	t.Parallel()
	const secret = "Pa55-w0rd-onec"
	a := newOwnApp(t, func(d *admin.Deps) { d.Redactor = redact.New(redact.Basic("buh", secret)) })
	ctx := context.Background()
	u, err := ownPasswordUser(ctx, a.st, "answer-operator", store.RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	a.users[store.RoleOperator] = u
	key := a.uniq("test:invoice.create:answer-1:v1")
	a.claim(key, "invoice.create", "onec", false, map[string]any{"order_id": "o-1", "customer_id": "customer-1042"})
	if _, err = a.st.LookupFailed(ctx, key, "test-run", "", "onec: HTTP 503 Service Unavailable (password "+secret+")", 1, time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	opr := a.signIn(store.RoleOperator)
	p := opr.get("/admin/review").expect(t, http.StatusOK)
	card := page{Body: section(p.Body, `data-testid="review-row" data-key="`+key+`"`)}
	// In words first, the target's own text one click away.
	if got := card.text("review-last-answer"); got != "1С временно недоступен (HTTP 503)" {
		t.Fatalf("the last answer reads %q:\n%s", got, card.Body)
	}
	if raw := section(card.Body, `data-testid="review-last-answer-raw"`); !strings.Contains(raw, "HTTP 503 Service Unavailable") || !strings.Contains(raw, "<summary>") {
		t.Fatalf("the raw answer is not one click away:\n%s", card.Body)
	}
	if strings.Contains(p.Body, secret) {
		t.Fatal("the review page shows the target's secret")
	}

	// The reconciler takes it again and the look-up fails without a word.
	op, err := a.st.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.st.TakeForReconcile(ctx, op, "run-2", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := a.st.LookupFailed(ctx, key, "run-2", "", "", 5, time.Now().Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	p = opr.get("/admin/review").expect(t, http.StatusOK)
	if card := section(p.Body, `data-testid="review-row" data-key="`+key+`"`); strings.Contains(card, "review-last-answer") {
		t.Fatalf("an older answer is shown as the last:\n%s", card)
	}
}

// A payment whose outcome is unknown shows its amount, customer (masked
// to the operator) and approver on the review card; resolving it "not
// found", which lets the next retry charge again, needs a deliberate
// confirmation that the provider has none.
func TestReviewPaymentNotFoundNeedsConfirmation(t *testing.T) {
	t.Parallel()
	a := newOwnApp(t, nil)
	ctx := context.Background()
	u, err := ownPasswordUser(ctx, a.st, "money-operator", store.RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	a.users[store.RoleOperator] = u
	const key = "test:payment.charge:rr-000001:v1"
	ap := a.charge(key, 125000, "")
	if err := a.st.DecideApproval(ctx, ap.ID, true, "anna", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := a.st.TakeApproved(ctx, "test-run", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := a.st.LookupFailed(ctx, key, "test-run", "", "yookassa: HTTP 500", 1, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	opr := a.signIn(store.RoleOperator)
	p := opr.get("/admin/review").expect(t, http.StatusOK)
	if got := p.text("review-amount"); !strings.Contains(got, "1\u00a0250,00") {
		t.Fatalf("review amount %q", got)
	}
	if got := p.text("review-approver"); !strings.HasPrefix(got, "anna, ") {
		t.Fatalf("review approver %q", got)
	}
	// The operator looks the payment up at the provider: they read the
	// customer whole (the auditor reads it masked).
	if got := p.text("review-customer"); got != "customer-1042" {
		t.Fatalf("the operator reads the customer %q", got)
	}
	if !p.has("resolve-rerun-warning") {
		t.Fatal("no warning that not found charges again")
	}
	path := "/admin/review/" + keyPath(key) + "/resolve"
	p = opr.post(path, url.Values{"outcome": {"not_found"}, "reason": {"нет в ЮKassa"}}).expect(t, http.StatusUnprocessableEntity)
	if !p.has("form-error") {
		t.Fatal("no message for a not found without the confirmation")
	}
	if got, _ := a.st.Get(ctx, key); got.Status != store.StatusUnknown {
		t.Fatalf("status after an unconfirmed not found: %s", got.Status)
	}
	opr.post(path, url.Values{"outcome": {"not_found"}, "reason": {"нет в ЮKassa"}, "confirm_rerun": {"yes"}}).expect(t, http.StatusSeeOther)
	if got, _ := a.st.Get(ctx, key); got.Status != store.StatusFailedRetryable {
		t.Fatalf("status after a confirmed not found: %s", got.Status)
	}
}

// What a target answered reads in words first in the operation's
// history and on the audit page too, its own text one click away; the
// export keeps both.
func TestHistoryShowsTargetAnswersInWords(t *testing.T) {
	t.Parallel()
	a := newOwnApp(t, nil)
	ctx := context.Background()
	key := a.uniq("test:invoice.create:answer-words:v1")
	a.claim(key, "invoice.create", "onec", false, map[string]any{"order_id": "o-2", "customer_id": "customer-1042"})
	if _, err := a.st.LookupFailed(ctx, key, "test-run", "", "onec: HTTP 503 Service Unavailable", 5, time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	u, err := ownPasswordUser(ctx, a.st, "words-admin", store.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	a.users[store.RoleAdmin] = u
	adm := a.signIn(store.RoleAdmin)
	for path, words := range map[string]string{
		"/admin/operations/" + url.PathEscape(key): "1С временно недоступен (HTTP 503)",
		"/admin/audit?key=" + url.QueryEscape(key): "Внешний сервис временно недоступен (HTTP 503)",
	} {
		p := adm.get(path).expect(t, http.StatusOK)
		field := section(p.Body, `data-field="answer"`)
		if !strings.Contains(field, words) {
			t.Fatalf("%s: the answer does not read %q:\n%s", path, words, field)
		}
		if raw := section(field, `data-testid="detail-raw"`); !strings.Contains(raw, "HTTP 503 Service Unavailable") || !strings.Contains(raw, "<summary>") {
			t.Fatalf("%s: the raw answer is not one click away:\n%s", path, field)
		}
	}
}
