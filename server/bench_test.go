package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/oncegate/oncegate/server/config"
)

// The two paths every agent call takes, over loopback HTTP against the
// real app, a real journal file (WAL, the pipelined commit) and the 1C
// simulator in process.

// BenchmarkOperationNew: a new key each time — contract checks, claim,
// one call to the target, completion.
func BenchmarkOperationNew(b *testing.B) {
	g := setupWith(b, benchConfig())
	var n atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			// Each invoice of an order of its own: the built-in duplicate
			// rule holds a second invoice of one order for a person.
			i := n.Add(1)
			key := fmt.Sprintf("test:invoice.create:bench-%d:v1", i)
			body, _ := json.Marshal(invoice(fmt.Sprintf("order-bench-%d", i), 2))
			r := g.do("POST", "/v1/operations", g.token, map[string]string{"Idempotency-Key": key}, body)
			if r.Code != http.StatusOK {
				b.Fatalf("%d %s", r.Code, r.Raw)
			}
		}
	})
}

// BenchmarkOperationReplay: the same key again — contract checks, claim
// finds the final row, the stored answer is replayed; nothing reaches the
// target.
func BenchmarkOperationReplay(b *testing.B) {
	g := setupWith(b, benchConfig())
	body, _ := json.Marshal(invoice("order-bench", 2))
	const key = "test:invoice.create:bench-replay:v1"
	if r := g.do("POST", "/v1/operations", g.token, map[string]string{"Idempotency-Key": key}, body); r.Code != http.StatusOK {
		b.Fatalf("%d %s", r.Code, r.Raw)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r := g.do("POST", "/v1/operations", g.token, map[string]string{"Idempotency-Key": key}, body)
			if r.Code != http.StatusOK || r.Header.Get("Idempotent-Replayed") != "true" {
				b.Fatalf("%d %s", r.Code, r.Raw)
			}
		}
	})
}

// benchConfig lifts the per-token rate limit, which would otherwise be
// what the benchmark measures.
func benchConfig() config.Config {
	cfg := testConfig()
	cfg.RateLimit.PerSecond, cfg.RateLimit.Burst = 1e9, 1e9
	return cfg
}
