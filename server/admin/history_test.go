package admin_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/store"
)

// An operation whose target kept failing its look-ups reads, on its page
// and on the review card, as one line with a count, not a page of the
// same two lines; its details are labelled fields, its times in the
// firm's zone.
func TestHistoryInWords(t *testing.T) {
	t.Parallel()
	moscow, err := time.LoadLocation("Europe/Moscow")
	if err != nil {
		t.Fatal(err)
	}
	a := newApp(t, func(d *admin.Deps) { d.Location = moscow })
	ctx := context.Background()
	key := a.uniq("test:invoice.create:history-000001:v1")
	a.unknown(key)
	next := time.Date(2026, 12, 3, 9, 30, 15, 0, time.UTC)
	for range 4 {
		op, err := a.st.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.st.TakeForReconcile(ctx, op, "test-run", time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := a.st.LookupFailed(ctx, key, "test-run", "", "onec: HTTP 503 Service Unavailable", 1, next); err != nil {
			t.Fatal(err)
		}
	}
	c := a.signIn(store.RoleOperator)
	for _, path := range []string{"/admin/operations/" + keyPath(key), "/admin/review"} {
		p := c.get(path).expect(t, http.StatusOK)
		if path == "/admin/review" {
			i := strings.Index(p.Body, `data-key="`+key+`"`)
			if i < 0 {
				t.Fatalf("%s: no card of %s", path, key)
			}
			p.Body = p.Body[i:]
			if j := strings.Index(p.Body, `data-testid="review-row"`); j > 0 {
				p.Body = p.Body[:j]
			}
		}
		if got := p.text("event-repeat"); got != "повторов подряд: 4" {
			t.Errorf("%s: the repeated look-ups read %q", path, got)
		}
		if n := strings.Count(p.Body, `data-event="operation.lookup_failed"`); n != 1 {
			t.Errorf("%s: %d lines of failed look-ups, want one", path, n)
		}
		if n := strings.Count(p.Body, `data-event="operation.resumed"`); n != 0 {
			t.Errorf("%s: %d lines of resumptions left beside the counted one", path, n)
		}
		if !regexp.MustCompile(`<dt>Ответ системы</dt><dd [^>]*data-field="answer">1С временно недоступен \(HTTP 503\)<details class="raw" data-testid="detail-raw"><summary>[^<]+</summary><code class="answer">onec: HTTP 503 Service Unavailable</code>`).MatchString(p.Body) {
			t.Errorf("%s: the target's answer is not a labelled field in words, its own text behind a click", path)
		}
		if want := `data-field="next_check_at">03.12.2026` + "\u00a0" + `12:30:15</dd>`; !strings.Contains(p.Body, want) {
			t.Errorf("%s: the next look-up is not in the firm's zone (%s)", path, want)
		}
		if strings.Contains(p.Body, `{&#34;`) {
			t.Errorf("%s: details still shown as JSON", path)
		}
	}
}
