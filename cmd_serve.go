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
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/server"
	"github.com/oncegate/oncegate/store"
)

var serveCommand = command{
	name:    "serve",
	args:    "[--listen ADDR] [--env-file FILE]",
	summary: "run the gateway",
	setup: func(fs *flag.FlagSet) func(invocation, []string) error {
		var c configFlags
		c.flags(fs)
		listen := fs.String("listen", "", "`ADDR` to listen on (overrides the configuration's listen)")
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
					return runServe(ctx, c, *listen, stdout, stderr, env, notify)
				})
			}
			return serve(c, *listen, inv.stdout, inv.stderr, env)
		}
	},
}

func serve(c configFlags, listen string, stdout, stderr io.Writer, env func(string) string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runServe(ctx, c, listen, stdout, stderr, env, sdNotify)
}

// runServe is serve until ctx is done (a signal, or the Windows service
// manager's stop). notify tells the service manager how the run goes:
// "READY=1" once the gateway listens, "STOPPING=1" when it begins to stop.
func runServe(ctx context.Context, c configFlags, listen string, stdout, stderr io.Writer, env func(string) string, notify func(state string)) error {
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
	// The address is taken before the first run makes its secrets: a bad
	// or busy address stops serve before they are printed, so the next
	// start prints them instead of a log that scrolled past.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	// On the embedded defaults the first run makes an agent token as well.
	if err := firstRun(ctx, st, stdout, c.config == "" && env("ONCEGATE_CONFIG") == ""); err != nil {
		return err
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
