package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// testOutbox has one endpoint hear operation.succeeded; the body names
// the event and the operation's state.
func testOutbox() *store.Outbox {
	return &store.Outbox{
		Endpoints: []store.OutboxEndpoint{{Name: "erp", Events: []string{"operation.succeeded"}}},
		Event: func(audit string, _ store.Status) string {
			if audit == "operation.succeeded" {
				return audit
			}
			return ""
		},
		Render: func(event string, _ time.Time, op store.Operation) ([]byte, error) {
			return []byte(`{"type":"` + event + `","state":"` + string(op.Status) + `","object":"` + op.TargetObjectID + `"}`), nil
		},
	}
}

// A delivery is written in the batch that makes the change it reports:
// a batch that fails to commit leaves neither; one that commits leaves
// both, on the disk, for a gateway opened later to send with the same id.
func TestOutboxWrittenWithTheChange(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		loc := j.Location(t)
		s, err := store.Open(ctx, loc)
		if err != nil {
			t.Fatal(err)
		}
		s.SetOutbox(testOutbox())
		const failed, landed = "test:invoice.create:o-hook-1:v1", "test:invoice.create:o-hook-2:v1"
		for _, key := range []string{failed, landed} {
			MustClaim(t, s, claimReq(key, fp1, "run-1"), store.DecisionExecute)
		}
		s.SetBeforeCommit(func() error { return errors.New("disk full") })
		if err := s.Complete(ctx, failed, "run-1", "INV-1", nil); !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("a completion whose commit failed: %v", err)
		}
		s.SetBeforeCommit(nil)
		if err := s.Complete(ctx, landed, "run-1", "INV-2", nil); err != nil {
			t.Fatal(err)
		}
		s.Close()

		s, err = store.Open(ctx, loc)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ds, err := s.Deliveries(ctx, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 1 || ds[0].OperationKey != landed || ds[0].State != store.DeliveryPending ||
			string(ds[0].Body) != `{"type":"operation.succeeded","state":"succeeded","object":"INV-2"}` {
			t.Fatalf("deliveries after the failed and the landed completion: %+v", ds)
		}
		taken, err := s.TakeDeliveries(ctx, 10, time.Minute)
		if err != nil || len(taken) != 1 || taken[0].WebhookID != ds[0].WebhookID {
			t.Fatalf("taken after reopening: %+v, %v; want the delivery with webhook-id %s", taken, err, ds[0].WebhookID)
		}
		// Leased: not taken twice.
		if again, err := s.TakeDeliveries(ctx, 10, time.Minute); err != nil || len(again) != 0 {
			t.Fatalf("a leased delivery taken again: %+v, %v", again, err)
		}
	})
}
