package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

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
		fmt.Fprintf(stdout, "the replaced journal is kept as %s; nothing reads it again\n", r.Kept)
	}
	fmt.Fprintf(stdout, "restored into %s", journal)
	if int(r.Version) < store.LatestVersion() {
		fmt.Fprintf(stdout, "; serve brings its schema to version %d when it starts", store.LatestVersion())
	}
	fmt.Fprintln(stdout, "; start serve again")
	replacedJournals(stdout, journal)
	return nil
}

// replacedJournals says which journals earlier restores set aside beside
// journal (each with its -wal and -shm, if any), what they take, and how
// to remove them: they are copies for a person to look into, never read
// by the gateway, and they hold agent tokens' and users' password hashes.
func replacedJournals(w io.Writer, journal string) {
	pattern := journal + ".replaced-*"
	files, _ := filepath.Glob(pattern)
	if len(files) == 0 {
		return
	}
	var size int64
	var names []string
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			size += fi.Size()
		}
		if !strings.HasSuffix(f, "-wal") && !strings.HasSuffix(f, "-shm") {
			names = append(names, filepath.Base(f))
		}
	}
	fmt.Fprintf(w, "replaced journals kept in %s: %s (%d files, %s)\n", filepath.Dir(journal), strings.Join(names, ", "), len(files), megabytes(size))
	remove := "rm " + pattern
	if runtime.GOOS == "windows" {
		remove = "del " + pattern
	}
	fmt.Fprintf(w, "they hold agent token and password hashes; once serve runs on the restored journal and its operations are as you expect, remove them: %s\n", remove)
}

// megabytes renders a size for people.
func megabytes(n int64) string {
	return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
}
