// Package server is the gateway: the Echo app with the agent API, the flow
// that binds each operation key to one effect, and the background work.
package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/static"
	"github.com/oncegate/oncegate/store"
)

// Server is the gateway.
type Server struct {
	cfg     Config
	store   *store.Store
	targets map[string]adapters.Target // by target system: onec, crm, payments
	policy  adapters.RetryPolicy
	owner   string // lease owner id of this run
	log     *slog.Logger
	echo    *echo.Echo

	// inflight counts operations being driven, so shutdown can wait for them.
	inflight work
	// wake pokes the executor when an approval was decided.
	wake chan struct{}
	// limiters bound each agent token's request rate.
	limiters *limiters
	tokens   tokenCache
	finals   finalCache // final rows, for replays
	metrics  *metrics
	plans    planCache // validate mode only
}

// work counts the operations being driven, so that shutdown can wait for
// them. Once shutdown waits, no more start: a sync.WaitGroup must not be
// added to while it is waited on, and a request or look-up that outlived
// the HTTP shutdown's grace would otherwise start one then.
type work struct {
	mu      sync.Mutex
	closed  bool
	running sync.WaitGroup
}

// start counts one more operation being driven, and reports false, counting
// nothing, once shutdown waits.
func (w *work) start() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	w.running.Add(1)
	return true
}

// done ends what start counted.
func (w *work) done() { w.running.Done() }

// closeAndWait refuses new work, then waits for the work running.
func (w *work) closeAndWait() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.running.Wait()
}

// New builds the gateway over an open journal and its targets, keyed by
// target system ("onec", "crm", "payments").
func New(cfg Config, st *store.Store, targets map[string]adapters.Target, log *slog.Logger) *Server {
	buf := make([]byte, 8)
	rand.Read(buf)
	s := &Server{
		cfg:      cfg,
		store:    st,
		targets:  make(map[string]adapters.Target, len(targets)),
		policy:   cfg.RetryPolicy(),
		owner:    "run-" + time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(buf),
		log:      log,
		echo:     echo.New(),
		wake:     make(chan struct{}, 1),
		limiters: newLimiters(cfg.RateLimit),
	}
	s.echo.HideBanner = true
	s.echo.HidePort = true
	s.echo.IPExtractor = clientIP(cfg)
	s.metrics = newMetrics(s)
	// The gateway's own map of the targets, each measured; the caller's
	// map is left as it was given.
	for system, t := range targets {
		s.targets[system] = instrumented{Target: t, m: s.metrics}
	}
	s.finals.stale = s.purgeable
	s.echo.HTTPErrorHandler = s.handleError
	s.echo.Use(s.countRequests, s.recoverPanics)
	if cfg.TLS.Enabled() {
		s.echo.Use(strictTransport)
	}
	s.routes()
	return s
}

// strictTransport tells browsers to come back over HTTPS only (HSTS), for
// a gateway that serves HTTPS itself.
func strictTransport(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set(echo.HeaderStrictTransportSecurity, "max-age=31536000")
		return next(c)
	}
}

// clientIP is how the client's address is read: the connection's peer,
// or X-Forwarded-For when the peer is one of the configured trusted
// proxies. A header from anyone else is never believed.
func clientIP(cfg Config) echo.IPExtractor {
	nets, _ := cfg.ProxyNets() // checked by Validate
	if len(nets) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, n := range nets {
		opts = append(opts, echo.TrustIPRange(n))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}

// Owner is this run's id, the prefix of every lease it takes.
func (s *Server) Owner() string { return s.owner }

// leaseOwner is a fresh owner for one claim of a lease: this run's id and
// a random suffix. Every transition of the claim names it, so a driver
// whose lease expired and was taken again, even by another driver of this
// run, can no longer change the row.
func (s *Server) leaseOwner() string {
	buf := make([]byte, 6)
	rand.Read(buf)
	return s.owner + "/" + hex.EncodeToString(buf)
}

// Handler is the HTTP handler of the gateway.
func (s *Server) Handler() http.Handler { return s.echo }

func (s *Server) routes() {
	s.echo.GET("/healthz", s.handleHealth)
	s.echo.GET("/readyz", s.handleReady)
	s.echo.GET("/v1/openapi.json", s.handleOpenAPI)
	s.echo.GET("/metrics", s.handleMetrics)
	s.echo.GET("/", s.handleHome)
	s.echo.StaticFS("/static", static.FS)
	admin.New(admin.Deps{Store: s.store, Log: s.log, Wake: s.Wake, ReconcileNow: s.ReconcileNow, Contour: s.cfg.Contour,
		Secure: s.cfg.TLS.Enabled(), ClientIP: s.echo.IPExtractor}).Register(s.echo)

	v1 := s.echo.Group("/v1", s.authenticate, s.rateLimit)
	v1.POST("/operations", s.handleOperationCreate)
	v1.GET("/operations/:key", s.handleOperationGet)
	v1.GET("/intents", s.handleIntentList)

	// MCP: the same contract as tools; each call goes through /v1 above,
	// rate limited once, here.
	s.echo.Any("/mcp", s.mcpHandler(), s.authenticate, s.rateLimit)
}

// Start prepares the journal for this run: rows left started by a
// previous run, which is known dead, become unknown so they are
// reconciled at once instead of waiting for their leases to expire.
func (s *Server) Start(ctx context.Context) error {
	n, err := s.store.OrphanLeases(ctx, s.owner)
	if err != nil {
		return err
	}
	if n > 0 {
		s.log.Warn("operations left in flight by a previous run are now unknown and will be reconciled", "count", n)
	}
	return nil
}

// Serve answers on ln until ctx is done, then shuts down gracefully: it
// stops accepting, lets requests in progress finish (each settles its
// operation in the journal), and returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.echo,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	workCtx, stopWork := context.WithCancel(context.Background())
	waitWorkers := s.runWorkers(workCtx)
	errc := make(chan error, 1)
	if s.cfg.TLS.Enabled() {
		hs.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		go func() { errc <- hs.ServeTLS(ln, s.cfg.TLS.CertFile, s.cfg.TLS.KeyFile) }()
	} else {
		go func() { errc <- hs.Serve(ln) }()
	}
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	// Stop accepting; requests in progress finish and settle their
	// operations; workers finish their current item; then wait for the
	// drives in flight, starting no more (a request that outlived the
	// grace answers in progress, and the next run reconciles its row).
	shutdownCtx, cancel := context.WithTimeout(context.Background(), s.maxLease())
	defer cancel()
	if serr := hs.Shutdown(shutdownCtx); err == nil {
		err = serr
	}
	stopWork()
	waitWorkers()
	s.inflight.closeAndWait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// recoverPanics turns a panic in a handler into a 500 with a safe message.
func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return next(c)
	}
}

func (s *Server) encodeJSON(c echo.Context, v any) error {
	enc := json.NewEncoder(c.Response())
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func itoa(n int) string { return strconv.Itoa(n) }
