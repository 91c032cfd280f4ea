package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/store"
)

// The bench's webhook path (--webhooks): new operations on a gateway of
// their own whose every success is a webhook to a receiver in this
// process, beside the same path without webhooks, in one run.

// webhookBench is that gateway and its receiver.
type webhookBench struct {
	gw         *benchGateways
	token      string
	received   atomic.Int64
	stopRecv   func()
	start      time.Time
	atStart    int64
	sent       int // operations the path made
	during     int64
	dur        time.Duration
	drained    time.Duration // after the path, until every delivery arrived
	drainedAll bool
}

// startWebhookBench starts the receiver and a gateway on a journal of its
// own in dir with one endpoint at the receiver hearing operation.succeeded.
func startWebhookBench(ctx context.Context, cfg config.Config, simURL, dir string) (*webhookBench, error) {
	h := &webhookBench{}
	var (
		u   string
		err error
	)
	labeled("receiver", func() {
		u, h.stopRecv, err = listenAndServe(func(ln net.Listener) error {
			return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				h.received.Add(1)
				w.WriteHeader(http.StatusNoContent)
			}))
		})
	})
	if err != nil {
		return nil, err
	}
	cfg.Webhooks = []config.Webhook{{Name: "bench", URL: u + "/hook", SecretEnv: "BENCH_WEBHOOK_SECRET", Events: []string{config.EventOperationSucceeded}}}
	secrets, err := cfg.WebhookSecrets(func(string) string { return "whsec_YmVuY2gncyBvd24gd2ViaG9vayBzZWNyZXQ=" })
	if err != nil {
		return h, err
	}
	labeled("gateway", func() {
		h.gw, err = startBenchGateways(ctx, cfg, simURL, filepath.Join(dir, "journal-webhooks.db"), 1, secrets)
	})
	if err != nil {
		return h, err
	}
	h.token, _, err = h.gw.stores[0].CreateToken(ctx, "bench-agent", store.Scopes)
	return h, err
}

// path is the new-operation path on the webhook gateway.
func (h *webhookBench) path(key func() string) benchPath {
	return benchPath{
		name: "new operation, each a webhook", urls: h.gw.urls, key: key, kind: benchGatewayPath, stats: h.gw.writeStats, token: h.token,
		before: func() error {
			h.start, h.atStart = time.Now(), h.received.Load()
			return nil
		},
		after: func(r loadResult) {
			h.dur, h.during, h.sent = time.Since(h.start), h.received.Load()-h.atStart, r.n
			t0 := time.Now()
			for time.Since(t0) < 30*time.Second && h.received.Load()-h.atStart < int64(r.n) {
				time.Sleep(10 * time.Millisecond)
			}
			h.drained, h.drainedAll = time.Since(t0), h.received.Load()-h.atStart >= int64(r.n)
		},
	}
}

// report says how many webhooks the path's operations made and how fast
// they arrived.
func (h *webhookBench) report(w io.Writer) {
	if h.sent == 0 {
		return
	}
	fmt.Fprintf(w, "webhooks: %d delivered while the path ran (%.0f/s) for %d operations; ", h.during, float64(h.during)/h.dur.Seconds(), h.sent)
	if h.drainedAll {
		fmt.Fprintf(w, "the rest arrived %v after it\n", h.drained.Round(time.Millisecond))
	} else {
		fmt.Fprintf(w, "%d still undelivered %v after it\n", int64(h.sent)-(h.received.Load()-h.atStart), h.drained.Round(time.Millisecond))
	}
}

func (h *webhookBench) stop() {
	if h.gw != nil {
		h.gw.stop()
	}
	if h.stopRecv != nil {
		h.stopRecv()
	}
}
