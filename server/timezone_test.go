package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// The configuration's time_zone is where the admin pages show times: the
// gateway's machine may run in UTC while the people who decide are in
// Moscow.
func TestAdminPagesInConfiguredTimeZone(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.TimeZone = "Asia/Vladivostok"
	g := setupWith(t, cfg)
	resp, err := g.client.Get(g.url + "/admin/login")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "UTC+10:00") {
		t.Fatalf("the sign-in page (%d) does not name the configured zone:\n%s", resp.StatusCode, body)
	}
}
