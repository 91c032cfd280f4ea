package main

import (
	"context"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/store"
)

// user add --email --telegram and user contact keep where notices reach
// a person in the journal; an address notices could not reach is refused
// before a password is asked for, and "-" clears one.
func TestUserContactCommands(t *testing.T) {
	t.Parallel()
	dir := journalDir(t)
	mustUserCmd(t, "correct horse battery\n", nil, "add", "--data", dir, "--role", "accountant", "--email", "alice@firm.example", "--telegram", "1001", "alice")
	if _, err := userCmd(t, "", nil, "add", "--data", dir, "--role", "operator", "--email", "bob", "bob"); err == nil || !strings.Contains(err.Error(), "not an e-mail address") {
		t.Fatalf("a bad address: %v", err)
	}
	out := mustUserCmd(t, "", nil, "contact", "--data", dir, "--telegram", "-", "alice")
	if !strings.Contains(out, "alice@firm.example") || !strings.Contains(out, "Telegram in (none)") {
		t.Fatalf("contact said %q", out)
	}
	st := openUserStore(t, dir)
	if c, err := st.ContactOf(context.Background(), "alice"); err != nil || c != (store.Contact{Email: "alice@firm.example"}) {
		t.Fatalf("the journal keeps %+v, %v", c, err)
	}
	if _, err := userCmd(t, "", nil, "contact", "--data", dir, "--email", "x@firm.example", "nobody"); err == nil {
		t.Fatal("an unknown user's contact was set")
	}
}
