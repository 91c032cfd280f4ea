package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/oncegate/oncegate/adapters/onecodata"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/engine"
	"github.com/oncegate/oncegate/store"
)

// The bench's events (--events N): a gateway of its own, on a journal of
// its own, whose rule makes a receipt in 1C (over OData) of every payment
// YooKassa says succeeded. Notices are posted at N a second, one in ten a
// payment's notice again, as YooKassa repeats one it thinks unanswered;
// each is measured from when it was due to its 200, which comes once the
// notice is on disk. Three loads in turn: the notices alone, new operations
// alone on the same gateway, and both at once — what each costs the other.

// receiptIntent is a firm's own intent: a receipt of money to its bank
// account in 1C (Бухгалтерия over OData), which a payment the shop was
// paid makes in accounting.
const receiptIntent = `name: buh.payment_receipt.create
version: 1
target: buh
scope: write
money: false
title: { ru: Поступление на расчетный счет, en: Bank receipt }
labels:
  payment_id: { ru: Платеж, en: Payment }
  order_id: { ru: Заказ, en: Order }
  organization_id: { ru: Организация, en: Organization }
  customer_id: { ru: Плательщик, en: Payer }
  amount_minor: { ru: Сумма, en: Amount }
  currency: { ru: Валюта, en: Currency }
description: Record in 1C the money a paid order brought to the firm's account.
schema:
  type: object
  additionalProperties: false
  required: [payment_id, order_id, organization_id, customer_id, amount_minor, currency]
  properties:
    payment_id:      { type: string, minLength: 1, maxLength: 64 }
    order_id:        { type: string, minLength: 1, maxLength: 64 }
    organization_id: { type: string, minLength: 1, maxLength: 64 }
    customer_id:     { type: string, minLength: 1, maxLength: 64 }
    amount_minor:    { type: integer, minimum: 1, maximum: 100000000000 }
    currency:        { type: string, enum: [RUB], maxLength: 3 }
references:
  organization_id: organization
  customer_id: counterparty
map:
  entity: Document_ПоступлениеНаРасчетныйСчет
  fields:
    Организация_Key: { ref: organization_id }
    Контрагент_Key: { ref: customer_id }
    СуммаДокумента: { from: amount_minor, money: minor }
    НазначениеПлатежа: { from: payment_id }
    Комментарий: { from: order_id }
`

// receiptRule is the rule: a payment that succeeded makes its receipt.
const receiptRule = `events:
  - source: payments
    on: payment.succeeded
    run: buh.payment_receipt.create
    payload:
      payment_id:      { event: object.id }
      order_id:        { event: object.metadata.order_id }
      organization_id: { value: org-main }
      customer_id:     { event: object.metadata.customer_id }
      amount_minor:    { event: object.amount.value, money: decimal }
      currency:        { event: object.amount.currency }
`

// receiptRun is the intent the rule runs.
const receiptRun = "buh.payment_receipt.create"

// eventsBench is the events gateway and the payments its notices are of.
type eventsBench struct {
	sim      *sim.Server
	simURL   string
	gw       *benchGateways
	token    string
	rate     int
	payments []string // succeeded at the simulator, each notified in turn
	next     int      // the first payment no load has notified yet
	rows     []eventsRow
}

// eventsRow is one load's line of the report.
type eventsRow struct {
	name    string
	notices *noticeResult
	ops     *loadResult
	// receipts: made for the load's payments, each once, drained this
	// long after the load ended.
	receipts int
	drained  time.Duration
}

type noticeResult struct {
	n             int
	rate          float64
	p50, p99, max time.Duration
}

// startEventsBench starts the events gateway in dir, its targets the
// simulators at simURL (s), with rate notices a second to come.
func startEventsBench(ctx context.Context, s *sim.Server, simURL, dir string, rate int) (*eventsBench, error) {
	e := &eventsBench{sim: s, simURL: simURL, rate: rate}
	intents := filepath.Join(dir, "events-intents")
	if err := os.MkdirAll(intents, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(intents, receiptRun+".v1.yaml"), []byte(receiptIntent), 0o600); err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "events.yaml")
	text := fmt.Sprintf("data_dir: %q\nintents_dir: %q\ntargets:\n  buh: { kind: onec_odata, time_zone: Europe/Moscow }\n%s",
		filepath.Join(dir, "events-data"), intents, receiptRule)
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		return nil, err
	}
	cfg, err := config.Load(file, func(string) string { return "" }, yookassa.Currencies())
	if err != nil {
		return nil, err
	}
	cfg.RateLimit.PerSecond, cfg.RateLimit.Burst = 1e9, 1e9 // the limiter is not what is measured
	labeled("gateway", func() {
		e.gw, err = startBenchGateways(ctx, cfg, simURL, filepath.Join(dir, "journal-events.db"), 1, nil)
	})
	if err != nil {
		return e, err
	}
	e.token, _, err = e.gw.stores[0].CreateToken(ctx, "bench-agent", store.Scopes)
	return e, err
}

// pay makes n succeeded payments at the YooKassa simulator, as the shop's
// checkout does, for the loads to come.
func (e *eventsBench) pay(ctx context.Context, n int) error {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	ids := make([]string, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, 32)
	for w := range 32 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				if ids[i], errs[w] = e.payAtShop(client, len(e.payments)+i); errs[w] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("payments at the simulator: %w", err)
	}
	e.payments = append(e.payments, ids...)
	return ctx.Err()
}

// payAtShop makes payment i, of an order of its own, and returns its id.
func (e *eventsBench) payAtShop(client *http.Client, i int) (string, error) {
	order := fmt.Sprintf("order-bench-%d", i)
	body := fmt.Sprintf(`{"amount":{"value":"1250.00","currency":"RUB"},"capture":true,"payment_method_id":"merchant-account-17","metadata":{"order_id":%q,"customer_id":"customer-1042"}}`, order)
	req, err := http.NewRequest(http.MethodPost, e.simURL+"/yookassa/v3/payments", bytes.NewReader([]byte(body)))
	if err != nil {
		return "", err
	}
	req.SetBasicAuth("demo-shop", sim.YooKassaSecret())
	req.Header.Set("Idempotence-Key", "checkout-"+order)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var p struct{ ID, Status string }
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || p.ID == "" || p.Status != "succeeded" {
		return "", fmt.Errorf("a payment: HTTP %d, %q %v", resp.StatusCode, p.Status, err)
	}
	return p.ID, nil
}

// noticeWorkers bound the notices in flight at once: a gateway slower
// than the rate makes notices wait for one, and that wait is measured.
const noticeWorkers = 64

// notices posts notices at e.rate a second for dur, the next payments in
// turn with every tenth notice a repeat of one sent just before, and
// measures each from when it was due. It returns the payments notified.
func (e *eventsBench) notices(ctx context.Context, dur time.Duration) (noticeResult, []string, error) {
	n := int(float64(e.rate) * dur.Seconds())
	unique := n - n/10
	if e.next+unique > len(e.payments) {
		return noticeResult{}, nil, fmt.Errorf("%d payments made for the loads, %d needed", len(e.payments), e.next+unique)
	}
	paid := e.payments[e.next : e.next+unique]
	e.next += unique
	type job struct {
		at      time.Time
		payment string
	}
	jobs := make(chan job, n)
	lat := make([]time.Duration, 0, n)
	var mu sync.Mutex
	var failed atomic.Pointer[error]
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: noticeWorkers, MaxConnsPerHost: noticeWorkers}}
	var wg sync.WaitGroup
	for range noticeWorkers {
		wg.Go(func() {
			for j := range jobs {
				if failed.Load() != nil || ctx.Err() != nil {
					continue
				}
				if err := postPaymentNotice(client, e.gw.urls[0], j.payment); err != nil {
					failed.CompareAndSwap(nil, &err)
					continue
				}
				d := time.Since(j.at)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		})
	}
	start := time.Now()
	interval := time.Second / time.Duration(e.rate)
	u := 0
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		if wait := time.Until(at); wait > 0 {
			time.Sleep(wait)
		}
		p := ""
		if i%10 == 9 && u > 0 {
			p = paid[u-1-i/10%min(u, 7)] // again: one of the last few
		} else {
			p, u = paid[u], u+1
		}
		jobs <- job{at, p}
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)
	if err := failed.Load(); err != nil {
		return noticeResult{}, nil, *err
	}
	if err := ctx.Err(); err != nil {
		return noticeResult{}, nil, err
	}
	slices.Sort(lat)
	return noticeResult{n: len(lat), rate: float64(len(lat)) / elapsed.Seconds(),
		p50: lat[len(lat)/2], p99: lat[len(lat)*99/100], max: lat[len(lat)-1]}, paid[:u], nil
}

// postPaymentNotice posts YooKassa's notification that payment succeeded
// and wants a 200.
func postPaymentNotice(client *http.Client, url, payment string) error {
	body := `{"type":"notification","event":"payment.succeeded","object":{"id":"` + payment + `","status":"succeeded"}}`
	resp, err := client.Post(url+"/v1/events/payments", "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("a notice answered %d: %s", resp.StatusCode, b)
	}
	return nil
}

// receipts waits, at most drainLimit, until every payment has its one
// receipt in 1C (base were there before its load), and returns how long
// that took after the load. More receipts than payments, or a payment
// without its own, is an error.
func (e *eventsBench) receipts(ctx context.Context, paid []string, base int) (time.Duration, error) {
	t0 := time.Now()
	for {
		made := e.sim.EffectsAt(sim.OneCOData) - base
		if made > len(paid) {
			return 0, fmt.Errorf("%d receipts in 1C for %d payments: a notice made a second", made, len(paid))
		}
		if made == len(paid) {
			break
		}
		if time.Since(t0) > drainLimit || ctx.Err() != nil {
			return 0, fmt.Errorf("%d of %d payments have their receipt %v after the notices", made, len(paid), time.Since(t0).Round(time.Second))
		}
		time.Sleep(20 * time.Millisecond)
	}
	drained := time.Since(t0)
	for _, p := range paid {
		key := engine.EventKey("test", receiptRun, "payments", "payment.succeeded-"+p)
		if n := e.sim.Effects(sim.OneCOData, onecodata.RefKey("buh", receiptRun, key)); n != 1 {
			return 0, fmt.Errorf("payment %s has %d receipts in 1C under its notice's key", p, n)
		}
	}
	return drained, nil
}

// drainLimit bounds the wait for the runs after a load.
const drainLimit = 3 * time.Minute

// run loads the events gateway in turn: the notices alone, new operations
// alone, both at once.
func (e *eventsBench) run(ctx context.Context, b benchSetup, newKey func() string) error {
	if err := e.pay(ctx, 2*(int(float64(e.rate)*b.dur.Seconds())+1)); err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: b.conns, MaxConnsPerHost: b.conns}}
	notices := func(name string) (eventsRow, error) {
		base := e.sim.EffectsAt(sim.OneCOData)
		r, paid, err := e.notices(ctx, b.dur)
		if err != nil {
			return eventsRow{}, err
		}
		d, err := e.receipts(ctx, paid, base)
		return eventsRow{name: name, notices: &r, receipts: len(paid), drained: d}, err
	}
	row, err := notices("notices alone")
	if err != nil {
		return err
	}
	e.rows = append(e.rows, row)
	var ops loadResult
	labeled("client", func() { ops, err = load(ctx, client, e.gw.urls, e.token, newKey, send, b.conns, b.dur) })
	if err != nil {
		return err
	}
	e.rows = append(e.rows, eventsRow{name: "new operations alone", ops: &ops})
	var both loadResult
	var bothErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		labeled("client", func() { both, bothErr = load(ctx, client, e.gw.urls, e.token, newKey, send, b.conns, b.dur) })
	})
	row, err = notices("both at once")
	wg.Wait()
	if err = errors.Join(err, bothErr); err != nil {
		return err
	}
	row.ops = &both
	e.rows = append(e.rows, row)
	return nil
}

// report writes the three loads' lines.
func (e *eventsBench) report(w io.Writer) {
	if len(e.rows) == 0 {
		return
	}
	fmt.Fprintf(w, "events: a gateway of its own on a journal of its own; YooKassa's payment.succeeded posted at %d/s, one in ten again, each payment's run a receipt in 1C over OData\n", e.rate)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "load\tnotices\tnotices/s\tp50\tp99\tmax\treceipts (each once)\tlast receipt after\tnew ops/s\tnew p50\tnew p99\t")
	round := func(d time.Duration) string { return d.Round(10 * time.Microsecond).String() }
	for _, r := range e.rows {
		cells := []string{r.name, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-"}
		if n := r.notices; n != nil {
			cells[1], cells[2], cells[3], cells[4], cells[5] = fmt.Sprint(n.n), fmt.Sprintf("%.0f", n.rate), round(n.p50), round(n.p99), round(n.max)
			cells[6], cells[7] = fmt.Sprint(r.receipts), r.drained.Round(time.Millisecond).String()
		}
		if o := r.ops; o != nil {
			cells[8], cells[9], cells[10] = fmt.Sprintf("%.0f", o.rate), round(o.p50), round(o.p99)
		}
		for _, c := range cells {
			fmt.Fprintf(tw, "%s\t", c)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

func (e *eventsBench) stop() {
	if e.gw != nil {
		e.gw.stop()
	}
}
