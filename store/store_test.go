package store_test

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/migrations"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

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
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		t.Run("OK", func(t *testing.T) {
			s := j.Open(t)
			if err := s.Ready(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("Reopen", func(t *testing.T) {
			path := j.Location(t)
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
			path := j.Location(t)
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
		// A journal a newer oncegate migrated is refused, not served or
		// changed: its rows may follow rules this binary does not know.
		t.Run("SchemaAhead", func(t *testing.T) {
			s := j.Open(t)
			if _, err := store.RawDB(t, s).Exec(`UPDATE schema_migrations SET version = ?`, store.LatestVersion()+1); err != nil {
				t.Fatal(err)
			}
			location := store.LocationOf(s)
			s.Close()
			_, err := store.Open(context.Background(), location)
			if err == nil || !strings.Contains(err.Error(), "newer than this oncegate's") {
				t.Fatalf("open of a journal ahead of this binary: %v", err)
			}
			if _, err := store.Migrate(context.Background(), location, "down"); err == nil {
				t.Fatal("migrate down of a journal ahead of this binary was accepted")
			}
			if v, err := store.Migrate(context.Background(), location, "version"); err != nil || int(v) != store.LatestVersion()+1 {
				t.Fatalf("version = %d, %v", v, err)
			}
		})
	})
}

// The PostgreSQL schema is the SQLite one, version for version.
func TestBothSchemasEndTogether(t *testing.T) {
	sqlite, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	pg, err := fs.Glob(migrations.PostgresFS, "postgres/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if len(sqlite) != len(pg) {
		t.Fatalf("%d SQLite migration files, %d PostgreSQL ones", len(sqlite), len(pg))
	}
	for i := range sqlite {
		if want := "postgres/" + sqlite[i]; pg[i] != want {
			t.Errorf("PostgreSQL migration %s, want %s", pg[i], want)
		}
	}
}
