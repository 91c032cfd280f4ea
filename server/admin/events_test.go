package admin_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/server/engine"
	"github.com/oncegate/oncegate/store"
)

// eventsApp serves the admin UI over a journal of its own (the
// dashboard's warning counts every notice in it), with the sources
// payments and crm, a clock that later moves forward by skew, and an
// auditor signed in.
func eventsApp(t *testing.T, pageSize int) (*app, *client, *atomic.Int64) {
	t.Helper()
	var skew atomic.Int64
	a := newOwnApp(t, func(d *admin.Deps) {
		d.EventSources = []string{"payments", "crm"}
		d.PageSize = pageSize
		d.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	})
	u, err := ownPasswordUser(context.Background(), a.st, "events-ivan", store.RoleAuditor)
	if err != nil {
		t.Fatal(err)
	}
	return a, a.signInAs(u), &skew
}

// receive journals one delivery of a notice for each of runs, each run's
// key derived as the gateway derives it.
func receive(t *testing.T, st *store.Store, source, event, object string, runs ...string) []store.Event {
	t.Helper()
	var rules []store.EventRule
	for _, run := range runs {
		rules = append(rules, store.EventRule{Run: run, OpKey: "test:" + run + ":evt-" + source + "-" + object + ":v1"})
	}
	evs, err := st.ReceiveEvent(context.Background(), source, event, object, rules, time.Now())
	if err != nil || len(evs) != len(runs) {
		t.Fatalf("receive %s: %+v %v", object, evs, err)
	}
	return evs
}

// The events page lists the notices newest first with what became of
// each and why, narrows by state and source, links the operation a
// notice runs, and that operation's page says the notice started it.
// The dashboard warns of notices dropped and of notices pending long.
func TestEventsPage(t *testing.T) {
	t.Parallel()
	a, c, skew := eventsApp(t, 50)
	ctx := context.Background()

	forged := receive(t, a.st, "payments", "payment.succeeded", "pay-forged", "buh.receipt.create")[0]
	if err := a.st.SettleEvent(ctx, forged.ID, store.EventDropped, "the source does not hold it as the notice says: status is pending"); err != nil {
		t.Fatal(err)
	}
	waiting := receive(t, a.st, "payments", "payment.succeeded", "pay-wait", "buh.receipt.create")[0]
	if err := a.st.PostponeEvent(ctx, waiting.ID, "the source could not be read back: HTTP 503", time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	deal := receive(t, a.st, "crm", "ONCRMDEALUPDATE", "deal-7", "invoice.create")[0]
	a.claim(deal.OpKey, "invoice.create", "onec", false, map[string]any{"order_id": "deal-7", "customer_id": "customer-1042"})
	if err := a.st.SettleEvent(ctx, deal.ID, store.EventRun, ""); err != nil {
		t.Fatal(err)
	}

	p := c.get("/admin/events").expect(t, http.StatusOK)
	if got, want := p.attrs("event-row", "data-state"), []string{"run", "pending", "dropped"}; !slices.Equal(got, want) {
		t.Fatalf("states listed %v, want %v (newest first)", got, want)
	}
	if !p.has("nav-events") || !p.has("events-lead") {
		t.Fatal("the page lacks its navigation entry or its lead")
	}
	for _, want := range []string{"status is pending", "HTTP 503", "ждёт проверки", "отброшено"} {
		if !strings.Contains(p.Body, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
	if got, want := p.attrs("event-operation", "href"), "/admin/operations/"+keyPath(deal.OpKey); len(got) != 3 || got[0] != want {
		t.Fatalf("operation links %v, want the first %q", got, want)
	}
	if got := p.attrs("event-next", "data-testid"); len(got) != 1 || p.text("event-next") == "" {
		t.Fatalf("%d next read-backs shown, want the pending notice's alone", len(got))
	}

	// Narrowed by state, then by source; an unknown state narrows nothing.
	if got := c.get("/admin/events?state=dropped").expect(t, http.StatusOK).attrs("event-row", "data-object"); !slices.Equal(got, []string{"pay-forged"}) {
		t.Fatalf("dropped: %v", got)
	}
	if got := c.get("/admin/events?source=crm").expect(t, http.StatusOK).attrs("event-row", "data-object"); !slices.Equal(got, []string{"deal-7"}) {
		t.Fatalf("crm's: %v", got)
	}
	if p := c.get("/admin/events?source=crm&state=dropped").expect(t, http.StatusOK); !p.has("events-empty") {
		t.Fatal("no empty state for a filter nothing matches")
	}

	// The operation the notice runs says so, and links the source's notices.
	op := c.get("/admin/operations/"+keyPath(deal.OpKey)).expect(t, http.StatusOK)
	if op.text("started-by-source") != "crm" || op.text("started-by-object") != "deal-7" || op.text("started-by-event") != "ONCRMDEALUPDATE" {
		t.Fatalf("started by: source %q, object %q, event %q", op.text("started-by-source"), op.text("started-by-object"), op.text("started-by-event"))
	}
	if got := op.attrs("started-by-events", "href"); len(got) != 1 || got[0] != "/admin/events?source=crm" {
		t.Fatalf("started by links %v", got)
	}
	plain := a.claim("test:invoice.create:order-plain:v1", "invoice.create", "onec", false, map[string]any{"order_id": "o-1", "customer_id": "customer-1042"})
	if c.get("/admin/operations/"+keyPath(plain.Key)).expect(t, http.StatusOK).has("started-by") {
		t.Fatal("an agent's operation is said to be started by a notice")
	}

	// The dashboard: the dropped one at once; the pending one once it
	// has waited for more than ten minutes.
	dash := c.get("/admin/").expect(t, http.StatusOK)
	if got := dash.attrs("dashboard-alert", "role"); len(got) != 1 || !strings.Contains(dash.Body, "отброшено за сутки: 1") || strings.Contains(dash.Body, "дольше 10 минут") {
		t.Fatalf("the dashboard's alerts (%d) do not warn of the dropped notice alone", len(got))
	}
	if !strings.Contains(dash.Body, `href="/admin/events?state=dropped"`) {
		t.Fatal("the dashboard's warning does not link the dropped notices")
	}
	skew.Store(int64(11 * time.Minute))
	if dash := c.get("/admin/").expect(t, http.StatusOK); !strings.Contains(dash.Body, "ждут проверки дольше 10 минут: 1") {
		t.Fatal("the dashboard does not warn of the notice pending for eleven minutes")
	}
	skew.Store(int64(25 * time.Hour))
	if dash := c.get("/admin/").expect(t, http.StatusOK); strings.Contains(dash.Body, "отброшено за сутки") {
		t.Fatal("the dashboard still warns of a notice dropped more than a day ago")
	}

	// In English.
	c.cookies["lang"] = "en"
	if p := c.get("/admin/events?state=dropped").expect(t, http.StatusOK); !strings.Contains(p.Body, ">dropped</span>") || !strings.Contains(p.Body, "Events") {
		t.Fatal("the English page does not name the state dropped")
	}
}

// The page ends before the rows of one notice's rules would be split
// between two pages: the older page starts with the rest of them, and no
// row is listed twice or left out.
func TestEventsPaged(t *testing.T) {
	t.Parallel()
	a, c, _ := eventsApp(t, 2)
	receive(t, a.st, "payments", "payment.succeeded", "pay-1", "buh.receipt.create", "crm.note.add")
	receive(t, a.st, "payments", "payment.succeeded", "pay-2", "buh.receipt.create")

	var seen []string
	path := "/admin/events"
	for range 3 {
		p := c.get(path).expect(t, http.StatusOK)
		for _, id := range p.attrs("event-row", "data-id") {
			seen = append(seen, id)
		}
		older := p.attrs("page-older", "href")
		if len(older) == 0 {
			break
		}
		path = older[0]
	}
	if len(seen) != 3 || seen[2] == seen[0] || seen[2] == seen[1] {
		t.Fatalf("rows listed over the pages: %v, want 3 distinct", seen)
	}
	first := c.get("/admin/events").expect(t, http.StatusOK)
	if got := first.attrs("event-row", "data-object"); !slices.Equal(got, []string{"pay-2"}) {
		t.Fatalf("first page %v, want pay-2 alone: pay-1's two rows go together", got)
	}
	if c.get("/admin/events?before=yesterday").Code != http.StatusBadRequest {
		t.Fatal("a malformed before is not refused")
	}
}

// Without sources configured, no navigation entry; the page still lists
// what the journal holds.
func TestEventsPageWithoutSources(t *testing.T) {
	t.Parallel()
	a := newOwnApp(t, nil)
	u, err := ownPasswordUser(context.Background(), a.st, "events-olga", store.RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	c := a.signInAs(u)
	receive(t, a.st, "payments", "payment.succeeded", "pay-old", "buh.receipt.create")
	p := c.get("/admin/events?source=payments").expect(t, http.StatusOK)
	if p.has("nav-events") {
		t.Fatal("the navigation names events with no source configured")
	}
	if got := p.attrs("event-row", "data-object"); !slices.Equal(got, []string{"pay-old"}) {
		t.Fatalf("listed %v", got)
	}
	if !strings.Contains(p.Body, `<option value="payments" selected>`) {
		t.Fatal("the source asked for is not among the filter's choices")
	}
}

// A process a notice runs says so on its page, and the events page links
// the process, not an operation.
func TestEventsStartProcess(t *testing.T) {
	t.Parallel()
	var a *app
	a = newOwnApp(t, func(d *admin.Deps) {
		d.EventSources = []string{"crm"}
		d.Process = func(ctx context.Context, key string) (store.Process, []engine.StepView, error) {
			p, err := a.st.GetProcess(ctx, key)
			return p, nil, err
		}
	})
	u, err := ownPasswordUser(context.Background(), a.st, "events-pavel", store.RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	c := a.signInAs(u)
	ev := receive(t, a.st, "crm", "ONCRMDEALUPDATE", "deal-9", "order.fulfil")[0]
	if _, _, err := a.st.BeginProcess(context.Background(), store.Process{Key: ev.OpKey, Intent: "order.fulfil", IntentVersion: 1,
		Fingerprint: strings.Repeat("cd", 32), Agent: "event:crm", Payload: []byte(`{}`)}, "test-run", time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	p := c.get("/admin/events").expect(t, http.StatusOK)
	if got := p.attrs("event-operation", "href"); len(got) != 1 || got[0] != "/admin/processes/"+url.PathEscape(ev.OpKey) {
		t.Fatalf("the notice links %v, want its process", got)
	}
	pr := c.get("/admin/processes/"+url.PathEscape(ev.OpKey)).expect(t, http.StatusOK)
	if pr.text("started-by-object") != "deal-9" || pr.text("started-by-deliveries") != "1" {
		t.Fatalf("the process's page: started by object %q, deliveries %q", pr.text("started-by-object"), pr.text("started-by-deliveries"))
	}
}
