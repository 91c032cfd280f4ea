package store_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/oncegate/oncegate/store/storetest"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
)

// MustFail makes n sign-ins as name from addr with a wrong password, one
// a second, each refused for it.
func MustFail(tb testing.TB, s *store.Store, c *clock, n int, name, addr string) {
	tb.Helper()
	for i := range n {
		if i > 0 {
			c.Advance(time.Second)
		}
		if _, _, err := s.Login(context.Background(), name, "not the password", addr); !errors.Is(err, store.ErrBadCredentials) {
			tb.Fatalf("sign-in %d of %d as %q from %q: %v, want ErrBadCredentials", i+1, n, name, addr, err)
		}
	}
}

// mustWait returns LoginAllowed's wait.
func mustWait(tb testing.TB, s *store.Store, name, addr string) time.Duration {
	tb.Helper()
	wait, err := s.LoginAllowed(context.Background(), name, addr)
	if err != nil {
		tb.Fatal(err)
	}
	return wait
}

func TestLoginThrottle(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		t.Run("Name", func(t *testing.T) {
			s := j.Open(t)
			clock := pinClock(s)
			for i := range store.NameFailureLimit - 1 {
				MustFail(t, s, clock, 1, "alice", fmt.Sprintf("198.51.100.%d", i))
				clock.Advance(time.Minute)
			}
			if got := mustWait(t, s, "alice", "203.0.113.9"); got != 0 {
				t.Fatalf("wait after %d failures = %v, want 0", store.NameFailureLimit-1, got)
			}
			MustFail(t, s, clock, 1, "Alice", "198.51.100.200") // the fifth, spelled otherwise
			// The first failure was 4 minutes ago: it leaves the window in 11.
			if got, want := mustWait(t, s, "alice", "203.0.113.9"), store.LoginWindow-4*time.Minute; got != want {
				t.Fatalf("wait = %v, want %v", got, want)
			}
			if got := mustWait(t, s, "bob", "198.51.100.200"); got != 0 {
				t.Fatalf("another name from the same address waits %v", got)
			}
			clock.Advance(store.LoginWindow - 4*time.Minute - time.Second)
			if got, want := mustWait(t, s, "alice", ""), time.Second; got != want {
				t.Fatalf("wait = %v, want %v", got, want)
			}
			clock.Advance(time.Second)
			if got := mustWait(t, s, "alice", ""); got != 0 {
				t.Fatalf("wait after the window = %v, want 0", got)
			}
		})
		t.Run("Addr", func(t *testing.T) {
			s := j.Open(t)
			clock := pinClock(s)
			for i := range store.AddrFailureLimit {
				MustFail(t, s, clock, 1, fmt.Sprintf("user%d", i), fmt.Sprintf("192.0.2.7:%d", 40000+i))
			}
			if got := mustWait(t, s, "someone", "192.0.2.7"); got <= 0 {
				t.Fatalf("address after %d failures waits %v", store.AddrFailureLimit, got)
			}
			if got := mustWait(t, s, "someone", "192.0.2.8"); got != 0 {
				t.Fatalf("another address waits %v", got)
			}
		})
		t.Run("AddrIPv6Prefix", func(t *testing.T) {
			s := j.Open(t)
			clock := pinClock(s)
			for i := range store.AddrFailureLimit {
				MustFail(t, s, clock, 1, fmt.Sprintf("user%d", i), fmt.Sprintf("[2001:db8:1:2::%x]:443", i+1))
			}
			if got := mustWait(t, s, "someone", "2001:db8:1:2:ffff::1"); got <= 0 {
				t.Fatalf("same /64 waits %v", got)
			}
			if got := mustWait(t, s, "someone", "2001:db8:1:3::1"); got != 0 {
				t.Fatalf("another /64 waits %v", got)
			}
		})
		t.Run("Throttled", func(t *testing.T) {
			s := j.Open(t)
			clock := pinClock(s)
			MustCreateUser(t, s, "alice", store.RoleAccountant)
			MustFail(t, s, clock, store.NameFailureLimit, "alice", "192.0.2.7")
			clock.Advance(time.Minute)
			// The right password, too late: refused unchecked, and not counted.
			_, wait, err := s.Login(ctx, "alice", testPassword, "192.0.2.8")
			if !errors.Is(err, store.ErrThrottled) {
				t.Fatalf("sign-in over the limit: %v, want ErrThrottled", err)
			}
			if want := store.LoginWindow - time.Minute - time.Duration(store.NameFailureLimit-1)*time.Second; wait != want {
				t.Fatalf("wait %v, want %v", wait, want)
			}
			if got := mustWait(t, s, "", "192.0.2.8"); got != 0 {
				t.Fatalf("a throttled sign-in was counted against its address: wait %v", got)
			}
		})
		t.Run("SuccessGivesBack", func(t *testing.T) {
			s := j.Open(t)
			clock := pinClock(s)
			MustCreateUser(t, s, "alice", store.RoleAccountant)
			MustFail(t, s, clock, store.NameFailureLimit-1, "alice", "192.0.2.7")
			for i := range store.AddrFailureLimit - store.NameFailureLimit {
				MustFail(t, s, clock, 1, fmt.Sprintf("bob%d", i), "192.0.2.7")
			}
			// One short of the address's limit: the right password is counted
			// as the limit-th failure while it is checked, then given back.
			u, _, err := s.Login(ctx, "ALICE", testPassword, "192.0.2.7")
			if err != nil || u.Name != "alice" {
				t.Fatalf("sign-in: %+v, %v", u, err)
			}
			if got := mustWait(t, s, "alice", "192.0.2.8"); got != 0 {
				t.Fatalf("the name's failures were not forgotten: wait %v", got)
			}
			MustFail(t, s, clock, store.NameFailureLimit-1, "alice", "192.0.2.8")
			if got := mustWait(t, s, "alice", "192.0.2.8"); got != 0 {
				t.Fatalf("counting did not restart after a success: wait %v", got)
			}
			// The address's earlier failures stay: one more throttles it.
			if got := mustWait(t, s, "carol", "192.0.2.7"); got != 0 {
				t.Fatalf("the success was counted against the address: wait %v", got)
			}
			MustFail(t, s, clock, 1, "carol", "192.0.2.7")
			if got := mustWait(t, s, "dave", "192.0.2.7"); got <= 0 {
				t.Fatalf("address failures were forgotten too: wait %v", got)
			}
		})
		t.Run("Durable", func(t *testing.T) {
			s := j.Open(t)
			MustFail(t, s, pinClock(s), store.NameFailureLimit, "alice", "192.0.2.7")
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s2, err := store.Open(ctx, store.LocationOf(s))
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			pinClock(s2).Advance(time.Duration(store.NameFailureLimit) * time.Minute)
			if got := mustWait(t, s2, "alice", ""); got <= 0 {
				t.Fatalf("after a restart the name waits %v", got)
			}
		})
		t.Run("Prune", func(t *testing.T) {
			s := j.Open(t)
			clock := pinClock(s)
			MustFail(t, s, clock, 3, "alice", "192.0.2.7")
			clock.Advance(store.LoginWindow)
			MustFail(t, s, clock, 1, "bob", "")
			var n int
			if err := openRawJournal(t, s).QueryRow(`SELECT count(*) FROM login_failures`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if got, want := n, 1; got != want {
				t.Fatalf("%d failure rows, want %d (old ones pruned)", got, want)
			}
		})
	})
}

// However many sign-ins run at once, at most the limit of them get their
// password checked: each is counted before its check, in the same step
// that decides whether it may go ahead.
func TestLoginThrottleParallel(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		// outcomes counts the answers of a burst by kind.
		type outcomes struct {
			mu                           sync.Mutex
			checked, throttled, busy, ok int
		}
		record := func(o *outcomes, tb testing.TB, err error) {
			o.mu.Lock()
			defer o.mu.Unlock()
			switch {
			case err == nil:
				o.ok++
			case errors.Is(err, store.ErrBadCredentials):
				o.checked++
			case errors.Is(err, store.ErrThrottled):
				o.throttled++
			case errors.Is(err, store.ErrLoginBusy):
				o.busy++
			default:
				tb.Errorf("sign-in: %v", err)
			}
		}

		t.Run("OneNameManyAddresses", func(t *testing.T) {
			t.Parallel()
			s := j.Open(t)
			MustCreateUser(t, s, "alice", store.RoleAccountant)
			// 100 guesses, each from its own address so no address limit
			// helps; the right password is the 90th, sent once the first 89
			// are answered, while the last 10 may still be on their way.
			const n, right = 100, 89
			var o outcomes
			var first, all sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				if i == right {
					continue
				}
				all.Add(1)
				if i < right {
					first.Add(1)
				}
				go func() {
					defer all.Done()
					if i < right {
						defer first.Done()
					}
					<-start
					_, _, err := s.Login(ctx, "alice", fmt.Sprintf("wrong password %d", i), fmt.Sprintf("198.51.100.%d", i))
					record(&o, t, err)
				}()
			}
			close(start)
			first.Wait()
			_, _, err := s.Login(ctx, "alice", testPassword, "203.0.113.90")
			all.Wait()
			if !errors.Is(err, store.ErrThrottled) {
				t.Errorf("the right password after %d wrong ones: %v, want ErrThrottled", right, err)
			}
			if o.checked > store.NameFailureLimit || o.checked+o.throttled != n-1 || o.ok != 0 {
				t.Fatalf("%d wrong passwords checked, %d throttled, %d signed in; want at most %d checked, the rest throttled",
					o.checked, o.throttled, o.ok, store.NameFailureLimit)
			}
		})
		t.Run("UnknownNamesOneAddress", func(t *testing.T) {
			t.Parallel()
			s := j.Open(t)
			const n = 200
			var o outcomes
			var all sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				all.Add(1)
				go func() {
					defer all.Done()
					<-start
					_, _, err := s.Login(ctx, fmt.Sprintf("nobody-%d", i), "some password", "192.0.2.44")
					record(&o, t, err)
				}()
			}
			close(start)
			all.Wait()
			if o.checked > store.AddrFailureLimit || o.checked+o.throttled+o.busy != n {
				t.Fatalf("%d checked, %d throttled, %d refused as busy; want at most %d checked",
					o.checked, o.throttled, o.busy, store.AddrFailureLimit)
			}
		})
	})
}
