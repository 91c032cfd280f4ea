package adapters

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/oncegate/oncegate/adapters/codes"
)

// Rate is the request rate a target allows: PerSecond on average, Burst
// at once (Bitrix24's leaky bucket: 2 a second, 50 before it refuses).
// A zero PerSecond is no limit.
type Rate struct {
	PerSecond float64
	Burst     int
}

// Margins the pacer keeps below the declared rate: the target counts
// requests when they arrive, and the network and the scheduler bunch up
// requests the pacer spaced out, so a pacer sending at exactly the
// target's rate and burst would now and then overfill its bucket.
const (
	paceRateShare  = 0.9 // of PerSecond the pacer sends at most
	paceBurstShare = 0.8 // of Burst the pacer sends at once at most
)

// Pacer spaces a target's calls so the target never refuses them for
// their rate: a call waits for its turn, within its context's deadline,
// instead of being sent and refused. It also holds back calls the target
// has blocked until a given time (Hold). The zero Pacer and a nil *Pacer
// let every call through at once. A Pacer is safe for concurrent use.
type Pacer struct {
	lim *rate.Limiter // nil: no rate limit

	mu   sync.Mutex
	held map[string]time.Time // call kind → not before
}

// NewPacer returns a pacer for r; with no rate it paces nothing but still
// honours Hold.
func NewPacer(r Rate) *Pacer {
	p := &Pacer{held: map[string]time.Time{}}
	if r.PerSecond > 0 {
		burst := max(1, int(math.Floor(float64(max(r.Burst, 1))*paceBurstShare)))
		p.lim = rate.NewLimiter(rate.Limit(r.PerSecond*paceRateShare), burst)
	}
	return p
}

// Hold keeps calls of kind (a method name, say) from being sent before
// until. A later Hold of the same kind extends the hold, never shortens it.
func (p *Pacer) Hold(kind string, until time.Time) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held = map[string]time.Time{}
	}
	if until.After(p.held[kind]) {
		p.held[kind] = until
	}
}

// HeldUntil is until when calls of kind are held back (zero when they are not).
func (p *Pacer) HeldUntil(kind string) time.Time {
	if p == nil {
		return time.Time{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if t := p.held[kind]; time.Now().Before(t) {
		return t
	}
	return time.Time{}
}

// Wait blocks until a call of kind may be sent: after any hold on kind
// and at its turn under the rate. need is how long the call itself must
// still have before ctx's deadline once its turn comes (a write that
// starts with too little time left could end unknown); reads may pass 0.
// When the turn comes too late for that, or ctx ends first, Wait returns
// a Retry *Error at once, with RetryAfter: nothing was sent.
func (p *Pacer) Wait(ctx context.Context, kind string, need time.Duration) error {
	if p == nil {
		return nil
	}
	deadline, bounded := ctx.Deadline()
	now := time.Now()
	if until := p.HeldUntil(kind); !until.IsZero() {
		if bounded && until.Add(need).After(deadline) {
			return heldError(kind, until.Sub(now))
		}
		if err := sleep(ctx, until.Sub(now)); err != nil {
			return heldError(kind, until.Sub(now))
		}
		now = time.Now()
	}
	if p.lim == nil {
		return nil
	}
	r := p.lim.ReserveN(now, 1)
	if !r.OK() {
		return paceError(time.Second)
	}
	delay := r.DelayFrom(now)
	if bounded && now.Add(delay+need).After(deadline) {
		r.CancelAt(now)
		return paceError(delay)
	}
	if err := sleep(ctx, delay); err != nil {
		r.Cancel()
		return paceError(delay)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// seconds rounds d up to whole seconds, at least 1: a Retry-After.
func seconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

func paceError(wait time.Duration) *Error {
	return &Error{Class: Retry, Code: codes.TargetUnavailable, RetryAfter: seconds(wait),
		Message: "the target's request rate is used up for now; nothing was sent",
		Err:     fmt.Errorf("pacer: the next turn is %v away, past the call's deadline", wait.Round(time.Millisecond))}
}

func heldError(kind string, wait time.Duration) *Error {
	return &Error{Class: Retry, Code: codes.TargetUnavailable, RetryAfter: seconds(wait),
		Message: "the target has blocked this call for a while; nothing was sent",
		Err:     fmt.Errorf("pacer: %s is held for %v more", kind, wait.Round(time.Second))}
}
