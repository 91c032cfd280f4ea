// Package storetest gives tests a fresh journal on either backend. A
// suite that runs on both wraps each test's body in Each, which runs it
// as the subtests sqlite and postgres of one go test: the store's suite
// and the engine's workers do. PostgreSQL comes from ONCEGATE_TEST_PG, an
// admin URL of a server the tests may create schemas and databases on
// (.ci/postgres starts one); without it the PostgreSQL tests are skipped
// with a message, except in CI (CI set), where they fail.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"github.com/oncegate/oncegate/store"
)

// Journal is a kind of journal a test runs on: the embedded SQLite one
// or PostgreSQL.
type Journal struct{ name string }

var (
	// SQLite is the embedded journal: a file in a temp directory.
	SQLite = Journal{"sqlite"}
	// PostgreSQL is a journal in a schema of its own on ONCEGATE_TEST_PG's
	// server.
	PostgreSQL = Journal{"postgres"}
)

// String is the journal's name, as Each names its subtests.
func (j Journal) String() string { return j.name }

// Postgres reports whether the journal is PostgreSQL.
func (j Journal) Postgres() bool { return j == PostgreSQL }

// Each runs test once on each journal, as the subtests sqlite and
// postgres of t: a suite that runs on both runs on both in one go test.
func Each(t *testing.T, test func(t *testing.T, j Journal)) {
	t.Helper()
	for _, j := range []Journal{SQLite, PostgreSQL} {
		t.Run(j.name, func(t *testing.T) { test(t, j) })
	}
}

// Open opens a fresh, empty embedded journal for tb, closed when tb
// ends: the journal of the tests that run on one (Each runs on both).
func Open(tb testing.TB) *store.Store {
	tb.Helper()
	return SQLite.Open(tb)
}

// OpenShared opens a fresh, empty embedded journal for the tests of a
// package to share, as SQLite.OpenShared.
func OpenShared(tb testing.TB) (*store.Store, func()) {
	tb.Helper()
	return SQLite.OpenShared(tb)
}

// Open opens a fresh, empty journal of j for tb at j.Location, closed
// when tb ends.
func (j Journal) Open(tb testing.TB) *store.Store {
	tb.Helper()
	st, err := store.Open(context.Background(), j.Location(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// Location returns where a fresh, empty journal of j for tb is: a file
// in a temp directory, or on PostgreSQL a schema of its own (dropped when
// tb ends) in ONCEGATE_TEST_PG's database.
func (j Journal) Location(tb testing.TB) string {
	tb.Helper()
	if !j.Postgres() {
		return filepath.Join(tb.TempDir(), "journal.db")
	}
	loc, drop, err := schema(adminURL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := drop(); err != nil {
			tb.Error(err)
		}
	})
	return loc
}

// OpenShared opens a fresh, empty journal of j as Open does, for the
// tests of a package to share: it outlives tb (the first test to ask,
// which it skips or fails as Open would), and the package's TestMain
// closes and removes it with the function returned, after m.Run.
func (j Journal) OpenShared(tb testing.TB) (*store.Store, func()) {
	tb.Helper()
	var loc string
	var remove func() error
	if j.Postgres() {
		var err error
		if loc, remove, err = schema(adminURL(tb)); err != nil {
			tb.Fatal(err)
		}
	} else {
		dir, err := os.MkdirTemp("", "oncegate-test-")
		if err != nil {
			tb.Fatal(err)
		}
		loc, remove = filepath.Join(dir, "journal.db"), func() error { return os.RemoveAll(dir) }
	}
	st, err := store.Open(context.Background(), loc)
	if err != nil {
		remove()
		tb.Fatal(err)
	}
	return st, func() { st.Close(); remove() }
}

// schema makes a schema of its own in admin's database and returns the
// journal's location there and how to drop it.
func schema(admin string) (string, func() error, error) {
	name := "t_" + random()
	if err := execSQL(admin, `CREATE SCHEMA `+name); err != nil {
		return "", nil, err
	}
	drop := func() error { return execSQL(admin, `DROP SCHEMA `+name+` CASCADE`) }
	u, _ := url.Parse(admin)
	q := u.Query()
	q.Set("search_path", name)
	q.Set("application_name", name) // so a test can find its own connections
	u.RawQuery = q.Encode()
	return u.String(), drop, nil
}

// Database returns the URL of a fresh PostgreSQL database for tb (dropped
// when tb ends), for tests that run gateways on PostgreSQL whatever the
// suite's backend is.
func Database(tb testing.TB) string {
	tb.Helper()
	admin := adminURL(tb)
	name := "oncegate_" + random()
	exec(tb, admin, `CREATE DATABASE `+name)
	tb.Cleanup(func() { exec(tb, admin, `DROP DATABASE `+name+` WITH (FORCE)`) })
	u, _ := url.Parse(admin)
	u.Path = "/" + name
	return u.String()
}

func adminURL(tb testing.TB) string {
	tb.Helper()
	admin := os.Getenv("ONCEGATE_TEST_PG")
	if admin == "" {
		if os.Getenv("CI") != "" {
			tb.Fatal("ONCEGATE_TEST_PG is not set: CI must run the PostgreSQL tests (.ci/postgres starts a server)")
		}
		tb.Skip("PostgreSQL tests skipped: set ONCEGATE_TEST_PG to an admin URL (e.g. the one .ci/postgres prints)")
	}
	return admin
}

func exec(tb testing.TB, admin, stmt string) {
	tb.Helper()
	if err := execSQL(admin, stmt); err != nil {
		tb.Fatal(err)
	}
}

// execSQL runs stmt on admin's database.
func execSQL(admin, stmt string) error {
	db, err := sql.Open("pgx", admin)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(context.Background(), stmt); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	return nil
}

func random() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}
