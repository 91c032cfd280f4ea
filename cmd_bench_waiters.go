package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The bench's waiting agents (--waiters N): N agents hold
// GET /v1/operations/{key}?wait=60s on charges waiting for approval while
// new operations are loaded, beside the same path without them, in one
// run: what waiting without polling costs the gateway.

// waiterBench is the agents and what they cost.
type waiterBench struct {
	n        int
	keys     []string
	client   *http.Client
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	polls    atomic.Int64 // long-polls answered
	failed   atomic.Int64 // long-polls that did not answer 200
	rssIdle  int64        // before the agents wait, bytes
	rssWait  int64        // while they wait
	prepared bool
}

// prepare makes n charges wait for approval (the keys the agents wait on).
func (w *waiterBench) prepare(url, token, run string) error {
	for i := range w.n {
		key := fmt.Sprintf("test:payment.charge:bench-%s-wait-%d:v1", run, i)
		body := fmt.Sprintf(`{"schema_version":"1.0","intent":"payment.charge","payload":{"account_id":"merchant-account-17","order_id":"bench-%s-wait-%d","amount_minor":5000,"currency":"RUB"}}`, run, i)
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/operations", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Idempotency-Key", key)
		resp, err := w.client.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			return fmt.Errorf("a charge to wait on: HTTP %d", resp.StatusCode)
		}
		w.keys = append(w.keys, key)
	}
	w.prepared = true
	return nil
}

// start has every agent hold a long-poll, again each time one answers,
// until stop; it returns once all are held.
func (w *waiterBench) start(url, token string) {
	w.rssIdle = rss()
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	for _, key := range w.keys {
		w.wg.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/operations/"+key+"?wait=60s", nil)
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := w.client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						w.failed.Add(1)
						time.Sleep(100 * time.Millisecond)
					}
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					w.failed.Add(1)
				}
				w.polls.Add(1)
			}
		})
	}
	time.Sleep(time.Second) // every poll held
	w.rssWait = rss()
}

// stop ends the waiting.
func (w *waiterBench) stop() {
	if w.cancel != nil {
		w.cancel()
		w.wg.Wait()
		w.cancel = nil
	}
}

// report says what the waiting cost in memory, and whether it held.
func (w *waiterBench) report(out io.Writer) {
	if !w.prepared {
		return
	}
	fmt.Fprintf(out, "%d agents long-polling: RSS %.1f MB before they waited, %.1f MB while they waited (the load client's connections included); %d polls answered early, %d failed\n",
		w.n, float64(w.rssIdle)/(1<<20), float64(w.rssWait)/(1<<20), w.polls.Load(), w.failed.Load())
}

// rss is this process's resident memory in bytes, 0 where unknown.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}
