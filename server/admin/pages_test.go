package admin_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/store"
)

const xss = `<script>alert(1)</script>`

// Data from agents and people shows as text, never as markup.
func TestPayloadShowsAsText(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	chargeKey := a.uniq("test:payment.charge:xss-001:v1")
	callbackKey := a.uniq("test:crm.callback:create:xss-002:v1")
	ap := a.charge(chargeKey, 125000, xss)
	a.claim(callbackKey, "crm.callback.create", "crm", false, map[string]any{"customer_id": "customer-1042", "due_at": "2026-12-02T14:05:00Z", "comment": xss + " call back"})

	acc := a.signIn(store.RoleAccountant)
	p := acc.get("/admin/approvals").expect(t, http.StatusOK)
	if strings.Contains(p.Body, xss) {
		t.Fatal("the approvals queue holds a raw <script> from a payload")
	}
	if !strings.Contains(p.Body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Fatalf("the description is not shown escaped:\n%s", p.Body)
	}
	// «1 250,00 ₽» with no-break spaces.
	if !strings.Contains(p.Body, "1\u00a0250,00\u00a0₽") {
		t.Fatal("amount not formatted as 1 250,00 ₽")
	}
	// An accountant's comment with markup lands in the audit trail as text.
	acc.post("/admin/approvals/"+itoa(ap.ID)+"/deny", url.Values{"comment": {xss}}).expect(t, http.StatusSeeOther)
	p = acc.get("/admin/audit?key="+url.QueryEscape(chargeKey)).expect(t, http.StatusOK)
	if strings.Contains(p.Body, xss) || !strings.Contains(p.Body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Fatalf("audit detail not escaped:\n%s", p.Body)
	}

	// On the operation page sensitive fields are masked for those who do
	// not decide, and escaped.
	aud := a.signIn(store.RoleAuditor)
	p = aud.get("/admin/operations/"+keyPath(callbackKey)).expect(t, http.StatusOK)
	if strings.Contains(withoutOwnScript(p.Body), "<scr") {
		t.Fatal("the operation page holds raw markup from a payload")
	}
	if got, want := p.text("field-comment"), "<scr…back"; got != want {
		t.Fatalf("masked comment %q, want %q", got, want)
	}
	if got, want := p.text("field-customer_id"), "cust…1042"; got != want {
		t.Fatalf("masked customer %q, want %q", got, want)
	}
	p = aud.get("/admin/operations/"+keyPath(chargeKey)).expect(t, http.StatusOK)
	if got, want := p.text("field-account_id"), "merc…t-17"; got != want {
		t.Fatalf("masked account %q, want %q", got, want)
	}
	// Whoever decides reads the request as the agent sent it, escaped.
	full := acc.get("/admin/operations/"+keyPath(callbackKey)).expect(t, http.StatusOK)
	if got, want := full.text("field-comment"), xss+" call back"; got != want || strings.Contains(withoutOwnScript(full.Body), "<scr") {
		t.Fatalf("the accountant's comment %q, want %q escaped", got, want)
	}
	if got := p.text("summary-status"); got != "отклонено человеком" {
		t.Fatalf("status %q", got)
	}
	if p.text("approval-decided-by") != "test-accountant" {
		t.Fatalf("decided by %q", p.text("approval-decided-by"))
	}
	// Unknown keys are a 404 page.
	acc.get("/admin/operations/"+keyPath("test:invoice.create:nope:v1")).expect(t, http.StatusNotFound)
}

// withoutOwnScript is a page without the one script every page loads
// (live.js), so what is left of "<script" came from elsewhere.
func withoutOwnScript(body string) string {
	return strings.ReplaceAll(body, `<script src="/static/live.js" defer></script>`, "")
}

// A bidirectional override an agent put in a payment's purpose cannot
// reorder what the accountant reads: every page shows it as its code
// point (the queue shows the purpose whole; the operation page masks it,
// and holds no raw control either).
func TestBidiControlsNeutralized(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	key := a.uniq("test:payment.charge:bidi-001:v1")
	const purpose = "refund to \u202egnp.exe\u202c for 100 \u2067RUB\u2069"
	a.charge(key, 125000, purpose)
	acc := a.signIn(store.RoleAccountant)
	for _, path := range []string{"/admin/approvals", "/admin/operations/" + keyPath(key)} {
		p := acc.get(path).expect(t, http.StatusOK)
		for _, r := range []string{"\u202e", "\u202c", "\u2067", "\u2069"} {
			if strings.Contains(p.Body, r) {
				t.Errorf("%s holds a raw bidirectional control %U", path, []rune(r)[0])
			}
		}
		if path == "/admin/approvals" && !strings.Contains(p.Body, "[U+202E]gnp.exe[U+202C]") {
			t.Errorf("%s does not show the override as its code point:\n%s", path, p.Body)
		}
	}
}

// An approval the executor took says what became of the payment: a
// failed charge is not shown as done.
func TestApprovalStateFollowsOutcome(t *testing.T) {
	t.Parallel()
	a := newOwnApp(t, nil) // the executor's queue is the whole journal's
	ctx := context.Background()
	u, err := ownPasswordUser(ctx, a.st, "state-auditor", store.RoleAuditor)
	if err != nil {
		t.Fatal(err)
	}
	a.users[store.RoleAuditor] = u
	c := a.signIn(store.RoleAuditor)

	for _, tc := range []struct {
		name   string
		end    func(key string) error // what the executor did; nil: still running
		ru, en string
	}{
		{"Succeeded", func(key string) error { return a.st.Complete(ctx, key, "test-run", "pay-1", nil) },
			"одобрено, исполнено", "approved and executed"},
		{"TargetUnavailable", func(key string) error {
			return a.st.Fail(ctx, key, "test-run", false, store.Failure{Code: "TARGET_UNAVAILABLE", Message: "the target is unavailable"})
		}, "одобрено; исполнение: сбой, можно повторить", "approved; execution: failed, retryable"},
		{"Declined", func(key string) error {
			return a.st.Fail(ctx, key, "test-run", true, store.Failure{Code: "PAYMENT_DECLINED", Message: "the payment was declined"})
		}, "одобрено; исполнение: отказ", "approved; execution: failed"},
		{"Running", nil, "одобрено; исполнение: выполняется", "approved; execution: running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "test:payment.charge:state-" + strings.ToLower(tc.name) + "-000001:v1"
			ap := a.charge(key, 5000, "")
			if err := a.st.DecideApproval(ctx, ap.ID, true, "test-accountant", ""); err != nil {
				t.Fatal(err)
			}
			op, err := a.st.TakeApproved(ctx, "test-run", time.Minute)
			if err != nil || op.Key != key {
				t.Fatalf("took %q, %v; want %q", op.Key, err, key)
			}
			if tc.end != nil {
				if err := tc.end(key); err != nil {
					t.Fatal(err)
				}
			}
			path := "/admin/operations/" + keyPath(key)
			p := c.get(path).expect(t, http.StatusOK)
			if got := p.text("approval-status"); got != tc.ru {
				t.Errorf("approval state %q, want %q", got, tc.ru)
			}
			c.cookies["lang"] = "en"
			defer delete(c.cookies, "lang")
			p = c.get(path).expect(t, http.StatusOK)
			if got := p.text("approval-status"); got != tc.en {
				t.Errorf("approval state %q, want %q", got, tc.en)
			}
		})
	}
}

// Errors show in the page's language by their stable code, the code
// beside them; a code without a text shows the journaled message.
func TestErrorsInPageLanguage(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	ctx := context.Background()
	const sent = "the request was sent but its outcome is not known"
	unknownKey := a.uniq("test:invoice.create:err-unknown:v1")
	a.claim(unknownKey, "invoice.create", "onec", false, map[string]any{"order_id": "o-1"})
	if err := a.st.MarkUnknown(ctx, unknownKey, "test-run", "", store.Failure{Code: "OUTCOME_UNKNOWN", Message: sent}, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	fail := func(name, code, msg string) string {
		key := a.uniq("test:invoice.create:" + name + ":v1")
		a.claim(key, "invoice.create", "onec", false, map[string]any{"order_id": "o-1"})
		if err := a.st.Fail(ctx, key, "test-run", false, store.Failure{Code: code, Field: "order_id", Message: msg}); err != nil {
			t.Fatal(err)
		}
		return key
	}
	downKey := fail("err-down", "TARGET_UNAVAILABLE", "the target is unavailable")
	oddKey := fail("err-odd", "SOMETHING_NEW", "something new happened")
	c := a.signIn(store.RoleOperator)

	for _, tc := range []struct{ key, code, ru, en string }{
		{unknownKey, "OUTCOME_UNKNOWN", "запрос отправлен в систему, но исход неизвестен", "the request was sent to the target, but its outcome is not known"},
		{downKey, "TARGET_UNAVAILABLE", "система недоступна", "the target is unavailable"},
		{oddKey, "SOMETHING_NEW", "something new happened", "something new happened"},
	} {
		p := c.get("/admin/operations/"+keyPath(tc.key)).expect(t, http.StatusOK)
		if got := p.text("error-code"); got != tc.code {
			t.Errorf("%s: code %q, want %q", tc.key, got, tc.code)
		}
		if got := p.text("error-message"); got != tc.ru {
			t.Errorf("%s: message %q, want %q", tc.key, got, tc.ru)
		}
		c.cookies["lang"] = "en"
		p = c.get("/admin/operations/"+keyPath(tc.key)).expect(t, http.StatusOK)
		delete(c.cookies, "lang")
		if got := p.text("error-message"); got != tc.en {
			t.Errorf("%s: English message %q, want %q", tc.key, got, tc.en)
		}
	}
	p := c.get("/admin/operations/"+keyPath(downKey)).expect(t, http.StatusOK)
	if got := p.text("error-field"); got != "order_id" {
		t.Errorf("error field %q, want order_id", got)
	}

	// The review card of the unknown operation.
	p = c.get("/admin/review").expect(t, http.StatusOK)
	i := strings.Index(p.Body, `data-testid="review-row" data-key="`+unknownKey+`"`)
	if i < 0 {
		t.Fatal("the unknown operation is not on the review page")
	}
	card := page{Body: p.Body[i:]}
	card.Body = card.Body[:strings.Index(card.Body, "</article>")]
	if got, want := card.text("review-reason"), "запрос отправлен в систему, но исход неизвестен"; got != want {
		t.Errorf("review reason %q, want %q", got, want)
	}
	if got := card.text("review-reason-code"); got != "OUTCOME_UNKNOWN" {
		t.Errorf("review reason code %q", got)
	}
	if facts := card.Body[:strings.Index(card.Body, "<details")]; strings.Contains(facts, sent) {
		t.Errorf("the review card shows the API's English message:\n%s", facts)
	}
}

// The operations browser walks its pages by keyset: every operation once.
func TestOperationsPaginate(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	const n = 23
	base := "test:invoice.create:" + a.uniq("page") + "_"
	want := map[string]bool{}
	for i := range n {
		key := base + itoa(int64(100+i)) + ":v1"
		a.claim(key, "invoice.create", "onec", false, map[string]any{"order_id": "o"})
		want[key] = true
	}
	c := a.signIn(store.RoleAuditor)
	seen := map[string]int{}
	pages := 0
	next := "/admin/operations?key=" + url.QueryEscape(base) + "&limit=10"
	for next != "" {
		p := c.get(next).expect(t, http.StatusOK)
		pages++
		for _, k := range p.attrs("operation-row", "data-key") {
			seen[k]++
		}
		older := p.attrs("page-older", "href")
		next = ""
		if len(older) > 0 {
			next = older[0]
			if !strings.Contains(next, "limit=10") || !strings.Contains(next, "key=") {
				t.Fatalf("the older link drops the filters: %s", next)
			}
		}
		if pages > 5 {
			t.Fatal("pages never end")
		}
	}
	if pages != 3 {
		t.Fatalf("%d pages, want 3", pages)
	}
	for k := range want {
		if seen[k] != 1 {
			t.Errorf("%s seen %d times", k, seen[k])
		}
	}
	if len(seen) != n {
		t.Fatalf("saw %d operations, want %d", len(seen), n)
	}
	// Filters narrow it down; bad input is re-rendered with a message.
	p := c.get("/admin/operations?status=succeeded&key="+url.QueryEscape(base)).expect(t, http.StatusOK)
	if len(p.attrs("operation-row", "data-key")) != 0 {
		t.Fatal("status filter ignored")
	}
	c.get("/admin/operations?from=02.12.2026").expect(t, http.StatusUnprocessableEntity)
}

// Status, intent and target are chosen from lists; a value not on them is
// refused like a bad date; a target may go by its product's name.
func TestOperationFilterLists(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	crmKey := a.uniq("test:crm.callback.create:create:filter-1:v1")
	payKey := a.uniq("test:payment.charge:filter-000002:v1")
	a.claim(crmKey, "crm.callback.create", "crm", false, map[string]any{"customer_id": "customer-1042"})
	a.charge(payKey, 5000, "")
	c := a.signIn(store.RoleAuditor)

	p := c.get("/admin/operations").expect(t, http.StatusOK)
	for _, name := range []string{"status", "intent", "target"} {
		if !strings.Contains(p.Body, `<select name="`+name+`"`) || strings.Contains(p.Body, `<input type="text" name="`+name+`"`) {
			t.Errorf("the %s filter is not a list", name)
		}
	}
	for _, want := range []string{`<option value="crm">Битрикс24 (crm)</option>`, `<option value="payment.charge">payment.charge — Списание</option>`} {
		if !strings.Contains(p.Body, want) {
			t.Errorf("no %s", want)
		}
	}

	t.Run("ErrUnknown", func(t *testing.T) {
		for _, q := range []string{"status=bogus", "intent=sql.exec", "target=sap", "status=succeeded&target=crm&intent=nope"} {
			p := c.get("/admin/operations?"+q).expect(t, http.StatusUnprocessableEntity)
			if !p.has("form-error") || p.has("operation-row") {
				t.Errorf("%s: no message, or rows shown anyway", q)
			}
		}
		if got := c.get("/admin/operations?target=sap").text("form-error"); !strings.Contains(got, "Битрикс24 (crm)") {
			t.Errorf("target message %q", got)
		}
	})
	t.Run("ProductNames", func(t *testing.T) {
		for _, tc := range []struct {
			target, key string
			rows        int
		}{
			{"bitrix24", crmKey, 1}, {"crm", crmKey, 1}, {"yookassa", crmKey, 0},
			{"yookassa", payKey, 1}, {"YooKassa", payKey, 1}, {"payments", payKey, 1}, {"onec", payKey, 0},
		} {
			p := c.get("/admin/operations?target="+tc.target+"&key="+url.QueryEscape(tc.key)).expect(t, http.StatusOK)
			if got := len(p.attrs("operation-row", "data-key")); got != tc.rows {
				t.Errorf("target=%s key=%s: %d rows, want %d", tc.target, tc.key, got, tc.rows)
			}
		}
		p := c.get("/admin/operations?target=bitrix24").expect(t, http.StatusOK)
		if !strings.Contains(p.Body, `<option value="crm" selected>`) {
			t.Error("bitrix24 does not select crm in the list")
		}
		p = c.get("/admin/operations?intent=payment.charge&key="+url.QueryEscape(payKey)).expect(t, http.StatusOK)
		if got := p.attrs("operation-row", "data-key"); len(got) != 1 || got[0] != payKey {
			t.Errorf("intent filter: rows %v", got)
		}
	})
}

func TestAuditCSV(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	key := a.uniq("test:payment.charge:csv-001:v1")
	ap := a.charge(key, 5000, "")
	const comment = `said "yes", then "no"`
	acc := a.signIn(store.RoleAccountant)
	acc.post("/admin/approvals/"+itoa(ap.ID)+"/approve", url.Values{"comment": {comment}, "confirm": {"yes"}}).expect(t, http.StatusSeeOther)

	c := a.signIn(store.RoleAuditor)
	p := c.get("/admin/audit?format=csv&key="+url.QueryEscape(key)).expect(t, http.StatusOK)
	if ct := p.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
		t.Fatalf("Content-Type %q", ct)
	}
	if cd := p.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment;") || !strings.Contains(cd, ".csv") {
		t.Fatalf("Content-Disposition %q", cd)
	}
	if !strings.Contains(p.Body, `"{""approval_id"":`) || !strings.Contains(p.Body, `\""yes\"", then`) {
		t.Fatalf("quotes not doubled:\n%s", p.Body)
	}
	body, ok := strings.CutPrefix(p.Body, "\ufeff")
	if !ok {
		t.Fatalf("the CSV does not start with a UTF-8 byte order mark: %q", p.Body[:min(len(p.Body), 12)])
	}
	recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatalf("not CSV: %v\n%s", err, p.Body)
	}
	if got, want := strings.Join(recs[0], ","), "id,at,actor_kind,actor,event,operation_key,detail,prev_hash,hash"; got != want {
		t.Fatalf("header %q, want %q", got, want)
	}
	evs := a.events(store.AuditFilter{OperationKey: key})
	if len(recs) != len(evs)+1 {
		t.Fatalf("%d rows, want %d events + header", len(recs)-1, len(evs))
	}
	found := false
	for i, r := range recs[1:] {
		if r[0] != itoa(evs[i].ID) || r[6] != string(evs[i].Detail) || r[8] != evs[i].Hash {
			t.Fatalf("row %d = %v, want event %+v", i, r, evs[i])
		}
		if r[4] == "approval.approved" {
			found = strings.Contains(r[6], `said \"yes\", then \"no\"`) && r[3] == "test-accountant"
		}
	}
	if !found {
		t.Fatal("the approval with its comment is not in the export")
	}
	// The page and its chain check.
	p = c.get("/admin/audit?verify=1&key="+url.QueryEscape(key)).expect(t, http.StatusOK)
	if !p.has("chain-status") || !strings.Contains(p.text("chain-status"), "Цепочка цела") {
		t.Fatalf("chain status %q", p.text("chain-status"))
	}
	if got := p.attrs("audit-csv", "href"); len(got) != 1 || !strings.Contains(got[0], "format=csv") || !strings.Contains(got[0], "key=") {
		t.Fatalf("CSV link %v", got)
	}
}

// Excel on Windows reads the CSV as UTF-8 (a byte order mark) and sees
// details as typed; the HTML page still escapes them.
func TestAuditCSVForExcel(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	key := a.uniq("test:payment.charge:csv-002:v1")
	ap := a.charge(key, 5000, "")
	const comment = `<b>сверено</b> & ok`
	acc := a.signIn(store.RoleAccountant)
	acc.post("/admin/approvals/"+itoa(ap.ID)+"/approve", url.Values{"comment": {comment}, "confirm": {"yes"}}).expect(t, http.StatusSeeOther)

	c := a.signIn(store.RoleAuditor)
	p := c.get("/admin/audit?format=csv&key="+url.QueryEscape(key)).expect(t, http.StatusOK)
	if !strings.HasPrefix(p.Body, "\xef\xbb\xbf") {
		t.Fatalf("no UTF-8 byte order mark: %q", p.Body[:min(len(p.Body), 12)])
	}
	if !strings.Contains(p.Body, `""comment"":""`+comment+`""`) || strings.Contains(p.Body, `\u003c`) {
		t.Fatalf("the comment is not in the CSV as typed:\n%s", p.Body)
	}
	p = c.get("/admin/audit?key="+url.QueryEscape(key)).expect(t, http.StatusOK)
	if strings.Contains(p.Body, "<b>сверено") || !strings.Contains(p.Body, "&lt;b&gt;сверено&lt;/b&gt; &amp; ok") {
		t.Fatalf("the audit page does not escape the comment:\n%s", p.Body)
	}
}

// Admins make tokens (the secret shows once) and revoke them; auditors
// see the list without the buttons.
func TestTokens(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	ctx := context.Background()
	adm := a.signIn(store.RoleAdmin)

	p := adm.post("/admin/tokens", url.Values{"agent": {"bad name!"}, "scope": {"read"}}).expect(t, http.StatusUnprocessableEntity)
	if !p.has("form-error") {
		t.Fatal("no message for a bad agent name")
	}
	// The form and the store apply one rule: a name starts with a letter,
	// so revoke never reads it as a token id; the message says so.
	p = adm.post("/admin/tokens", url.Values{"agent": {"7up"}, "scope": {"read"}}).expect(t, http.StatusUnprocessableEntity)
	if got := p.text("form-error"); !strings.HasSuffix(got, "начиная с буквы.") {
		t.Fatalf("an agent name of a digit first: the message %q does not give the store's rule", got)
	}
	if got := p.attrs("token-agent", "pattern"); len(got) != 1 || regexp.MustCompile(`^(?:`+got[0]+`)$`).MatchString("7up") || !regexp.MustCompile(`^(?:`+got[0]+`)$`).MatchString("agent-7") {
		t.Fatalf("the form's pattern %q lets the browser send what the store refuses", got)
	}
	adm.post("/admin/tokens", url.Values{"agent": {"agent-ui"}}).expect(t, http.StatusUnprocessableEntity)

	p = adm.post("/admin/tokens", url.Values{"agent": {"agent-ui"}, "scope": {"read", "pay"}}).expect(t, http.StatusOK)
	secret := p.text("token-secret")
	tok, err := a.st.TokenBySecret(ctx, secret)
	if err != nil || tok.Agent != "agent-ui" || strings.Join(tok.Scopes, ",") != "read,pay" {
		t.Fatalf("token %+v, %v", tok, err)
	}
	if p.Header.Get("Cache-Control") != "no-store" {
		t.Fatal("the page with the secret may be cached")
	}
	p = adm.get("/admin/tokens").expect(t, http.StatusOK)
	if strings.Contains(p.Body, secret) {
		t.Fatal("the list shows a secret")
	}
	for _, e := range a.events(store.AuditFilter{Event: "token."}) {
		if strings.Contains(string(e.Detail), secret) {
			t.Fatal("the secret is in the audit trail")
		}
	}

	aud := a.signIn(store.RoleAuditor)
	p = aud.get("/admin/tokens").expect(t, http.StatusOK)
	if p.has("token-form") || p.has("token-revoke") || !p.has("tokens") {
		t.Fatal("an auditor sees token actions")
	}

	// Revoking asks first, naming the agent; nothing is revoked yet.
	p = adm.post("/admin/tokens/"+itoa(tok.ID)+"/revoke", nil).expect(t, http.StatusOK)
	if got := p.text("token-revoke-agent"); got != "agent-ui" || !strings.Contains(p.text("token-revoke-lead"), "agent-ui") {
		t.Fatalf("the confirmation names %q:\n%s", got, p.Body)
	}
	if _, err := a.st.TokenBySecret(ctx, secret); err != nil {
		t.Fatalf("the token stopped working before the confirmation: %v", err)
	}
	p = adm.post("/admin/tokens/"+itoa(tok.ID)+"/revoke", url.Values{"confirm": {"yes"}}).expect(t, http.StatusSeeOther)
	if _, err := a.st.TokenBySecret(ctx, secret); err == nil {
		t.Fatal("revoked token still works")
	}
	if f := adm.get(p.location()).text("flash"); !strings.Contains(f, "agent-ui") {
		t.Fatalf("the message %q does not name the agent", f)
	}
	adm.post("/admin/tokens/"+itoa(tok.ID)+"/revoke", nil).expect(t, http.StatusUnprocessableEntity)
	adm.post("/admin/tokens/"+itoa(tok.ID)+"/revoke", url.Values{"confirm": {"yes"}}).expect(t, http.StatusUnprocessableEntity)
	// A name in place of the id would revoke every token of an agent.
	adm.post("/admin/tokens/agent-a/revoke", nil).expect(t, http.StatusNotFound)
	evs := a.events(store.AuditFilter{Event: "token.revoked", Actor: "test-admin"})
	named := false
	for _, e := range evs {
		named = named || strings.Contains(string(e.Detail), `"agent":"agent-ui"`)
	}
	if !named {
		t.Fatalf("the revocation's audit event does not name the agent: %v", evs)
	}
}

// Admins add users, change roles, disable and enable them.
func TestUsers(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	ctx := context.Background()
	adm := a.signIn(store.RoleAdmin)
	boris := a.uniq("boris")

	adm.post("/admin/users", url.Values{"name": {boris}, "role": {"accountant"}, "password": {"short"}}).expect(t, http.StatusUnprocessableEntity)
	adm.post("/admin/users", url.Values{"name": {boris}, "role": {"root"}, "password": {password}}).expect(t, http.StatusUnprocessableEntity)
	p := adm.post("/admin/users", url.Values{"name": {"test-admin"}, "role": {"admin"}, "password": {password}}).expect(t, http.StatusUnprocessableEntity)
	if !strings.Contains(p.text("form-error"), "занято") {
		t.Fatalf("message %q", p.text("form-error"))
	}
	adm.post("/admin/users", url.Values{"name": {boris}, "role": {"operator"}, "password": {password}}).expect(t, http.StatusSeeOther)
	adm.post("/admin/users/"+boris+"/role", url.Values{"role": {"auditor"}}).expect(t, http.StatusSeeOther)
	adm.post("/admin/users/"+boris+"/disable", nil).expect(t, http.StatusSeeOther)

	var got store.User
	users, err := a.st.Users(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if u.Name == boris {
			got = u
		}
	}
	if got.Role != store.RoleAuditor || !got.Disabled {
		t.Fatalf("boris = %+v", got)
	}
	p = adm.get("/admin/users").expect(t, http.StatusOK)
	if !strings.Contains(p.Body, `data-testid="user-row" data-name="`+boris+`"`) || !p.has("user-disabled") {
		t.Fatal("the list does not show boris disabled")
	}
	adm.post("/admin/users/"+boris+"/enable", nil).expect(t, http.StatusSeeOther)
	adm.post("/admin/users/nobody/enable", nil).expect(t, http.StatusNotFound)

	var events []string
	for _, e := range a.events(store.AuditFilter{Event: "user.", Actor: "test-admin"}) {
		if strings.Contains(string(e.Detail), `"`+boris+`"`) {
			events = append(events, e.Event)
		}
		if strings.Contains(string(e.Detail), password) {
			t.Fatal("a password is in the audit trail")
		}
	}
	if strings.Join(events, ",") != "user.enabled,user.disabled,user.role_changed,user.created" {
		t.Fatalf("audited %v", events)
	}
}

// Operators settle unknown operations with a reason; refusals change nothing.
func TestReviewResolve(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	ctx := context.Background()
	op := a.unknown(a.uniq("test:invoice.create:review-1:v1"))
	opr := a.signIn(store.RoleOperator)

	p := opr.get("/admin/review?flagged=1").expect(t, http.StatusOK)
	if !strings.Contains(p.Body, `data-testid="review-row" data-key="`+op.Key+`"`) || !p.has("resolve-form") {
		t.Fatal("the flagged operation is not on the review page with its form")
	}
	path := "/admin/review/" + keyPath(op.Key) + "/resolve"
	for _, form := range []url.Values{
		{"outcome": {"found"}, "object_id": {"INV-7"}},              // no reason
		{"outcome": {"found"}, "reason": {"seen in 1C"}},            // no object id
		{"object_id": {"INV-7"}, "reason": {"seen in 1C"}},          // no outcome
		{"outcome": {"maybe"}, "reason": {"x"}, "object_id": {"1"}}, // bad outcome
	} {
		p := opr.post(path, form).expect(t, http.StatusUnprocessableEntity)
		if !p.has("form-error") {
			t.Fatalf("no message for %v", form)
		}
	}
	if got, _ := a.st.Get(ctx, op.Key); got.Status != store.StatusUnknown {
		t.Fatalf("status after refused forms: %s", got.Status)
	}
	inv := "INV-" + newUUID()
	// No target here can read the object: the person says they checked
	// it themselves, and the trail says the id stands on their word.
	found := url.Values{"outcome": {"found"}, "object_id": {inv}, "reason": {"seen in 1C by hand"}}
	p = opr.post(path, found).expect(t, http.StatusUnprocessableEntity)
	if !p.has("resolve-unchecked-confirm") || !strings.Contains(p.text("form-error"), "не смогла подтвердить") {
		t.Fatalf("an unchecked object accepted without a word: %q", p.text("form-error"))
	}
	if got, _ := a.st.Get(ctx, op.Key); got.Status != store.StatusUnknown {
		t.Fatalf("status after an unchecked object: %s", got.Status)
	}
	found.Set("confirm_unchecked", "yes")
	opr.post(path, found).expect(t, http.StatusSeeOther)
	got, _ := a.st.Get(ctx, op.Key)
	if got.Status != store.StatusSucceeded || got.TargetObjectID != inv {
		t.Fatalf("after resolving: %+v", got)
	}
	evs := a.events(store.AuditFilter{OperationKey: op.Key, Event: "operation.resolved_by_hand"})
	if len(evs) != 1 || evs[0].Actor.Name != "test-operator" {
		t.Fatalf("resolution audit %+v", evs)
	}
	var detail struct {
		Checked *bool  `json:"checked"`
		Check   string `json:"check"`
	}
	if json.Unmarshal(evs[0].Detail, &detail); detail.Checked == nil || *detail.Checked || detail.Check == "" {
		t.Fatalf("the trail does not say the object was not checked: %s", evs[0].Detail)
	}
	// Once settled, a second resolution is refused.
	opr.post(path, url.Values{"outcome": {"not_found"}, "reason": {"again"}}).expect(t, http.StatusUnprocessableEntity)
}

// The dashboard counts what waits; English on request; HTML errors.
func TestDashboardAndLanguage(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	c := a.signIn(store.RoleAuditor)
	p := c.get("/admin/").expect(t, http.StatusOK)
	for _, id := range []string{"card-approvals-value", "card-unknown-value", "card-flagged-value", "card-oldest-value", "status-counts"} {
		if !p.has(id) {
			t.Fatalf("dashboard lacks %s", id)
		}
	}
	if !strings.Contains(p.Body, `<html lang="ru">`) || !strings.Contains(p.Body, "Сводка") {
		t.Fatal("not Russian by default")
	}
	p = c.get("/admin/lang/en?next="+url.QueryEscape("/admin/approvals")).expect(t, http.StatusSeeOther)
	if p.location() != "/admin/approvals" || c.cookies["lang"] != "en" {
		t.Fatalf("language switch: to %q, cookie %q", p.location(), c.cookies["lang"])
	}
	p = c.get("/admin/approvals").expect(t, http.StatusOK)
	if !strings.Contains(p.Body, `<html lang="en">`) || !strings.Contains(p.Body, "Approvals") {
		t.Fatal("not English after the switch")
	}
	// From the sign-in page, back to it.
	login := "/admin/login?next=" + url.QueryEscape("/admin/audit")
	p = a.client().get("/admin/lang/en?next="+url.QueryEscape(login)).expect(t, http.StatusSeeOther)
	if p.location() != login {
		t.Fatalf("language switch on the sign-in page goes to %q", p.location())
	}
	// Never off-site.
	p = c.get("/admin/lang/ru?next="+url.QueryEscape("//evil.example/x")).expect(t, http.StatusSeeOther)
	if p.location() != "/admin/" {
		t.Fatalf("redirected to %q", p.location())
	}
	p = c.get("/admin/no-such-page").expect(t, http.StatusNotFound)
	if !p.has("error-page") {
		t.Fatal("404 is not the HTML error page")
	}
	if csp := p.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Fatalf("CSP %q", csp)
	}
}

// A charge whose agent has since lost its pay tokens is flagged in the
// queue: the accountant should know before approving it.
// Every page says which time zone its times are in.
func TestPagesNameTheTimeZone(t *testing.T) {
	t.Parallel()
	a := newOwnApp(t, func(d *admin.Deps) { d.Location = time.FixedZone("MSK", 3*3600) })
	u, err := ownPasswordUser(context.Background(), a.st, "zone-reader", store.RoleAuditor)
	if err != nil {
		t.Fatal(err)
	}
	a.users[store.RoleAuditor] = u
	c := a.signIn(store.RoleAuditor)
	for _, path := range []string{"/admin/", "/admin/operations", "/admin/audit"} {
		if p := c.get(path).expect(t, http.StatusOK); !strings.Contains(p.text("time-zone"), "MSK, UTC+03:00") {
			t.Errorf("%s: time zone %q", path, p.text("time-zone"))
		}
	}
}

func TestApprovalFlagsRevokedAgent(t *testing.T) {
	t.Parallel()
	a := newOwnApp(t, nil)
	ctx := context.Background()
	u, err := ownPasswordUser(ctx, a.st, "test-accountant", store.RoleAccountant)
	if err != nil {
		t.Fatal(err)
	}
	a.users[store.RoleAccountant] = u
	if _, _, err := a.st.CreateToken(ctx, "agent-a", []string{"pay"}); err != nil {
		t.Fatal(err)
	}
	a.charge("test:payment.charge:rev-000001:v1", 1000, "")
	c := a.signIn(store.RoleAccountant)
	if p := c.get("/admin/approvals").expect(t, http.StatusOK); p.has("approval-agent-revoked") {
		t.Fatal("an agent with a valid pay token is flagged")
	}
	if n, err := a.st.RevokeToken(ctx, "agent-a"); err != nil || n != 1 {
		t.Fatalf("revoke: %d %v", n, err)
	}
	p := c.get("/admin/approvals").expect(t, http.StatusOK)
	if !p.has("approval-agent-revoked") || !strings.Contains(p.text("approval-agent-revoked"), "отозваны") {
		t.Fatal("a revoked agent's charge is not flagged")
	}
}

// A refund waiting for approval shows the charge it refunds: its order,
// its customer and its amount, with a link to it.
func TestRefundShowsItsCharge(t *testing.T) {
	t.Parallel()
	a := newOwnApp(t, nil)
	ctx := context.Background()
	u, err := ownPasswordUser(ctx, a.st, "refund-accountant", store.RoleAccountant)
	if err != nil {
		t.Fatal(err)
	}
	a.users[store.RoleAccountant] = u
	const chargeKey = "test:payment.charge:rf-000001:v1"
	a.charge(chargeKey, 125000, "")
	// The charge was approved and made: it holds the provider's payment id.
	op, err := a.st.Get(ctx, chargeKey)
	if err != nil {
		t.Fatal(err)
	}
	ap, _ := a.st.ApprovalByKey(ctx, chargeKey)
	if err := a.st.DecideApproval(ctx, ap.ID, true, "someone", ""); err != nil {
		t.Fatal(err)
	}
	taken, err := a.st.TakeApproved(ctx, "test-run", time.Minute)
	if err != nil || taken.Key != op.Key {
		t.Fatalf("take approved: %+v %v", taken, err)
	}
	if err := a.st.Complete(ctx, chargeKey, "test-run", "2f3b588d-000f-5000-8000-1d6e87c7fbde", nil); err != nil {
		t.Fatal(err)
	}
	a.claim("test:payment.refund:rf-000001:v1", "payment.refund", "payments", true, map[string]any{
		"payment_id": "2f3b588d-000f-5000-8000-1d6e87c7fbde", "amount_minor": 25000, "currency": "RUB",
	})
	p := a.signIn(store.RoleAccountant).get("/admin/approvals").expect(t, http.StatusOK)
	if got := p.text("approval-order"); got != orderOf(chargeKey) {
		t.Fatalf("the refund's order %q, want the charge's", got)
	}
	if got := p.text("approval-charged"); !strings.Contains(got, "1"+"\u00a0"+"250,00") {
		t.Fatalf("the refunded charge's amount %q", got)
	}
	if !strings.Contains(p.Body, `href="/admin/operations/`) || !strings.Contains(p.text("approval-customer"), "customer-1042") {
		t.Fatalf("no link to the charge, or no customer:\n%s", p.Body)
	}
}

// A comment over the limit is refused whole, never cut: nothing is decided
// and the words come back to be shortened.
func TestApprovalCommentTooLong(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	ap := a.charge(a.uniq("test:payment.charge:long-comment:v1"), 1000, "")
	long := strings.Repeat("я", 501)
	p := a.signIn(store.RoleAccountant).post("/admin/approvals/"+itoa(ap.ID)+"/approve", url.Values{"comment": {long}})
	if p.Code != http.StatusUnprocessableEntity || !strings.Contains(p.Body, "500") || !strings.Contains(p.Body, long) {
		t.Fatalf("HTTP %d; the refusal should name the limit and keep the text", p.Code)
	}
	if got := a.approval(ap.OperationKey).Status; got != store.ApprovalPending {
		t.Fatalf("approval = %s, want pending", got)
	}
}
