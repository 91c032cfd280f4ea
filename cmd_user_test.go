package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
	"github.com/oncegate/oncegate/views"
)

// userCmd runs a user command with stdin and the environment vars, and returns
// its output.
func userCmd(t *testing.T, stdin string, vars map[string]string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := invocation{strings.NewReader(stdin), &out, &out, func(k string) string { return vars[k] }}.run(append([]string{"user"}, args...))
	return out.String(), err
}

// journalDir is a data directory holding a new journal, as migrate up
// (or serve) makes it: the other commands only use one.
func journalDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := runCmd("migrate", "up", "--data", dir); err != nil {
		t.Fatalf("migrate up: %v\n%s", err, out)
	}
	return dir
}

// mustUserCmd is userCmd that fails the test on an error.
func mustUserCmd(t *testing.T, stdin string, vars map[string]string, args ...string) string {
	t.Helper()
	out, err := userCmd(t, stdin, vars, args...)
	if err != nil {
		t.Fatalf("user %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// openUserStore opens the journal the commands made in the data
// directory dir.
func openUserStore(t *testing.T, dir string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(dir, "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestUserCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		dir := journalDir(t)
		out := mustUserCmd(t, "correct horse battery\n", nil, "add", "--data", dir, "--role", "accountant", "alice")
		if !strings.Contains(out, `"alice"`) || !strings.Contains(out, "accountant") {
			t.Fatalf("add said %q", out)
		}
		out = mustUserCmd(t, "", nil, "list", "--data", dir)
		// A password the admin chose: alice must still choose her own.
		if !regexp.MustCompile(`(?m)^ID\s+NAME\s+ROLE\s+STATUS\s+PASSWORD\s+CREATED\n1\s+alice\s+accountant\s+active\s+to-choose\s+\d{4}-`).MatchString(out) {
			t.Fatalf("list:\n%s", out)
		}

		mustUserCmd(t, "", map[string]string{"ONCEGATE_PASSWORD": "a whole new passphrase"}, "passwd", "--data", dir, "alice")
		st := openUserStore(t, dir)
		if _, err := st.Authenticate(ctx, "alice", "correct horse battery"); !errors.Is(err, store.ErrBadCredentials) {
			t.Fatalf("old password after passwd: %v", err)
		}
		if u, err := st.Authenticate(ctx, "alice", "a whole new passphrase"); err != nil || !u.MustChangePassword {
			t.Fatalf("new password: %+v, %v; want a user who must choose their own", u, err)
		}

		// Once she chose her own at sign-in, the list says so.
		if err := st.ChangeOwnPassword(ctx, "alice", "alice's own long passphrase", "127.0.0.1"); err != nil {
			t.Fatal(err)
		}
		if out := mustUserCmd(t, "", nil, "list", "--data", dir); !regexp.MustCompile(`alice\s+accountant\s+active\s+own\s`).MatchString(out) {
			t.Fatalf("list after alice chose her own password:\n%s", out)
		}

		mustUserCmd(t, "", nil, "disable", "--data", dir, "alice")
		if out := mustUserCmd(t, "", nil, "list", "--data", dir); !regexp.MustCompile(`alice\s+accountant\s+disabled`).MatchString(out) {
			t.Fatalf("list after disable:\n%s", out)
		}
		mustUserCmd(t, "", nil, "enable", "--data", dir, "alice")
		if out := mustUserCmd(t, "", nil, "list", "--data", dir); !regexp.MustCompile(`alice\s+accountant\s+active`).MatchString(out) {
			t.Fatalf("list after enable:\n%s", out)
		}
	})
	t.Run("ErrPassword", func(t *testing.T) {
		dir := t.TempDir()
		for _, c := range []struct{ stdin, msg string }{
			{"short\n", "at least 12"},
			{"", "no password given"},
			{"\n", "no password given"},
		} {
			_, err := userCmd(t, c.stdin, nil, "add", "--data", dir, "--role", "admin", "alice")
			if err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("add with stdin %q: %v, want an error saying %q", c.stdin, err, c.msg)
			}
		}
		// A refused password is refused before the journal is touched.
		if _, err := userCmd(t, "", nil, "list", "--data", dir); err == nil || !strings.Contains(err.Error(), "no journal") {
			t.Fatalf("a refused add left a journal behind: %v", err)
		}
	})
	t.Run("ErrUsage", func(t *testing.T) {
		dir := t.TempDir()
		for _, args := range [][]string{
			{},
			{"add", "--data", dir, "alice"},
			{"add", "--data", dir, "--role", "admin"},
			{"disable", "--data", dir},
			{"list", "--data", dir, "extra"},
			{"rename", "--data", dir, "alice"},
		} {
			if _, err := userCmd(t, "correct horse battery\n", nil, args...); !errors.Is(err, errUsage) {
				t.Errorf("user %s: %v, want a usage error", strings.Join(args, " "), err)
			}
		}
		if _, err := userCmd(t, "correct horse battery\n", nil, "add", "--data", dir, "--role", "root", "alice"); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("unknown role: %v, want ErrInvalid", err)
		}
		// A user is looked for in a journal.
		dir = journalDir(t)
		if _, err := userCmd(t, "", nil, "disable", "--data", dir, "nobody"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("disable unknown: %v, want ErrNotFound", err)
		}
	})
	t.Run("NameAndRoleBeforePassword", func(t *testing.T) {
		// With no password at hand, what is wrong with the name or the
		// role is said first, in the words the admin UI uses too.
		dir := t.TempDir()
		if _, err := userCmd(t, "", nil, "add", "--data", dir, "--role", "root", "alice"); err == nil || !strings.Contains(err.Error(), `unknown role "root"`) {
			t.Errorf("an unknown role with no password: %v, want the role named", err)
		}
		_, err := userCmd(t, "", nil, "add", "--data", dir, "--role", "admin", "анна")
		if err == nil || !strings.Contains(err.Error(), "Latin letters A-Z a-z") || !strings.Contains(err.Error(), "starting with a letter or digit") {
			t.Errorf("a Cyrillic name: %v, want the naming rule", err)
		}
		for _, l := range []string{views.LabelsFor("ru").ErrUserName, views.LabelsFor("en").ErrUserName} {
			if !strings.Contains(l, "A–Z a–z") || !strings.Contains(l, "anna.petrova") {
				t.Errorf("the admin UI's rule %q differs from the command's", l)
			}
		}
	})
	t.Run("PasswordFromEnvironmentSaid", func(t *testing.T) {
		dir := journalDir(t)
		out := mustUserCmd(t, "a piped passphrase\n", map[string]string{"ONCEGATE_PASSWORD": "the environment's passphrase"}, "add", "--data", dir, "--role", "operator", "bob")
		if !strings.Contains(out, "the password is the one in $ONCEGATE_PASSWORD; stdin is not read") {
			t.Fatalf("add with both a variable and stdin said:\n%s", out)
		}
		if _, err := openUserStore(t, dir).Authenticate(ctx, "bob", "the environment's passphrase"); err != nil {
			t.Fatalf("the variable's password: %v", err)
		}
	})
}

func TestFirstAdmin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.Open(t)
	var out bytes.Buffer
	if err := firstAdmin(ctx, st, &out); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^First run: admin user "admin" with password ([A-Za-z0-9_-]{20}) — shown only now; at the first sign-in you choose your own\.\n$`).
		FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("first run printed %q", out.String())
	}
	u, err := st.Authenticate(ctx, "admin", m[1])
	if err != nil {
		t.Fatal(err)
	}
	if got, want := u.Role, store.RoleAdmin; got != want {
		t.Fatalf("role %q, want %q", got, want)
	}
	// Its password was printed, so others may have read it: the admin
	// chooses their own at first sign-in.
	if !u.MustChangePassword {
		t.Fatal("the first admin need not choose their own password")
	}

	out.Reset()
	if err := firstAdmin(ctx, st, &out); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Fatalf("second run printed %q", out.String())
	}
	if n, err := st.CountUsers(ctx); err != nil || n != 1 {
		t.Fatalf("%d users, %v; want 1", n, err)
	}
}

// Flags may follow the command's own arguments, as people type them.
func TestFlagsAfterArguments(t *testing.T) {
	t.Parallel()
	dir := journalDir(t)
	mustUserCmd(t, "correct horse battery\n", nil, "add", "bob", "--data", dir, "--role", "auditor")
	mustUserCmd(t, "correct horse battery\n", nil, "add", "--data", dir, "carol", "--role", "operator")
	out := mustUserCmd(t, "", nil, "list", "--data", dir)
	if !regexp.MustCompile(`(?m)^\d+\s+bob\s+auditor\s+active`).MatchString(out) || !regexp.MustCompile(`(?m)^\d+\s+carol\s+operator\s+active`).MatchString(out) {
		t.Fatalf("list:\n%s", out)
	}
	if _, err := userCmd(t, "correct horse battery\n", nil, "add", "dave", "--data", dir, "--role", "auditor", "extra"); err == nil {
		t.Fatal("a stray argument after the flags was accepted")
	}
	if out, err := runCmd("migrate", "version", "--data", dir); err != nil || !strings.Contains(out, "schema version") {
		t.Fatalf("migrate version --data: %v %s", err, out)
	}
}

// After "--" everything is an argument, even a name that looks like a flag.
func TestFlagsEndAtDoubleDash(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	new(configFlags).flags(fs)
	if err := parse(fs, []string{"a", "--data", "d", "--", "--data", "-b"}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(fs.Args(), " "); got != "a --data -b" {
		t.Fatalf("args %q", got)
	}
	if got := fs.Lookup("data").Value.String(); got != "d" {
		t.Fatalf("--data %q", got)
	}
}
