package store_test

import (
	"context"
	"errors"
	"github.com/oncegate/oncegate/store/storetest"
	"testing"

	"github.com/oncegate/oncegate/store"
)

func TestApprovalByID(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		s := j.Open(t)
		const key = "test:payment.charge:o-id-1:v1"
		MustClaim(t, s, moneyReq(key), store.DecisionAwaitingApproval)
		byKey, err := s.ApprovalByKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		t.Run("OK", func(t *testing.T) {
			a, err := s.ApprovalByID(ctx, byKey.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := a.OperationKey, key; got != want {
				t.Fatalf("key = %q, want %q", got, want)
			}
			if got, want := a.Operation.Key, key; got != want {
				t.Fatalf("operation key = %q, want %q", got, want)
			}
			if got, want := a.Status, store.ApprovalPending; got != want {
				t.Fatalf("status = %q, want %q", got, want)
			}
		})
		t.Run("ErrNotFound", func(t *testing.T) {
			if _, err := s.ApprovalByID(ctx, byKey.ID+100); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("err = %v, want ErrNotFound", err)
			}
		})
	})
}
