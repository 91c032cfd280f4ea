package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// A process's key is bound once: the second begin returns the first
// row; a state change is audited on the key; a final state stays.
func TestProcessJournal(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		s := j.Open(t)
		const key = "test:order.fulfil:order-77:v1"
		p := store.Process{Key: key, Intent: "order.fulfil", IntentVersion: 1, IntentDigest: "d1", Fingerprint: "f1",
			Agent: "shop-agent", Scopes: []string{"write", "pay"}, Payload: json.RawMessage(`{"order_id":"order-77"}`)}
		got, created, err := s.BeginProcess(ctx, p, "run-1", time.Minute, []string{"step-key-1"})
		if err != nil || !created || got.State != store.ProcessStarted || got.Fingerprint != "f1" || !slices.Equal(got.Scopes, p.Scopes) {
			t.Fatalf("begin: %+v %v %v", got, created, err)
		}
		other := p
		other.Fingerprint = "f2"
		if got, created, err = s.BeginProcess(ctx, other, "run-2", time.Minute, []string{"step-key-2"}); err != nil || created || got.Fingerprint != "f1" {
			t.Fatalf("a second begin under the key: %+v %v %v; want the first row", got, created, err)
		}
		// The lease: held by the run that began it, refused to another
		// until it is given back.
		if _, leased, err := s.LeaseProcess(ctx, key, "run-2", time.Minute); err != nil || leased {
			t.Fatalf("another run took a held lease: %v %v", leased, err)
		}
		if _, err := s.MoveProcess(ctx, key, "run-1", store.ProcessAwaitingApproval, "charge", "", ""); err != nil {
			t.Fatal(err)
		}
		if _, leased, err := s.LeaseProcess(ctx, key, "run-2", time.Minute); err != nil || !leased {
			t.Fatalf("the lease given back is not taken: %v %v", leased, err)
		}
		if _, err := s.MoveProcess(ctx, key, "", store.ProcessCompensating, "charge", "APPROVAL_DENIED", "denied"); err != nil {
			t.Fatal(err)
		}
		// The failed step's code is kept through the compensation.
		got, err = s.MoveProcess(ctx, key, "", store.ProcessCompensated, "invoice", "", "")
		if err != nil || got.State != store.ProcessCompensated || got.ErrorCode != "APPROVAL_DENIED" || got.CompletedAt.IsZero() {
			t.Fatalf("compensated: %+v %v", got, err)
		}
		if got, err = s.MoveProcess(ctx, key, "", store.ProcessStarted, "invoice", "", ""); err != nil || got.State != store.ProcessCompensated {
			t.Fatalf("a final process moved: %+v %v", got, err)
		}
		if got, err := s.GetProcess(ctx, key); err != nil || got.State != store.ProcessCompensated || got.Step != "invoice" {
			t.Fatalf("read back: %+v %v", got, err)
		}
		if _, err := s.GetProcess(ctx, "test:order.fulfil:order-78:v1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("an unknown key: %v", err)
		}
		events, err := s.AuditEvents(ctx, store.AuditFilter{OperationKey: key})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range events {
			names = append(names, e.Event)
		}
		slices.Sort(names)
		if want := []string{"process.awaiting_approval", "process.compensated", "process.compensating", "process.started"}; !slices.Equal(names, want) {
			t.Errorf("audit of the process: %v, want %v", names, want)
		}
		if got, err := s.ProcessOfStep(ctx, "step-key-1"); err != nil || got != key {
			t.Errorf("the process of its step: %q %v", got, err)
		}
		if _, err := s.ProcessOfStep(ctx, "step-key-2"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a second begin noted its steps: %v", err)
		}
		left, err := s.UnfinishedProcesses(ctx, 10)
		if err != nil || len(left) != 0 {
			t.Errorf("unfinished after the end: %+v %v", left, err)
		}
		// Retention: a final process goes with its steps' keys.
		if n, err := s.PurgeProcesses(ctx, time.Now().Add(-time.Hour), 10); err != nil || n != 0 {
			t.Fatalf("purged a process completed after the cutoff: %d %v", n, err)
		}
		if n, err := s.PurgeProcesses(ctx, time.Now().Add(time.Hour), 10); err != nil || n != 1 {
			t.Fatalf("purged %d, %v; want the final process", n, err)
		}
		if _, err := s.ProcessOfStep(ctx, "step-key-1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a purged process's step: %v", err)
		}
	})
}
