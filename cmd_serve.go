package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/redact"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/server"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/intent"
	"github.com/oncegate/oncegate/server/notify"
	"github.com/oncegate/oncegate/store"
)

var serveCommand = command{
	name:    "serve",
	args:    "[--listen ADDR] [--sim-listen ADDR] [--env-file FILE]",
	summary: "run the gateway",
	setup: func(fs *flag.FlagSet) func(invocation, []string) error {
		var c configFlags
		c.flags(fs)
		listen := fs.String("listen", "", "`ADDR` to listen on (overrides the configuration's listen)")
		simListen := fs.String("sim-listen", "", "`ADDR` the built-in simulators listen on, when serve starts them (overrides sim_listen; default a free loopback port)")
		envFile := fs.String("env-file", "", envFileUsage)
		service := fs.String("service", "", "Windows: run under the service manager as the service `NAME` (service install sets it)")
		profile := fs.String("cpuprofile", "", "write a CPU profile of the run to `FILE` when serve stops (for a performance report)")
		fs.BoolVar(&c.newJournal, "new-journal", false, "begin a new, empty journal where a lost one was (every key it knew would execute again; restore a backup instead if there is one)")
		return func(inv invocation, args []string) error {
			if len(args) != 0 {
				return badUsage("serve", "takes no arguments")
			}
			env, err := withEnvFile(inv.env, *envFile)
			if err != nil {
				return err
			}
			if *profile != "" {
				f, err := os.Create(*profile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			if *service != "" {
				return serveService(*service, c, env, func(ctx context.Context, stdout, stderr io.Writer, notify func(string)) error {
					return runServe(ctx, c, addrs{*listen, *simListen}, stdout, stderr, env, notify)
				})
			}
			return serve(c, addrs{*listen, *simListen}, inv.stdout, inv.stderr, env)
		}
	},
}

// addrs are serve's --listen and --sim-listen; "" leaves the
// configuration's.
type addrs struct{ listen, sim string }

func serve(c configFlags, at addrs, stdout, stderr io.Writer, env func(string) string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runServe(ctx, c, at, stdout, stderr, env, sdNotify)
}

// runServe is serve until ctx is done (a signal, or the Windows service
// manager's stop). notify tells the service manager how the run goes:
// "READY=1" once the gateway listens, "STOPPING=1" when it begins to stop.
// It reads as serve's start-up, a step a line; what the steps started is
// stopped when it returns, the last first.
func runServe(ctx context.Context, c configFlags, at addrs, stdout, stderr io.Writer, env func(string) string, notify func(state string)) error {
	g := &gateway{env: env}
	defer g.shutdown()
	if err := g.configure(c, at, stderr); err != nil {
		return err
	}
	if err := g.openJournal(ctx, c.newJournal); err != nil {
		return err
	}
	if err := g.startTargets(); err != nil {
		return err
	}
	if err := g.applyCatalog(ctx); err != nil {
		return err
	}
	if err := g.startServer(ctx); err != nil {
		return err
	}
	if err := g.listen(); err != nil {
		return err
	}
	// On the embedded defaults the first run makes an agent token as well.
	if err := firstRun(ctx, g.st, stdout, c.config == "" && env("ONCEGATE_CONFIG") == ""); err != nil {
		return err
	}
	return g.serveUntilDone(ctx, notify)
}

// simNumbersFile is the file in the data directory where the built-in 1C
// simulator keeps its last document numbers across runs.
const simNumbersFile = "simulator-numbers.json"

// gateway is what serve's start-up makes, step by step; undo holds how to
// stop what each step started, in the order started.
type gateway struct {
	env     func(string) string
	cfg     config.Config
	catalog *intent.Catalog
	log     *slog.Logger
	st      *store.Store
	// sims are the built-in simulators, serving the simulated targets;
	// nil when every target is configured at a real system.
	sims      *sim.Server
	simulated []string
	targets   map[string]adapters.Target
	srv       *server.Server
	ln        net.Listener
	undo      []func()
}

// shutdown stops what the steps started, the last first: the listener,
// the simulators, the journal, then the data directory's lock.
func (g *gateway) shutdown() {
	for i := len(g.undo) - 1; i >= 0; i-- {
		g.undo[i]()
	}
}

// configure loads the configuration, --listen and --sim-listen over it,
// and the whitelist of intents, which loads whole or serve does not start;
// then the log, which masks the configured targets' secrets.
func (g *gateway) configure(c configFlags, at addrs, stderr io.Writer) error {
	cfg, err := c.load(g.env)
	if err != nil {
		return err
	}
	if at.listen != "" {
		cfg.Listen = at.listen
	}
	if at.sim != "" {
		if _, _, err := net.SplitHostPort(at.sim); err != nil {
			return badUsage("serve", "--sim-listen: %q is not host:port", at.sim)
		}
		cfg.SimListen = at.sim
	}
	catalog, err := loadCatalog(cfg)
	if err != nil {
		return err
	}
	g.cfg, g.catalog = cfg, catalog
	g.log = slog.New(serveLog(stderr, cfg, g.env))
	return nil
}

// logCatalog says what the whitelist was loaded from: each file of
// intents_dir (its path, the intent and version it holds), then how many
// definitions came from files and how many are built in, so an admin sees
// at start that an edited or added file was read.
func logCatalog(log *slog.Logger, cfg config.Config, c *intent.Catalog) {
	files, builtins := 0, 0
	for _, def := range c.Definitions() {
		if def.Source == intent.BuiltIn {
			builtins++
			continue
		}
		files++
		log.Info("intent file loaded", "file", def.Source, "intent", def.Name, "version", def.Version)
	}
	log.Info("intent definitions loaded", "files", files, "intents_dir", cfg.IntentsDir, "built_in", builtins)
}

// openJournal opens the journal for the run. One serve per embedded
// journal: it holds the data directory's lock, which also tells a new run
// that every lease left in the journal is a dead run's (gateways sharing
// a journal on PostgreSQL rely on their leases alone). newJournal
// (--new-journal) begins an empty one where a lost one was.
func (g *gateway) openJournal(ctx context.Context, newJournal bool) error {
	if err := os.MkdirAll(g.cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	journal, err := journalLocation(g.cfg, g.env)
	if err != nil {
		return err
	}
	if !store.IsPostgres(journal) {
		unlock, err := lockDataDir(g.cfg.DataDir)
		if err != nil {
			return err
		}
		g.undo = append(g.undo, unlock)
	}
	if newJournal {
		if err := noJournalYet(ctx, journal); err != nil {
			return err
		}
		g.log.Warn("NEW JOURNAL: --new-journal begins an empty journal; keys the lost one knew will execute again", "journal", journal)
	}
	st, err := openStore(ctx, g.cfg, journal, newJournal)
	if err != nil {
		return err
	}
	g.st = st
	g.undo = append(g.undo, func() { st.Close() })
	// A journal that takes no writes (a read-only file or file system, a
	// full disk) would refuse every operation: serve does not start on it.
	if err := st.Ready(ctx); err != nil {
		return fmt.Errorf("the journal at %s cannot be written, so serve does not start: %w", st.Location(), err)
	}
	return nil
}

// startTargets builds the targets. Those nothing points at are served by
// the built-in simulators, started first, and the log says so.
func (g *gateway) startTargets() error {
	simURL := ""
	g.simulated = g.cfg.Simulated(g.env)
	if len(g.simulated) > 0 {
		addr := g.cfg.SimListen
		if addr == "" {
			addr = "127.0.0.1:0"
		}
		srv, hs, url, err := sim.Start(addr)
		if err != nil {
			return fmt.Errorf("the built-in simulators (sim_listen, --sim-listen): %w", err)
		}
		g.undo = append(g.undo, func() { srv.Close(); hs.Close() })
		// The simulated 1C's numbers go on from the last run's, as a real
		// base's do: a demo's invoices are never numbered twice.
		if err := srv.KeepOneCNumbers(filepath.Join(g.cfg.DataDir, simNumbersFile)); err != nil {
			return err
		}
		simURL, g.sims = url, srv
		g.log.Warn("SIMULATORS IN USE: these targets are built-in simulators, not real systems",
			"targets", strings.Join(g.simulated, ","), "simulators", simURL, "control", simURL+"/_sim/")
	}
	sims := builtInSimulators(simURL)
	sims.Log = g.log
	targets, err := buildTargets(g.cfg, sims, g.env)
	if err != nil {
		return err
	}
	g.targets = targets
	return nil
}

// applyCatalog refuses definitions edited in place under the journal's
// unfinished operations, gives each target the definitions naming it, says
// which were loaded, and has the built-in 1C simulator publish the firm's
// own intents.
func (g *gateway) applyCatalog(ctx context.Context) error {
	if err := editedInPlace(ctx, g.st, g.catalog); err != nil {
		return err
	}
	if err := bindCatalog(g.catalog, g.targets); err != nil {
		return err
	}
	logCatalog(g.log, g.cfg, g.catalog)
	return publishAtSimulator(g.sims, g.simulated, g.targets)
}

// startServer makes the server and prepares the journal for this run.
func (g *gateway) startServer(ctx context.Context) error {
	secrets, err := g.cfg.WebhookSecrets(g.env)
	if err != nil {
		return err
	}
	if err := g.startNotices(ctx); err != nil {
		return err
	}
	g.srv = server.New(g.cfg, g.st, g.targets, g.catalog, g.log)
	g.srv.SetEventTokens(eventTokens(g.cfg, g.env, sim.Bitrix24ApplicationToken()))
	if len(secrets) > 0 {
		if err := g.srv.SetWebhookSecrets(secrets); err != nil {
			return err
		}
		g.log.Info("webhooks: deliveries go to the configured endpoints", "endpoints", len(secrets))
	}
	return g.srv.Start(ctx)
}

// startNotices, when notify: names a channel, has every later batch
// journal its notices and sends them until serve stops, before the
// journal closes.
func (g *gateway) startNotices(ctx context.Context) error {
	if !g.cfg.Notify.On() {
		return nil
	}
	secrets, err := g.cfg.NotifySecrets(g.env)
	if err != nil {
		return err
	}
	var masked []redact.Secret
	for _, t := range g.targets {
		if s, ok := t.(adapters.Secretive); ok {
			masked = append(masked, s.Secrets()...)
		}
	}
	d, err := notify.New(g.st, g.cfg.Notify, secrets, masked, g.log)
	if err != nil {
		return err
	}
	if name := g.cfg.Notify.Bitrix24.Target; name != "" {
		portal, ok := g.targets[name].(notify.Portal)
		if !ok {
			return fmt.Errorf("notify.bitrix24.target: the target %s does not send the portal's notifications", name)
		}
		d.SetPortal(portal)
	}
	g.st.SetNotifier(notify.Notifier(g.cfg.Notify, g.catalog, redact.New(append(masked, notify.Secrets(secrets)...)...)))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); d.Run(runCtx) }()
	g.undo = append(g.undo, func() { cancel(); <-done })
	g.log.Info("notices: people are told by "+strings.Join(notify.Channels(g.cfg.Notify), " and ")+" when something waits for them",
		"admin_url", g.cfg.Notify.AdminURL)
	return nil
}

// listen takes the address. It is taken before the first run makes its
// secrets: a bad or busy address stops serve before they are printed, so
// the next start prints them instead of a log that scrolled past.
func (g *gateway) listen() error {
	ln, err := net.Listen("tcp", g.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	g.ln = ln
	g.undo = append(g.undo, func() { ln.Close() })
	return nil
}

// serveUntilDone says where the gateway serves (in the log, and READY=1
// to the service manager) and serves until ctx is done; then, having said
// STOPPING=1, it shuts down as the server does: accepting no more, and
// letting the requests in progress finish.
func (g *gateway) serveUntilDone(ctx context.Context, notify func(state string)) error {
	scheme := "http://"
	if g.cfg.TLS.Enabled() {
		scheme = "https://"
	}
	addr := scheme + g.ln.Addr().String()
	g.log.Info("oncegate is serving", "api", addr+"/v1", "mcp", addr+"/mcp", "admin", addr+"/admin/", "contour", g.cfg.Contour,
		"journal", g.st.Location(), "run", g.srv.Owner())
	notify("READY=1")
	stopping := context.AfterFunc(ctx, func() { notify("STOPPING=1") })
	defer stopping()
	err := g.srv.Serve(ctx, g.ln)
	g.log.Info("oncegate stopped")
	return err
}
