package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/store"
)

// Where the configured journal is and how the commands open it; the data
// directory's marker of a journal made there is in datadir.go, serve's
// lock on it in lock*.go.

// cliContext is the context of a short command: what it changes is
// audited as done from the command line.
func cliContext() context.Context {
	return store.WithActor(context.Background(), store.Actor{Kind: store.ActorSystem, Name: "cli"})
}

// open loads the configuration and opens its journal, for the short
// commands that work on the journal beside (or without) a running serve.
// Only a command that creates something (create says so) may start a new
// journal; the others refuse a data directory without one, so a mistyped
// --data is not answered from an empty journal.
func (c configFlags) open(ctx context.Context, env func(string) string, create bool) (*store.Store, error) {
	cfg, err := c.load(env)
	if err != nil {
		return nil, err
	}
	journal, err := journalLocation(cfg, env)
	if err != nil {
		return nil, err
	}
	// A journal that was there and is gone says so first (and how to
	// restore it); then one that never was.
	if err := journalNotLost(ctx, cfg.DataDir, journal); err != nil {
		return nil, err
	}
	if !create {
		if err := journalExists(journal); err != nil {
			return nil, err
		}
	}
	// Opening applies pending migrations; the schema must not change under
	// a running gateway, so a journal behind this binary needs serve
	// stopped first. (A shared journal has no data directory to tell: its
	// gateways migrate it themselves when they start.)
	if v, err := store.Migrate(ctx, journal, "version"); err == nil && int(v) < store.LatestVersion() && !store.IsPostgres(journal) {
		unlock, err := lockDataDir(cfg.DataDir)
		if errors.Is(err, errServing) {
			return nil, fmt.Errorf("the journal's schema (version %d) is older than this oncegate's (%d) and serve is running on %s: stop it and run oncegate migrate up first", v, store.LatestVersion(), cfg.DataDir)
		}
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	return openStore(ctx, cfg, journal, false)
}

// journalExists refuses a data directory that holds no journal. A
// PostgreSQL journal is there when its server answers.
func journalExists(journal string) error {
	if store.IsPostgres(journal) {
		return nil
	}
	if _, err := os.Stat(journal); err != nil {
		return fmt.Errorf("no journal at %s: check --data (serve or migrate up makes a new one)", journal)
	}
	return nil
}

// openStore opens the journal (in the configured data directory, or on
// PostgreSQL). It makes no new embedded journal where one was lost
// (journalNotLost) unless newJournal says to begin again.
func openStore(ctx context.Context, cfg config.Config, journal string, newJournal bool) (*store.Store, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	if !newJournal {
		if err := journalNotLost(ctx, cfg.DataDir, journal); err != nil {
			return nil, err
		}
	}
	st, err := store.Open(ctx, journal)
	if err != nil {
		return nil, err
	}
	if !store.IsPostgres(journal) {
		if err := writeMarker(cfg.DataDir, newJournal); err != nil {
			st.Close()
			return nil, err
		}
	}
	return st, nil
}

func journalPath(cfg config.Config) string { return filepath.Join(cfg.DataDir, "journal.db") }

// journalLocation is where the configured journal is: the PostgreSQL URL
// in journal.url_env's variable when it is set, else the SQLite file in
// the data directory. The URL is never repeated in an error: it may hold
// a password.
func journalLocation(cfg config.Config, env func(string) string) (string, error) {
	url := cfg.JournalURL(env)
	if url == "" {
		return journalPath(cfg), nil
	}
	if !store.IsPostgres(url) {
		return "", fmt.Errorf("config: %s must hold a postgres:// URL (its value is not repeated here)", cfg.Journal.URLEnv)
	}
	return url, nil
}
