package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/server/config/configtest"
	"github.com/oncegate/oncegate/store"
)

// runCmd runs a command line in process and returns its output and error.
func runCmd(args ...string) (string, error) {
	var out bytes.Buffer
	err := invocation{strings.NewReader(""), &out, &out, configtest.NoEnv}.run(args)
	return out.String(), err
}

// Commands that read or add to a journal refuse a data directory without
// one, so a mistyped or forgotten --data is never answered from, or adds
// a user or token to, a new, empty journal that serve would not use; only
// serve and migrate up make one.
func TestCommandsNeedAJournal(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "typo")
	if _, err := userCmd(t, "correct horse battery\n", nil, "add", "--data", missing, "--role", "accountant", "anna"); err == nil || !strings.Contains(err.Error(), "no journal at") {
		t.Errorf("user add: %v, want a refusal naming the missing journal", err)
	}
	for _, args := range [][]string{
		{"token", "create", "--data", missing, "--name", "agent-a", "--scopes", "read"},
		{"migrate", "version", "--data", missing},
		{"migrate", "down", "--data", missing},
		{"token", "list", "--data", missing},
		{"token", "revoke", "--data", missing, "agent-a"},
		{"user", "list", "--data", missing},
		{"audit", "verify", "--data", missing},
		{"backup", "--data", missing, filepath.Join(t.TempDir(), "copy.db")},
	} {
		if _, err := runCmd(args...); err == nil || !strings.Contains(err.Error(), "no journal at") {
			t.Errorf("%v: %v, want a refusal naming the missing journal", args, err)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("a refused command created the data directory")
	}
}

func TestCommandErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := runCmd("migrate", "up", "--data", dir); err != nil {
		t.Fatal(err)
	}
	t.Run("DownPastZero", func(t *testing.T) {
		d := t.TempDir()
		runCmd("migrate", "up", "--data", d)
		var err error
		for range 20 {
			if _, err = runCmd("migrate", "down", "--data", d); err != nil {
				break
			}
		}
		if err == nil || !strings.Contains(err.Error(), "no schema to undo") {
			t.Fatalf("down past version 0: %v", err)
		}
	})
	t.Run("DigitAgentName", func(t *testing.T) {
		if _, err := runCmd("token", "create", "--data", dir, "--name", "17", "--scopes", "read"); err == nil || !strings.Contains(err.Error(), "starting with a letter") {
			t.Fatalf("an agent named by digits, which revoke would read as a token id: %v", err)
		}
	})
	t.Run("AuditVerifyArgs", func(t *testing.T) {
		if _, err := runCmd("audit", "verify", "--data", dir, "extra"); err == nil || !strings.Contains(err.Error(), "takes no arguments") {
			t.Fatalf("audit verify extra: %v", err)
		}
	})
	t.Run("Backup", func(t *testing.T) {
		to := filepath.Join(t.TempDir(), "nowhere", "copy.db")
		if _, err := runCmd("backup", "--data", dir, to); err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("backup into a missing directory: %v", err)
		}
		to = filepath.Join(t.TempDir(), "copy.db")
		if _, err := runCmd("backup", "--data", dir, to); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(to)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("the copy holds password and token hashes; mode %v, %v", fi.Mode().Perm(), err)
		}
	})
}

// A trail cut short at its end is still a valid chain; the head an
// earlier verify printed catches the cut.
func TestAuditVerifyHead(t *testing.T) {
	t.Parallel()
	dir := journalDir(t)
	for _, name := range []string{"agent-a", "agent-b", "agent-c"} {
		if _, err := runCmd("token", "create", "--data", dir, "--name", name, "--scopes", "read"); err != nil {
			t.Fatal(err)
		}
	}
	out, err := runCmd("audit", "verify", "--data", dir)
	if err != nil || !strings.Contains(out, "intact") {
		t.Fatalf("verify: %v\n%s", err, out)
	}
	_, rest, ok := strings.Cut(out, "--head ")
	head := strings.TrimSpace(rest)
	if !ok || !strings.Contains(head, ":") {
		t.Fatalf("no head printed:\n%s", out)
	}
	if out, err := runCmd("audit", "verify", "--data", dir, "--head", head); err != nil {
		t.Fatalf("verify with its own head: %v\n%s", err, out)
	}

	// Someone removes the newest event with an SQL client.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM audit_events WHERE id = (SELECT max(id) FROM audit_events)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if out, err := runCmd("audit", "verify", "--data", dir); err != nil || !strings.Contains(out, "intact") {
		t.Fatalf("without a head a cut end cannot show: %v\n%s", err, out)
	}
	out, err = runCmd("audit", "verify", "--data", dir, "--head", head)
	if err == nil || !strings.Contains(out, "BROKEN") {
		t.Fatalf("verify with the noted head after a cut: %v\n%s", err, out)
	}
	if _, err := runCmd("audit", "verify", "--data", dir, "--head", "nonsense"); err == nil {
		t.Fatal("a malformed --head was accepted")
	}
}

// A command opening a journal behind this binary would migrate it: never
// under a running serve, which would then find its schema moved.
func TestCommandWillNotMigrateUnderServe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := runCmd("migrate", "up", "--data", dir); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd("migrate", "down", "--data", dir); err != nil {
		t.Fatal(err)
	}
	unlock, err := lockDataDir(dir) // a running serve
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd("token", "list", "--data", dir); err == nil || !strings.Contains(err.Error(), "serve is running") {
		t.Fatalf("token list on an older journal beside serve: %v", err)
	}
	out, err := runCmd("migrate", "version", "--data", dir)
	if err != nil || strings.Contains(out, fmt.Sprintf("version %d ", store.LatestVersion())) {
		t.Fatalf("the schema moved under serve: %v %s", err, out)
	}
	unlock()
	if _, err := runCmd("token", "list", "--data", dir); err != nil {
		t.Fatalf("token list once serve stopped: %v", err)
	}
}

// Every command prints its own usage and flags on -h, exits cleanly, and
// opens nothing.
func TestCommandHelp(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "typo")
	for _, c := range commands {
		for _, args := range [][]string{
			append(strings.Fields(c.name), "-h"),
			append(strings.Fields(c.name), "--help"),
			append([]string{"help"}, strings.Fields(c.name)...),
		} {
			out, err := runCmd(args...)
			if err != nil {
				t.Errorf("%v: %v", args, err)
				continue
			}
			if !strings.HasPrefix(out, "Usage: oncegate "+c.name) {
				t.Errorf("%v printed %q, want the command's usage", args, out)
			}
		}
	}
	if _, err := runCmd("token", "list", "--data", missing, "-h"); err != nil {
		t.Fatal(err)
	}
	out, err := runCmd("serve", "-h")
	if err != nil || !strings.Contains(out, "-listen ADDR") || !strings.Contains(out, "-config FILE") || !strings.Contains(out, "-data DIR") {
		t.Fatalf("serve -h: %v\n%s", err, out)
	}
	if out, err := runCmd("help"); err != nil || !strings.Contains(out, "oncegate token revoke") {
		t.Fatalf("help: %v\n%s", err, out)
	}
	// A group asked for help lists its subcommands.
	for _, group := range []string{"token", "user", "audit", "intents"} {
		for _, h := range []string{"-h", "--help", "help"} {
			out, err := runCmd(group, h)
			if err != nil || !strings.HasPrefix(out, "Usage: oncegate "+group+" SUBCOMMAND") || !strings.Contains(out, "  "+group+" ") {
				t.Errorf("%s %s: %v\n%s", group, h, err, out)
			}
		}
	}
	// The version, as an upgrade needs it.
	for _, v := range []string{"version", "--version", "-version"} {
		out, err := runCmd(v)
		if err != nil || !strings.HasPrefix(out, "oncegate ") || !strings.Contains(out, fmt.Sprintf("journal schema %d", store.LatestVersion())) {
			t.Errorf("%s: %v\n%s", v, err, out)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("asking for help created the data directory")
	}
}

// A command line that is refused is refused before anything is opened:
// a mistyped --data gets no journal.
func TestRefusedCommandLineOpensNothing(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "typo")
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"token", "create", "--data", missing, "--scopes", "read"}, "--name is required"},
		{[]string{"token", "create", "--data", missing, "--name", "7up", "--scopes", "read"}, "starting with a letter"},
		{[]string{"token", "create", "--data", missing, "--name", "a", "--scopes", "root"}, "--scopes"},
		{[]string{"token", "create", "--data", missing, "--name", "a", "--scopes", "read", "extra"}, "takes no arguments"},
		{[]string{"serve", "--data", missing, "extra"}, "takes no arguments"},
		{[]string{"serve", "--data", missing, "--lisen", ":1"}, "flag provided but not defined: -lisen"},
		{[]string{"migrate", "--data", missing, "sideways"}, "say up, down or version"},
		{[]string{"token", "--data", missing}, "say create, list, revoke"},
		{[]string{"token", "mint", "--data", missing}, `unknown subcommand "mint"`},
		{[]string{"user", "add", "--data", missing, "bob"}, "--role is required"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
	} {
		_, err := runCmd(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%v: %v, want an error saying %q", c.args, err, c.msg)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("a refused command line created the data directory")
	}
}
