package store_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/store"
)

// A restore rolls back the operations, never the firm's decisions about
// who may act: a token revoked after the backup stays revoked, a user
// disabled stays disabled, a password changed stays changed, and what was
// made since stays; every admin session ends. restore says so, by name.
func TestRestoreKeepsWhoMayAct(t *testing.T) {
	// The SQLite journal only: restore puts a SQLite backup in place.
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "journal.db")
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	revoked, _, err := s.CreateToken(ctx, "sales-agent", []string{"read", "write"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"olga", "ivan"} {
		if _, err := s.CreateUser(ctx, name, "operator", "first-password-of-"+name); err != nil {
			t.Fatal(err)
		}
	}
	backup := filepath.Join(dir, "backup.db")
	if err := s.Backup(ctx, backup); err != nil {
		t.Fatal(err)
	}

	// After the backup: decisions about who may act, and an operation.
	if _, err := s.RevokeToken(ctx, "sales-agent"); err != nil {
		t.Fatal(err)
	}
	made, _, err := s.CreateToken(ctx, "billing-agent", []string{"read"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DisableUser(ctx, "olga"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPassword(ctx, "ivan", "second-password-of-ivan"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateUser(ctx, "petr", "operator", "first-password-of-petr"); err != nil {
		t.Fatal(err)
	}
	MustClaim(t, s, claimReq("test:invoice.create:after-backup:v1", fp1, "run-1"), store.DecisionExecute)
	s.Close()

	var out bytes.Buffer
	if _, err := store.Restore(ctx, path, backup, true, &out); err != nil {
		t.Fatal(err)
	}
	r, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Get(ctx, "test:invoice.create:after-backup:v1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the operation after the backup after restore: %v, want it rolled back", err)
	}
	if _, err := r.TokenBySecret(ctx, revoked); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a token revoked after the backup works again after restore: %v", err)
	}
	if _, err := r.TokenBySecret(ctx, made); err != nil {
		t.Errorf("a token made after the backup is gone after restore: %v", err)
	}
	if _, err := r.Authenticate(ctx, "olga", "first-password-of-olga"); err == nil {
		t.Error("a user disabled after the backup signs in after restore")
	}
	if _, err := r.Authenticate(ctx, "ivan", "first-password-of-ivan"); err == nil {
		t.Error("a password changed after the backup works again after restore")
	}
	if _, err := r.Authenticate(ctx, "ivan", "second-password-of-ivan"); err != nil {
		t.Errorf("the password chosen after the backup: %v", err)
	}
	if _, err := r.Authenticate(ctx, "petr", "first-password-of-petr"); err != nil {
		t.Errorf("a user made after the backup: %v", err)
	}
	said := out.String()
	for _, want := range []string{"tokens revoked since the backup, still revoked: sales-agent", "tokens made since the backup: billing-agent",
		"users made since the backup: petr", "olga", "ivan", "rolled back to the backup: operations"} {
		if !strings.Contains(said, want) {
			t.Errorf("restore did not say %q:\n%s", want, said)
		}
	}
	for _, secret := range []string{revoked, made} {
		if strings.Contains(said, secret) {
			t.Fatal("restore printed a token")
		}
	}
}
