package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// The dashboard hears of notices dropped lately and of notices pending
// long, each counted up to its limit; run ones and fresh ones are no
// concern.
func TestEventConcerns(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		s := j.Open(t)
		receive := func(object string) store.Event {
			t.Helper()
			evs, err := s.ReceiveEvent(ctx, "payments", "payment.succeeded", object,
				[]store.EventRule{{Run: "buh.receipt.create", OpKey: "test:buh.receipt.create:evt-payments-" + object + ":v1"}}, time.Now())
			if err != nil || len(evs) != 1 {
				t.Fatalf("receive %s: %+v %v", object, evs, err)
			}
			return evs[0]
		}
		for _, object := range []string{"d1", "d2", "d3"} {
			if err := s.SettleEvent(ctx, receive(object).ID, store.EventDropped, "the source has no object "+object); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.SettleEvent(ctx, receive("r1").ID, store.EventRun, ""); err != nil {
			t.Fatal(err)
		}
		receive("p1")
		receive("p2")

		now := s.Now()
		for _, tc := range []struct {
			name             string
			since, stale     time.Time
			limit            int
			dropped, waiting int
		}{
			{"OK", now.Add(-time.Hour), now.Add(time.Hour), 10, 3, 2},
			{"Limited", now.Add(-time.Hour), now.Add(time.Hour), 2, 2, 2},
			{"NoneLately", now.Add(time.Hour), now.Add(-time.Hour), 10, 0, 0},
		} {
			dropped, waiting, err := s.EventConcerns(ctx, tc.since, tc.stale, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if dropped != tc.dropped || waiting != tc.waiting {
				t.Errorf("%s: %d dropped, %d waiting; want %d, %d", tc.name, dropped, waiting, tc.dropped, tc.waiting)
			}
		}
	})
}
