// Package webhook sends the journal's outbox to the firm's endpoints:
// signed as Standard Webhooks, retried on its schedule for 75 hours, in
// order per operation, never following a redirect.
package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oncegate/oncegate/store"
)

// Endpoint is one receiver.
type Endpoint struct {
	Name    string
	URL     string
	Secrets [][]byte // the current first; two during a rotation
	Timeout time.Duration
}

// Sign is the webhook-signature header of a delivery: one v1 signature,
// the base64 HMAC-SHA256 of "id.timestamp.body", per secret.
func Sign(id string, timestamp int64, body []byte, secrets [][]byte) string {
	sigs := make([]string, 0, len(secrets))
	for _, key := range secrets {
		mac := hmac.New(sha256.New, key)
		fmt.Fprintf(mac, "%s.%d.", id, timestamp)
		mac.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return strings.Join(sigs, " ")
}

// Schedule is how long after each failed attempt the next is made
// (Standard Webhooks' example schedule, after the first try at once):
// the last try comes 75 hours after the first.
var Schedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour,
	10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour}

// PauseAfter is how long an endpoint may fail before it is paused.
const PauseAfter = 5 * 24 * time.Hour

// lease bounds one attempt's hold on a delivery: after it another
// gateway may send it.
const lease = 2 * time.Minute

// Dispatcher sends due deliveries.
type Dispatcher struct {
	store     *store.Store
	endpoints map[string]Endpoint
	client    *http.Client
	log       *slog.Logger
	// Idle is the longest the dispatcher sleeps when nothing is due
	// (deliveries queued here wake it at once; another gateway's are seen
	// within it).
	Idle time.Duration
}

// New is a dispatcher of st's outbox to endpoints.
func New(st *store.Store, endpoints []Endpoint, log *slog.Logger) *Dispatcher {
	d := &Dispatcher{store: st, endpoints: map[string]Endpoint{}, log: log, Idle: time.Second}
	for _, e := range endpoints {
		d.endpoints[e.Name] = e
	}
	d.client = &http.Client{
		// A redirect is not followed: the signed delivery goes where the
		// firm said, or counts as failed.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return d
}

// Run sends deliveries until ctx is done.
func (d *Dispatcher) Run(ctx context.Context) {
	for ctx.Err() == nil {
		batch, err := d.store.TakeDeliveries(ctx, 64, lease)
		if err != nil && ctx.Err() == nil {
			d.log.Warn("webhooks: the outbox could not be read", "err", err)
		}
		tries := make([]store.Tried, len(batch))
		var wg sync.WaitGroup
		for i, del := range batch {
			wg.Go(func() { tries[i] = store.Tried{Delivery: del, Attempt: d.deliver(ctx, del)} })
		}
		wg.Wait()
		d.record(ctx, tries)
		if len(batch) > 0 {
			continue
		}
		select {
		case <-ctx.Done():
		case <-d.store.DeliveriesQueued():
		case <-time.After(d.Idle):
		}
	}
}

// deliver makes one attempt of del and says what it came to, and when
// to try again.
func (d *Dispatcher) deliver(ctx context.Context, del store.Delivery) store.Attempt {
	ep, ok := d.endpoints[del.Endpoint]
	if !ok {
		// An endpoint no longer configured: kept pending, shown, and
		// sent should it come back.
		return store.Attempt{Error: "the endpoint is not in the configuration", Next: d.store.Now().Add(time.Hour)}
	}
	a := d.send(ctx, ep, del)
	now := d.store.Now()
	switch {
	case a.Delivered:
	case a.Gone:
		a.Next = now
	case del.Attempts < len(Schedule):
		wait := Schedule[del.Attempts]
		wait += time.Duration(rand.Int64N(int64(wait)/10 + 1)) // jitter: receivers coming back are not hit at once
		a.Next = now.Add(max(wait, a.Next.Sub(now)))           // a.Next: the receiver's Retry-After
	default:
		a.Next = time.Time{} // the schedule is spent: failed, shown to the admins
	}
	return a
}

// record journals a round's tries, in one write, and pauses an endpoint
// whose delivery has failed for five days.
func (d *Dispatcher) record(ctx context.Context, tries []store.Tried) {
	if len(tries) == 0 {
		return
	}
	if err := d.store.RecordDeliveries(context.WithoutCancel(ctx), tries); err != nil {
		d.log.Warn("webhooks: attempts could not be recorded; the deliveries are sent again", "err", err)
		return
	}
	now := d.store.Now()
	paused := map[string]bool{}
	for _, t := range tries {
		name, a := t.Delivery.Endpoint, t.Attempt
		if a.Delivered || a.Gone || paused[name] || now.Sub(t.Delivery.CreatedAt) <= PauseAfter {
			continue
		}
		if _, ok := d.endpoints[name]; !ok {
			continue
		}
		if err := d.store.StopEndpoint(ctx, name, "paused", "every delivery failed for five days"); err == nil {
			paused[name] = true
			d.log.Warn("webhooks: endpoint paused after five days of failures; resume it in the admin UI", "endpoint", name)
		}
	}
}

// send posts del to ep once. Next, when set, is when the receiver asked
// to be tried again (Retry-After).
func (d *Dispatcher) send(ctx context.Context, ep Endpoint, del store.Delivery) store.Attempt {
	timeout := ep.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, strings.NewReader(string(del.Body)))
	if err != nil {
		return store.Attempt{Error: "the endpoint's URL is not usable"}
	}
	ts := d.store.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "oncegate-webhooks")
	req.Header.Set("webhook-id", del.WebhookID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", Sign(del.WebhookID, ts, del.Body, ep.Secrets))
	resp, err := d.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return store.Attempt{Error: fmt.Sprintf("no answer within %v", timeout)}
		}
		return store.Attempt{Error: "the connection to the endpoint failed"}
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10)) // read a little, show none of it
	a := store.Attempt{Status: resp.StatusCode}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		a.Delivered = true
	case resp.StatusCode == http.StatusGone:
		a.Gone, a.Error = true, "the endpoint answered 410 Gone: deliveries to it are stopped"
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		a.Error = fmt.Sprintf("HTTP %d: a redirect, not followed", resp.StatusCode)
	default:
		a.Error = fmt.Sprintf("HTTP %d", resp.StatusCode)
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			a.Next = d.store.Now().Add(min(time.Duration(s)*time.Second, 24*time.Hour))
		}
	}
	return a
}
