package server_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/server"
	"github.com/oncegate/oncegate/store"
)

// A revoked token stops working within server.TokenCacheTTL, also when it
// is revoked by another process (the CLI) through its own journal handle.
func TestRevokedTokenStopsWithinTheBound(t *testing.T) {
	t.Parallel()
	g := setup(t)
	secret := g.MustToken("agent-revoked", "read")
	if r := g.do("GET", "/v1/intents", secret, nil, nil); r.Code != http.StatusOK {
		t.Fatalf("a valid token: %d %s", r.Code, r.Raw)
	}

	cli, err := store.Open(context.Background(), filepath.Join(filepath.Dir(g.store.Path()), "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	revoked := time.Now()
	if n, err := cli.RevokeToken(context.Background(), "agent-revoked"); err != nil || n != 1 {
		t.Fatalf("revoke: %d %v", n, err)
	}
	// Past the bound the token is refused on every request.
	for time.Since(revoked) <= server.TokenCacheTTL {
		time.Sleep(50 * time.Millisecond)
	}
	for range 3 {
		r := g.do("GET", "/v1/intents", secret, nil, nil)
		expect(t, r, http.StatusUnauthorized, "rejected", "UNAUTHENTICATED")
	}
	// Other tokens are unaffected.
	if r := g.do("GET", "/v1/intents", g.token, nil, nil); r.Code != http.StatusOK {
		t.Fatalf("another token after the revocation: %d %s", r.Code, r.Raw)
	}
}

// Every 401 says how to authenticate and why it failed (RFC 6750): the
// agent API and the MCP endpoint alike, so an MCP client shows the
// gateway's reason instead of starting an OAuth flow.
func TestUnauthenticatedChallenge(t *testing.T) {
	t.Parallel()
	g := setup(t)
	for _, c := range []struct {
		name, method, path, auth, wantErr string
	}{
		{"NoToken", "POST", "/v1/operations", "", `error="invalid_request"`},
		{"NotBearer", "GET", "/v1/intents", "Basic dXNlcjpwYXNz", `error="invalid_request"`},
		{"UnknownToken", "GET", "/v1/intents", "Bearer og_not-a-token", `error="invalid_token"`},
		{"MCPNoToken", "POST", "/mcp", "", `error="invalid_request"`},
		{"MCPUnknownToken", "POST", "/mcp", "Bearer og_not-a-token", `error="invalid_token"`},
	} {
		req, err := http.NewRequest(c.method, g.url+c.path, strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := g.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := resp.Header.Get("WWW-Authenticate")
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(got, "Bearer ") || !strings.Contains(got, c.wantErr) || !strings.Contains(got, `error_description="`) {
			t.Errorf("%s: %d, WWW-Authenticate %q; want 401 with a Bearer challenge holding %s and a description", c.name, resp.StatusCode, got, c.wantErr)
		}
		if strings.Contains(got, "og_not-a-token") {
			t.Errorf("%s: the challenge repeats the token: %q", c.name, got)
		}
	}
}
