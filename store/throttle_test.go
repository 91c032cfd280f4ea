package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
)

// MustFail records n failed sign-ins as name from addr, one a second.
func MustFail(tb testing.TB, s *store.Store, c *clock, n int, name, addr string) {
	tb.Helper()
	for i := range n {
		if i > 0 {
			c.Advance(time.Second)
		}
		if err := s.RecordLoginFailure(context.Background(), name, addr); err != nil {
			tb.Fatal(err)
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
	ctx := context.Background()
	t.Run("Name", func(t *testing.T) {
		s := MustOpenStore(t)
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
		s := MustOpenStore(t)
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
		s := MustOpenStore(t)
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
	t.Run("Clear", func(t *testing.T) {
		s := MustOpenStore(t)
		clock := pinClock(s)
		MustFail(t, s, clock, store.AddrFailureLimit, "alice", "192.0.2.7")
		if err := s.ClearLoginFailures(ctx, "ALICE"); err != nil {
			t.Fatal(err)
		}
		if got := mustWait(t, s, "alice", "192.0.2.8"); got != 0 {
			t.Fatalf("cleared name waits %v", got)
		}
		if got := mustWait(t, s, "alice", "192.0.2.7"); got <= 0 {
			t.Fatalf("address failures cleared too: wait %v", got)
		}
		MustFail(t, s, clock, store.NameFailureLimit-1, "alice", "192.0.2.8")
		if got := mustWait(t, s, "alice", "192.0.2.8"); got != 0 {
			t.Fatalf("counting did not restart after clear: wait %v", got)
		}
	})
	t.Run("Durable", func(t *testing.T) {
		s := MustOpenStore(t)
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
		s := MustOpenStore(t)
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
}
