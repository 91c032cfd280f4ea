package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

const bk1 = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
const bk2 = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

// dupReq is a claim of key under a duplicate rule with business key bk.
func dupReq(key, bk string, action store.DuplicateAction) store.ClaimRequest {
	req := claimReq(key, fp1, "run-1")
	req.ApprovalTTL = time.Hour
	req.Duplicates = &store.DuplicateCheck{BusinessKey: bk, Window: 720 * time.Hour, Action: action}
	return req
}

// claimAll claims n keys of one business key at once, spread over the
// stores (gateways sharing a journal), and counts the decisions.
func claimAll(t *testing.T, stores []*store.Store, n int, action store.DuplicateAction) (map[store.Decision][]store.Operation, []string) {
	t.Helper()
	var mu sync.Mutex
	got := map[store.Decision][]store.Operation{}
	keys := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		keys[i] = fmt.Sprintf("test:invoice.create:order-%d:v1", i)
		wg.Go(func() {
			d, op, err := stores[i%len(stores)].Claim(context.Background(), dupReq(keys[i], bk1, action))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got[d] = append(got[d], op)
			mu.Unlock()
		})
	}
	wg.Wait()
	return got, keys
}

// gateways opens a journal of j as two gateways would: two stores on one
// PostgreSQL journal; one store on SQLite (its file has one writer).
func gateways(t *testing.T, j storetest.Journal) []*store.Store {
	t.Helper()
	loc := j.Location(t)
	var out []*store.Store
	for range map[bool]int{true: 1, false: 2}[j.Postgres()] {
		s, err := store.Open(context.Background(), loc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		out = append(out, s)
	}
	return out
}

func TestDupBlock(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		t.Run("OneOfTwentyGoesOn", func(t *testing.T) {
			stores := gateways(t, j)
			got, keys := claimAll(t, stores, 20, store.DuplicateBlock)
			if len(got[store.DecisionExecute]) != 1 || len(got[store.DecisionDuplicate]) != 19 {
				t.Fatalf("decisions: %d execute, %d duplicate, want 1 and 19", len(got[store.DecisionExecute]), len(got[store.DecisionDuplicate]))
			}
			first := got[store.DecisionExecute][0]
			if first.BusinessKey != bk1 {
				t.Fatalf("business key stored %q", first.BusinessKey)
			}
			for _, earlier := range got[store.DecisionDuplicate] {
				if earlier.Key != first.Key {
					t.Fatalf("blocked as a duplicate of %s, want %s", earlier.Key, first.Key)
				}
			}
			// Nothing journaled for the blocked: their keys stay free.
			for _, k := range keys {
				_, err := stores[0].Get(ctx, k)
				if k == first.Key && err != nil || k != first.Key && !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("%s: %v", k, err)
				}
			}
			// The first key's own retry is no duplicate of itself.
			MustClaim(t, stores[0], dupReq(first.Key, bk1, store.DuplicateBlock), store.DecisionInProgress)
		})
		t.Run("OtherBusinessKeyGoesOn", func(t *testing.T) {
			s := j.Open(t)
			MustClaim(t, s, dupReq("test:invoice.create:a:v1", bk1, store.DuplicateBlock), store.DecisionExecute)
			MustClaim(t, s, dupReq("test:invoice.create:b:v1", bk2, store.DuplicateBlock), store.DecisionExecute)
			other := dupReq("test:invoice.create:c:v1", bk1, store.DuplicateBlock)
			other.Intent = "payment.charge"
			MustClaim(t, s, other, store.DecisionExecute)
		})
		t.Run("OutsideWindowGoesOn", func(t *testing.T) {
			s := j.Open(t)
			c := pinClock(s)
			MustClaim(t, s, dupReq("test:invoice.create:a:v1", bk1, store.DuplicateBlock), store.DecisionExecute)
			c.Advance(719 * time.Hour)
			MustClaim(t, s, dupReq("test:invoice.create:b:v1", bk1, store.DuplicateBlock), store.DecisionDuplicate)
			c.Advance(time.Hour)
			MustClaim(t, s, dupReq("test:invoice.create:b:v1", bk1, store.DuplicateBlock), store.DecisionExecute)
		})
		t.Run("FailedFinalIsNotLive", func(t *testing.T) {
			s := j.Open(t)
			op := MustClaim(t, s, dupReq("test:invoice.create:a:v1", bk1, store.DuplicateBlock), store.DecisionExecute)
			if err := s.Fail(ctx, op.Key, op.LeaseOwner, true, store.Failure{Code: "REFERENCE_NOT_FOUND", Message: "no"}); err != nil {
				t.Fatal(err)
			}
			MustClaim(t, s, dupReq("test:invoice.create:b:v1", bk1, store.DuplicateBlock), store.DecisionExecute)
		})
	})
}

func TestDupHold(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		t.Run("OneOfTwentyGoesOnTheRestWait", func(t *testing.T) {
			stores := gateways(t, j)
			got, _ := claimAll(t, stores, 20, store.DuplicateHold)
			if len(got[store.DecisionExecute]) != 1 || len(got[store.DecisionAwaitingApproval]) != 19 {
				t.Fatalf("decisions: %d execute, %d awaiting, want 1 and 19", len(got[store.DecisionExecute]), len(got[store.DecisionAwaitingApproval]))
			}
			first := got[store.DecisionExecute][0]
			for _, op := range got[store.DecisionAwaitingApproval] {
				if op.DuplicateOf != first.Key || !op.DuplicateAt.Equal(first.CreatedAt) || op.ErrorCode != "DUPLICATE_REVIEW_REQUIRED" || !op.Suspected {
					t.Fatalf("held row %+v, first %s at %v", op, first.Key, first.CreatedAt)
				}
				a, err := stores[0].ApprovalByKey(ctx, op.Key)
				if err != nil || a.Kind != store.ApprovalDuplicate || a.Status != store.ApprovalPending || a.ThenMoney {
					t.Fatalf("approval %+v, %v", a, err)
				}
			}
		})
		t.Run("DecidedBothWays", func(t *testing.T) {
			s := j.Open(t)
			MustClaim(t, s, dupReq("test:invoice.create:a:v1", bk1, store.DuplicateHold), store.DecisionExecute)
			MustClaim(t, s, dupReq("test:invoice.create:b:v1", bk1, store.DuplicateHold), store.DecisionAwaitingApproval)
			MustClaim(t, s, dupReq("test:invoice.create:c:v1", bk1, store.DuplicateHold), store.DecisionAwaitingApproval)
			// A retry while it waits still waits.
			MustClaim(t, s, dupReq("test:invoice.create:b:v1", bk1, store.DuplicateHold), store.DecisionAwaitingApproval)
			b, _ := s.ApprovalByKey(ctx, "test:invoice.create:b:v1")
			if err := s.DecideApproval(ctx, b.ID, false, "olga", "same order"); err != nil {
				t.Fatal(err)
			}
			if op, _ := s.Get(ctx, "test:invoice.create:b:v1"); op.Status != store.StatusFailedFinal || op.ErrorCode != "DUPLICATE_CONFIRMED" {
				t.Fatalf("confirmed duplicate %+v", op)
			}
			c, _ := s.ApprovalByKey(ctx, "test:invoice.create:c:v1")
			if err := s.DecideApproval(ctx, c.ID, true, "olga", "another delivery"); err != nil {
				t.Fatal(err)
			}
			op, err := s.TakeApproved(ctx, "run-1", time.Minute)
			if err != nil || op.Key != "test:invoice.create:c:v1" || op.Status != store.StatusStarted || op.ErrorCode != "" {
				t.Fatalf("taken %+v, %v", op, err)
			}
			if err := s.DecideApproval(ctx, c.ID, true, "olga", ""); !errors.Is(err, store.ErrApprovalDecided) {
				t.Fatalf("second decision: %v", err)
			}
		})
		t.Run("MoneyStillNeedsItsApproval", func(t *testing.T) {
			s := j.Open(t)
			money := func(key string) store.ClaimRequest {
				r := dupReq(key, bk1, store.DuplicateHold)
				r.AwaitApproval = true
				return r
			}
			MustClaim(t, s, money("test:payment.charge:a:v1"), store.DecisionAwaitingApproval)
			op := MustClaim(t, s, money("test:payment.charge:b:v1"), store.DecisionAwaitingApproval)
			if op.DuplicateOf != "test:payment.charge:a:v1" {
				t.Fatalf("held %+v", op)
			}
			a, _ := s.ApprovalByKey(ctx, op.Key)
			if a.Kind != store.ApprovalDuplicate || !a.ThenMoney {
				t.Fatalf("approval %+v", a)
			}
			if err := s.DecideReview(ctx, a.ID, true, "olga", "not a duplicate"); err != nil {
				t.Fatal(err)
			}
			if a, _ = s.ApprovalByKey(ctx, op.Key); a.Kind != store.ApprovalMoney || a.Status != store.ApprovalPending {
				t.Fatalf("after the review: %+v", a)
			}
			// The reviewer's second click does not approve the money.
			if err := s.DecideReview(ctx, a.ID, true, "olga", "again"); !errors.Is(err, store.ErrApprovalDecided) {
				t.Fatalf("a review decided a money approval: %v", err)
			}
			if op, _ := s.Get(ctx, op.Key); op.Status != store.StatusAwaitingApproval || op.ErrorCode != "" {
				t.Fatalf("after the review: %+v", op)
			}
			if taken, err := s.TakeApproved(ctx, "run-1", time.Minute); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("ran before its money approval: %+v, %v", taken, err)
			}
			if err := s.DecideApproval(ctx, a.ID, true, "anna", "pay"); err != nil {
				t.Fatal(err)
			}
			if taken, err := s.TakeApproved(ctx, "run-1", time.Minute); err != nil || taken.Key != op.Key {
				t.Fatalf("taken %+v, %v", taken, err)
			}
		})
	})
}

func TestDupWarn(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		s := j.Open(t)
		first := MustClaim(t, s, dupReq("test:invoice.create:a:v1", bk1, store.DuplicateWarn), store.DecisionExecute)
		if first.DuplicateOf != "" || first.Suspected {
			t.Fatalf("first %+v", first)
		}
		op := MustClaim(t, s, dupReq("test:invoice.create:b:v1", bk1, store.DuplicateWarn), store.DecisionExecute)
		if op.DuplicateOf != first.Key || !op.Suspected || op.Status != store.StatusStarted {
			t.Fatalf("second %+v", op)
		}
		got, err := s.FindDuplicate(context.Background(), "invoice.create", *dupReq("", bk1, store.DuplicateWarn).Duplicates, "test:invoice.create:c:v1")
		if err != nil || got.Key != first.Key {
			t.Fatalf("find: %+v, %v", got, err)
		}
	})
}

// A later request's earlier operation is the business event's original,
// even when a suspected duplicate carries an earlier time (on a shared
// journal times are taken before the business key's lock is waited
// for); with no live original, the earliest live suspected one.
func TestDupOriginal(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		s := j.Open(t)
		c := pinClock(s)
		rule := *dupReq("", bk1, store.DuplicateWarn).Duplicates
		c.Advance(10 * time.Second)
		orig := MustClaim(t, s, dupReq("test:invoice.create:orig:v1", bk1, store.DuplicateWarn), store.DecisionExecute)
		c.Advance(-5 * time.Second)
		early := MustClaim(t, s, dupReq("test:invoice.create:early:v1", bk1, store.DuplicateWarn), store.DecisionExecute)
		if early.DuplicateOf != orig.Key || !early.CreatedAt.Before(orig.CreatedAt) {
			t.Fatalf("suspected %+v", early)
		}
		c.Advance(time.Minute)
		if got, err := s.FindDuplicate(ctx, "invoice.create", rule, "test:invoice.create:later:v1"); err != nil || got.Key != orig.Key || got.Fingerprint != orig.Fingerprint {
			t.Fatalf("find: %+v, %v; want the original %s", got, err, orig.Key)
		}
		if err := s.Fail(ctx, orig.Key, "run-1", true, store.Failure{Code: "REFERENCE_NOT_FOUND"}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.FindDuplicate(ctx, "invoice.create", rule, "test:invoice.create:later:v1"); err != nil || got.Key != early.Key || got.DuplicateOf != orig.Key {
			t.Fatalf("find: %+v, %v; want the suspected %s, the original having failed", got, err, early.Key)
		}
	})
}
