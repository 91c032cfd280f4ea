package server_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/store"
)

func callback(customer string) map[string]any {
	return map[string]any{
		"schema_version": "1.0", "intent": "crm.callback.create",
		"payload": map[string]any{"customer_id": customer, "due_at": "2026-12-03T10:00:00+03:00", "comment": "call back"},
	}
}

// Every fault class of the simulators ends in the right journal state,
// for a target that dedupes by key (1C) and one that does not
// (Bitrix24); and a retry with the key always ends in one effect.
func TestFaultClassesToJournal(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Targets["onec"].TimeoutMS, cfg.Targets["crm"].TimeoutMS = 300, 300
	cfg.Targets["crm"].SettleMS = 600
	g := setupWith(t, cfg)

	type target struct {
		name, sim, prefix string
		envelope          func(id string) map[string]any
	}
	// Each case is its own business event: an order of its own (one
	// invoice per order, or a person is asked); callbacks of one customer
	// on one day only warn.
	targets := []target{
		{"onec", sim.OneC, "test:invoice.create:", func(id string) map[string]any { return invoice("order-f-"+id, 1) }},
		{"crm", sim.Bitrix24, "test:crm.callback:create:", func(string) map[string]any { return callback("customer-1042") }},
	}
	cases := []struct {
		name   string
		fault  sim.Fault
		status map[string]store.Status // by target; the first answer's journal state
	}{
		{"503Spent", sim.Fault{Fault: sim.FaultStatus, Status: 503, Times: 4}, map[string]store.Status{"onec": store.StatusFailedRetryable, "crm": store.StatusFailedRetryable}},
		{"429Once", sim.Fault{Fault: sim.FaultStatus, Status: 429, Times: 1}, map[string]store.Status{"onec": store.StatusSucceeded, "crm": store.StatusSucceeded}},
		{"502Once", sim.Fault{Fault: sim.FaultStatus, Status: 502, Times: 1}, map[string]store.Status{"onec": store.StatusSucceeded, "crm": store.StatusSucceeded}},
		// A reset after the request was written: 1C dedupes, so it is sent
		// again at once; Bitrix24 does not, so the outcome is unknown.
		{"ResetBeforeRead", sim.Fault{Fault: sim.FaultReset, Times: 1}, map[string]store.Status{"onec": store.StatusSucceeded, "crm": store.StatusUnknown}},
		{"LostResponse", sim.Fault{Fault: sim.FaultDropResponse, Times: 1}, map[string]store.Status{"onec": store.StatusUnknown, "crm": store.StatusUnknown}},
		{"DelayPastTimeout", sim.Fault{Fault: sim.FaultDelay, DelayMS: 450, Times: 1}, map[string]store.Status{"onec": store.StatusUnknown, "crm": store.StatusUnknown}},
		{"TargetError", sim.Fault{Fault: sim.FaultTargetError, Times: 1}, map[string]store.Status{"onec": store.StatusFailedFinal, "crm": store.StatusFailedFinal}},
	}
	for _, tg := range targets {
		for _, c := range cases {
			key := fmt.Sprintf("%s%s-%s:v1", tg.prefix, c.name, tg.name)
			f := c.fault
			f.Target = tg.sim
			g.inject(f)
			g.post(key, tg.envelope(c.name))
			if got, want := g.row(key).Status, c.status[tg.name]; got != want {
				t.Errorf("%s at %s: journal %s, want %s", c.name, tg.name, got, want)
				continue
			}
			// The agent retries with its key until the answer is final.
			deadline := time.Now().Add(10 * time.Second)
			var r reply
			for {
				r = g.post(key, tg.envelope(c.name))
				if r.Code == http.StatusOK || r.Code == http.StatusUnprocessableEntity || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			want := http.StatusOK
			if c.status[tg.name] == store.StatusFailedFinal {
				want = http.StatusUnprocessableEntity
			}
			if r.Code != want {
				t.Errorf("%s at %s: final answer %d %s", c.name, tg.name, r.Code, r.Raw)
			}
			effects := 0
			if want == http.StatusOK {
				effects = 1
			}
			if f.Fault == sim.FaultDelay {
				time.Sleep(500 * time.Millisecond) // the delayed commit lands meanwhile
			}
			if got := g.sim.Effects(tg.sim, key); got != effects {
				t.Errorf("%s at %s: %d effects, want %d", c.name, tg.name, got, effects)
			}
		}
	}
}
