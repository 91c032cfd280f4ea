package adapters_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
)

// TestInProgress: a request the target still holds in progress is sent
// again while attempts remain; when they run out its outcome is unknown
// (Reconcile), never a refusal that had no effect.
func TestInProgress(t *testing.T) {
	t.Parallel()
	busy := &adapters.Error{Class: adapters.Retry, Code: "OUTCOME_UNKNOWN", InProgress: true}
	p := adapters.RetryPolicy{MaxAttempts: 2, InitialDelay: time.Millisecond, Multiplier: 1}
	_, n, err := p.Execute(context.Background(), &flaky{errs: []error{busy, busy, busy}}, adapters.Op{Key: "k"}, nil)
	var ae *adapters.Error
	if !errors.As(err, &ae) || ae.Class != adapters.Reconcile || n != 2 {
		t.Fatalf("after %d attempts: %v, want reconcile after 2", n, err)
	}
	if got := adapters.ClassOf(busy); got != adapters.Retry {
		t.Fatalf("the target's own error changed to %v", got)
	}
}
