package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// errAuditBroken is returned when the audit chain does not verify.
var errAuditBroken = errors.New("the audit trail has been tampered with")

var auditVerifyCommand = command{
	name:    "audit verify",
	args:    "[--head ID:HASH]",
	summary: "check the audit trail's hash chain and name the first broken link",
	setup: func(fs *flag.FlagSet) func(invocation, []string) error {
		var c configFlags
		c.flags(fs)
		head := fs.String("head", "", "`ID:HASH` of a head noted from an earlier verify, which must still be in the trail")
		return func(inv invocation, args []string) error {
			if len(args) != 0 {
				return badUsage("audit verify", "takes no arguments")
			}
			return auditVerify(c, *head, inv.stdout, inv.env)
		}
	},
}

// auditVerify walks the hash chain of the audit trail and, given a head
// noted earlier, checks that it is still there.
func auditVerify(c configFlags, head string, stdout io.Writer, env func(string) string) error {
	var headID int64
	var headHash string
	if head != "" {
		id, hash, ok := strings.Cut(head, ":")
		n, err := strconv.ParseInt(id, 10, 64)
		if !ok || err != nil || n < 1 || len(hash) != 64 {
			return badUsage("audit verify", "--head takes ID:HASH as an earlier verify printed it")
		}
		headID, headHash = n, hash
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
