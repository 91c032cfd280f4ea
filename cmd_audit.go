package main

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// errAuditBroken is returned when the audit chain does not verify.
var errAuditBroken = errors.New("the audit trail has been tampered with")

// cmdAudit: oncegate audit verify — walks the hash chain of the audit
// trail and names the first broken link.
func cmdAudit(args []string, stdout io.Writer, env func(string) string) error {
	if len(args) == 0 || args[0] != "verify" {
		return fmt.Errorf("audit: say verify: %w", errUsage)
	}
	var c common
	fs := newFlags("audit verify", &c)
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("audit verify takes no arguments: %w", errUsage)
	}
	ctx := context.Background()
	st, err := c.open(ctx, env, false)
	if err != nil {
		return err
	}
	defer st.Close()
	r, err := st.VerifyAudit(ctx)
	if err != nil {
		return err
	}
	if r.BrokenAt != 0 {
		fmt.Fprintf(stdout, "audit trail BROKEN at event %d: %s (%d events checked)\n", r.BrokenAt, r.Reason, r.Events)
		return errAuditBroken
	}
	fmt.Fprintf(stdout, "audit trail intact: %d events, every link verified\n", r.Events)
	return nil
}

// cmdBackup: oncegate backup FILE — a consistent copy of the journal,
// taken while serve runs (VACUUM INTO).
func cmdBackup(args []string, stdout io.Writer, env func(string) string) error {
	var c common
	fs := newFlags("backup", &c)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("backup: name the file to write: %w", errUsage)
	}
	ctx := context.Background()
	st, err := c.open(ctx, env, false)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Backup(ctx, fs.Arg(0)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "journal copied to %s\n", fs.Arg(0))
	return nil
}
