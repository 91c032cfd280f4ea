//go:build unix

package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// One of two gateways on a PostgreSQL journal is frozen (SIGSTOP) for 30 s
// in the middle of a batch, holding the lock of a business key the other's
// claims need too (callbacks of one customer on one day). The other keeps
// at least half its rate: the server ends the frozen session once it sat
// idle in its transaction past the limit the gateways' sessions carry, and
// its locks go with it. When the frozen one goes on, every key sent to
// either has made exactly one activity, and every key answered succeeded
// is succeeded in the journal.
//
// It measures a rate, so it runs alone in its package.
func TestSharedJournalFrozenGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("measures a rate for 40 s; skipped in -short mode")
	}
	journal := storetest.Database(t)
	c := newRig(t, forLoad(2000, 1500), onJournal(journal), notStarted())
	// The gateway to freeze names its sessions, to be found at the server.
	named, _ := url.Parse(journal)
	q := named.Query()
	q.Set("application_name", "frozen-gateway")
	named.RawQuery = q.Encode()
	c.serve("ONCEGATE_JOURNAL_URL=" + named.String())
	other := c.addInstance(t)

	const body = `{"schema_version":"1.0","intent":"crm.callback.create","payload":{"customer_id":"customer-1042","due_at":"2026-12-03T10:00:00+03:00","comment":"call back"}}`
	var (
		mu       sync.Mutex
		sent     []string            // every key sent, to either gateway
		answered = map[string]bool{} // keys answered 200
		n        atomic.Int64
		phase    atomic.Int32    // 0 before the freeze, 1 while frozen, 2 after
		done     [3]atomic.Int64 // the other gateway's successes by phase
	)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 2 * time.Minute} // a frozen gateway answers after it goes on
	for w := range 8 {
		addr := []string{c.addr, other.addr}[w%2]
		wg.Go(func() {
			for ctx.Err() == nil {
				key := fmt.Sprintf("test:crm.callback:create:frozen-%d:v1", n.Add(1))
				mu.Lock()
				sent = append(sent, key)
				mu.Unlock()
				req, _ := http.NewRequest("POST", "http://"+addr+"/v1/operations", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+c.token)
				req.Header.Set("Idempotency-Key", key)
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					mu.Lock()
					answered[key] = true
					mu.Unlock()
					if addr == other.addr {
						done[phase.Load()].Add(1)
					}
				}
			}
		})
	}

	const before, frozen = 6 * time.Second, 30 * time.Second
	time.Sleep(before)
	// Freeze the gateway inside a transaction: stopped between batches it
	// holds nothing, so it is let go on and stopped again until the server
	// shows its session idle in a transaction.
	db, err := sql.Open("pgx", journal)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pid := c.gateway.cmd.Process.Pid
	for attempt := 0; ; attempt++ {
		syscall.Kill(pid, syscall.SIGSTOP)
		time.Sleep(50 * time.Millisecond)
		var idle int
		if err := db.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE application_name = 'frozen-gateway' AND state = 'idle in transaction'`).Scan(&idle); err != nil {
			t.Fatal(err)
		}
		if idle > 0 {
			break
		}
		if attempt == 100 {
			t.Fatal("the gateway was never stopped inside a transaction")
		}
		syscall.Kill(pid, syscall.SIGCONT)
		time.Sleep(20 * time.Millisecond)
	}
	phase.Store(1)
	time.Sleep(frozen)
	phase.Store(2)
	syscall.Kill(pid, syscall.SIGCONT)
	time.Sleep(2 * time.Second)
	stop()
	wg.Wait()

	rateBefore := float64(done[0].Load()) / before.Seconds()
	rateFrozen := float64(done[1].Load()) / frozen.Seconds()
	t.Logf("the other gateway: %.1f successes/s before the freeze, %.1f while its partner was frozen (%.0f%%)", rateBefore, rateFrozen, 100*rateFrozen/rateBefore)
	if rateBefore == 0 || rateFrozen < rateBefore/2 {
		t.Errorf("while its partner was frozen the other gateway made %.1f successes/s against %.1f before, want at least half", rateFrozen, rateBefore)
	}

	// Every key to its end, through the gateway that was not frozen.
	for _, key := range sent {
		if code, ans := postTo(t, other.addr, c.token, key, body); code != http.StatusOK {
			t.Fatalf("%s: %d %v", key, code, ans)
		}
	}
	effects := c.simJSON("/_sim/effects")["bitrix24"]
	st, err := store.Open(context.Background(), journal)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, key := range sent {
		if effects[key] != 1 {
			t.Errorf("%s: %d activities, want 1", key, effects[key])
		}
		if row, err := st.Get(context.Background(), key); err != nil || row.Status != store.StatusSucceeded {
			t.Errorf("%s (answered succeeded: %v): journal %+v, %v", key, answered[key], row.Status, err)
		}
	}
	t.Logf("%d keys, each one activity", len(sent))
}
