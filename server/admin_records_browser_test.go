package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/oncegate/oncegate/store"
)

// viewports are the screens the pages are read on: a laptop and a phone.
var viewports = []struct {
	name string
	w, h int64
}{{"laptop", 1366, 768}, {"phone", 390, 844}}

// eval runs js in the tab and returns its value.
func eval[T any](b *tab, js string) T {
	b.tb.Helper()
	v, err := run(b, chromedp.Evaluate[T](js))
	if err != nil {
		b.tb.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// offScreen lists the elements matching css whose right edge lies past
// the screen's: a button one would have to find by scrolling sideways.
func offScreen(b *tab, css string) []string {
	b.tb.Helper()
	return eval[[]string](b, `Array.from(document.querySelectorAll(`+jsString(css)+`))
		.filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
		.map(e => e.outerHTML.slice(0, 120))`)
}

// clipped reports whether a table's box is wider than what shows of it.
func clipped(b *tab, testid string) bool {
	b.tb.Helper()
	return eval[bool](b, `(() => { const t = document.querySelector('[data-testid="`+testid+`"]');
		const s = t.closest('.scroll') || t.parentElement;
		return t.getBoundingClientRect().right > window.innerWidth + 0.5 || s.scrollWidth > s.clientWidth + 1; })()`)
}

func jsString(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
}

// The journal's pages read in both languages, on a laptop and on a
// phone: the operations list with a payment's amount and customer, found
// by its order; the tokens and users tables with their buttons on screen.
func TestRecordsInBrowser(t *testing.T) {
	t.Parallel()
	root := startBrowser(t)
	shots, err := os.MkdirTemp("", "oncegate-admin-screens-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", shots)
	g := setupWith(t, fastConfig())
	payer := g.MustToken("agent-pay-with-a-long-name", "pay")
	g.mustUsers(t, map[string]string{"rita": store.RoleAccountant, "adam": store.RoleAdmin})
	const key = "test:payment.charge:order-2024-000123-long-reference:v1"
	body, _ := json.Marshal(map[string]any{"schema_version": "1.0", "intent": "payment.charge", "payload": map[string]any{
		"account_id": "merchant-account-17", "customer_id": "customer-2001", "order_id": "order-2024-000123-long-reference",
		"amount_minor": 1370125, "currency": "RUB"}})
	expect(t, g.do("POST", "/v1/operations", payer, map[string]string{"Idempotency-Key": key}, body), http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")

	// An invoice whose 1C look-ups kept failing, for its history and its
	// review card.
	const unknownKey = "test:invoice.create:order-2024-000124:v1"
	g.unknownByHand(t, unknownKey, "order-2024-000124")
	for range 3 {
		op, err := g.store.Get(context.Background(), unknownKey)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.store.TakeForReconcile(context.Background(), op, "a-dead-run", time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := g.store.LookupFailed(context.Background(), unknownKey, "a-dead-run", "", "onec: HTTP 503 Service Unavailable", 1, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	g.mustUsers(t, map[string]string{"oleg": store.RoleOperator, "inna": store.RoleAuditor})
	// Made by an admin, who chose the password: still to choose their own.
	if _, err := g.store.CreateUser(context.Background(), "nina", store.RoleOperator, "an-admin-chose-this"); err != nil {
		t.Fatal(err)
	}

	for _, lang := range []string{"ru", "en"} {
		amount := map[string]string{"ru": "13\u00a0701,25\u00a0₽", "en": "₽13,701.25"}[lang]
		for _, vp := range viewports {
			phone := vp.name == "phone"
			name := lang + "-" + vp.name
			// Each part of a screen signs its person in when it starts, so
			// its tab's time limit is its own, not spent on the others'
			// sign-ins (each hashes a password).
			person := func(user string) *tab {
				b := g.newTab(t, root, shots)
				b.signIn(user)
				if lang == "en" {
					b.open("/admin/lang/en?next=%2Fadmin%2F")
				}
				return b
			}
			b := person("rita")
			b.do(chromedp.EmulateViewport(vp.w, vp.h))
			b.open("/admin/operations?q=" + url.QueryEscape("order-2024-000123-long-reference"))
			b.do(chromedp.WaitVisible(chromedp.CSS(row("operation-row", key))))
			if n := b.count(`[data-testid="operation-row"]`); n != 1 {
				t.Fatalf("%s: the order's search shows %d rows", name, n)
			}
			if got := b.text(tid("operation-amount", row("operation-row", key))); got != amount {
				t.Fatalf("%s: amount %q, want %q", name, got, amount)
			}
			if got := b.text(tid("operation-customer", row("operation-row", key))); got != "customer-2001" {
				t.Fatalf("%s: customer %q", name, got)
			}
			if open := eval[bool](b, `document.querySelector('[data-testid="filters-fold"]').open`); open == phone {
				t.Fatalf("%s: the filters open=%v", name, open)
			}
			if phone {
				if off := offScreen(b, `[data-testid="operations"] td, [data-testid="operation-link"]`); len(off) > 0 {
					t.Fatalf("%s: off screen: %v", name, off)
				}
			} else if clipped(b, "operations") {
				t.Fatalf("%s: the operations table is clipped", name)
			}
			b.shot("operations-" + name)
			if phone {
				b.do(chromedp.Click(tid("filters-toggle")), chromedp.WaitVisible(tid("filter-status")))
				b.shot("operations-filters-" + name)
			}

			a := person("adam")
			a.do(chromedp.EmulateViewport(vp.w, vp.h))
			for _, pg := range []struct{ path, table, buttons string }{
				{"/admin/tokens", "tokens", `[data-testid="token-revoke"]`},
				{"/admin/users", "users", `[data-testid="users"] button, [data-testid="users"] select, [data-testid="users"] input`},
			} {
				a.open(pg.path)
				a.do(chromedp.WaitVisible(tid(pg.table)))
				if off := offScreen(a, pg.buttons); len(off) > 0 {
					t.Fatalf("%s %s: buttons off screen: %v", name, pg.path, off)
				}
				if pg.table == "users" {
					for user, want := range map[string]string{"nina": "true", "rita": "false"} {
						got := eval[string](a, `document.querySelector('[data-testid="user-row"][data-name="`+user+`"] [data-testid="user-password-state"]')?.dataset.mustChange ?? ""`)
						if got != want {
							t.Fatalf("%s: %s must choose a password: %q, want %s", name, user, got, want)
						}
					}
				}
				a.shot(pg.table + "-" + name)
			}

			// The audit trail: named events, details in words, the chain's
			// head as the CLI prints it, the export for Excel.
			au := person("inna")
			au.do(chromedp.EmulateViewport(vp.w, vp.h))
			au.open("/admin/audit?event=approval.&verify=1")
			au.do(chromedp.WaitVisible(tid("chain-head")))
			if got := eval[string](au, `document.querySelector('[data-testid="filter-event"]').value`); got != "approval." {
				t.Fatalf("%s: the event filter holds %q", name, got)
			}
			if head := au.text(tid("chain-head")); !regexp.MustCompile(`^[0-9]+:[0-9a-f]{64}$`).MatchString(head) {
				t.Fatalf("%s: chain head %q", name, head)
			}
			au.open("/admin/audit?key=" + url.QueryEscape(key))
			au.do(chromedp.WaitVisible(tid("event-detail")))
			if n := au.count(`[data-testid="event-detail"] dt`); n == 0 || au.count(`code.detail`) != 0 {
				t.Fatalf("%s: details are not labelled fields (%d labels)", name, n)
			}
			if want := map[string]string{"ru": "Выгрузить для Excel", "en": "Export for Excel"}[lang]; au.text(tid("audit-excel")) != want {
				t.Fatalf("%s: the Excel export reads %q", name, au.text(tid("audit-excel")))
			}
			if phone {
				if off := offScreen(au, `[data-testid="event-detail"], [data-testid="audit"] td`); len(off) > 0 {
					t.Fatalf("%s: off screen: %v", name, off)
				}
			} else if clipped(au, "audit") {
				t.Fatalf("%s: the audit table is clipped", name)
			}
			au.shot("audit-" + name)

			// The operation's history: the failed look-ups as one counted line.
			au.open("/admin/operations/" + url.PathEscape(unknownKey))
			au.do(chromedp.WaitVisible(tid("transitions")))
			if n := au.count(`[data-testid="transitions"] [data-event="operation.lookup_failed"]`); n != 1 {
				t.Fatalf("%s: %d lines of failed look-ups", name, n)
			}
			if got := au.text(tid("event-repeat", `[data-testid="transitions"]`)); !strings.Contains(got, "3") {
				t.Fatalf("%s: the repetition reads %q", name, got)
			}
			au.shot("operation-history-" + name)

			// The review card: the object id's form, and an id not in it refused.
			o := person("oleg")
			o.do(chromedp.EmulateViewport(vp.w, vp.h))
			o.open("/admin/review")
			scope := row("review-row", unknownKey)
			o.do(chromedp.WaitVisible(chromedp.CSS(scope)))
			if got := o.text(tid("resolve-object-format", scope)); !strings.Contains(got, "INV-") || !strings.Contains(got, "UUID") {
				t.Fatalf("%s: the object's form reads %q", name, got)
			}
			o.do(
				chromedp.Click(tid("resolve-found", scope)),
				chromedp.SendKeys(tid("resolve-object", scope), "INV-7"),
				chromedp.SendKeys(tid("resolve-reason", scope), "seen in 1C"),
				chromedp.Click(tid("resolve", scope)),
				chromedp.WaitVisible(tid("form-error", scope)),
			)
			if got := g.row(unknownKey); got.Status != store.StatusUnknown {
				t.Fatalf("%s: an id not in 1C's form resolved the operation: %s", name, got.Status)
			}
			if off := offScreen(o, scope+` button, `+scope+` input, `+scope+` textarea`); len(off) > 0 {
				t.Fatalf("%s: off screen: %v", name, off)
			}
			o.shot("review-format-" + name)
		}
	}
}
