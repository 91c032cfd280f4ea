package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/oncegate/oncegate/store"
)

var migrateCommand = command{
	name:    "migrate",
	args:    "up|down|version",
	summary: "apply, undo one step of, or show the journal's schema",
	setup: func(fs *flag.FlagSet) func(invocation, []string) error {
		var c configFlags
		c.flags(fs)
		return func(inv invocation, args []string) error {
			if len(args) != 1 || !slices.Contains([]string{"up", "down", "version"}, args[0]) {
				return badUsage("migrate", "say up, down or version")
			}
			return migrate(c, args[0], inv.stdout, inv.env)
		}
	},
}

func migrate(c configFlags, step string, stdout io.Writer, env func(string) string) error {
	cfg, err := c.load(env)
	if err != nil {
		return err
	}
	journal, err := journalLocation(cfg, env)
	if err != nil {
		return err
	}
	switch step {
	case "version", "down":
		if err := journalExists(journal); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if step != "version" && !store.IsPostgres(journal) {
		// The schema must not change under a running gateway. (On a
		// shared journal that is the operator's to ensure: stop every
		// instance before migrate down; golang-migrate's advisory lock
		// keeps two migrations from running at once.)
		unlock, err := lockDataDir(cfg.DataDir)
		if errors.Is(err, errServing) {
			return fmt.Errorf("migrate %s: oncegate serve is running on %s; stop it first", step, cfg.DataDir)
		}
		if err != nil {
			return err
		}
		defer unlock()
	}
	if step == "up" {
		if err := journalNotLost(context.Background(), cfg.DataDir, journal); err != nil {
			return err
		}
	}
	v, err := store.Migrate(context.Background(), journal, step)
	if err != nil {
		return err
	}
	if step == "up" {
		if err := markJournal(cfg.DataDir, journal); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "journal schema version %d (this binary's latest: %d)\n", v, store.LatestVersion())
	return nil
}
