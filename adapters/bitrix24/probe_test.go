package bitrix24_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/bitrix24"
	"github.com/oncegate/oncegate/adapters/codes"
)

func TestProbe(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		_, c, _ := setup(t)
		got, err := c.Probe(context.Background())
		if err != nil {
			t.Fatalf("probe of the simulator: %v", err)
		}
		// The simulator seeds three contacts marked with the originator.
		if !strings.Contains(got, "3 carry ORIGINATOR_ID") {
			t.Fatalf("probe = %q", got)
		}
	})
	t.Run("ErrCredentials", func(t *testing.T) {
		srv := httptest.NewServer(newSim())
		defer srv.Close()
		// User 0 has no webhook: the portal answers 401 NO_AUTH_FOUND.
		c, err := bitrix24.New(bitrix24.Config{WebhookURL: srv.URL + "/bitrix24/rest/0/" + secret + "/", Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Probe(context.Background())
		var e *adapters.Error
		if !errors.As(err, &e) || e.Code != codes.TargetPermissionDenied {
			t.Fatalf("err = %v, want %s", err, codes.TargetPermissionDenied)
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("the error quotes the webhook's secret: %v", err)
		}
	})
}
