package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/google/uuid"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/adapters"

	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/server"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/store"
)

var benchCommand = command{
	name:    "bench",
	args:    "[--connections N] [--duration D] [--fill N] [--webhooks] [--events N] [--journal-url-env VAR [--instances N]] [--cpu-quota F]",
	summary: "measure replays and new operations over loopback HTTP, beside a bare Echo handler of the same request and one that forwards it to 1C once",
	setup: func(fs *flag.FlagSet) func(invocation, []string) error {
		conns := fs.Int("connections", 32, "`N` clients sending at once")
		dur := fs.Duration("duration", 8*time.Second, "how long each path is loaded (`D`)")
		profile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to `FILE` (with --cpu-quota, each gateway's to FILE.gateway-N)")
		only := fs.String("only", "", "load only the paths whose name contains `WORD` (echo, replay, new)")
		urlEnv := fs.String("journal-url-env", "", "the environment variable `VAR` holding a postgres:// URL of a scratch database to bench the shared journal on (default: a new SQLite journal)")
		instances := fs.Int("instances", 1, "`N` gateways on the one journal (PostgreSQL only), the load spread over them")
		quota := fs.Float64("cpu-quota", 0, "run each gateway as a process of its own (oncegate serve) capped at `F` CPUs in a control group of its own (Linux, as root); CPU/req of its paths is then the gateways' own")
		fill := fs.Int("fill", 0, "after the other paths, add `N` final operations (and their audit events) to the journal and load new operations again")
		webhooks := fs.Bool("webhooks", false, "also load new operations on a gateway whose every success is a webhook to a local receiver, and report the deliveries' rate")
		waiters := fs.Int("waiters", 0, "also load new operations while `N` agents long-poll charges awaiting approval (GET ?wait=60s), and report the memory it took")
		events := fs.Int("events", 0, "also post `N` YooKassa notices a second (one in ten again) to a gateway whose rule makes a receipt in 1C of each payment: alone, beside new operations, and new operations alone")
		processes := fs.Bool("processes", false, "also load a process of two steps (an invoice, then a sales order in 1C) beside the same two operations sent one by one (--only steps: just those)")
		return func(inv invocation, args []string) error {
			if len(args) != 0 {
				return badUsage("bench", "takes no arguments")
			}
			if *conns < 1 || *dur <= 0 || *fill < 0 {
				return badUsage("bench", "--connections and --duration must be positive, --fill not negative")
			}
			journal := ""
			if *urlEnv != "" {
				if journal = inv.env(*urlEnv); !store.IsPostgres(journal) {
					return badUsage("bench", "%s must hold a postgres:// URL", *urlEnv)
				}
			}
			if *quota < 0 || (*quota > 0 && *fill > 0) {
				return badUsage("bench", "--cpu-quota must be positive and is not combined with --fill")
			}
			if *instances < 1 || (*instances > 1 && journal == "") {
				return badUsage("bench", "--instances above 1 needs a shared journal (--journal-url-env)")
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
			if *webhooks && (*quota > 0 || journal != "") {
				return badUsage("bench", "--webhooks runs in one process on SQLite: not with --cpu-quota or --journal-url-env")
			}
			if *events < 0 || (*events > 0 && (*quota > 0 || journal != "")) {
				return badUsage("bench", "--events is a rate, not negative, and runs in one process on SQLite: not with --cpu-quota or --journal-url-env")
			}
			return bench(inv.stdout, benchSetup{events: *events, conns: *conns, dur: *dur, only: *only, journal: journal, instances: *instances, fill: *fill, quota: *quota, profile: *profile, webhooks: *webhooks, processes: *processes, waiters: *waiters})
		}
	},
}

// benchBody is the request every path gets: a 1C invoice, of the order
// benchBodyFor names.
var benchBody = `{"schema_version":"1.0","intent":"invoice.create","actor_id":"bench",` +
	`"payload":{"order_id":"%s","organization_id":"org-main","customer_id":"customer-1042","currency":"RUB",` +
	`"items":[{"product_id":"product-778","quantity":2,"unit":"pcs","price_minor":62500}]}}`

// benchBodyFor is the request sent with key: an invoice of an order of
// its own, the key's id (bench-…). One order is one business event: a
// second invoice of it under another key would wait for a person.
func benchBodyFor(key string) []byte {
	order := "order-bench"
	if parts := strings.Split(key, ":"); len(parts) == 4 {
		order = parts[2]
	}
	return fmt.Appendf(nil, benchBody, order)
}

// benchSetup is what one bench run loads.
type benchSetup struct {
	conns     int
	dur       time.Duration
	only      string
	journal   string  // a postgres:// URL, or "" for a new SQLite journal
	instances int     // gateways on the journal
	fill      int     // operations added to the journal before new operations are loaded again
	quota     float64 // > 0: each gateway a process of its own, capped at quota CPUs
	profile   string  // with quota: where the gateways write their CPU profiles (FILE.gateway-N)
	webhooks  bool    // also load a gateway whose every success is a webhook
	processes bool    // also load a process of two steps beside its steps sent one by one
	waiters   int     // also load new operations while so many agents long-poll
	events    int     // also post so many notices a second to a gateway of events
}

// bench runs the gateway in this process on a journal in a new temporary
// directory (WAL, the writer at synchronous=NORMAL with the WAL synced before each answer, as serve) or on the PostgreSQL journal
// it is given (then as several gateways, each with its own connections,
// if asked), its targets the built-in simulators, and loads it over
// loopback HTTP; the reference is a bare Echo handler that binds the same
// JSON body, loaded the same way in the same run. The paths are loaded in
// turn, the reference twice (first and last), so a machine that changes
// speed shows.
func bench(stdout io.Writer, b benchSetup) error {
	// An interrupt (Ctrl-C, a service manager's stop) ends the load early
	// and the run cleans up as it does at its end: the gateways stopped,
	// their control groups and the temporary journal removed.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	dir, err := os.MkdirTemp("", "oncegate-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	cfg := config.Default()
	cfg.DataDir = dir
	if b.processes {
		if cfg.IntentsDir, err = benchProcessDir(dir); err != nil {
			return err
		}
	}
	cfg.RateLimit.PerSecond, cfg.RateLimit.Burst = 1e9, 1e9 // the limiter is not what is measured
	if b.waiters > 0 {
		cfg.MaxConnections = b.waiters + 2*b.conns + 64 // the waiting agents, the load, and room
	}
	journal, journalName := b.journal, store.Redact(b.journal)
	if journal == "" {
		journal = filepath.Join(dir, "journal.db")
		journalName = journal + " (WAL, pipelined commit)"
	}
	// Each part runs under a profile label (part=gateway, simulator,
	// reference, forwarding, client), which the goroutines it starts
	// inherit: pprof -tagfocus part=gateway shows the gateway's own share.
	var (
		simSrv  *sim.Server
		simHTTP *http.Server
		simURL  string
	)
	labeled("simulator", func() { simSrv, simHTTP, simURL, err = sim.Start("127.0.0.1:0") })
	if err != nil {
		return err
	}
	defer simHTTP.Close()
	var (
		gw    *benchGateways
		token string
	)
	if b.quota > 0 {
		gw, token, err = startCappedGateways(ctx, dir, simURL, b.journal, b.instances, b.quota, b.profile)
		if b.journal == "" {
			journalName = filepath.Join(dir, "gateway-0", "journal.db") + " (WAL, pipelined commit)"
		}
		journalName += fmt.Sprintf("; each gateway a process of its own capped at %g CPU", b.quota)
	} else {
		labeled("gateway", func() { gw, err = startBenchGateways(ctx, cfg, simURL, journal, b.instances, nil) })
	}
	defer gw.stop()
	if err != nil {
		return err
	}
	if token == "" {
		if token, _, err = gw.stores[0].CreateToken(ctx, "bench-agent", store.Scopes); err != nil {
			return err
		}
	}
	var (
		refURL, fwdURL   string
		stopRef, stopFwd func()
	)
	labeled("reference", func() { refURL, stopRef, err = serveEcho(benchReference()) })
	if err != nil {
		return err
	}
	defer stopRef()
	fwd, err := benchForwarder(cfg, simURL)
	if err != nil {
		return err
	}
	labeled("forwarding", func() { fwdURL, stopFwd, err = serveEcho(fwd) })
	if err != nil {
		return err
	}
	defer stopFwd()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: b.conns, MaxConnsPerHost: b.conns}}
	var seq atomic.Int64
	// Keys of this run only: a shared journal may hold an earlier run's.
	// (In base 36: a long run of digits could look like a card number.)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	newKey := func() string { return fmt.Sprintf("test:invoice.create:bench-%s-%d:v1", run, seq.Add(1)) }
	// What most agents send: a random UUID, so each new key lands at a
	// random place in the journal's index rather than at its end.
	uuidKey := func() string { return "test:invoice.create:" + uuid.NewString() + ":v1" }
	replayKey := fmt.Sprintf("test:invoice.create:bench-%s-replay:v1", run)
	fwdKey := func() string { return fmt.Sprintf("test:invoice.create:bench-%s-fwd-%d:v1", run, seq.Add(1)) }
	if err := send(client, gw.urls[0], token, replayKey); err != nil {
		return fmt.Errorf("first request: %w", err)
	}

	fmt.Fprintf(stdout, "oncegate bench: %d connections, %v per path, GOMAXPROCS %d; %d gateway(s) on journal %s\n",
		b.conns, b.dur, runtime.GOMAXPROCS(0), b.instances, journalName)
	paths := []benchPath{
		{"bare Echo (reference)", []string{refURL}, func() string { return replayKey }, benchReferencePath, nil, nil, nil, "", nil},
		{"forwarding to 1C once (reference)", []string{fwdURL}, fwdKey, benchForwardingPath, nil, nil, nil, "", nil},
		{"replay of a final operation", gw.urls, func() string { return replayKey }, benchGatewayPath, nil, nil, nil, "", nil},
		{"new operation (1C simulator)", gw.urls, newKey, benchGatewayPath, nil, nil, nil, "", nil},
		{"new operation, random UUID keys", gw.urls, uuidKey, benchGatewayPath, nil, nil, nil, "", nil},
	}
	if b.processes {
		paths = append(paths, processPaths(gw.urls, run, &seq)...)
	}
	if b.waiters > 0 {
		w := &waiterBench{n: b.waiters, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: b.waiters, MaxConnsPerHost: b.waiters}}}
		defer w.report(stdout)
		defer w.stop()
		paths = append(paths, benchPath{name: fmt.Sprintf("new operation, %d agents long-polling", b.waiters), urls: gw.urls, key: newKey, kind: benchGatewayPath,
			before: func() error {
				if err := w.prepare(gw.urls[0], token, run); err != nil {
					return err
				}
				w.start(gw.urls[0], token)
				return nil
			},
			after: func(loadResult) { w.stop() }})
	}
	if b.webhooks {
		hooks, err := startWebhookBench(ctx, cfg, simURL, dir)
		if hooks != nil {
			defer hooks.stop()
		}
		if err != nil {
			return err
		}
		paths = append(paths, hooks.path(newKey))
		defer hooks.report(stdout)
	}
	var filled time.Duration
	if b.fill > 0 {
		// The same path on a journal grown by fill operations, in the
		// same run: how the write path's cost grows with the journal.
		paths = append(paths, benchPath{fmt.Sprintf("new operation, %d more in the journal", b.fill), gw.urls, newKey, benchGatewayPath, func() error {
			t0 := time.Now()
			err := gw.stores[0].Fill(ctx, "fill-"+run, b.fill, nil)
			filled = time.Since(t0)
			return err
		}, nil, nil, "", nil})
	}
	paths = append(paths, benchPath{"bare Echo (reference, again)", []string{refURL}, func() string { return replayKey }, benchReferencePath, nil, nil, nil, "", nil})
	if err := benchTable(ctx, stdout, client, token, paths, gw, b); err != nil {
		return err
	}
	if b.events > 0 {
		ev, err := startEventsBench(ctx, simSrv, simURL, dir, b.events)
		if ev != nil {
			defer ev.stop()
		}
		if err != nil {
			return err
		}
		err = ev.run(ctx, b, newKey)
		if ctx.Err() != nil {
			return errors.New("interrupted")
		}
		ev.report(stdout)
		if err != nil {
			return fmt.Errorf("events: %w", err)
		}
	}
	if filled > 0 {
		fmt.Fprintf(stdout, "filled the journal with %d operations and %d audit events in %v\n", b.fill, 3*b.fill, filled.Round(time.Millisecond))
	}
	return nil
}

// benchGateways are the gateways one bench run loads, each on its own
// connections to the journal.
type benchGateways struct {
	stores []*store.Store // in this process; none when the gateways are processes of their own
	urls   []string
	stops  []func() // in the order they were started
	// cpu is the CPU the gateways' processes have used, when they are
	// processes of their own; nil when they run in this one.
	cpu func() time.Duration
}

// startBenchGateways starts instances gateways on journal, their targets
// the simulators at simURL. stop ends what was started, also after an
// error.
func startBenchGateways(ctx context.Context, cfg config.Config, simURL, journal string, instances int, secrets [][][]byte) (*benchGateways, error) {
	gw := &benchGateways{}
	targets, err := buildTargets(cfg, builtInSimulators(simURL), func(string) string { return "" })
	if err != nil {
		return gw, err
	}
	catalog, err := loadCatalog(cfg)
	if err != nil {
		return gw, err
	}
	if err := bindCatalog(catalog, targets); err != nil {
		return gw, err
	}
	for range instances {
		st, err := store.Open(ctx, journal)
		if err != nil {
			return gw, err
		}
		gw.stops = append(gw.stops, func() { st.Close() })
		srv := server.New(cfg, st, targets, catalog, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if secrets != nil {
			if err := srv.SetWebhookSecrets(secrets); err != nil {
				return gw, err
			}
		}
		if err := srv.Start(ctx); err != nil {
			return gw, err
		}
		u, stopGW, err := listenAndServe(func(ln net.Listener) error { return srv.Serve(ctx, ln) })
		if err != nil {
			return gw, err
		}
		gw.stops = append(gw.stops, stopGW)
		gw.stores, gw.urls = append(gw.stores, st), append(gw.urls, u)
	}
	return gw, nil
}

// stop stops the gateways and closes their journals, the last started
// first.
func (gw *benchGateways) stop() {
	for i := len(gw.stops) - 1; i >= 0; i-- {
		gw.stops[i]()
	}
}

// writeStats adds up the journal writes of every gateway.
func (gw *benchGateways) writeStats() (w store.WriteStats) {
	for _, s := range gw.stores {
		ws := s.WriteStats()
		w.Batches, w.Writes = w.Batches+ws.Batches, w.Writes+ws.Writes
	}
	return w
}

// benchReference is the first reference: a bare Echo handler that binds
// the request's JSON body and answers.
func benchReference() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.POST("/v1/operations", func(c echo.Context) error {
		var m map[string]any
		if err := c.Bind(&m); err != nil {
			return err
		}
		return c.JSON(http.StatusOK, map[string]any{"status": "succeeded", "operation": m["operation"]})
	})
	return e
}

// benchForwarder is the second reference, what a gateway's new operation
// must do at the least: a bare Echo handler that binds the request and
// forwards the same intent to the 1C simulator at simURL once, through a
// client of its own, with no journal, no checks and no second call.
func benchForwarder(cfg config.Config, simURL string) (*echo.Echo, error) {
	direct, err := buildTargets(cfg, builtInSimulators(simURL), func(string) string { return "" })
	if err != nil {
		return nil, err
	}
	oneC := direct[config.TargetOneC]
	fwd := echo.New()
	fwd.HideBanner, fwd.HidePort = true, true
	fwd.POST("/v1/operations", func(c echo.Context) error {
		var env struct {
			Intent  string          `json:"intent"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := c.Bind(&env); err != nil {
			return err
		}
		key := c.Request().Header.Get("Idempotency-Key")
		sum := sha256.Sum256([]byte(key))
		res, err := oneC.Execute(c.Request().Context(), adapters.Op{Key: key, Intent: env.Intent, Payload: env.Payload,
			Fingerprint: hex.EncodeToString(sum[:]), Attempt: 1})
		if err != nil {
			return c.JSON(http.StatusBadGateway, map[string]any{"status": "failed", "error": err.Error()})
		}
		return c.JSON(http.StatusOK, map[string]any{"status": "succeeded", "target_object_id": res.ObjectID, "result": res.Data})
	})
	return fwd, nil
}

// serveEcho serves e on a new loopback port (see listenAndServe).
func serveEcho(e *echo.Echo) (string, func(), error) {
	return listenAndServe(func(ln net.Listener) error {
		err := http.Serve(ln, e)
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		return err
	})
}

// benchPathKind says what a bench path loads: a reference or a gateway.
type benchPathKind int

const (
	benchReferencePath benchPathKind = iota
	benchForwardingPath
	benchGatewayPath
)

// benchPath is one row of the bench: its name, the URLs it loads in turn,
// the key of each request, what it is, and what to do before loading it.
type benchPath struct {
	name   string
	urls   []string
	key    func() string
	kind   benchPathKind
	before func() error // run before the path is loaded
	after  func(loadResult)
	// stats are the journal writes of the path's gateways, token an
	// agent's token there; nil and "": the bench's gateways'.
	stats func() store.WriteStats
	token string
	// send sends one request of the path; nil: send.
	send func(client *http.Client, url, token, key string) error
}

// benchTable loads each path in turn (those b.only names, and the
// references) and writes a row of its rate and latencies, beside the
// first reference's and the forwarding's rates and the journal's batches.
func benchTable(ctx context.Context, stdout io.Writer, client *http.Client, token string, paths []benchPath, gw *benchGateways, b benchSetup) error {
	writeStats := gw.writeStats
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "path\trequests\treq/s\tp50\tp99\tvs reference\tvs forwarding\tCPU/req\tjournal batches/s × writes\t")
	var ref, fwdRate float64
	for _, p := range paths {
		if ctx.Err() != nil {
			return errors.New("interrupted")
		}
		if b.only != "" && !strings.Contains(strings.ToLower(p.name), strings.ToLower(b.only)) && !strings.Contains(p.name, "reference") {
			continue
		}
		if p.before != nil {
			if err := p.before(); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
		}
		used := processCPU
		if gw.cpu != nil && p.kind == benchGatewayPath {
			used = gw.cpu // the gateways' own processes
		}
		stats := writeStats
		if p.stats != nil {
			stats = p.stats
		}
		before, cpu0 := stats(), used()
		var (
			r   loadResult
			err error
		)
		tok := token
		if p.token != "" {
			tok = p.token
		}
		do := p.send
		if do == nil {
			do = send
		}
		labeled("client", func() { r, err = load(ctx, client, p.urls, tok, p.key, do, b.conns, b.dur) })
		if ctx.Err() != nil {
			return errors.New("interrupted") // a shortened load is not a measurement
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		cpu := "-"
		if spent := used() - cpu0; spent > 0 {
			cpu = (spent / time.Duration(r.n)).Round(time.Microsecond).String()
		}
		if ref == 0 {
			ref = r.rate
		}
		journal := "-"
		if p.after != nil {
			p.after(r)
		}
		if after := stats(); p.kind == benchGatewayPath && after.Batches > before.Batches {
			n := float64(after.Batches - before.Batches)
			journal = fmt.Sprintf("%.0f × %.1f", n/b.dur.Seconds(), float64(after.Writes-before.Writes)/n)
		}
		vsFwd := "-"
		switch {
		case p.kind == benchForwardingPath:
			fwdRate = r.rate
		case p.kind == benchGatewayPath && fwdRate > 0:
			vsFwd = fmt.Sprintf("%.2f×", r.rate/fwdRate)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%v\t%v\t%.2f×\t%s\t%s\t%s\t\n", p.name, r.n, r.rate, r.p50.Round(10*time.Microsecond), r.p99.Round(10*time.Microsecond), r.rate/ref, vsFwd, cpu, journal)
	}
	return tw.Flush()
}

// labeled runs f with the profile label part=part, which the goroutines
// f starts keep.
func labeled(part string, f func()) {
	pprof.Do(context.Background(), pprof.Labels("part", part), func(context.Context) { f() })
}

// listenAndServe serves on a new loopback port and returns its URL and a
// stop that ends the serving.
func listenAndServe(serve func(net.Listener) error) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	go serve(ln)
	return "http://" + ln.Addr().String(), func() { ln.Close() }, nil
}

type loadResult struct {
	n        int
	rate     float64
	p50, p99 time.Duration
}

// load sends requests (send) from conns clients for dur, client i to urls[i %
// len(urls)], and measures them; any answer but 200 stops it with an error.
func load(ctx context.Context, client *http.Client, urls []string, token string, key func() string, send func(*http.Client, string, string, string) error, conns int, dur time.Duration) (loadResult, error) {
	var wg sync.WaitGroup
	lat := make([][]time.Duration, conns)
	errs := make([]error, conns)
	start := time.Now()
	end := start.Add(dur)
	for i := range conns {
		wg.Go(func() {
			for time.Now().Before(end) && ctx.Err() == nil {
				t0 := time.Now()
				if err := send(client, urls[i%len(urls)], token, key()); err != nil {
					errs[i] = err
					return
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return loadResult{}, err
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return loadResult{}, errors.New("no request finished")
	}
	return loadResult{n: len(all), rate: float64(len(all)) / elapsed.Seconds(),
		p50: all[len(all)/2], p99: all[len(all)*99/100]}, nil
}

// send sends the bench's invoice under key (benchBodyFor).
func send(client *http.Client, url, token, key string) error {
	return post(client, url, token, key, benchBodyFor(key))
}
