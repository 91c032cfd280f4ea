package store_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
)

// MustOpenStore opens a journal in a fresh temp file with a pinned clock.
func MustOpenStore(tb testing.TB) *store.Store {
	tb.Helper()
	s, err := store.Open(context.Background(), filepath.Join(tb.TempDir(), "journal.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// clock is a settable clock for a store.
type clock struct{ t time.Time }

func (c *clock) Now() time.Time          { return c.t }
func (c *clock) Advance(d time.Duration) { c.t = c.t.Add(d) }

func pinClock(s *store.Store) *clock {
	c := &clock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	s.Now = c.Now
	return c
}

func TestOpen(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		s := MustOpenStore(t)
		if err := s.Ready(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("Reopen", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "journal.db")
		for range 2 {
			s, err := store.Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Ready(context.Background()); err != nil {
				t.Fatal(err)
			}
			s.Close()
		}
	})
	t.Run("MigrateDownAndUp", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "journal.db")
		ctx := context.Background()
		v, err := store.Migrate(ctx, path, "up")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := int(v), store.LatestVersion(); got != want {
			t.Fatalf("version after up = %d, want %d", got, want)
		}
		if v, err = store.Migrate(ctx, path, "down"); err != nil {
			t.Fatal(err)
		}
		if got, want := int(v), store.LatestVersion()-1; got != want {
			t.Fatalf("version after down = %d, want %d", got, want)
		}
		if _, err := store.Migrate(ctx, path, "sideways"); err == nil {
			t.Fatal("unknown direction accepted")
		}
	})
}
