package store_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// A journal URL is shown without its password, wherever it is.
func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://og:s3cret@db:5432/og?sslmode=require": "postgres://og:xxxxx@db:5432/og?sslmode=require",
		"postgresql://db/og?password=s3cret&sslmode=off":  "postgresql://db/og?password=xxxxx&sslmode=off",
		"postgres://og@db/og":                             "postgres://og@db/og",
		"/var/lib/oncegate/journal.db":                    "/var/lib/oncegate/journal.db",
	} {
		if got := store.Redact(in); got != want || strings.Contains(got, "s3cret") {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// The connections to the journal's server break between batches (a
// restart, an idle connection cut): the writers find out at their next
// BEGIN, before anything is sent, and go on with new connections, so no
// write fails; the audit chain stays whole.
func TestWritersReconnect(t *testing.T) {
	if !storetest.Postgres() {
		t.Skip("PostgreSQL journal only: SQLite has no connection to lose")
	}
	t.Parallel()
	ctx := context.Background()
	s := MustOpenStore(t)
	MustClaim(t, s, claimReq("test:invoice.create:before-cut:v1", fp1, "run-1"), store.DecisionExecute)

	u, _ := url.Parse(store.LocationOf(s))
	raw := store.RawDB(t, s)
	res, err := raw.Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ? AND pid <> pg_backend_pid()`, u.Query().Get("application_name"))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		t.Fatal("no connection of the store was cut")
	}

	landed, failed := 0, 0
	for i := 0; landed < 10; i++ {
		key := fmt.Sprintf("test:invoice.create:after-cut-%d:v1", i)
		_, _, err := s.Claim(ctx, claimReq(key, fp1, "run-1"))
		switch {
		case err == nil:
			landed++
		case errors.Is(err, store.ErrUnavailable):
			failed++
			if _, gerr := s.Get(ctx, key); !errors.Is(gerr, store.ErrNotFound) {
				t.Fatalf("%s failed as unavailable but is in the journal: %v", key, gerr)
			}
			if i > 20 {
				t.Fatalf("the writers did not come back: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		default:
			t.Fatalf("claim after the cut: %v, want success or ErrUnavailable", err)
		}
	}
	if failed != 0 {
		t.Fatalf("%d writes failed after a cut between batches, want none", failed)
	}
	if rep, err := s.VerifyAudit(ctx); err != nil || rep.BrokenAt != 0 {
		t.Fatalf("audit chain after the cut: %+v, %v", rep, err)
	}
}
