// Package adapterstest gives tests the gateway's three built-in targets —
// 1C, Bitrix24 and YooKassa — as real adapters talking over loopback to
// the simulators, and the assertions and payloads tests of several
// packages share. Tests of the server and of the engine set up their
// targets with Start alone.
package adapterstest

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/bitrix24"
	"github.com/oncegate/oncegate/adapters/onec"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
)

// Timeouts are the call timeouts of the three targets; zero is the
// adapter's own default.
type Timeouts struct {
	OneC, CRM, Payments time.Duration
}

// Simulated is the simulators on loopback and the targets built to talk
// to them.
type Simulated struct {
	Sim *sim.Server
	URL string // the simulators' base URL
	// Targets are the adapters by the default configuration's instance
	// names: onec (1C), crm (Bitrix24), payments (YooKassa).
	Targets map[string]adapters.Target
}

// ShopID is the YooKassa shop the targets act for, as in the default
// configuration.
const ShopID = "demo-shop"

// Start serves a new set of simulators over loopback, closed when tb
// ends, and builds the three targets at them with timeouts and the
// simulators' own credentials: what serve builds for a configuration that
// points at no real system. The Bitrix24 portal does not pace requests:
// its rate limit is tested with the adapter and the binary, not in every
// test that needs a CRM.
func Start(tb testing.TB, timeouts Timeouts) Simulated {
	tb.Helper()
	s := sim.New()
	portal := sim.DefaultBitrix24Portal()
	portal.PerSecond = 0
	s.SetBitrix24Portal(portal)
	hs := httptest.NewServer(s)
	tb.Cleanup(hs.Close)
	url := hs.URL

	one, err := onec.New(onec.Config{BaseURL: url + "/onec", Timeout: timeouts.OneC})
	if err != nil {
		tb.Fatal(err)
	}
	crm, err := bitrix24.New(bitrix24.Config{WebhookURL: url + "/bitrix24" + sim.Bitrix24WebhookPath(), Timeout: timeouts.CRM})
	if err != nil {
		tb.Fatal(err)
	}
	pay, err := yookassa.New(yookassa.Config{BaseURL: url + "/yookassa/v3", ShopID: ShopID, SecretKey: sim.YooKassaSecret(), Timeout: timeouts.Payments})
	if err != nil {
		tb.Fatal(err)
	}
	return Simulated{Sim: s, URL: url, Targets: map[string]adapters.Target{"onec": one, "crm": crm, "payments": pay}}
}

// Inject arms a fault at the simulators, failing tb if it cannot be.
func (s Simulated) Inject(tb testing.TB, f sim.Fault) {
	tb.Helper()
	if err := s.Sim.Inject(f); err != nil {
		tb.Fatal(err)
	}
}

// WantError asserts that err is an *adapters.Error of class, code and
// field with a message safe to show, in which none of secrets appears,
// and returns it.
func WantError(tb testing.TB, err error, class adapters.Class, code, field string, secrets ...string) *adapters.Error {
	tb.Helper()
	var e *adapters.Error
	if !errors.As(err, &e) {
		tb.Fatalf("err = %v (%T), want *adapters.Error %s %s", err, err, class, code)
	}
	if e.Class != class || e.Code != code || e.Field != field {
		tb.Fatalf("err = %s/%s/%q, want %s/%s/%q (%v)", e.Class, e.Code, e.Field, class, code, field, err)
	}
	if e.Message == "" {
		tb.Fatalf("err %v has no safe message", err)
	}
	for _, secret := range secrets {
		for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
			if strings.Contains(s, secret) {
				tb.Fatalf("the error leaks a secret: %s", s)
			}
		}
	}
	return e
}

// WantFinal asserts that err is a Final *adapters.Error of code, with no
// field, whose message says each of words, and returns it.
func WantFinal(tb testing.TB, err error, code string, words ...string) *adapters.Error {
	tb.Helper()
	e := WantError(tb, err, adapters.Final, code, "")
	for _, w := range words {
		if !strings.Contains(e.Message, w) {
			tb.Fatalf("message %q does not say %q", e.Message, w)
		}
	}
	return e
}

// InvoicePayload is the payload of an invoice.create for order: quantity
// pieces of product-778 at 625.00 roubles, billed by org-main to
// customer-1042.
func InvoicePayload(order string, quantity float64) map[string]any {
	return map[string]any{
		"order_id": order, "organization_id": "org-main", "customer_id": "customer-1042", "currency": "RUB",
		"items": []any{map[string]any{"product_id": "product-778", "quantity": quantity, "unit": "pcs", "price_minor": 62500}},
	}
}
