// Command oncegate is the gateway between AI agents and the business
// systems they act in: one business intent, one effect.
//
//	oncegate serve   [--config FILE] [--data DIR] [--listen ADDR]
//	oncegate migrate [--data DIR] up|down|version
//	oncegate token create --name NAME --scopes read,draft,write,post,pay
//	oncegate token list | token revoke ID|NAME
//	oncegate sim [--listen ADDR]
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
	"github.com/oncegate/oncegate/server"
	"github.com/oncegate/oncegate/store"
)

const usage = `oncegate — one business intent, one effect.

Usage:
  oncegate serve   [--config FILE] [--data DIR] [--listen ADDR]   run the gateway
  oncegate migrate [--config FILE] [--data DIR] up|down|version    journal schema
  oncegate token create --name NAME --scopes read,draft,write,post,pay
                                                                  make an agent token (printed once)
  oncegate token list                                             list agent tokens
  oncegate token revoke ID|NAME                                   revoke a token, or all of an agent's
  oncegate user add --role admin|accountant|operator|auditor NAME
                                                                  add an admin UI user (password on stdin)
  oncegate user passwd|disable|enable NAME | user list            manage admin UI users
  oncegate audit verify                                           check the audit trail's hash chain
  oncegate backup FILE                                            consistent copy of the journal
  oncegate sim     [--listen ADDR]                                the 1C, Bitrix24 and YooKassa simulators

Every command takes --config FILE and --data DIR before its arguments.
With no config file, serve runs on the embedded defaults against built-in simulators.
`

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "oncegate:", err)
		if store.IsBusy(err) {
			fmt.Fprintln(os.Stderr, "oncegate: the journal was busy (another oncegate process held it); nothing was changed, try again")
		}
		os.Exit(1)
	}
}

// errUsage marks a command line that was not understood.
var errUsage = errors.New("see 'oncegate help'")

func run(args []string, stdout, stderr io.Writer, env func(string) string) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "serve":
		return cmdServe(args, stdout, stderr, env)
	case "migrate":
		return cmdMigrate(args, stdout, env)
	case "token":
		return cmdToken(args, stdout, env)
	case "sim":
		return cmdSim(args, stderr)
	case "user":
		return cmdUser(args, os.Stdin, stdout, env)
	case "audit":
		return cmdAudit(args, stdout, env)
	case "backup":
		return cmdBackup(args, stdout, env)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q: %w", cmd, errUsage)
}

// common holds the flags every command takes.
type common struct {
	config string
	data   string
}

func newFlags(name string, c *common) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.config, "config", "", "configuration file (YAML)")
	fs.StringVar(&c.data, "data", "", "data directory (overrides data_dir)")
	return fs
}

// parse parses flags wherever they stand, before or after the command's
// own arguments (`migrate up --data d` as well as `migrate --data d up`);
// fs.Args() is then the arguments in their order. After "--" everything
// is an argument, a name starting with "-" included.
func parse(fs *flag.FlagSet, args []string) error {
	var positional, rest []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, rest = args[:i], args[i+1:]
	}
	for {
		if err := fs.Parse(args); err != nil {
			return fmt.Errorf("%s: %w", fs.Name(), err)
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return fs.Parse(append(append([]string{"--"}, positional...), rest...))
}

// load reads the configuration and applies --data.
func (c common) load(env func(string) string) (server.Config, error) {
	path := c.config
	if path == "" {
		path = env("ONCEGATE_CONFIG")
	}
	cfg, err := server.LoadConfig(path, env)
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
	if !create {
		if err := journalExists(cfg); err != nil {
			return nil, err
		}
	}
	// Opening applies pending migrations; the schema must not change under
	// a running gateway, so a journal behind this binary needs serve
	// stopped first.
	if v, err := store.Migrate(ctx, journalPath(cfg), "version"); err == nil && int(v) < store.LatestVersion() {
		unlock, err := lockDataDir(cfg.DataDir)
		if errors.Is(err, errServing) {
			return nil, fmt.Errorf("the journal's schema (version %d) is older than this oncegate's (%d) and serve is running on %s: stop it and run oncegate migrate up first", v, store.LatestVersion(), cfg.DataDir)
		}
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	return openStore(ctx, cfg)
}

// journalExists refuses a data directory that holds no journal.
func journalExists(cfg server.Config) error {
	if _, err := os.Stat(journalPath(cfg)); err != nil {
		return fmt.Errorf("no journal at %s: check --data (serve or migrate up makes a new one)", journalPath(cfg))
	}
	return nil
}

// openStore opens the journal in the configured data directory.
func openStore(ctx context.Context, cfg server.Config) (*store.Store, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	return store.Open(ctx, journalPath(cfg))
}

func journalPath(cfg server.Config) string { return filepath.Join(cfg.DataDir, "journal.db") }

func cmdServe(args []string, stdout, stderr io.Writer, env func(string) string) error {
	var c common
	fs := newFlags("serve", &c)
	listen := fs.String("listen", "", "address to listen on (overrides listen)")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := c.load(env)
	if err != nil {
		return err
	}
	if *listen != "" {
		cfg.Listen = *listen
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	unlock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return err
	}
	defer unlock()

	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()

	// Targets nothing points at are served by the built-in simulators.
	simURL := ""
	if simulated := cfg.Simulated(env); len(simulated) > 0 {
		_, hs, url, err := sim.Start("127.0.0.1:0")
		if err != nil {
			return err
		}
		defer hs.Close()
		simURL = url
		log.Warn("SIMULATORS IN USE: these targets are built-in simulators, not real systems",
			"targets", strings.Join(simulated, ","), "simulators", simURL)
	}
	for _, key := range cfg.MissingSecrets(env) {
		log.Warn("a configured target has no secret in its environment variable; its calls will be refused until it is set", "key", key)
	}
	targets, err := server.BuildTargets(cfg, simURL, env)
	if err != nil {
		return err
	}

	srv := server.New(cfg, st, targets, log)
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
		"journal", journalPath(cfg), "run", srv.Owner())
	err = srv.Serve(ctx, ln)
	log.Info("oncegate stopped")
	return err
}

// firstRunToken makes and prints, once, an agent token with every scope
// on a journal that has none, so the embedded default is usable at once.
func firstRunToken(ctx context.Context, st *store.Store, stdout io.Writer) error {
	n, err := st.CountTokens(ctx)
	if err != nil || n > 0 {
		return err
	}
	secret, tok, err := st.CreateToken(ctx, "demo-agent", store.Scopes)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "First run: made agent token %d for %q with scopes %s. It is shown only now:\n%s\n",
		tok.ID, tok.Agent, strings.Join(tok.Scopes, ","), secret)
	return nil
}

func cmdMigrate(args []string, stdout io.Writer, env func(string) string) error {
	var c common
	fs := newFlags("migrate", &c)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("migrate: say up, down or version: %w", errUsage)
	}
	cfg, err := c.load(env)
	if err != nil {
		return err
	}
	switch fs.Arg(0) {
	case "version", "down":
		if err := journalExists(cfg); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if fs.Arg(0) != "version" {
		// The schema must not change under a running gateway.
		unlock, err := lockDataDir(cfg.DataDir)
		if errors.Is(err, errServing) {
			return fmt.Errorf("migrate %s: oncegate serve is running on %s; stop it first", fs.Arg(0), cfg.DataDir)
		}
		if err != nil {
			return err
		}
		defer unlock()
	}
	v, err := store.Migrate(context.Background(), journalPath(cfg), fs.Arg(0))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "journal schema version %d (this binary's latest: %d)\n", v, store.LatestVersion())
	return nil
}

func cmdToken(args []string, stdout io.Writer, env func(string) string) error {
	if len(args) == 0 {
		return fmt.Errorf("token: say create, list or revoke: %w", errUsage)
	}
	sub, args := args[0], args[1:]
	var c common
	fs := newFlags("token "+sub, &c)
	name := fs.String("name", "", "agent identity the token acts as")
	scopes := fs.String("scopes", "", "comma-separated scopes: read,draft,write,post,pay")
	if err := parse(fs, args); err != nil {
		return err
	}
	ctx := cliContext()
	st, err := c.open(ctx, env, sub == "create")
	if err != nil {
		return err
	}
	defer st.Close()

	switch sub {
	case "create":
		if *name == "" {
			return fmt.Errorf("token create: --name is required: %w", errUsage)
		}
		list, err := store.ParseScopes(*scopes)
		if err != nil {
			return fmt.Errorf("token create: --scopes: %w", err)
		}
		secret, tok, err := st.CreateToken(ctx, *name, list)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "token %d for agent %q, scopes %s; shown only now:\n%s\n", tok.ID, tok.Agent, strings.Join(tok.Scopes, ","), secret)
	case "list":
		list, err := st.ListTokens(ctx)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tAGENT\tSCOPES\tCREATED\tREVOKED")
		for _, t := range list {
			revoked := "-"
			if !t.RevokedAt.IsZero() {
				revoked = t.RevokedAt.Format(time.RFC3339)
			}
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\n", t.ID, t.Agent, strings.Join(t.Scopes, ","), t.CreatedAt.Format(time.RFC3339), revoked)
		}
		return w.Flush()
	case "revoke":
		if fs.NArg() != 1 {
			return fmt.Errorf("token revoke: name one token id or agent: %w", errUsage)
		}
		n, err := st.RevokeToken(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked %d token(s)\n", n)
	default:
		return fmt.Errorf("token: unknown subcommand %q: %w", sub, errUsage)
	}
	return nil
}

func cmdSim(args []string, stderr io.Writer) error {
	var c common
	fs := newFlags("sim", &c)
	listen := fs.String("listen", "127.0.0.1:9001", "address to listen on")
	if err := parse(fs, args); err != nil {
		return err
	}
	_, hs, url, err := sim.Start(*listen)
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
