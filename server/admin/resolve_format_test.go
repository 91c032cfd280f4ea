package admin_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/store"
)

// The resolve form says the form an object's id takes at the operation's
// target, and refuses one that is not in it, changing nothing.
func TestResolveObjectFormat(t *testing.T) {
	t.Parallel()
	a := newApp(t, func(d *admin.Deps) {
		d.TargetKinds = map[string]string{"onec": "onec", "crm": "bitrix24", "payments": "yookassa", "buh": "onec_odata"}
	})
	ctx := context.Background()
	unknown := func(key, intent, target string) string {
		t.Helper()
		key = a.uniq(key)
		a.claim(key, intent, target, false, map[string]any{"order_id": "o-1"})
		if _, err := a.st.LookupFailed(ctx, key, "test-run", "", "", 1, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		return key
	}
	for _, tc := range []struct {
		name, key, intent, target string
		hint                      string
		bad                       []string
		good                      string
	}{
		{"OneC", "test:invoice.create:fmt-1:v1", "invoice.create", "onec", "INV-, SO-, DOC-",
			[]string{"INV-7", "3f1c9a2e-7b4d-4c1a-9e2f-5d8b6a0c4e71", "inv-3f1c9a2e-7b4d-4c1a-9e2f-5d8b6a0c4e71", "INV-3f1c9a2e"},
			"INV-3f1c9a2e-7b4d-4c1a-9e2f-5d8b6a0c4e71"},
		{"OData", "test:invoice.create:fmt-2:v1", "invoice.create", "buh", "Ref_Key",
			[]string{"INV-3f1c9a2e-7b4d-4c1a-9e2f-5d8b6a0c4e71", "1042"}, "8f14e45f-ceea-567a-9a0e-3f5b0c2e1d4a"},
		{"Bitrix24", "test:crm.callback.create:fmt-3:v1", "crm.callback.create", "crm", "числовой id",
			[]string{"TASK-12", "0", "12a"}, "1042"},
		{"YooKassa", "test:payment.charge:fmt-4:v1", "payment.charge", "payments", "id платежа",
			[]string{"pay-1", "2f8a1c3e"}, "2f8a1c3e-000f-5000-9000-1b2c3d4e5f60"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := unknown(tc.key, tc.intent, tc.target)
			opr := a.signIn(store.RoleOperator)
			p := opr.get("/admin/review").expect(t, http.StatusOK)
			card := p.Body[strings.Index(p.Body, `data-key="`+key+`"`):]
			if got := (page{Body: card}).text("resolve-object-format"); !strings.Contains(got, tc.hint) {
				t.Errorf("the form says %q, want %q in it", got, tc.hint)
			}
			path := "/admin/review/" + keyPath(key) + "/resolve"
			for _, bad := range tc.bad {
				form := url.Values{"outcome": {"found"}, "object_id": {bad}, "reason": {"seen at the target"}, "confirm_rerun": {"yes"}}
				p := opr.post(path, form).expect(t, http.StatusUnprocessableEntity)
				if msg := p.text("form-error"); !strings.Contains(msg, tc.hint) {
					t.Errorf("%q: message %q", bad, msg)
				}
				if got, _ := a.st.Get(ctx, key); got.Status != store.StatusUnknown {
					t.Fatalf("%q accepted: %s", bad, got.Status)
				}
			}
			// No target here can read an object by its id: the person
			// vouches for it.
			form := url.Values{"outcome": {"found"}, "object_id": {tc.good}, "reason": {"seen at the target"}}
			p = opr.post(path, form).expect(t, http.StatusUnprocessableEntity)
			if p.text("resolve-unchecked-confirm") == "" && !strings.Contains(p.Body, `data-testid="resolve-unchecked-confirm"`) {
				t.Fatalf("%q: no question whether the person checked it", tc.good)
			}
			form.Set("confirm_unchecked", "yes")
			opr.post(path, form).expect(t, http.StatusSeeOther)
			if got, _ := a.st.Get(ctx, key); got.Status != store.StatusSucceeded || got.TargetObjectID != tc.good {
				t.Fatalf("%q: %s %q", tc.good, got.Status, got.TargetObjectID)
			}
		})
	}
}

// An object id the journal already gave to one operation as its effect
// cannot be settled as another's: the second agent would be told of a
// document that is the first one's.
func TestResolveObjectTaken(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	ctx := context.Background()
	first, second := a.unknown(a.uniq("test:invoice.create:taken-1:v1")), a.unknown(a.uniq("test:invoice.create:taken-2:v1"))
	opr := a.signIn(store.RoleOperator)
	const inv = "INV-7b4d3f1c-9a2e-4c1a-9e2f-5d8b6a0c4e71"
	form := url.Values{"outcome": {"found"}, "object_id": {inv}, "reason": {"seen in 1C"}, "confirm_unchecked": {"yes"}}
	opr.post("/admin/review/"+keyPath(first.Key)+"/resolve", form).expect(t, http.StatusSeeOther)
	p := opr.post("/admin/review/"+keyPath(second.Key)+"/resolve", form).expect(t, http.StatusUnprocessableEntity)
	if msg := p.text("form-error"); !strings.Contains(msg, first.Key) {
		t.Fatalf("message %q does not name the operation that has the object", msg)
	}
	if got, _ := a.st.Get(ctx, second.Key); got.Status != store.StatusUnknown || got.TargetObjectID != "" {
		t.Fatalf("the second operation after a refused resolution: %s %q", got.Status, got.TargetObjectID)
	}
}
