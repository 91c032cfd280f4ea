package server_test

import (
	"github.com/oncegate/oncegate/server/engine/enginetest"
	"net/http"
	"testing"

	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/store"
)

// Shutdown lets a request in flight finish and settle its operation.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	g := setup(t)
	const key = "test:invoice.create:order-shutdown:v1"
	g.inject(sim.Fault{Target: sim.OneC, Fault: sim.FaultDelay, DelayMS: 300, Times: 1})
	done := make(chan reply, 1)
	go func() { done <- g.post(key, invoice("order-shutdown", 1)) }()
	enginetest.Eventually(t, "the call to reach the target", func() bool { return g.sim.Calls(sim.OneC, key) == 1 })
	if err := g.stop(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	expect(t, r, http.StatusOK, "succeeded", "")
	if got := g.row(key).Status; got != store.StatusSucceeded {
		t.Fatalf("row after shutdown: %s", got)
	}
}
