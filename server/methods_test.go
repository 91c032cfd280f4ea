package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// HTTP's method rules: HEAD wherever GET is served (through the same
// authentication), 405 with Allow for a method a route does not take, and
// OPTIONS answered with Allow — never the 404 of a route that is not there.
func TestMethods(t *testing.T) {
	t.Parallel()
	g := setup(t)
	send := func(method, path, auth string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, g.url+path, strings.NewReader(""))
		if err != nil {
			t.Fatal(err)
		}
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := g.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, c := range []struct {
		method, path, auth string
		status             int
		allow              string
	}{
		{"HEAD", "/healthz", "", 200, ""},
		{"HEAD", "/v1/openapi.json", "", 200, ""},
		{"HEAD", "/v1/intents", g.token, 200, ""},
		{"HEAD", "/v1/intents", "", 401, ""},
		{"HEAD", "/v1/operations/test:invoice.create:none:v1", g.token, 404, ""},
		{"POST", "/v1/intents", g.token, 405, "GET, HEAD, OPTIONS"},
		{"DELETE", "/v1/operations/test:invoice.create:none:v1", g.token, 405, "GET, HEAD, OPTIONS"},
		{"GET", "/v1/operations", g.token, 405, "POST, OPTIONS"},
		{"PUT", "/healthz", "", 405, "GET, HEAD, OPTIONS"},
		{"OPTIONS", "/v1/operations", "", 204, "POST, OPTIONS"},
		{"OPTIONS", "/v1/intents", "", 204, "GET, HEAD, OPTIONS"},
	} {
		resp := send(c.method, c.path, c.auth)
		if resp.StatusCode != c.status || resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s: %d Allow %q, want %d Allow %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), c.status, c.allow)
		}
	}
}
