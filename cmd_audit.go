package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
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
	head := fs.String("head", "", "ID:HASH of a head noted from an earlier verify, which must still be in the trail")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	var headID int64
	var headHash string
	if *head != "" {
		id, hash, ok := strings.Cut(*head, ":")
		n, err := strconv.ParseInt(id, 10, 64)
		if !ok || err != nil || n < 1 || len(hash) != 64 {
			return fmt.Errorf("audit verify: --head takes ID:HASH as an earlier verify printed it: %w", errUsage)
		}
		headID, headHash = n, hash
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
	if headID != 0 {
		holds, err := st.HeadHolds(ctx, headID, headHash)
		if err != nil {
			return err
		}
		if !holds {
			fmt.Fprintf(stdout, "audit trail BROKEN: event %d with the noted hash is gone (the trail ends at event %d): events were removed or replaced\n", headID, r.LastID)
			return errAuditBroken
		}
	}
	fmt.Fprintf(stdout, "audit trail intact: %d events, every link verified\n", r.Events)
	if r.LastID != 0 {
		fmt.Fprintf(stdout, "head: %d:%s (%s); note it, and check later with --head %d:%s\n",
			r.LastID, r.LastHash, r.LastAt.UTC().Format(time.RFC3339), r.LastID, r.LastHash)
	}
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
