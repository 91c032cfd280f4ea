// Command oncegate is the gateway between AI agents and the business
// systems they act in: one business intent, one effect.
//
//	oncegate serve          run the gateway
//	oncegate migrate        apply, undo or show the journal's schema
//	oncegate token          create, list or revoke agent tokens
//	oncegate user           add and manage admin UI users
//	oncegate audit verify   check the audit trail's hash chain
//	oncegate backup         a consistent copy of the journal
//	oncegate restore        replace the journal with a checked backup
//	oncegate check          check the configuration and reach each target
//	oncegate intents        list, show or check the intents' definitions
//	oncegate service        install and control oncegate as a service
//	oncegate bench          measure replays and new operations
//	oncegate sim            the 1C, Bitrix24 and YooKassa simulators alone
//
// 'oncegate help' lists every command with its synopsis; 'oncegate
// COMMAND -h' prints a command's flags, which may stand before or after
// its arguments. The commands are declared in commands.go's list, each in its
// own cmd_*.go.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	// The IANA zone database inside the binary: a Windows server beside
	// 1C has none that Go can read, and a 1C base's or a portal's
	// time_zone (Europe/Moscow) must load there as on Linux.
	_ "time/tzdata"

	"github.com/oncegate/oncegate/adapters/yookassa"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/store"
)

func main() {
	if err := (invocation{os.Stdin, os.Stdout, os.Stderr, os.Getenv}).run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "oncegate:", err)
		if store.IsBusy(err) {
			fmt.Fprintln(os.Stderr, "oncegate: the journal was busy (another oncegate process held it); nothing was changed, try again")
		}
		os.Exit(1)
	}
}

// configFlags holds the flags of the commands that read the configuration.
type configFlags struct {
	config string
	data   string
	// newJournal (serve --new-journal): begin a new journal where a lost
	// one was.
	newJournal bool
}

// flags declares --config and --data on fs.
func (c *configFlags) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.config, "config", "", "configuration `FILE` (YAML; default $ONCEGATE_CONFIG, else the embedded defaults)")
	fs.StringVar(&c.data, "data", "", "data directory `DIR` (overrides the configuration's data_dir)")
}

// load reads the configuration and applies --data.
func (c configFlags) load(env func(string) string) (config.Config, error) {
	path := c.config
	if path == "" {
		path = env("ONCEGATE_CONFIG")
	}
	// Limits may name only the currencies the payments target sends.
	cfg, err := config.Load(path, env, yookassa.Currencies())
	if err != nil {
		return cfg, err
	}
	if c.data != "" {
		cfg.DataDir = c.data
	}
	return cfg, nil
}

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
