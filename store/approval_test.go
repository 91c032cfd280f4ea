package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/oncegate/oncegate/store/storetest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
)

func moneyReq(key string) store.ClaimRequest {
	req := claimReq(key, fp1, "run-1")
	req.Intent, req.TargetSystem = "payment.charge", "payments"
	req.AwaitApproval, req.ApprovalTTL = true, time.Hour
	return req
}

func TestApprovals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		const key = "test:payment.charge:o-1:v1"
		t.Run("ApproveThenTakeOnce", func(t *testing.T) {
			s := j.Open(t)
			MustClaim(t, s, moneyReq(key), store.DecisionAwaitingApproval)
			a, err := s.ApprovalByKey(ctx, key)
			if err != nil || a.Status != store.ApprovalPending || a.Fingerprint != fp1 {
				t.Fatalf("approval %+v, %v", a, err)
			}
			if _, err := s.TakeApproved(ctx, "run-1", time.Minute); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("took an undecided approval: %v", err)
			}
			if err := s.DecideApproval(ctx, a.ID, true, "anna", "ok"); err != nil {
				t.Fatal(err)
			}
			// Many executors race: one takes it.
			var wg sync.WaitGroup
			var mu sync.Mutex
			taken := 0
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if op, err := s.TakeApproved(ctx, "run-1", time.Minute); err == nil {
						mu.Lock()
						taken++
						mu.Unlock()
						if op.Status != store.StatusStarted || op.AttemptCount != 1 {
							t.Errorf("taken row %+v", op)
						}
					}
				}()
			}
			wg.Wait()
			if taken != 1 {
				t.Fatalf("approval taken %d times", taken)
			}
			if a, _ = s.ApprovalByKey(ctx, key); a.Status != store.ApprovalConsumed || a.DecidedBy != "anna" {
				t.Fatalf("approval after take: %+v", a)
			}
			if err := s.DecideApproval(ctx, a.ID, true, "boris", ""); !errors.Is(err, store.ErrApprovalDecided) {
				t.Fatalf("decision on a consumed approval: %v", err)
			}
		})
		t.Run("Deny", func(t *testing.T) {
			s := j.Open(t)
			MustClaim(t, s, moneyReq(key), store.DecisionAwaitingApproval)
			a, _ := s.ApprovalByKey(ctx, key)
			if err := s.DecideApproval(ctx, a.ID, false, "anna", "no"); err != nil {
				t.Fatal(err)
			}
			op, _ := s.Get(ctx, key)
			if op.Status != store.StatusFailedFinal || op.ErrorCode != "APPROVAL_DENIED" {
				t.Fatalf("row %+v", op)
			}
		})
		t.Run("ErrExpired", func(t *testing.T) {
			s := j.Open(t)
			c := pinClock(s)
			MustClaim(t, s, moneyReq(key), store.DecisionAwaitingApproval)
			a, _ := s.ApprovalByKey(ctx, key)
			c.Advance(time.Hour)
			if err := s.DecideApproval(ctx, a.ID, true, "anna", ""); !errors.Is(err, store.ErrApprovalExpired) {
				t.Fatalf("approve at expiry: %v, want ErrApprovalExpired", err)
			}
			keys, err := s.ExpireApprovals(ctx)
			if err != nil || len(keys) != 1 || keys[0] != key {
				t.Fatalf("expired %v, %v", keys, err)
			}
			op, _ := s.Get(ctx, key)
			if op.Status != store.StatusFailedFinal || op.ErrorCode != "APPROVAL_EXPIRED" {
				t.Fatalf("row %+v", op)
			}
			list, err := s.Approvals(ctx, store.ApprovalExpired, 0)
			if err != nil || len(list) != 1 || list[0].Operation.Key != key {
				t.Fatalf("expired list %+v, %v", list, err)
			}
		})
	})
}

func TestPurgeTerminal(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		s := j.Open(t)
		c := pinClock(s)
		for i, status := range []string{"succeeded", "failed", "unknown", "started", "awaiting"} {
			key := "test:invoice.create:p-" + status + ":v1"
			req := claimReq(key, fp1, "run-1")
			if status == "awaiting" {
				req = moneyReq("test:payment.charge:p-awaiting:v1")
			}
			MustClaim(t, s, req, map[bool]store.Decision{true: store.DecisionAwaitingApproval, false: store.DecisionExecute}[status == "awaiting"])
			switch status {
			case "succeeded":
				s.Complete(ctx, key, "run-1", "INV-1", nil)
			case "failed":
				s.Fail(ctx, key, "run-1", true, store.Failure{Code: "REFERENCE_NOT_FOUND"})
			case "unknown":
				s.MarkUnknown(ctx, key, "run-1", "", store.Failure{Code: "OUTCOME_UNKNOWN"}, c.t)
			}
			_ = i
		}
		// Another target's terminal row, kept by its own retention.
		const crmKey = "test:crm.callback:create:p-crm:v1"
		crm := claimReq(crmKey, fp1, "run-1")
		crm.Intent, crm.TargetSystem = "crm.callback.create", "crm"
		MustClaim(t, s, crm, store.DecisionExecute)
		s.Complete(ctx, crmKey, "run-1", "42", nil)
		// Nothing is old enough yet.
		if n, err := s.PurgeTerminal(ctx, "onec", c.t.Add(-time.Hour), 10); err != nil || n != 0 {
			t.Fatalf("purged %d, %v", n, err)
		}
		c.Advance(48 * time.Hour)
		n, err := s.PurgeTerminal(ctx, "onec", c.t.Add(-24*time.Hour), 1)
		if err != nil || n != 1 {
			t.Fatalf("first batch purged %d, %v", n, err)
		}
		n, err = s.PurgeTerminal(ctx, "onec", c.t.Add(-24*time.Hour), 10)
		if err != nil || n != 1 {
			t.Fatalf("second batch purged %d, %v", n, err)
		}
		if _, err := s.Get(ctx, crmKey); err != nil {
			t.Fatalf("1C's purge took the CRM's row: %v", err)
		}
		if n, err := s.PurgeTerminal(ctx, "crm", c.t.Add(-24*time.Hour), 10); err != nil || n != 1 {
			t.Fatalf("CRM purge: %d, %v", n, err)
		}
		for _, key := range []string{"test:invoice.create:p-unknown:v1", "test:invoice.create:p-started:v1", "test:payment.charge:p-awaiting:v1"} {
			if _, err := s.Get(ctx, key); err != nil {
				t.Errorf("non-terminal %s purged: %v", key, err)
			}
		}
		// A purged key is new again.
		MustClaim(t, s, claimReq("test:invoice.create:p-succeeded:v1", fp1, "run-1"), store.DecisionExecute)
	})
}

// Each purge batch that deletes anything is one audit event with the
// count and the oldest and newest keys it took, by completion; the chain
// still verifies. A batch that finds nothing writes nothing.
func TestPurgeTerminalAudited(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		s := j.Open(t)
		c := pinClock(s)
		var keys []string
		for i := range 3 {
			key := fmt.Sprintf("test:invoice.create:pa-%d:v1", i)
			MustClaim(t, s, claimReq(key, fp1, "run-1"), store.DecisionExecute)
			if err := s.Complete(ctx, key, "run-1", "INV-1", nil); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, key)
			c.Advance(time.Minute)
		}
		c.Advance(48 * time.Hour)
		rctx := store.WithActor(ctx, store.Actor{Kind: store.ActorSystem, Name: "retention"})
		for _, want := range []int{2, 1, 0} {
			if n, err := s.PurgeTerminal(rctx, "onec", c.t.Add(-24*time.Hour), 2); err != nil || n != want {
				t.Fatalf("batch purged %d, %v; want %d", n, err, want)
			}
		}
		events, err := s.AuditEvents(ctx, store.AuditFilter{Event: "retention.purged"})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(events), 2; got != want {
			t.Fatalf("%d purge events, want %d", got, want)
		}
		for i, want := range []struct {
			count          float64
			oldest, newest string
		}{{1, keys[2], keys[2]}, {2, keys[0], keys[1]}} { // newest event first
			e := events[i]
			var d map[string]any
			if err := json.Unmarshal(e.Detail, &d); err != nil {
				t.Fatal(err)
			}
			if d["count"] != want.count || d["oldest_key"] != want.oldest || d["newest_key"] != want.newest || d["target"] != "onec" {
				t.Errorf("purge event %d detail %s, want count %v, keys %s … %s", e.ID, e.Detail, want.count, want.oldest, want.newest)
			}
			if e.Actor.Name != "retention" || e.OperationKey != "" {
				t.Errorf("purge event %+v", e)
			}
		}
		r, err := s.VerifyAudit(ctx)
		if err != nil || r.BrokenAt != 0 || r.LastID != events[0].ID {
			t.Fatalf("verify = %+v, %v", r, err)
		}
	})
}

func TestReconcileQueue(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		s := j.Open(t)
		c := pinClock(s)
		const key = "test:invoice.create:r-1:v1"
		MustClaim(t, s, claimReq(key, fp1, "run-1"), store.DecisionExecute)
		if due, _ := s.DueForReconcile(ctx, 10); len(due) != 0 {
			t.Fatalf("a live lease is due: %+v", due)
		}
		c.Advance(time.Minute)
		due, err := s.DueForReconcile(ctx, 10)
		if err != nil || len(due) != 1 {
			t.Fatalf("due = %+v, %v", due, err)
		}
		op, err := s.TakeForReconcile(ctx, due[0], "run-2", time.Minute)
		if err != nil || op.LeaseOwner != "run-2" {
			t.Fatalf("take = %+v, %v", op, err)
		}
		if _, err := s.TakeForReconcile(ctx, due[0], "run-3", time.Minute); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("second take: %v, want ErrLeaseLost", err)
		}
		for i := 1; i <= 2; i++ {
			flagged, err := s.LookupFailed(ctx, key, "run-2", "", "", 2, c.t)
			if err != nil || flagged != (i == 2) {
				t.Fatalf("failure %d: flagged %v, %v", i, flagged, err)
			}
			if i == 1 {
				due, _ = s.DueForReconcile(ctx, 10)
				if _, err := s.TakeForReconcile(ctx, due[0], "run-2", time.Minute); err != nil {
					t.Fatal(err)
				}
			}
		}
		op, _ = s.Get(ctx, key)
		if op.Status != store.StatusUnknown || op.LookupFailures != 2 || !op.NeedsReview {
			t.Fatalf("row %+v", op)
		}
		// The failure that asked a person to look is its own audit event.
		events, err := s.AuditEvents(ctx, store.AuditFilter{OperationKey: key, Event: "operation."})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range events {
			names = append(names, e.Event)
		}
		if len(names) < 3 || names[0] != "operation.flagged_for_review" || names[2] != "operation.lookup_failed" || slices.Contains(names[1:], "operation.flagged_for_review") {
			t.Fatalf("events, newest first: %v", names)
		}
	})
}
