package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// kill -9 while 32 agents send new operations: every operation an agent
// got a 200 for is in the journal, succeeded, with the object it was told
// (its batch was on disk before the answer); after the restart every key
// is driven to its final answer with exactly one effect, and the audit
// chain verifies.
func TestKillUnderLoad(t *testing.T) {
	t.Parallel()
	r := newRig(t, forLoad(2000, 1500))

	var mu sync.Mutex
	var ops []*chaosOp
	told := map[string]string{} // key → object id of a 200
	var seq, oks atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}, Timeout: 30 * time.Second}
	for range 32 {
		wg.Go(func() {
			for !stop.Load() {
				n := seq.Add(1)
				op := mixedOp(fmt.Sprintf("load-%d", n), int(n), "customer-1042")
				mu.Lock()
				ops = append(ops, op)
				mu.Unlock()
				req, _ := http.NewRequest("POST", r.apiURL+"/v1/operations", strings.NewReader(op.body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+r.token)
				req.Header.Set("Idempotency-Key", op.key)
				resp, err := client.Do(req)
				if err != nil {
					return // the gateway is gone
				}
				var body map[string]any
				json.NewDecoder(resp.Body).Decode(&body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					id, _ := body["target_object_id"].(string)
					mu.Lock()
					told[op.key] = id
					mu.Unlock()
					oks.Add(1)
				}
			}
		})
	}
	deadline := time.Now().Add(60 * time.Second)
	for oks.Load() < 200 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d operations answered 200 in a minute", oks.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.gateway.kill9()
	stop.Store(true)
	wg.Wait()

	// Before anything else touches the journal: each 200 is on disk.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(r.dataDir, "journal.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	for key, object := range told {
		var status, got string
		if err := db.QueryRow(`SELECT status, coalesce(target_object_id, '') FROM operations WHERE operation_key = ?`, key).Scan(&status, &got); err != nil {
			t.Errorf("%s was answered 200 but is not in the journal after kill -9: %v", key, err)
			continue
		}
		if status != "succeeded" || got != object {
			t.Errorf("%s was answered 200 with %s; the journal has %s %s", key, object, status, got)
		}
	}
	db.Close()

	r.serve()
	rep := &chaosReport{t: t}
	driveAll(t, r, rep, ops)
	for _, op := range ops {
		if op.final != "succeeded" {
			t.Errorf("%s ended %q", op.key, op.final)
		}
		if object, ok := told[op.key]; ok && object != op.objectID {
			t.Errorf("%s: 200 with %s before the kill, %s after", op.key, object, op.objectID)
		}
	}
	r.check(t, rep, ops)
	out := runBinary(t, r.env, "audit", "verify", "--config", r.config, "--data", r.dataDir)
	if !strings.Contains(out, "audit trail intact") {
		t.Errorf("audit verify after kill -9 under load: %s", out)
	}
	t.Logf("kill -9 under load: %d operations sent, %d answered 200 before the kill", len(ops), len(told))
}
