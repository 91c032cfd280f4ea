package admin_test

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
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
			"INV-" + newUUID()},
		{"OData", "test:invoice.create:fmt-2:v1", "invoice.create", "buh", "Ref_Key",
			[]string{"INV-3f1c9a2e-7b4d-4c1a-9e2f-5d8b6a0c4e71", "1042"}, newUUID()},
		{"Bitrix24", "test:crm.callback.create:fmt-3:v1", "crm.callback.create", "crm", "числовой id",
			[]string{"TASK-12", "0", "12a"}, strconv.Itoa(1000 + int(newID()%1e9))},
		{"YooKassa", "test:payment.charge:fmt-4:v1", "payment.charge", "payments", "id платежа",
			[]string{"pay-1", "2f8a1c3e"}, newUUID()},
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
	inv := "INV-" + newUUID()
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

// newUUID is a random UUID in lower case, as targets spell their objects'
// ids: the tests share one journal, where an object id can be one
// operation's effect only.
func newUUID() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// newID is a random positive number.
func newID() uint64 {
	b := make([]byte, 8)
	rand.Read(b)
	return binary.BigEndian.Uint64(b) >> 1
}
