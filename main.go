// Command oncegate is the gateway between AI agents and the business
// systems they act in: one business intent, one effect.
//
//	oncegate serve          run the gateway
//	oncegate migrate        apply, undo or show the journal's schema
//	oncegate token          create, list or revoke agent tokens
//	oncegate user           add and manage admin UI users
//	oncegate audit verify   check the audit trail's hash chain
//	oncegate backup         a consistent copy of the journal
//	oncegate sim            the 1C, Bitrix24 and YooKassa simulators alone
//
// 'oncegate help' lists every command with its synopsis; 'oncegate
// COMMAND -h' prints a command's flags, which may stand before or after
// its arguments. The commands are declared in cli.go's list.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
	"github.com/oncegate/oncegate/server"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/store"
)

func main() {
	if err := (cli{os.Stdin, os.Stdout, os.Stderr, os.Getenv}).run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "oncegate:", err)
		if store.IsBusy(err) {
			fmt.Fprintln(os.Stderr, "oncegate: the journal was busy (another oncegate process held it); nothing was changed, try again")
		}
		os.Exit(1)
	}
}

// common holds the flags of the commands that read the configuration.
type common struct {
	config string
	data   string
	// newJournal (serve --new-journal): begin a new journal where a lost
	// one was.
	newJournal bool
}

// flags declares --config and --data on fs.
func (c *common) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.config, "config", "", "configuration `FILE` (YAML; default $ONCEGATE_CONFIG, else the embedded defaults)")
	fs.StringVar(&c.data, "data", "", "data directory `DIR` (overrides the configuration's data_dir)")
}

// load reads the configuration and applies --data.
func (c common) load(env func(string) string) (config.Config, error) {
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
func (c common) open(ctx context.Context, env func(string) string, create bool) (*store.Store, error) {
	cfg, err := c.load(env)
	if err != nil {
		return nil, err
	}
	journal, err := journalLocation(cfg, env)
	if err != nil {
		return nil, err
	}
	if !create {
		if err := journalExists(journal); err != nil {
			return nil, err
		}
	}
	if err := journalNotLost(ctx, cfg.DataDir, journal); err != nil {
		return nil, err
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

var serveCommand = command{
	name:    "serve",
	args:    "[--listen ADDR] [--env-file FILE]",
	summary: "run the gateway",
	setup: func(fs *flag.FlagSet) func(cli, []string) error {
		var c common
		c.flags(fs)
		listen := fs.String("listen", "", "`ADDR` to listen on (overrides the configuration's listen)")
		envFile := fs.String("env-file", "", envFileUsage)
		service := fs.String("service", "", "Windows: run under the service manager as the service `NAME` (service install sets it)")
		fs.BoolVar(&c.newJournal, "new-journal", false, "begin a new, empty journal where a lost one was (every key it knew would execute again; restore a backup instead if there is one)")
		return func(cl cli, args []string) error {
			if len(args) != 0 {
				return badUsage("serve", "takes no arguments")
			}
			env, err := withEnvFile(cl.env, *envFile)
			if err != nil {
				return err
			}
			if *service != "" {
				return serveService(*service, c, *listen, env)
			}
			return serve(c, *listen, cl.stdout, cl.stderr, env)
		}
	},
}

func serve(c common, listen string, stdout, stderr io.Writer, env func(string) string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runServe(ctx, c, listen, stdout, stderr, env, sdNotify)
}

// runServe is serve until ctx is done (a signal, or the Windows service
// manager's stop). notify tells the service manager how the run goes:
// "READY=1" once the gateway listens, "STOPPING=1" when it begins to stop.
func runServe(ctx context.Context, c common, listen string, stdout, stderr io.Writer, env func(string) string, notify func(state string)) error {
	cfg, err := c.load(env)
	if err != nil {
		return err
	}
	if listen != "" {
		cfg.Listen = listen
	}
	// The whitelist loads whole or serve does not start.
	catalog, err := loadCatalog(cfg)
	if err != nil {
		return err
	}
	log := slog.New(serveLog(stderr, cfg, env))

	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	journal, err := journalLocation(cfg, env)
	if err != nil {
		return err
	}
	// One serve per embedded journal; the lock also tells a new run that
	// every lease left in it is a dead run's. Gateways sharing a journal
	// on PostgreSQL rely on their leases alone.
	if !store.IsPostgres(journal) {
		unlock, err := lockDataDir(cfg.DataDir)
		if err != nil {
			return err
		}
		defer unlock()
	}

	if c.newJournal {
		if err := noJournalYet(ctx, journal); err != nil {
			return err
		}
		log.Warn("NEW JOURNAL: --new-journal begins an empty journal; keys the lost one knew will execute again", "journal", journal)
	}
	st, err := openStore(ctx, cfg, journal, c.newJournal)
	if err != nil {
		return err
	}
	defer st.Close()
	// A journal that takes no writes (a read-only file or file system, a
	// full disk) would refuse every operation: serve does not start on it.
	if err := st.Ready(ctx); err != nil {
		return fmt.Errorf("the journal at %s cannot be written, so serve does not start: %w", st.Location(), err)
	}

	// Targets nothing points at are served by the built-in simulators.
	simURL := ""
	var simServer *sim.Server
	simulated := cfg.Simulated(env)
	if len(simulated) > 0 {
		srv, hs, url, err := sim.Start("127.0.0.1:0")
		if err != nil {
			return err
		}
		defer hs.Close()
		simURL, simServer = url, srv
		log.Warn("SIMULATORS IN USE: these targets are built-in simulators, not real systems",
			"targets", strings.Join(simulated, ","), "simulators", simURL)
	}
	sims := builtInSimulators(simURL)
	sims.Log = log
	targets, err := buildTargets(cfg, sims, env)
	if err != nil {
		return err
	}

	if err := editedInPlace(ctx, st, catalog); err != nil {
		return err
	}
	if err := bindCatalog(catalog, targets); err != nil {
		return err
	}
	if err := publishAtSimulator(simServer, simulated, targets); err != nil {
		return err
	}
	srv := server.New(cfg, st, targets, catalog, log)
	if err := srv.Start(ctx); err != nil {
		return err
	}
	firstCtx := store.WithActor(ctx, store.Actor{Kind: store.ActorSystem, Name: "first-run"})
	if c.config == "" && env("ONCEGATE_CONFIG") == "" {
		if err := firstRunToken(firstCtx, st, stdout); err != nil {
			return err
		}
	}
	if err := firstAdmin(firstCtx, st, stdout); err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	scheme := "http://"
	if cfg.TLS.Enabled() {
		scheme = "https://"
	}
	log.Info("oncegate is serving", "api", scheme+ln.Addr().String()+"/v1", "mcp", scheme+ln.Addr().String()+"/mcp", "admin", scheme+ln.Addr().String()+"/admin/", "contour", cfg.Contour,
		"journal", st.Location(), "run", srv.Owner())
	notify("READY=1")
	stopping := context.AfterFunc(ctx, func() { notify("STOPPING=1") })
	defer stopping()
	err = srv.Serve(ctx, ln)
	log.Info("oncegate stopped")
	return err
}

// firstRunToken makes and prints, once, an agent token with every scope
// on a journal that has none, so the embedded default is usable at once.
// Of gateways started together on one new journal, one makes and prints
// it.
func firstRunToken(ctx context.Context, st *store.Store, stdout io.Writer) error {
	n, err := st.CountTokens(ctx)
	if err != nil || n > 0 {
		return err
	}
	secret, tok, made, err := st.CreateFirstToken(ctx, "demo-agent", store.Scopes)
	if err != nil || !made {
		return err
	}
	fmt.Fprintf(stdout, "First run: made agent token %d for %q with scopes %s. It is shown only now:\n%s\n",
		tok.ID, tok.Agent, strings.Join(tok.Scopes, ","), secret)
	return nil
}

var migrateCommand = command{
	name:    "migrate",
	args:    "up|down|version",
	summary: "apply, undo one step of, or show the journal's schema",
	setup: func(fs *flag.FlagSet) func(cli, []string) error {
		var c common
		c.flags(fs)
		return func(cl cli, args []string) error {
			if len(args) != 1 || !slices.Contains([]string{"up", "down", "version"}, args[0]) {
				return badUsage("migrate", "say up, down or version")
			}
			return migrate(c, args[0], cl.stdout, cl.env)
		}
	},
}

func migrate(c common, step string, stdout io.Writer, env func(string) string) error {
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

var tokenCreateCommand = command{
	name:    "token create",
	args:    "--name NAME --scopes read,draft,write,post,pay",
	summary: "make an agent token (its secret is printed once)",
	setup: func(fs *flag.FlagSet) func(cli, []string) error {
		var c common
		c.flags(fs)
		name := fs.String("name", "", "the agent `NAME` the token acts as")
		scopes := fs.String("scopes", "", "comma-separated `SCOPES`: "+strings.Join(store.Scopes, ","))
		return func(cl cli, args []string) error {
			if len(args) != 0 {
				return badUsage("token create", "takes no arguments")
			}
			if *name == "" {
				return badUsage("token create", "--name is required")
			}
			if err := store.ValidateAgentName(*name); err != nil {
				return fmt.Errorf("token create: --name: %w", err)
			}
			list, err := store.ParseScopes(*scopes)
			if err != nil {
				return fmt.Errorf("token create: --scopes: %w", err)
			}
			ctx := cliContext()
			st, err := c.open(ctx, cl.env, true)
			if err != nil {
				return err
			}
			defer st.Close()
			secret, tok, err := st.CreateToken(ctx, *name, list)
			if err != nil {
				return err
			}
			fmt.Fprintf(cl.stdout, "token %d for agent %q, scopes %s; shown only now:\n%s\n", tok.ID, tok.Agent, strings.Join(tok.Scopes, ","), secret)
			return nil
		}
	},
}

var tokenListCommand = command{
	name:    "token list",
	args:    "",
	summary: "list agent tokens",
	setup: func(fs *flag.FlagSet) func(cli, []string) error {
		var c common
		c.flags(fs)
		return func(cl cli, args []string) error {
			if len(args) != 0 {
				return badUsage("token list", "takes no arguments")
			}
			ctx := cliContext()
			st, err := c.open(ctx, cl.env, false)
			if err != nil {
				return err
			}
			defer st.Close()
			list, err := st.ListTokens(ctx)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cl.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tAGENT\tSCOPES\tCREATED\tREVOKED")
			for _, t := range list {
				revoked := "-"
				if !t.RevokedAt.IsZero() {
					revoked = t.RevokedAt.Format(time.RFC3339)
				}
				fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\n", t.ID, t.Agent, strings.Join(t.Scopes, ","), t.CreatedAt.Format(time.RFC3339), revoked)
			}
			return w.Flush()
		}
	},
}

var tokenRevokeCommand = command{
	name:    "token revoke",
	args:    "ID|NAME",
	summary: "revoke a token by its id, or all of an agent's tokens by its name",
	setup: func(fs *flag.FlagSet) func(cli, []string) error {
		var c common
		c.flags(fs)
		return func(cl cli, args []string) error {
			if len(args) != 1 {
				return badUsage("token revoke", "name one token id or agent")
			}
			ctx := cliContext()
			st, err := c.open(ctx, cl.env, false)
			if err != nil {
				return err
			}
			defer st.Close()
			n, err := st.RevokeToken(ctx, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cl.stdout, "revoked %d token(s)\n", n)
			return nil
		}
	},
}

var simCommand = command{
	name:    "sim",
	args:    "[--listen ADDR]",
	summary: "run the 1C, Bitrix24 and YooKassa simulators alone",
	setup: func(fs *flag.FlagSet) func(cli, []string) error {
		listen := fs.String("listen", "127.0.0.1:9001", "`ADDR` to listen on")
		return func(cl cli, args []string) error {
			if len(args) != 0 {
				return badUsage("sim", "takes no arguments")
			}
			return runSim(*listen, cl.stderr)
		}
	},
}

func runSim(listen string, stderr io.Writer) error {
	_, hs, url, err := sim.Start(listen)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "simulators at %s/onec, %s/bitrix24, %s/yookassa; control API at %s/_sim/\n", url, url, url, url)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return hs.Shutdown(shutdownCtx)
}
