package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// A notice delivered again is counted on its row, not journaled twice; a
// settled one stays settled, except that a dropped one is read back again
// at its next delivery; a dropped notice is an audit event on its key.
func TestEventJournal(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		s := j.Open(t)
		rules := []store.EventRule{{Run: "buh.receipt.create", OpKey: "test:buh.receipt.create:evt-pay-p1:v1"}, {Run: "crm.note.add", OpKey: "test:crm.note.add:evt-pay-p1:v1"}}
		got, err := s.ReceiveEvent(ctx, "payments", "payment.succeeded", "p1", rules, time.Now())
		if err != nil || len(got) != 2 || got[0].State != store.EventPending || got[0].Deliveries != 1 || !got[0].Opened || got[1].OpKey != rules[1].OpKey {
			t.Fatalf("first delivery: %+v %v", got, err)
		}
		for range 4 {
			if got, err = s.ReceiveEvent(ctx, "payments", "payment.succeeded", "p1", rules, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		if got[0].Deliveries != 5 || got[0].Opened {
			t.Fatalf("five deliveries: %+v", got[0])
		}
		all, err := s.ListEvents(ctx, store.EventFilter{Source: "payments"})
		if err != nil || len(all) != 2 {
			t.Fatalf("listed %d rows (%v), want one per rule", len(all), err)
		}
		due, err := s.DueEvents(ctx, 10)
		if err != nil || len(due) != 2 {
			t.Fatalf("due: %d %v", len(due), err)
		}
		next := time.Now().Add(time.Hour)
		if err := s.PostponeEvent(ctx, got[1].ID, "the source is down", next); err != nil {
			t.Fatal(err)
		}
		if due, _ = s.DueEvents(ctx, 10); len(due) != 1 || due[0].ID != got[0].ID {
			t.Fatalf("a postponed event is due: %+v", due)
		}
		if err := s.SettleEvent(ctx, got[0].ID, store.EventDropped, "the payment's status is canceled, not succeeded"); err != nil {
			t.Fatal(err)
		}
		if err := s.SettleEvent(ctx, got[0].ID, store.EventRun, ""); err != nil {
			t.Fatal(err)
		}
		e, err := s.EventByID(ctx, got[0].ID)
		if err != nil || e.State != store.EventDropped || e.Reason == "" {
			t.Fatalf("a settled event moved: %+v %v", e, err)
		}
		audit, err := s.AuditEvents(ctx, store.AuditFilter{OperationKey: rules[0].OpKey})
		if err != nil || len(audit) != 1 || audit[0].Event != "event.dropped" {
			t.Fatalf("audit of the drop: %+v %v", audit, err)
		}
		// Delivered again: read back again.
		if got, err = s.ReceiveEvent(ctx, "payments", "payment.succeeded", "p1", rules, time.Now()); err != nil || got[0].State != store.EventPending || got[0].Reason != "" || got[0].Deliveries != 6 || !got[0].Opened {
			t.Fatalf("a dropped notice delivered again: %+v %v", got, err)
		}
		if err := s.SettleEvent(ctx, got[0].ID, store.EventRun, ""); err != nil {
			t.Fatal(err)
		}
		if got, _ = s.ReceiveEvent(ctx, "payments", "payment.succeeded", "p1", rules, time.Now()); got[0].State != store.EventRun {
			t.Fatalf("a run notice delivered again is pending: %+v", got[0])
		}
		if of, err := s.EventsOfKey(ctx, rules[0].OpKey); err != nil || len(of) != 1 || of[0].Event != "payment.succeeded" {
			t.Fatalf("the event of a key: %+v %v", of, err)
		}
		if _, err := s.EventByID(ctx, 9999); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("an unknown id: %v", err)
		}
		// Purge: only what is settled and old.
		if n, err := s.PurgeEvents(ctx, time.Now().Add(time.Minute), 10); err != nil || n != 1 {
			t.Fatalf("purged %d (%v), want the one run", n, err)
		}
	})
}
