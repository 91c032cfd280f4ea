package server_test

import (
	"context"
	"encoding/json"
	"github.com/oncegate/oncegate/server/engine/enginetest"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// While the journal's PostgreSQL server cannot be reached, every request
// that needs the journal is answered at once, and truthfully: 503
// JOURNAL_UNAVAILABLE with Retry-After (this request sent nothing) — a
// claim of a new key, the retry of a key whose outcome is unknown, a
// status read, a token not seen before. None hangs, none is a 500. Once
// the server is back, the unknown operation settles by key and the new
// one runs: one effect each.
func TestJournalServerOutage(t *testing.T) {
	t.Parallel()
	proxy, location := storetest.NewProxy(t, storetest.Database(t))
	st, err := store.Open(context.Background(), location)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := testConfig()
	cfg.Targets["crm"].TimeoutMS = 1500 // the calls before the send never time out on a loaded machine
	cfg.Targets["crm"].SettleMS = 1500
	cfg.Reconciler.IntervalMS = 100
	g := serveOver(t, cfg, st)
	g.client.Timeout = 40 * time.Second // an answer, not a hang

	unknown, fresh := callbackKey("outage-unknown"), callbackKey("outage-new")
	g.inject(sim.Fault{Target: sim.Bitrix24, Fault: sim.FaultDropResponse, Times: 1})
	expect(t, g.post(unknown, callback("customer-1042")), http.StatusAccepted, "unknown", "OUTCOME_UNKNOWN")
	other := g.MustToken("agent-b", "read", "write")
	cs, err := g.mcpSession(t, g.token)
	if err != nil {
		t.Fatal(err)
	}
	envelope := callback("customer-1042")
	args := map[string]any{"operation_key": unknown, "payload": envelope["payload"]}

	proxy.Cut()
	unavailable := func(what string, r reply) {
		t.Helper()
		if r.Code != http.StatusServiceUnavailable || r.errCode() != "JOURNAL_UNAVAILABLE" || r.Header.Get("Retry-After") == "" {
			t.Errorf("%s during the outage: %d %s (Retry-After %q), want 503 JOURNAL_UNAVAILABLE with Retry-After", what, r.Code, r.Raw, r.Header.Get("Retry-After"))
		}
	}
	// An MCP tool call is told the same: as a tool's answer when its token
	// is still trusted from just before (it reaches the journal), else by
	// the endpoint's own 503 (the token cannot be read).
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "crm.callback.create", Arguments: args}); err != nil {
		if !strings.Contains(err.Error(), "Service Unavailable") {
			t.Errorf("an MCP tool call during the outage: %v, want 503", err)
		}
	} else if raw, _ := json.Marshal(res.StructuredContent); !res.IsError || res.Meta["http_status"] != float64(503) || !strings.Contains(string(raw), "JOURNAL_UNAVAILABLE") {
		t.Errorf("an MCP tool call during the outage: %s (meta %v), want JOURNAL_UNAVAILABLE (503)", raw, res.Meta)
	}
	time.Sleep(2500 * time.Millisecond) // past the cache of verified tokens: the token is read again
	unavailable("the retry of an unknown key", g.post(unknown, callback("customer-1042")))
	unavailable("a new key", g.post(fresh, callback("customer-1042")))
	unavailable("the status of a key", g.do("GET", "/v1/operations/"+unknown, g.token, nil, nil))
	unavailable("a token not seen before", g.do("GET", "/v1/intents", other, nil, nil))
	if r := g.do("GET", "/readyz", "", nil, nil); r.Code != http.StatusServiceUnavailable {
		t.Errorf("/readyz during the outage: %d %s", r.Code, r.Raw)
	}

	proxy.Restore()
	enginetest.Eventually(t, "the unknown operation settles once the journal is back", func() bool {
		return g.post(unknown, callback("customer-1042")).Code == http.StatusOK
	})
	expect(t, g.post(fresh, callback("customer-1042")), http.StatusOK, "succeeded", "")
	for _, key := range []string{unknown, fresh} {
		if n := g.sim.Effects(sim.Bitrix24, key); n != 1 {
			t.Errorf("%s: %d activities at Bitrix24, want 1", key, n)
		}
	}
}
