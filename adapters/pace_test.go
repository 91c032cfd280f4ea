package adapters_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

func mustRetry(t *testing.T, err error) *adapters.Error {
	t.Helper()
	var e *adapters.Error
	if !errors.As(err, &e) || e.Class != adapters.Retry || e.Code != codes.TargetUnavailable || e.RetryAfter < 1 {
		t.Fatalf("err = %v, want Retry %s with a RetryAfter", err, codes.TargetUnavailable)
	}
	return e
}

func TestPacer(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		// A burst of 10 declared: the pacer keeps a fifth back, so 8 go
		// at once, and the ninth waits for its turn.
		p := adapters.NewPacer(adapters.Rate{PerSecond: 0.01, Burst: 10})
		for i := range 8 {
			if err := p.Wait(context.Background(), "m", 0); err != nil {
				t.Fatalf("call %d: %v", i+1, err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		// The next turn is 100 s away, past the deadline: refused at
		// once, nothing sent, with when to come back.
		if e := mustRetry(t, p.Wait(ctx, "m", 0)); e.RetryAfter < 60 {
			t.Fatalf("RetryAfter = %d, want the turn's distance", e.RetryAfter)
		}
	})
	t.Run("ErrNeedsTime", func(t *testing.T) {
		t.Parallel()
		// A write that would start with less than its timeout left is not
		// started.
		p := adapters.NewPacer(adapters.Rate{})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := p.Wait(ctx, "m", 0); err != nil {
			t.Fatal(err)
		}
		p2 := adapters.NewPacer(adapters.Rate{PerSecond: 1, Burst: 1})
		p2.Wait(context.Background(), "m", 0)
		mustRetry(t, p2.Wait(ctx, "m", 5*time.Second))
	})
	t.Run("Hold", func(t *testing.T) {
		t.Parallel()
		p := adapters.NewPacer(adapters.Rate{})
		p.Hold("crm.activity.add", time.Now().Add(time.Hour))
		p.Hold("crm.activity.add", time.Now().Add(time.Minute)) // never shortens
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if e := mustRetry(t, p.Wait(ctx, "crm.activity.add", 0)); e.RetryAfter < 3000 {
			t.Fatalf("RetryAfter = %d, want the hold's end", e.RetryAfter)
		}
		if err := p.Wait(ctx, "crm.contact.list", 0); err != nil {
			t.Fatalf("another method is held too: %v", err)
		}
	})
	t.Run("Nil", func(t *testing.T) {
		t.Parallel()
		var p *adapters.Pacer
		p.Hold("m", time.Now().Add(time.Hour))
		if err := p.Wait(context.Background(), "m", 0); err != nil {
			t.Fatal(err)
		}
	})
}
