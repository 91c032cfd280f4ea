package admin_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/store"
)

// The export for Excel opens in columns in a Russian Excel: a UTF-8 byte
// order mark, ";" between fields, headers in the page's language, times
// in the firm's zone, a payment's amount as the pages show it, details
// as labelled fields.
func TestAuditExcel(t *testing.T) {
	t.Parallel()
	moscow, err := time.LoadLocation("Europe/Moscow")
	if err != nil {
		t.Fatal(err)
	}
	a := newApp(t, func(d *admin.Deps) { d.Location = moscow })
	key := a.uniq("test:payment.charge:excel-000001:v1")
	ap := a.charge(key, 1370125, "")
	acc := a.signIn(store.RoleAccountant)
	acc.post("/admin/approvals/"+itoa(ap.ID)+"/approve", url.Values{"comment": {"сверено; с заказом"}, "confirm": {"yes"}}).expect(t, http.StatusSeeOther)
	evs := a.events(store.AuditFilter{OperationKey: key})
	approved := evs[0]
	for _, e := range evs {
		if e.Event == "approval.approved" {
			approved = e
		}
	}

	for _, tc := range []struct{ lang, header, event, amount, when, comment string }{
		{"ru", "№;Время;Кто;Событие;Код события;Операция;Сумма;Подробности\r\n", "одобрена", "13 701,25 ₽",
			approved.At.In(moscow).Format("02.01.2006 15:04:05"), "Комментарий: сверено; с заказом"},
		{"en", "No.;Time;Who;Event;Event code;Operation;Amount;Details\r\n", "approved", "₽13,701.25",
			approved.At.In(moscow).Format("2006-01-02 15:04:05"), "Comment: сверено; с заказом"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			c := a.signIn(store.RoleAuditor)
			c.cookies[admin.LangCookie] = tc.lang
			p := c.get("/admin/audit?format=excel&key="+url.QueryEscape(key)).expect(t, http.StatusOK)
			if cd := p.Header.Get("Content-Disposition"); !strings.Contains(cd, "-excel.csv") {
				t.Errorf("Content-Disposition %q", cd)
			}
			body, ok := strings.CutPrefix(p.Body, "\xef\xbb\xbf")
			if !ok {
				t.Fatalf("no UTF-8 byte order mark: %q", p.Body[:min(len(p.Body), 12)])
			}
			if !strings.HasPrefix(body, tc.header) {
				t.Fatalf("header %q, want %q", body[:strings.Index(body, "\n")+1], tc.header)
			}
			if n := strings.Count(body, "\r\n"); n != len(evs)+1 {
				t.Fatalf("%d lines, want %d events and the header:\n%s", n, len(evs), body)
			}
			want := itoa(approved.ID) + ";" + tc.when + ";user: test-accountant;" + tc.event + ";approval.approved;" + key + ";" + tc.amount + ";"
			line := ""
			for _, l := range strings.Split(body, "\r\n") {
				if strings.HasPrefix(l, itoa(approved.ID)+";") {
					line = l
				}
			}
			if !strings.HasPrefix(line, want) {
				t.Fatalf("the approval's line\n%q\nwant it to start\n%q", line, want)
			}
			// A field holding the separator is quoted whole.
			if !strings.Contains(line, `"`) || !strings.Contains(line, tc.comment) {
				t.Fatalf("the approval's details: %q", line)
			}
		})
	}
}

// The audit page's event filter is a choice of named events (all of one
// kind too); a name not on the list is refused; details read as labelled
// fields; the chain check shows its head as oncegate audit verify does.
func TestAuditPageReads(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	key := a.uniq("test:payment.charge:audit-000001:v1")
	ap := a.charge(key, 5000, "")
	acc := a.signIn(store.RoleAccountant)
	acc.post("/admin/approvals/"+itoa(ap.ID)+"/deny", url.Values{"comment": {"заказ отменён"}}).expect(t, http.StatusSeeOther)
	c := a.signIn(store.RoleAuditor)

	p := c.get("/admin/audit?key="+url.QueryEscape(key)).expect(t, http.StatusOK)
	if !strings.Contains(p.Body, `<select name="event" data-testid="filter-event">`) || strings.Contains(p.Body, `<input type="text" name="event"`) {
		t.Fatal("the event filter is not a list")
	}
	for _, want := range []string{`<option value="approval.denied">отклонена</option>`, `<option value="approval.">все согласования</option>`} {
		if !strings.Contains(p.Body, want) {
			t.Errorf("no %s", want)
		}
	}
	if !regexp.MustCompile(`<dt>Комментарий</dt><dd [^>]*data-field="comment">заказ отменён</dd>`).MatchString(p.Body) || strings.Contains(p.Body, `{&#34;`) {
		t.Errorf("details are not labelled fields:\n%s", p.Body)
	}
	for q, want := range map[string][]string{
		"event=approval.denied": {"approval.denied"},
		"event=approval.":       {"approval.denied"},
		"event=operation.":      {"operation.failed_final", "operation.awaiting_approval"},
	} {
		p := c.get("/admin/audit?key="+url.QueryEscape(key)+"&"+q).expect(t, http.StatusOK)
		if got := p.attrs("event-row", "data-event"); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: events %v, want %v", q, got, want)
		}
		if !strings.Contains(p.Body, `selected>`) {
			t.Errorf("%s: the choice is not kept", q)
		}
	}
	p = c.get("/admin/audit?event=approval.nonsense").expect(t, http.StatusUnprocessableEntity)
	if !p.has("form-error") || p.has("event-row") {
		t.Error("an unnamed event is not refused")
	}

	p = c.get("/admin/audit?verify=1").expect(t, http.StatusOK)
	head := p.text("chain-head")
	if !regexp.MustCompile(`^[0-9]+:[0-9a-f]{64}$`).MatchString(head) {
		t.Fatalf("chain head %q", head)
	}
	id, hash, _ := strings.Cut(head, ":")
	var n int64
	for _, r := range id {
		n = n*10 + int64(r-'0')
	}
	if ok, err := a.st.HeadHolds(context.Background(), n, hash); err != nil || !ok {
		t.Fatalf("the head shown %s does not hold: %v", head, err)
	}
	if !strings.Contains(p.Body, "oncegate audit verify --head "+head) {
		t.Error("the page does not say how to check the head later")
	}
}
