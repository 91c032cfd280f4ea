package adapters

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// RetryPolicy bounds how often, and how far apart, a call classified Retry
// is sent again. It is configuration, in the shape operators know.
type RetryPolicy struct {
	MaxAttempts  int           // total attempts, including the first; at least 1
	InitialDelay time.Duration // delay before the second attempt
	Multiplier   float64       // growth of the delay per attempt
	MaxDelay     time.Duration // cap of one delay
	Jitter       bool          // equal jitter: a random delay in [delay/2, delay], never less than half the backoff
}

// DefaultRetryPolicy is the policy used when the configuration names none.
var DefaultRetryPolicy = RetryPolicy{
	MaxAttempts:  4,
	InitialDelay: 500 * time.Millisecond,
	Multiplier:   2,
	MaxDelay:     5 * time.Second,
	Jitter:       true,
}

// Delay returns the wait before attempt n+1, after n failed attempts (n ≥ 1).
func (p RetryPolicy) Delay(n int) time.Duration {
	d := float64(p.InitialDelay)
	for i := 1; i < n; i++ {
		d *= p.Multiplier
		if p.MaxDelay > 0 && d >= float64(p.MaxDelay) {
			break
		}
	}
	if p.MaxDelay > 0 && d > float64(p.MaxDelay) {
		d = float64(p.MaxDelay)
	}
	if p.Jitter && d > 0 {
		d = d/2 + rand.Float64()*d/2
	}
	return time.Duration(d)
}

// MaxTotalDelay is the longest the policy can sleep between attempts in all.
func (p RetryPolicy) MaxTotalDelay() time.Duration {
	var total time.Duration
	q := p
	q.Jitter = false
	for n := 1; n < p.MaxAttempts; n++ {
		total += q.Delay(n)
	}
	return total
}

// Execute runs t.Execute for op, sending it again with backoff while the
// failure is classified Retry and attempts remain. It stops at the first
// success, Final or Reconcile failure. before, when not nil, is called with
// the attempt number before each attempt is sent (the journal records it
// durably); an error from it stops everything before sending, and is
// returned as is. It returns the last error and the number of attempts sent.
func (p RetryPolicy) Execute(ctx context.Context, t Target, op Op, before func(attempt int) error) (Result, int, error) {
	attempts := max(p.MaxAttempts, 1)
	first := max(op.Attempt, 1)
	var err error
	for n := 0; n < attempts; n++ {
		if n > 0 {
			wait := p.Delay(n)
			var ae *Error
			if errors.As(err, &ae) && ae.RetryAfter > 0 {
				wait = max(wait, time.Duration(ae.RetryAfter)*time.Second)
				if p.MaxDelay > 0 {
					wait = min(wait, p.MaxDelay)
				}
			}
			select {
			case <-ctx.Done():
				return Result{}, n, unfinished(err)
			case <-time.After(wait):
			}
		}
		op.Attempt = first + n
		if before != nil {
			if err := before(op.Attempt); err != nil {
				return Result{}, n, err
			}
		}
		var res Result
		res, err = t.Execute(ctx, op)
		if err == nil {
			return res, n + 1, nil
		}
		if ClassOf(err) != Retry {
			return Result{}, n + 1, err
		}
	}
	return Result{}, attempts, unfinished(err)
}

// unfinished is the last error of attempts that ran out: a request the
// target still holds in progress has an unknown outcome, not a refusal.
func unfinished(err error) error {
	var ae *Error
	if !errors.As(err, &ae) || !ae.InProgress || ae.Class != Retry {
		return err
	}
	m := *ae
	m.Class = Reconcile
	return &m
}
