package store_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

func TestListOperations(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		s := j.Open(t)
		c := pinClock(s)
		for i := range 7 {
			req := claimReq(fmt.Sprintf("test:invoice.create:l-%d:v1", i), fp1, "run-1")
			if i%2 == 1 {
				req.Agent = "agent-b"
			}
			MustClaim(t, s, req, store.DecisionExecute)
			if i < 3 {
				s.Complete(ctx, req.Key, "run-1", "INV-1", nil)
			}
			c.Advance(time.Second)
		}
		var keys []string
		f := store.OperationFilter{Limit: 3}
		for {
			page, err := s.ListOperations(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			for _, op := range page {
				keys = append(keys, op.Key)
			}
			last := page[len(page)-1]
			f.BeforeCreated, f.BeforeKey = last.CreatedAt, last.Key
		}
		if len(keys) != 7 || keys[0] != "test:invoice.create:l-6:v1" || keys[6] != "test:invoice.create:l-0:v1" {
			t.Fatalf("pages walked %v", keys)
		}
		for _, c := range []struct {
			f    store.OperationFilter
			want int
		}{
			{store.OperationFilter{Status: store.StatusSucceeded}, 3},
			{store.OperationFilter{Agent: "agent-b"}, 3},
			{store.OperationFilter{KeyPrefix: "test:invoice.create:l-1"}, 1},
			{store.OperationFilter{Intent: "payment.charge"}, 0},
			{store.OperationFilter{Target: "onec", Status: store.StatusStarted}, 4},
		} {
			got, err := s.ListOperations(ctx, c.f)
			if err != nil || len(got) != c.want {
				t.Errorf("filter %+v: %d rows, %v; want %d", c.f, len(got), err, c.want)
			}
		}
		sum, err := s.Summarize(ctx)
		if err != nil || sum.ByStatus[store.StatusSucceeded] != 3 || sum.ByStatus[store.StatusStarted] != 4 || sum.OldestUnresolved.IsZero() {
			t.Fatalf("summary %+v, %v", sum, err)
		}
	})
}

func TestResolveByHand(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		s := j.Open(t)
		unknown := func(key string) {
			MustClaim(t, s, claimReq(key, fp1, "run-1"), store.DecisionExecute)
			if err := s.MarkUnknown(ctx, key, "run-1", "", store.Failure{Code: "OUTCOME_UNKNOWN"}, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		unknown("test:invoice.create:h-1:v1")
		if err := s.ResolveByHand(ctx, "test:invoice.create:h-1:v1", store.Resolution{Found: true, ObjectID: "INV-9"}); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("no reason: %v", err)
		}
		checked := store.Resolution{Found: true, ObjectID: "INV-9", Result: json.RawMessage(`{"number":"000009"}`),
			Checked: true, Reason: "found in 1C by the accountant"}
		if err := s.ResolveByHand(ctx, "test:invoice.create:h-1:v1", checked); err != nil {
			t.Fatal(err)
		}
		op, _ := s.Get(ctx, "test:invoice.create:h-1:v1")
		if op.Status != store.StatusSucceeded || op.TargetObjectID != "INV-9" || string(op.Result) != `{"number":"000009"}` {
			t.Fatalf("row %+v, result %s", op, op.Result)
		}
		if err := s.ResolveByHand(ctx, "test:invoice.create:h-1:v1", store.Resolution{Reason: "again"}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("resolving a succeeded row: %v", err)
		}
		unknown("test:invoice.create:h-2:v1")
		if err := s.ResolveByHand(ctx, "test:invoice.create:h-2:v1", store.Resolution{Reason: "not in 1C"}); err != nil {
			t.Fatal(err)
		}
		op, _ = s.Get(ctx, "test:invoice.create:h-2:v1")
		if op.Status != store.StatusFailedRetryable {
			t.Fatalf("row %+v", op)
		}
		// An id the target could not confirm stands on the person's word, and
		// the trail says so.
		unknown("test:invoice.create:h-3:v1")
		unchecked := store.Resolution{Found: true, ObjectID: "INV-3", Unchecked: "1C did not answer", Reason: "seen in 1C"}
		if err := s.ResolveByHand(ctx, "test:invoice.create:h-3:v1", unchecked); err != nil {
			t.Fatal(err)
		}
		if op, _ = s.Get(ctx, "test:invoice.create:h-3:v1"); op.Status != store.StatusSucceeded || op.Result != nil {
			t.Fatalf("row %+v, result %s", op, op.Result)
		}
		events, _ := s.AuditEvents(ctx, store.AuditFilter{Event: "operation.resolved_by_hand"})
		if len(events) != 3 {
			t.Fatalf("%d resolution events", len(events))
		}
		want := map[string]string{ // newest first
			"test:invoice.create:h-3:v1": `{"check":"1C did not answer","checked":false,"found":true,"object_id":"INV-3","reason":"seen in 1C"}`,
			"test:invoice.create:h-2:v1": `{"found":false,"object_id":"","reason":"not in 1C"}`,
			"test:invoice.create:h-1:v1": `{"checked":true,"found":true,"object_id":"INV-9","reason":"found in 1C by the accountant"}`,
		}
		for _, e := range events {
			if got := canonical(t, e.Detail); got != want[e.OperationKey] {
				t.Errorf("%s: detail %s, want %s", e.OperationKey, got, want[e.OperationKey])
			}
		}
	})
}

// A read that fails part-way through its rows is an error, never a short
// answer. Here the index the status counts walk is damaged on disk past
// its first group: the count of started rows comes back, the count of
// succeeded ones cannot be read.
func TestSummarizeReadFailsMidway(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// SQLite only: damages a page of the journal's file.
	j := storetest.SQLite
	s := j.Open(t)
	path := s.Path()
	MustClaim(t, s, claimReq("test:invoice.create:sum-started:v1", fp1, "run-1"), store.DecisionExecute)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Enough succeeded rows for the index to span several pages, written
	// in one statement as BenchmarkListOperations does.
	_, err = db.Exec(`
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
		INSERT INTO operations (operation_key, intent, fingerprint, status, target_system, agent, payload,
			attempt_count, target_object_id, created_at, updated_at, completed_at)
		SELECT 'test:invoice.create:sum-' || i || ':v1', 'invoice.create', printf('%064d', i), 'succeeded', 'onec',
			'agent-a', '{}', 1, 'INV-' || i, '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z'
		FROM n`)
	if err != nil {
		t.Fatal(err)
	}
	// The index the count walks, in key order, so its groups come one by
	// one; and that index's last leaf page, which holds succeeded rows only.
	var plan, index string
	if err := db.QueryRow(`EXPLAIN QUERY PLAN SELECT status, count(*) FROM operations GROUP BY status`).Scan(new(int), new(int), new(int), &plan); err != nil {
		t.Fatal(err)
	}
	if _, after, ok := strings.Cut(plan, "COVERING INDEX "); ok {
		index = strings.Fields(after)[0]
	} else {
		t.Fatalf("the status counts do not walk an index: %s", plan)
	}
	var page, pageSize, leaves int64
	if err := db.QueryRow(`SELECT count(*) FROM dbstat WHERE name = ? AND pagetype = 'leaf'`, index).Scan(&leaves); err != nil || leaves < 2 {
		t.Fatalf("index %s has %d leaf pages: %v", index, leaves, err)
	}
	if err := db.QueryRow(`SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY path DESC LIMIT 1`, index).Scan(&page); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	// Close every connection (the last one checkpoints the WAL into the
	// file), damage the page, and open the journal again.
	db.Close()
	s.Close()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xff}, int(pageSize)), (page-1)*pageSize); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s, err = store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	sum, err := s.Summarize(ctx)
	if err == nil {
		t.Fatalf("summary %+v from a journal it could not read to the end", sum)
	}
}

// canonical is JSON with its keys sorted, for comparing audit details.
func canonical(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("detail %s: %v", b, err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}
