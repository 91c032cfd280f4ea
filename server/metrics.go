package server

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/redact"
	"github.com/oncegate/oncegate/server/engine"
	"github.com/oncegate/oncegate/store"
)

// metrics are the gateway's Prometheus metrics, in a registry of its own.
type metrics struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec
	decisions  *prometheus.CounterVec
	duplicates *prometheus.CounterVec
	targetCall *prometheus.HistogramVec
}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oncegate_http_requests_total",
			Help: "HTTP requests by route and status code.",
		}, []string{"route", "code"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oncegate_operation_decisions_total",
			Help: "What the journal decided for each submitted operation: execute, resume, replay, in_progress, awaiting_approval, mismatch, foreign, duplicate (blocked by a duplicate rule), refused.",
		}, []string{"intent", "decision"}),
		duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oncegate_duplicate_decisions_total",
			Help: "New keys whose business event a live operation of the same intent already had, by intent and the rule's action: block (refused), hold (waits for a person), warn (went on with a warning).",
		}, []string{"intent", "action"}),
		targetCall: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "oncegate_target_call_seconds",
			Help:    "Duration of calls to target systems by target instance (as the API's target_system names it), call (execute, lookup, validate, read, check_object) and outcome class.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"target", "call", "outcome"}),
	}
	m.reg.MustRegister(m.requests, m.decisions, m.duplicates, m.targetCall,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&journalCollector{s: s})
	return m
}

// observeCall records one target call.
func (m *metrics) observeCall(target, call string, start time.Time, err error) {
	outcome := "ok"
	switch {
	case errors.Is(err, adapters.ErrNotFound):
		outcome = "not_found"
	case err != nil:
		outcome = adapters.ClassOf(err).String()
	}
	m.targetCall.WithLabelValues(target, call, outcome).Observe(time.Since(start).Seconds())
}

// instrumented wraps a target so that every call is measured. It passes
// Validate, OrderStatus, DedupesByKey, ChecksOnExecute, LookupCalls, KeyWindow, ReadTimeout
// and Secrets through when the target has them.
type instrumented struct {
	adapters.Target
	name string // the target instance, the API's target_system
	m    *metrics
}

// Execute implements adapters.Target.
func (t instrumented) Execute(ctx context.Context, op adapters.Op) (adapters.Result, error) {
	start := time.Now()
	res, err := t.Target.Execute(ctx, op)
	t.m.observeCall(t.name, "execute", start, err)
	return res, err
}

// DedupesByKey implements adapters.Deduper for the target inside.
func (t instrumented) DedupesByKey() bool {
	d, ok := t.Target.(adapters.Deduper)
	return ok && d.DedupesByKey()
}

// ChecksOnExecute implements adapters.Rechecker for the target inside.
func (t instrumented) ChecksOnExecute() bool {
	r, ok := t.Target.(adapters.Rechecker)
	return ok && r.ChecksOnExecute()
}

// LookupCalls implements adapters.PagedLookup for the target inside: one call
// when it is no PagedLookup.
func (t instrumented) LookupCalls() int {
	if p, ok := t.Target.(adapters.PagedLookup); ok {
		return p.LookupCalls()
	}
	return 1
}

// KeyWindow implements adapters.Resender for the target inside: 0 when
// it holds its keys for no bounded window of its own.
func (t instrumented) KeyWindow() time.Duration {
	if r, ok := t.Target.(adapters.Resender); ok {
		return r.KeyWindow()
	}
	return 0
}

// ReadTimeout implements adapters.ReadTimer for the target inside: 0 when
// its reads have no timeout of their own.
func (t instrumented) ReadTimeout() time.Duration {
	if r, ok := t.Target.(adapters.ReadTimer); ok {
		return r.ReadTimeout()
	}
	return 0
}

// Secrets implements adapters.Secretive for the target inside.
func (t instrumented) Secrets() []redact.Secret {
	if s, ok := t.Target.(adapters.Secretive); ok {
		return s.Secrets()
	}
	return nil
}

// Lookup implements adapters.Target.
func (t instrumented) Lookup(ctx context.Context, op adapters.Op) (adapters.Result, error) {
	start := time.Now()
	res, err := t.Target.Lookup(ctx, op)
	t.m.observeCall(t.name, "lookup", start, err)
	return res, err
}

// CheckObject implements adapters.ObjectChecker for the target inside; a
// target without a read of an object by its id cannot check one.
func (t instrumented) CheckObject(ctx context.Context, op adapters.Op, id string) (adapters.Result, error) {
	c, ok := t.Target.(adapters.ObjectChecker)
	if !ok {
		return adapters.Result{}, adapters.ErrCannotCheck
	}
	start := time.Now()
	res, err := c.CheckObject(ctx, op, id)
	t.m.observeCall(t.name, "check_object", start, err)
	return res, err
}

// Validate implements engine.Validator; a target without checks of its own has
// nothing to refuse.
func (t instrumented) Validate(ctx context.Context, op adapters.Op) (adapters.Plan, error) {
	v, ok := t.Target.(engine.Validator)
	if !ok {
		return adapters.Plan{Data: map[string]any{}}, nil
	}
	start := time.Now()
	p, err := v.Validate(ctx, op)
	t.m.observeCall(t.name, "validate", start, err)
	return p, err
}

// Read implements adapters.Reader.
func (t instrumented) Read(ctx context.Context, op adapters.Op) (adapters.Result, error) {
	r, ok := t.Target.(adapters.Reader)
	if !ok {
		return adapters.Result{}, errors.New("this target serves no read-only intents")
	}
	start := time.Now()
	res, err := r.Read(ctx, op)
	t.m.observeCall(t.name, "read", start, err)
	return res, err
}

// countRequests is middleware counting every request by route and code.
func (s *Server) countRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		s.metrics.requests.WithLabelValues(route, strconv.Itoa(c.Response().Status)).Inc()
		return nil
	}
}

// handleMetrics serves GET /metrics.
func (s *Server) handleMetrics(c echo.Context) error {
	promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}).ServeHTTP(c.Response(), c.Request())
	return nil
}

// journalCollector reports the journal's state at scrape time.
type journalCollector struct{ s *Server }

var (
	descOperations = prometheus.NewDesc("oncegate_operations", "Operations in the journal by status.", []string{"status"}, nil)
	descApprovals  = prometheus.NewDesc("oncegate_approvals_waiting", "Money operations waiting for a person's decision.", nil, nil)
	descReview     = prometheus.NewDesc("oncegate_operations_needing_review", "Unknown operations flagged for a person's review.", nil, nil)
	descOldest     = prometheus.NewDesc("oncegate_oldest_unresolved_seconds", "Age of the oldest operation that is not final.", nil, nil)
)

// Describe implements prometheus.Collector.
func (j *journalCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descOperations
	ch <- descApprovals
	ch <- descReview
	ch <- descOldest
}

// Collect implements prometheus.Collector.
func (j *journalCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	sum, err := j.s.store.Summarize(ctx)
	if err != nil {
		j.s.log.Warn("metrics: summarize journal", "err", err)
		return
	}
	for _, st := range []string{"awaiting_approval", "started", "succeeded", "failed_retryable", "failed_final", "unknown"} {
		ch <- prometheus.MustNewConstMetric(descOperations, prometheus.GaugeValue, float64(sum.ByStatus[store.Status(st)]), st)
	}
	ch <- prometheus.MustNewConstMetric(descApprovals, prometheus.GaugeValue, float64(sum.ApprovalsWaiting))
	ch <- prometheus.MustNewConstMetric(descReview, prometheus.GaugeValue, float64(sum.NeedsReview))
	age := 0.0
	if !sum.OldestUnresolved.IsZero() {
		age = j.s.store.Now().Sub(sum.OldestUnresolved).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(descOldest, prometheus.GaugeValue, age)
}
