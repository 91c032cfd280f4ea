package admin_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/server/engine"
	"github.com/oncegate/oncegate/store"
)

// A payment id typed into the review is checked at the payment provider
// before an unknown charge is settled as found: one the provider does not
// have, or one another operation made, is refused and changes nothing;
// the charge's own payment settles it with the result a look-up would
// have given the agent; a provider that cannot answer settles it only on
// the person's word, which the trail keeps.
func TestResolveChecksObjectAtTarget(t *testing.T) {
	t.Parallel()
	sims := adapterstest.Start(t, adapterstest.Timeouts{})
	var eng *engine.Engine
	a := newApp(t, func(d *admin.Deps) {
		d.TargetKinds = map[string]string{"payments": "yookassa"}
		d.CheckObject = func(ctx context.Context, key, id string) (adapters.Result, error) {
			return eng.CheckObject(ctx, key, id)
		}
	})
	eng = engine.New(engine.Config{Contour: "test"}, a.st, sims.Targets, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	payments := sims.Targets["payments"]

	// charge makes a payment at the provider under key, as the gateway's
	// first attempt did before its answer was lost, and journals the
	// operation as unknown; it returns the payment's id.
	charge := func(key string, amount int) (string, map[string]any) {
		t.Helper()
		payload := map[string]any{"account_id": "merchant-account-17", "order_id": orderOf(key), "amount_minor": amount, "currency": "RUB"}
		raw, _ := json.Marshal(payload)
		res, err := payments.Execute(ctx, adapters.Op{Key: key, Intent: "payment.charge", Version: 1, Payload: raw, Attempt: 1, CreatedAt: time.Now()})
		if err != nil || res.ObjectID == "" {
			t.Fatalf("charge %s: %+v, %v", key, res, err)
		}
		return res.ObjectID, payload
	}
	unknown := func(key string, payload map[string]any) {
		t.Helper()
		a.claim(key, "payment.charge", "payments", false, payload)
		if _, err := a.st.LookupFailed(ctx, key, "test-run", "", "", 1, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	key, other := a.uniq("test:payment.charge:check-1:v1"), a.uniq("test:payment.charge:check-2:v1")
	paid, payload := charge(key, 125000)
	otherPaid, _ := charge(other, 125000)
	unknown(key, payload)

	opr := a.signIn(store.RoleOperator)
	path := "/admin/review/" + keyPath(key) + "/resolve"
	resolve := func(id string, extra url.Values) page {
		form := url.Values{"outcome": {"found"}, "object_id": {id}, "reason": {"seen in the provider's dashboard"}}
		for k, v := range extra {
			form[k] = v
		}
		return opr.post(path, form)
	}
	absent := newUUID()
	for _, c := range []struct {
		name, id string
		want     []string
	}{
		{"absent", absent, []string{"нет объекта", absent}},
		{"another operation's", otherPaid, []string{"не может быть результатом", other}},
	} {
		p := resolve(c.id, nil).expect(t, http.StatusUnprocessableEntity)
		for _, w := range c.want {
			if msg := p.text("form-error"); !strings.Contains(msg, w) {
				t.Errorf("%s: message %q lacks %q", c.name, msg, w)
			}
		}
		if got, _ := a.st.Get(ctx, key); got.Status != store.StatusUnknown || got.TargetObjectID != "" {
			t.Fatalf("%s accepted: %s %q", c.name, got.Status, got.TargetObjectID)
		}
	}

	// The provider does not answer: the person is asked whether they
	// checked the payment themselves, and nothing is decided until they say so.
	if err := sims.Sim.Inject(sim.Fault{Target: sim.YooKassa, Fault: sim.FaultStatus, Status: 503, Times: 1000, On: sim.OnAny}); err != nil {
		t.Fatal(err)
	}
	p := resolve(paid, nil).expect(t, http.StatusUnprocessableEntity)
	if !p.has("resolve-unchecked-confirm") || !strings.Contains(p.text("form-error"), "не смогла подтвердить") {
		t.Fatalf("an unanswered check: %q", p.text("form-error"))
	}
	if got, _ := a.st.Get(ctx, key); got.Status != store.StatusUnknown {
		t.Fatalf("decided without the person's word: %s", got.Status)
	}
	sims.Sim.ClearFaults()

	// The charge's own payment: settled, with what a look-up answers.
	resolve(paid, nil).expect(t, http.StatusSeeOther)
	got, _ := a.st.Get(ctx, key)
	want, err := payments.Lookup(ctx, adapters.Op{Key: key, Intent: "payment.charge", Version: 1, Payload: got.Payload, CreatedAt: got.CreatedAt})
	if err != nil {
		t.Fatal(err)
	}
	wantResult, _ := json.Marshal(want.Data)
	if got.Status != store.StatusSucceeded || got.TargetObjectID != paid || string(got.Result) != string(wantResult) {
		t.Fatalf("settled as %s %q %s, want %q %s", got.Status, got.TargetObjectID, got.Result, paid, wantResult)
	}
	evs := a.events(store.AuditFilter{OperationKey: key, Event: "operation.resolved_by_hand"})
	if len(evs) != 1 || !strings.Contains(string(evs[0].Detail), `"checked":true`) {
		t.Fatalf("resolution audit %+v", evs)
	}
}
