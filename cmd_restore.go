package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/oncegate/oncegate/store"
)

var restoreCommand = command{
	name:    "restore",
	args:    "FILE",
	summary: "replace the journal with a backup after checking it (serve stopped; the replaced journal is kept)",
	setup: func(fs *flag.FlagSet) func(invocation, []string) error {
		var c configFlags
		c.flags(fs)
		yes := fs.Bool("yes", false, "restore even when the journal being replaced holds operations newer than the backup's (they are forgotten)")
		return func(inv invocation, args []string) error {
			if len(args) != 1 {
				return badUsage("restore", "name the backup file to restore")
			}
			return restore(c, args[0], *yes, inv.stdout, inv.env)
		}
	},
}

// restore puts the backup file in place of the journal (store.Restore),
// holding serve's lock throughout, so it refuses while serve runs and no
// serve starts meanwhile; the journal with operations newer than the
// backup's is replaced only with yes.
func restore(c configFlags, file string, yes bool, stdout io.Writer, env func(string) string) error {
	cfg, err := c.load(env)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(file); err != nil {
		return fmt.Errorf("restore: %w", err)
	} else if !fi.Mode().IsRegular() {
		return fmt.Errorf("restore: %s is not a file", file)
	}
	journal, err := journalLocation(cfg, env)
	if err != nil {
		return err
	}
	if store.IsPostgres(journal) {
		return errors.New("restore: the journal is in PostgreSQL: restore a pg_dump backup with pg_restore (oncegate backup makes one with pg_dump)")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	unlock, err := lockDataDir(cfg.DataDir)
	if errors.Is(err, errServing) {
		return fmt.Errorf("restore: oncegate serve is running on %s; stop it first (oncegate service stop), then restore", cfg.DataDir)
	}
	if err != nil {
		return err
	}
	defer unlock()

	r, err := store.Restore(context.Background(), journal, file, yes, stdout)
	if err != nil {
		return err
	}
	if err := writeMarker(cfg.DataDir, true); err != nil {
		return err
	}
	if r.Kept != "" {
		fmt.Fprintf(stdout, "the replaced journal is kept as %s\n", r.Kept)
	}
	fmt.Fprintf(stdout, "restored into %s", journal)
	if int(r.Version) < store.LatestVersion() {
		fmt.Fprintf(stdout, "; serve brings its schema to version %d when it starts", store.LatestVersion())
	}
	fmt.Fprintln(stdout, "; start serve again")
	return nil
}
