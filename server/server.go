// Package server is the gateway's HTTP side: the Echo app with the agent
// API, its single error path and OpenAPI document, authentication, the
// admin UI and the MCP endpoint, over the operation engine
// (server/engine) that binds each operation key to one effect and runs
// the background work.
package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/engine"
	"github.com/oncegate/oncegate/server/intent"
	"github.com/oncegate/oncegate/server/notify"
	"github.com/oncegate/oncegate/server/webhook"
	"github.com/oncegate/oncegate/static"
	"github.com/oncegate/oncegate/store"
)

// Server is the gateway.
type Server struct {
	cfg     config.Config
	store   *store.Store
	targets map[string]adapters.Target // by target system: onec, crm, payments
	engine  *engine.Engine
	catalog *intent.Catalog // the whitelist
	openapi openAPICache
	log     *slog.Logger
	echo    *echo.Echo

	// limiters bound each agent token's request rate.
	limiters *limiters
	tokens   tokenCache
	metrics  *metrics
	// stopping is closed when shutdown begins: long-polls answer then.
	stopping chan struct{}
	// webhooks sends the outbox while the gateway serves (SetWebhookSecrets).
	webhooks *webhook.Dispatcher
	// events are the rules of events in, and sources the targets whose
	// notices they run on, by name (events.go).
	events  []*intent.EventRule
	sources map[string]*eventSource
}

// New builds the gateway over an open journal and its targets, keyed by
// target system ("onec", "crm", "payments"), serving the intents of the
// loaded catalog.
func New(cfg config.Config, st *store.Store, targets map[string]adapters.Target, catalog *intent.Catalog, log *slog.Logger) *Server {
	s := &Server{
		cfg:      cfg,
		store:    st,
		catalog:  catalog,
		targets:  make(map[string]adapters.Target, len(targets)),
		log:      log,
		echo:     echo.New(),
		limiters: newLimiters(cfg.RateLimit),
		stopping: make(chan struct{}),
	}
	s.echo.HideBanner = true
	s.echo.HidePort = true
	s.echo.IPExtractor = clientIP(cfg)
	s.metrics = newMetrics(s)
	// The gateway's own map of the targets, each measured; the caller's
	// map is left as it was given.
	for system, t := range targets {
		s.targets[system] = instrumented{Target: t, name: system, m: s.metrics}
	}
	// serve refuses a configuration whose rules do not check
	// (loadCatalog); a rule that does not is left out here.
	s.events, _ = catalog.CheckEvents(cfg.Events, cfg.File())
	ecfg := engineConfig(cfg, catalog, s.metrics)
	s.sources, ecfg.Sources = s.eventSources(targets)
	ecfg.Events = s.events
	s.engine = engine.New(ecfg, st, s.targets, log)
	if len(cfg.Webhooks) > 0 {
		st.SetOutbox(s.outbox())
	}
	s.echo.HTTPErrorHandler = s.handleError
	if st.Pipelined() {
		// Only where commits return before their fsync: elsewhere a read
		// never sees what the disk does not hold, and replays skip the cost.
		s.echo.Use(s.settleReads)
	}
	s.echo.Use(s.countRequests, s.recoverPanics)
	if cfg.TLS.Enabled() {
		s.echo.Use(strictTransport)
	}
	s.routes()
	return s
}

// engineConfig is what the engine needs of cfg and the catalog; its
// decisions are counted in m.
func engineConfig(cfg config.Config, catalog *intent.Catalog, m *metrics) engine.Config {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	targets := make(map[string]engine.TargetConfig, len(cfg.Targets))
	for name, t := range cfg.Targets {
		targets[name] = engine.TargetConfig{Timeout: ms(t.TimeoutMS), Settle: ms(t.SettleMS), Retention: cfg.TargetRetention(name)}
	}
	return engine.Config{
		Contour:           cfg.Contour,
		Retry:             cfg.RetryPolicy(),
		Targets:           targets,
		Retention:         time.Duration(cfg.Retention.Default),
		ReconcileInterval: ms(cfg.Reconciler.IntervalMS),
		MaxBackoff:        ms(cfg.Reconciler.MaxBackoffMS),
		ReviewAfter:       cfg.Reconciler.ReviewAfter,
		ApprovalTTL:       time.Duration(cfg.Approval.TTL),
		Catalog:           catalog,
		OnDecision: func(intent string, d store.Decision) {
			m.decisions.WithLabelValues(intent, d.String()).Inc()
		},
		OnDuplicate: func(intent, action string) {
			m.duplicates.WithLabelValues(intent, action).Inc()
		},
	}
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
func clientIP(cfg config.Config) echo.IPExtractor {
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
func (s *Server) Owner() string { return s.engine.Owner() }

// Wake tells the executor that an approval was decided.
func (s *Server) Wake() { s.engine.Wake() }

// ReconcileNow looks one unknown operation up at its target at once, as a
// person asked from the admin UI; the actor in ctx is audited.
func (s *Server) ReconcileNow(ctx context.Context, key string) (store.Operation, error) {
	return s.engine.ReconcileNow(ctx, key)
}

// Handler is the HTTP handler of the gateway.
func (s *Server) Handler() http.Handler { return s.echo }

func (s *Server) routes() {
	s.get(s.echo, "", "/healthz", s.handleHealth)
	s.get(s.echo, "", "/readyz", s.handleReady)
	s.get(s.echo, "", "/v1/openapi.json", s.handleOpenAPI)
	s.get(s.echo, "", "/metrics", s.handleMetrics)
	s.get(s.echo, "", "/", s.handleHome)
	s.echo.StaticFS("/static", static.FS)
	admin.New(admin.Deps{Store: s.store, Catalog: s.catalog, Log: s.log, Wake: s.engine.Wake, ReconcileNow: s.engine.ReconcileNow, CheckObject: s.engine.CheckObject, Process: s.engine.ProcessOf, ProcessOfStep: s.engine.ProcessOfStep, Webhooks: adminWebhooks(s.cfg.Webhooks), Contour: s.cfg.Contour,
		TargetKinds: targetKinds(s.cfg.Targets), ShopNames: shopNames(s.cfg.Targets), Describers: s.describers(), Secure: s.cfg.TLS.Enabled(), ClientIP: s.echo.IPExtractor, Redactor: s.engine.Redactor(),
		EventSources: ruleSources(s.events), Location: s.cfg.Location(),
		Channels: notify.Channels(s.cfg.Notify), TelegramBot: strings.TrimPrefix(s.cfg.Notify.Telegram.BotName, "@")}).Register(s.echo)

	// A source's notices come without a bearer token (events.go).
	s.echo.POST("/v1/events/:source", s.handleEvent)
	s.only("/v1/events/:source", http.MethodPost)

	v1 := s.echo.Group("/v1", s.authenticate, s.rateLimit)
	v1.POST("/operations", s.handleOperationCreate)
	s.only("/v1/operations", http.MethodPost)
	s.get(v1, "/v1", "/operations/:key", s.handleOperationGet)
	s.get(v1, "/v1", "/intents", s.handleIntentList)

	// MCP: the same contract as tools; each call goes through /v1 above,
	// rate limited once, here. A browser page of another origin is
	// refused before anything else.
	s.echo.Any("/mcp", s.mcpHandler(), mcpOrigin, s.authenticate, s.rateLimit)
	s.routeOAuthDiscovery()
}

// router is what routes are added to: the Echo app or a group of it.
type router interface {
	Add(method, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route
}

// otherMethods are the methods a route may be asked with besides its own.
var otherMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

// get serves h on GET and HEAD of path in r, whose paths start with
// prefix (HTTP requires HEAD wherever GET is served; the server sends no
// body for it), and answers the other methods as only does. r's
// middleware (authentication) applies to GET and HEAD alone.
func (s *Server) get(r router, prefix, path string, h echo.HandlerFunc) {
	r.Add(http.MethodGet, path, h)
	r.Add(http.MethodHead, path, h)
	s.only(prefix+path, http.MethodGet, http.MethodHead)
}

// only answers every method of path but allowed with 405 and Allow, and
// OPTIONS with 204 and Allow, before any authentication: what a route
// accepts is no secret (the OpenAPI document says it).
func (s *Server) only(path string, allowed ...string) {
	allow := strings.Join(append(allowed, http.MethodOptions), ", ")
	for _, m := range otherMethods {
		if slices.Contains(allowed, m) {
			continue
		}
		s.echo.Add(m, path, func(c echo.Context) error {
			c.Response().Header().Set(echo.HeaderAllow, allow)
			if c.Request().Method == http.MethodOptions {
				return c.NoContent(http.StatusNoContent)
			}
			return echo.ErrMethodNotAllowed
		})
	}
}

// Start prepares the journal for this run: rows left started by a
// previous run, which is known dead, become unknown so they are
// reconciled at once instead of waiting for their leases to expire.
func (s *Server) Start(ctx context.Context) error { return s.engine.Start(ctx) }

// maxHeaderBytes bounds a request's header (net/http allows 4 KiB more):
// the API's headers are a token, a key and a few standard ones, and a
// browser's for the admin UI a session and its cookies, all far below;
// net/http's default, 1 MiB, would let every open connection buffer that
// much.
const maxHeaderBytes = 16 << 10

// Serve answers on ln, holding at most max_connections open at once,
// until ctx is done, then shuts down gracefully: it stops accepting, lets
// requests in progress finish (each settles its operation in the
// journal), and returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.echo,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	// One listener serves everything, so one limit bounds every
	// connection; one beyond it is answered 503, over TLS when the
	// gateway speaks it (the limit counts TCP connections, under TLS).
	var refusalTLS *tls.Config
	if s.cfg.TLS.Enabled() {
		cert, err := tls.LoadX509KeyPair(s.cfg.TLS.CertFile, s.cfg.TLS.KeyFile)
		if err != nil {
			return fmt.Errorf("tls: %w", err)
		}
		hs.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
		refusalTLS = hs.TLSConfig.Clone()
		refusalTLS.NextProtos = []string{"http/1.1"} // the refusal speaks HTTP/1.1
	}
	var stopOnce sync.Once
	hs.RegisterOnShutdown(func() { stopOnce.Do(func() { close(s.stopping) }) })
	if s.cfg.MaxConnections > 0 { // 0 only in a Config not from config.Load
		ln = limitConnections(ln, s.cfg.MaxConnections, s.busyAnswer(), refusalTLS, s.log)
	}
	workCtx, stopWork := context.WithCancel(context.Background())
	waitWorkers := s.engine.Run(workCtx)
	var dispatching sync.WaitGroup
	if s.webhooks != nil {
		dispatching.Go(func() { s.webhooks.Run(workCtx) })
	}
	errc := make(chan error, 1)
	if s.cfg.TLS.Enabled() {
		go func() { errc <- hs.ServeTLS(ln, "", "") }() // the certificate is in TLSConfig
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
	shutdownCtx, cancel := context.WithTimeout(context.Background(), s.engine.MaxLease())
	defer cancel()
	if serr := hs.Shutdown(shutdownCtx); err == nil {
		err = serr
	}
	stopWork()
	waitWorkers()
	dispatching.Wait()
	s.engine.Drain()
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

// settleReads holds every answer made from a read of the journal until
// what the read could see is on disk (store.Settle): a replay, a status,
// an admin page never shows a commit a power loss could still take back.
// When the journal cannot say (its WAL failed to sync, the client left),
// the connection is dropped unanswered rather than answered with what may
// not last — unless the answer reads nothing (store.AnswerReadsNothing:
// that the journal failed), which goes at once.
func (s *Server) settleReads(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := store.MarkReads(c.Request().Context())
		c.SetRequest(c.Request().WithContext(ctx))
		c.Response().Before(func() {
			if err := s.store.Settle(ctx); err != nil {
				panic(http.ErrAbortHandler)
			}
		})
		return next(c)
	}
}

func (s *Server) encodeJSON(c echo.Context, v any) error {
	enc := json.NewEncoder(c.Response())
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func itoa(n int) string { return strconv.Itoa(n) }

// ruleSources are the sources the rules of events run on, each once, in
// order: the admin UI's events page filters by them.
func ruleSources(rules []*intent.EventRule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Source)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// targetKinds are the configured target instances' kinds, by name.
func targetKinds(ts config.TargetsConfig) map[string]string {
	out := make(map[string]string, len(ts))
	for name, t := range ts {
		if t != nil {
			out[name] = t.Kind
		}
	}
	return out
}

// shopNames are the names the configuration gives the shops payments go
// to, by target instance.
func shopNames(ts config.TargetsConfig) map[string]string {
	out := map[string]string{}
	for name, t := range ts {
		if t != nil && t.ShopName != "" {
			out[name] = t.ShopName
		}
	}
	return out
}

// describers are the targets that can say who an id names, by instance.
func (s *Server) describers() map[string]adapters.Describer {
	out := map[string]adapters.Describer{}
	for name, t := range s.targets {
		if def, ok := t.(instrumented); ok {
			t = def.Target
		}
		if d, ok := t.(adapters.Describer); ok {
			out[name] = d
		}
	}
	return out
}
