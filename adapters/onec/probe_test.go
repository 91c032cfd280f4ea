package onec_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

func TestProbe(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		_, c, url := setup(t, time.Second)
		if _, err := c.Probe(context.Background()); err != nil {
			t.Fatalf("probe of the simulator: %v", err)
		}
		resp, err := http.Get(url + "/_sim/effects")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var effects map[string]map[string]int
		if err := json.NewDecoder(resp.Body).Decode(&effects); err != nil || len(effects["onec"]) != 0 {
			t.Fatalf("the probe left effects: %v %v", effects, err)
		}
	})
	// 1C refusing the user, and a publication that is not the service.
	for _, tc := range []struct {
		name   string
		status int
		code   string
	}{
		{"ErrUser", http.StatusUnauthorized, codes.TargetPermissionDenied},
		{"ErrNotPublished", http.StatusNotFound, codes.TargetNotPublished},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet {
					t.Errorf("the probe sent %s", r.Method)
				}
				w.WriteHeader(tc.status)
			}))
			defer ts.Close()
			_, err := MustNew(t, ts.URL+"/accounting", time.Second).Probe(context.Background())
			var e *adapters.Error
			if !errors.As(err, &e) || e.Code != tc.code {
				t.Fatalf("err = %v, want %s", err, tc.code)
			}
		})
	}
}
