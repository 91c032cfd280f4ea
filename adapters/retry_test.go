package adapters_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
)

func TestDelay(t *testing.T) {
	t.Parallel()
	p := adapters.RetryPolicy{MaxAttempts: 6, InitialDelay: 500 * time.Millisecond, Multiplier: 2, MaxDelay: 5 * time.Second}
	for _, c := range []struct {
		n    int
		want time.Duration
	}{{1, 500 * time.Millisecond}, {2, time.Second}, {3, 2 * time.Second}, {4, 4 * time.Second}, {5, 5 * time.Second}, {9, 5 * time.Second}} {
		if got := p.Delay(c.n); got != c.want {
			t.Errorf("Delay(%d) = %v, want %v", c.n, got, c.want)
		}
	}
	if got, want := p.MaxTotalDelay(), 12500*time.Millisecond; got != want {
		t.Errorf("MaxTotalDelay = %v, want %v", got, want)
	}
	p.Jitter = true
	for range 100 {
		if d := p.Delay(2); d < 500*time.Millisecond || d > time.Second {
			t.Fatalf("jittered Delay(2) = %v, want within [0.5s, 1s]", d)
		}
	}
	unbounded := adapters.RetryPolicy{InitialDelay: time.Millisecond, Multiplier: 3}
	if got, want := unbounded.Delay(3), 9*time.Millisecond; got != want {
		t.Errorf("Delay without a cap = %v, want %v", got, want)
	}
}

// flaky fails with the given errors, then succeeds.
type flaky struct{ errs []error }

func (f *flaky) Name() string { return "flaky" }
func (f *flaky) Execute(ctx context.Context, op adapters.Op) (adapters.Result, error) {
	if len(f.errs) == 0 {
		return adapters.Result{ObjectID: "ok"}, nil
	}
	err := f.errs[0]
	f.errs = f.errs[1:]
	return adapters.Result{}, err
}
func (f *flaky) Lookup(ctx context.Context, op adapters.Op) (adapters.Result, error) {
	return adapters.Result{}, adapters.ErrNotFound
}

func TestExecute(t *testing.T) {
	t.Parallel()
	p := adapters.RetryPolicy{MaxAttempts: 3, InitialDelay: time.Millisecond, Multiplier: 2, MaxDelay: 2 * time.Millisecond}
	retry := &adapters.Error{Class: adapters.Retry, Code: "TARGET_UNAVAILABLE"}
	t.Run("OK", func(t *testing.T) {
		var seen []int
		res, n, err := p.Execute(context.Background(), &flaky{errs: []error{retry, retry}}, adapters.Op{}, func(a int) error { seen = append(seen, a); return nil })
		if err != nil || res.ObjectID != "ok" || n != 3 || len(seen) != 3 || seen[2] != 3 {
			t.Fatalf("res %v, n %d, err %v, seen %v", res, n, err, seen)
		}
	})
	t.Run("Spent", func(t *testing.T) {
		_, n, err := p.Execute(context.Background(), &flaky{errs: []error{retry, retry, retry}}, adapters.Op{}, nil)
		if adapters.ClassOf(err) != adapters.Retry || n != 3 {
			t.Fatalf("n %d, err %v", n, err)
		}
	})
	t.Run("ReconcileStops", func(t *testing.T) {
		_, n, err := p.Execute(context.Background(), &flaky{errs: []error{&adapters.Error{Class: adapters.Reconcile}}}, adapters.Op{}, nil)
		if adapters.ClassOf(err) != adapters.Reconcile || n != 1 {
			t.Fatalf("n %d, err %v", n, err)
		}
	})
	t.Run("BeforeRefuses", func(t *testing.T) {
		stop := errors.New("journal down")
		_, n, err := p.Execute(context.Background(), &flaky{}, adapters.Op{}, func(int) error { return stop })
		if !errors.Is(err, stop) || n != 0 {
			t.Fatalf("n %d, err %v", n, err)
		}
	})
	t.Run("Unclassified", func(t *testing.T) {
		if got := adapters.ClassOf(errors.New("x")); got != adapters.Reconcile {
			t.Fatalf("unclassified error is %v, want reconcile", got)
		}
	})
}
