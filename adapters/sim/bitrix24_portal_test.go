package sim_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters/sim"
)

// b24Portal serves simulators whose Bitrix24 portal is p and returns them
// with the base URL of p's webhook.
func b24Portal(t *testing.T, p sim.Bitrix24Portal) (*sim.Server, string) {
	t.Helper()
	s := sim.New()
	s.SetBitrix24Portal(p)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL + "/bitrix24/rest/" + strconv.Itoa(p.WebhookUser) + "/" + p.WebhookSecret + "/"
}

// A cloud portal's request rate: a leaky bucket that refuses with 503
// QUERY_LIMIT_EXCEEDED once full, running nothing.
func TestBitrix24_QueryLimit(t *testing.T) {
	t.Parallel()
	p := sim.DefaultBitrix24Portal()
	p.PerSecond, p.Bucket = 0.001, 3 // drains nothing within the test
	s, base := b24Portal(t, p)
	for range 3 {
		b24Must(t, base+"crm.contact.list", map[string]any{}, http.StatusOK)
	}
	answer := b24Must(t, base+"crm.activity.add", map[string]any{"fields": b24Fields("refused")}, http.StatusServiceUnavailable)
	b24AssertError(t, answer, "QUERY_LIMIT_EXCEEDED", "Too many requests")
	if n := s.Effects(sim.Bitrix24, "refused"); n != 0 {
		t.Fatalf("a refused add made %d effects", n)
	}
	if got := s.Bitrix24Refusals()["QUERY_LIMIT_EXCEEDED"]; got != 1 {
		t.Fatalf("refusals = %d, want 1", got)
	}
	if d := sim.DefaultBitrix24Portal(); d.PerSecond != 2 || d.Bucket != 50 || d.OperatingBudget != 480*time.Second || d.OperatingWindow != 10*time.Minute {
		t.Fatalf("the default portal is not a cloud portal's limits: %+v", d)
	}
}

// A portal whose plan has ended answers every call through the webhook
// PAYMENT_REQUIRED "Subscription has been ended", doing nothing.
func TestBitrix24_SubscriptionEnded(t *testing.T) {
	t.Parallel()
	p := sim.DefaultBitrix24Portal()
	p.PerSecond, p.SubscriptionEnded = 0, true
	s, base := b24Portal(t, p)
	for _, call := range []struct {
		method string
		params map[string]any
	}{{"crm.contact.list", map[string]any{}}, {"crm.activity.add", map[string]any{"fields": b24Fields("unpaid")}}} {
		answer := b24Must(t, base+call.method, call.params, http.StatusPaymentRequired)
		b24AssertError(t, answer, "PAYMENT_REQUIRED", "Subscription has been ended")
	}
	if n := s.Effects(sim.Bitrix24, "unpaid"); n != 0 {
		t.Fatalf("a portal without a plan made %d effects", n)
	}
}

// A method whose execution time in the window passed the budget is
// blocked with 429 OPERATION_TIME_LIMIT; other methods go on; answers
// say when the oldest counted time leaves the window.
func TestBitrix24_OperationTimeLimit(t *testing.T) {
	t.Parallel()
	p := sim.DefaultBitrix24Portal()
	p.PerSecond = 0
	p.OperatingBudget, p.OperatingWindow, p.OperatingPerCall = time.Second, time.Hour, 600*time.Millisecond
	_, base := b24Portal(t, p)
	first := time.Now()
	answer := b24Must(t, base+"crm.activity.list", map[string]any{}, http.StatusOK)
	tm := answer["time"].(map[string]any)
	reset := int64(tm["operating_reset_at"].(float64))
	if want := first.Add(time.Hour).Unix(); reset < want || reset > want+2 {
		t.Fatalf("operating_reset_at = %d, want about %d", reset, want)
	}
	if tm["operating"].(float64) != 0.6 {
		t.Fatalf("operating = %v, want 0.6", tm["operating"])
	}
	b24Must(t, base+"crm.activity.list", map[string]any{}, http.StatusOK) // 0.6 s spent: still within
	answer = b24Must(t, base+"crm.activity.list", map[string]any{}, http.StatusTooManyRequests)
	b24AssertError(t, answer, "OPERATION_TIME_LIMIT", "Method is blocked due to operation time limit.")
	b24Must(t, base+"crm.contact.list", map[string]any{}, http.StatusOK)
}

// Only the configured webhook is accepted: BITRIX24_WEBHOOK_URL's, else
// the documented default.
func TestBitrix24_Webhook(t *testing.T) {
	t.Setenv(sim.Bitrix24WebhookEnv, "https://portal.example/rest/12/from-env/")
	if got, want := sim.Bitrix24WebhookPath(), "/rest/12/from-env/"; got != want {
		t.Fatalf("path = %q, want %q", got, want)
	}
	s := sim.New()
	srv := httptest.NewServer(s)
	defer srv.Close()
	b24Must(t, srv.URL+"/bitrix24/rest/12/from-env/crm.contact.list", map[string]any{}, http.StatusOK)
	answer := b24Must(t, srv.URL+"/bitrix24/rest/1/"+sim.DefaultBitrix24Secret+"/crm.contact.list", map[string]any{}, http.StatusUnauthorized)
	b24AssertError(t, answer, "NO_AUTH_FOUND", "Wrong authorization data")

	t.Setenv(sim.Bitrix24WebhookEnv, "")
	if got, want := sim.Bitrix24WebhookPath(), "/rest/1/"+sim.DefaultBitrix24Secret+"/"; got != want {
		t.Fatalf("default path = %q, want %q", got, want)
	}
}

// A user who is not an administrator sees, in lists, only the records of
// the users in its view, and is refused a get of another's activity.
func TestBitrix24_Rights(t *testing.T) {
	t.Parallel()
	p := sim.DefaultBitrix24Portal()
	p.PerSecond = 0
	p.WebhookUser, p.Teams = 5, map[int][]int{5: {7}}
	s, base := b24Portal(t, p)
	answer := b24Must(t, base+"user.admin", map[string]any{}, http.StatusOK)
	if answer["result"] != false {
		t.Fatalf("user.admin = %v, want false", answer["result"])
	}
	answer = b24Must(t, base+"crm.contact.list", map[string]any{}, http.StatusOK)
	if answer["total"] != float64(0) {
		t.Fatalf("user 5 sees %v contacts of user 1", answer["total"])
	}
	if !s.AssignBitrix24Contact("customer-1042", 7) {
		t.Fatal("no contact customer-1042")
	}
	answer = b24Must(t, base+"crm.contact.list", map[string]any{}, http.StatusOK)
	if answer["total"] != float64(1) {
		t.Fatalf("user 5 sees %v contacts, want user 7's one", answer["total"])
	}
	id := answer["result"].([]any)[0].(map[string]any)["ID"]
	fields := b24Fields("hidden-later")
	fields["OWNER_ID"], fields["RESPONSIBLE_ID"] = id, 7
	fields["COMMUNICATIONS"] = []any{map[string]any{"ENTITY_ID": id, "ENTITY_TYPE_ID": 3, "VALUE": "+79000000001"}}
	added := b24Must(t, base+"crm.activity.add", map[string]any{"fields": fields}, http.StatusOK)
	list := map[string]any{"filter": map[string]any{"ORIGIN_ID": "hidden-later"}}
	if answer = b24Must(t, base+"crm.activity.list", list, http.StatusOK); answer["total"] != float64(1) {
		t.Fatalf("user 5 sees %v of user 7's activities", answer["total"])
	}
	// The contact, and its open activity, go to user 9, out of view.
	s.AssignBitrix24Contact("customer-1042", 9)
	if answer = b24Must(t, base+"crm.activity.list", list, http.StatusOK); answer["total"] != float64(0) {
		t.Fatalf("user 5 still sees %v activities of user 9", answer["total"])
	}
	answer = b24Must(t, base+"crm.activity.get", map[string]any{"id": added["result"]}, http.StatusBadRequest)
	b24AssertError(t, answer, "", "Access denied.")
}
