package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// The journal's commands on PostgreSQL: migrate down, version and up
// work on the database; backup is pg_dump's custom format; restore says
// it is pg_restore's job; a URL that is not postgres:// is refused
// without being repeated.
func TestSharedJournalCommands(t *testing.T) {
	t.Parallel()
	url := storetest.Database(t)
	env := []string{"ONCEGATE_JOURNAL_URL=" + url}
	data := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		return runBinary(t, env, append(args, "--data", data)...)
	}
	latest, previous := fmt.Sprintf("journal schema version %d", store.LatestVersion()), fmt.Sprintf("journal schema version %d", store.LatestVersion()-1)
	if out := run("migrate", "up"); !strings.Contains(out, latest) {
		t.Fatalf("migrate up: %s", out)
	}
	if out := run("migrate", "down"); !strings.Contains(out, previous) {
		t.Fatalf("migrate down: %s", out)
	}
	if out := run("migrate", "version"); !strings.Contains(out, previous) {
		t.Fatalf("migrate version: %s", out)
	}
	if out := run("migrate", "up"); !strings.Contains(out, latest) {
		t.Fatalf("migrate up again: %s", out)
	}
	if entries, _ := os.ReadDir(data); len(entries) != 0 {
		t.Fatalf("the commands wrote into the data directory of a PostgreSQL journal: %v", entries)
	}
	run("token", "create", "--name", "agent-pg", "--scopes", "read")

	if _, err := exec.LookPath("pg_dump"); err == nil {
		file := filepath.Join(t.TempDir(), "journal.dump")
		run("backup", file)
		b, err := os.ReadFile(file)
		if err != nil || !strings.HasPrefix(string(b), "PGDMP") {
			t.Fatalf("backup is not a pg_dump archive: %.20q, %v", b, err)
		}
		if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
			t.Fatalf("backup mode %v, want 0600", fi.Mode().Perm())
		}
	} else if os.Getenv("CI") != "" {
		t.Fatal("pg_dump is not installed (Debian's postgresql-client)")
	}
	restore := exec.Command(bin(t), "restore", "--data", data, filepath.Join(t.TempDir(), "x"))
	restore.Env = append(os.Environ(), env...)
	os.WriteFile(restore.Args[len(restore.Args)-1], []byte("x"), 0o600)
	if out, err := restore.CombinedOutput(); err == nil || !strings.Contains(string(out), "pg_restore") {
		t.Fatalf("restore on PostgreSQL: %v\n%s", err, out)
	}

	bad := exec.Command(bin(t), "migrate", "version", "--data", data)
	bad.Env = append(os.Environ(), "ONCEGATE_JOURNAL_URL=mysql://root:hunter2@db/x")
	out, err := bad.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "ONCEGATE_JOURNAL_URL must hold a postgres:// URL") || strings.Contains(string(out), "hunter2") {
		t.Fatalf("a URL that is not PostgreSQL's: %v\n%s", err, out)
	}
}
