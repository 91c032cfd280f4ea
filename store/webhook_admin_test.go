package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// A person sends a failed delivery again: pending, its attempts from
// nought, the same webhook-id, audited; resumes a paused endpoint: its
// deliveries are due at once; and delivered rows, only those, go with the
// journal's retention.
func TestDeliveriesByHand(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		s := j.Open(t)
		s.SetOutbox(testOutbox())
		const failing, landing = "test:invoice.create:o-hand-1:v1", "test:invoice.create:o-hand-2:v1"
		for _, key := range []string{failing, landing} {
			MustClaim(t, s, claimReq(key, fp1, "run-1"), store.DecisionExecute)
			if err := s.Complete(ctx, key, "run-1", "INV-"+key[len(key)-4:], nil); err != nil {
				t.Fatal(err)
			}
		}
		taken, err := s.TakeDeliveries(ctx, 10, time.Minute)
		if err != nil || len(taken) != 2 {
			t.Fatalf("taken: %+v %v", taken, err)
		}
		var tries []store.Tried
		for _, d := range taken {
			a := store.Attempt{Delivered: true, Status: 204}
			if d.OperationKey == failing {
				a = store.Attempt{Status: 500, Error: "the receiver answered 500"} // no next: failed for good
			}
			tries = append(tries, store.Tried{Delivery: d, Attempt: a})
		}
		if err := s.RecordDeliveries(ctx, tries); err != nil {
			t.Fatal(err)
		}
		byKey := func() map[string]store.Delivery {
			ds, err := s.Deliveries(ctx, "erp", 10)
			if err != nil {
				t.Fatal(err)
			}
			m := map[string]store.Delivery{}
			for _, d := range ds {
				m[d.OperationKey] = d
			}
			return m
		}
		failed := byKey()[failing]
		if failed.State != store.DeliveryFailed {
			t.Fatalf("the failing delivery: %+v", failed)
		}
		again, err := s.ResendDelivery(ctx, failed.ID, "olga")
		if err != nil || again.State != store.DeliveryPending || again.Attempts != 0 || again.WebhookID != failed.WebhookID {
			t.Fatalf("sent again: %+v %v", again, err)
		}
		if _, err := s.ResendDelivery(ctx, 999999, "olga"); !errors.Is(err, store.ErrNoSuchDelivery) {
			t.Fatalf("an unknown delivery sent again: %v", err)
		}
		events, err := s.AuditEvents(ctx, store.AuditFilter{Event: "webhook.delivery_resent"})
		if err != nil || len(events) != 1 || events[0].Actor.Name != "olga" || events[0].OperationKey != failing {
			t.Fatalf("the resend's audit: %+v %v", events, err)
		}

		// Paused, then resumed: due at once.
		if err := s.StopEndpoint(ctx, "erp", "paused", "every delivery failed for five days"); err != nil {
			t.Fatal(err)
		}
		if d, err := s.TakeDeliveries(ctx, 10, time.Minute); err != nil || len(d) != 0 {
			t.Fatalf("taken from a paused endpoint: %+v %v", d, err)
		}
		if err := s.ResumeEndpoint(ctx, "erp", "olga"); err != nil {
			t.Fatal(err)
		}
		if state, _, err := s.EndpointState(ctx, "erp"); err != nil || state != "" {
			t.Fatalf("resumed endpoint: %q %v", state, err)
		}
		if d, err := s.TakeDeliveries(ctx, 10, time.Minute); err != nil || len(d) != 1 || d[0].OperationKey != failing {
			t.Fatalf("taken after the resume: %+v %v", d, err)
		}

		// Retention: the delivered one goes, the pending one stays.
		n, err := s.PurgeDelivered(ctx, time.Now().Add(time.Hour), 100)
		if err != nil || n != 1 {
			t.Fatalf("purged %d, %v; want the one delivered", n, err)
		}
		if left := byKey(); len(left) != 1 || left[failing].State != store.DeliveryPending {
			t.Fatalf("left after the purge: %+v", left)
		}
	})
}
