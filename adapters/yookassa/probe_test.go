package yookassa_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/yookassa"
)

func TestProbe(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		// The simulator has no /me: the probe reads the payments list.
		f := setup(t)
		if _, err := f.client.Probe(context.Background()); err != nil {
			t.Fatalf("probe of the simulator: %v", err)
		}
	})
	t.Run("ErrSecret", func(t *testing.T) {
		f := setup(t)
		c := MustNew(t, yookassa.Config{BaseURL: f.url, ShopID: "shop-1", SecretKey: "wrong-secret-value", Timeout: time.Second})
		_, err := c.Probe(context.Background())
		var e *adapters.Error
		if !errors.As(err, &e) || e.Code != codes.TargetPermissionDenied {
			t.Fatalf("err = %v, want %s", err, codes.TargetPermissionDenied)
		}
		if strings.Contains(err.Error(), "wrong-secret-value") {
			t.Fatalf("the error quotes the secret: %v", err)
		}
	})
	// GET /v3/me as YooKassa answers it (the simulator lacks the route).
	me := func(body string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet || r.URL.Path != "/v3/me" {
				http.NotFound(w, r)
				return
			}
			if _, pass, _ := r.BasicAuth(); pass != "live-secret" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(body))
		}))
	}
	t.Run("OKMe", func(t *testing.T) {
		ts := me(`{"account_id":"506751","test":true,"status":"enabled","fiscalization_enabled":false}`)
		defer ts.Close()
		got, err := MustNew(t, yookassa.Config{BaseURL: ts.URL + "/v3", ShopID: "506751", SecretKey: "live-secret"}).Probe(context.Background())
		if err != nil || !strings.Contains(got, "shop 506751, a test shop") {
			t.Fatalf("probe = %q, %v", got, err)
		}
	})
	t.Run("ErrShopDisabled", func(t *testing.T) {
		ts := me(`{"account_id":"506751","test":false,"status":"disabled"}`)
		defer ts.Close()
		_, err := MustNew(t, yookassa.Config{BaseURL: ts.URL + "/v3", ShopID: "506751", SecretKey: "live-secret"}).Probe(context.Background())
		if err == nil || !strings.Contains(err.Error(), `"disabled"`) {
			t.Fatalf("err = %v, want the shop's status", err)
		}
	})
	t.Run("ErrNotTheAPI", func(t *testing.T) {
		ts := me(`{}`)
		defer ts.Close()
		_, err := MustNew(t, yookassa.Config{BaseURL: ts.URL + "/v2", ShopID: "506751", SecretKey: "live-secret"}).Probe(context.Background())
		var e *adapters.Error
		if !errors.As(err, &e) || e.Code != codes.TargetNotPublished {
			t.Fatalf("err = %v, want %s", err, codes.TargetNotPublished)
		}
	})
}
