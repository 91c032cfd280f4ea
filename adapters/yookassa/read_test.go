package yookassa_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
)

// unknownID is an id no shop has: YooKassa answers a read of it with an
// error naming the id, 404 not_found or 400 invalid_request.
const unknownID = "2f3b588d-000f-5000-8000-1d6e87c7fbde"

// A read of an id the shop does not have is "no such object" whether
// YooKassa answers it 404 not_found or 400 invalid_request: a look-up
// finds nothing, a check refuses the id the request named, and neither is
// left unknown. A 400 to a list is no "not found".
func TestReadOfUnknownID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		status int
		code   string
	}{
		{http.StatusBadRequest, "invalid_request"},
		{http.StatusNotFound, "not_found"},
	} {
		t.Run(tc.code, func(t *testing.T) {
			t.Parallel()
			s := sim.New()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				param := ""
				for _, p := range []string{"payments", "refunds", "payment_methods"} {
					if strings.HasSuffix(r.URL.Path, "/"+p+"/"+unknownID) {
						param = strings.TrimSuffix(p, "s") + "_id"
					}
				}
				if strings.HasSuffix(r.URL.Path, "/payments") && r.URL.Query().Has("created_at.gte") {
					param = "created_at.gte"
				}
				if r.Method == http.MethodGet && param != "" {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(tc.status)
					json.NewEncoder(w).Encode(map[string]any{"type": "error", "id": "0b9c9ac2-2a70-4d4b-8e56-0c7b1c1d2f5e", "code": tc.code,
						"description": "Incorrect " + param + ". Object doesn't exist or access denied.", "parameter": param})
					return
				}
				s.ServeHTTP(w, r)
			}))
			defer srv.Close()
			c := MustNew(t, yookassa.Config{BaseURL: srv.URL + "/yookassa/v3", ShopID: shopID, SecretKey: sim.YooKassaSecret(), Timeout: 2 * time.Second})

			// A look-up by the id an attempt learned: nothing there.
			op := chargeOp(t, "test:payment.charge:order-unknown:v1", 100)
			op.ObjectID = unknownID
			if _, err := c.Lookup(ctx, op); !errors.Is(err, adapters.ErrNotFound) {
				t.Fatalf("look-up of a payment id the shop does not have: %v, want not found", err)
			}
			rop := refundOp(t, "test:payment.refund:order-unknown:v1", unknownID, 100)
			rop.ObjectID = unknownID
			if _, err := c.Lookup(ctx, rop); !errors.Is(err, adapters.ErrNotFound) {
				t.Fatalf("look-up of a refund id the shop does not have: %v, want not found", err)
			}

			// A check of what the request names: a final refusal naming it.
			_, err := c.Validate(ctx, refundOp(t, "test:payment.refund:order-unknown:v2", unknownID, 100))
			adapterstest.WantError(t, err, adapters.Final, codes.ReferenceNotFound, "payment_id")
			charge := chargeOp(t, "test:payment.charge:order-unknown:v2", 100)
			charge.Payload = payload(t, map[string]any{"account_id": unknownID, "order_id": "order-unknown", "amount_minor": 100, "currency": "RUB"})
			_, err = c.Validate(ctx, charge)
			adapterstest.WantError(t, err, adapters.Final, codes.ReferenceNotFound, "account_id")

			// A person's id typed by hand: no such payment.
			if _, err := c.CheckObject(ctx, chargeOp(t, "test:payment.charge:order-unknown:v3", 100), unknownID); !errors.Is(err, adapters.ErrNotFound) {
				t.Fatalf("check of a payment id the shop does not have: %v, want not found", err)
			}

			// A list the provider refuses to page is no "not found".
			if _, err := c.Lookup(ctx, chargeOp(t, "test:payment.charge:order-unknown:v4", 100)); errors.Is(err, adapters.ErrNotFound) || adapters.ClassOf(err) == adapters.Final {
				t.Fatalf("a refused list page: %v, want an unknown outcome", err)
			}
		})
	}
}
