package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/sim"
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

// Two Authorization lines are ambiguous — proxies and servers disagree on
// which one counts — so a request carrying them is refused 400 (RFC 6750's
// invalid_request) before any token is looked at, on the agent API and the
// MCP endpoint alike, whatever the lines hold, and binds nothing.
func TestAuthorizationTwice(t *testing.T) {
	t.Parallel()
	g := setup(t)
	other := g.MustToken("agent-other", "read", "draft", "write", "post")
	for i, c := range []struct {
		name, path string
		auth       []string
		body       func(key string) []byte
	}{
		{"SameTokenTwice", "/v1/operations", []string{"Bearer " + g.token, "Bearer " + g.token}, operationBody},
		{"TwoTokens", "/v1/operations", []string{"Bearer " + g.token, "Bearer " + other}, operationBody},
		{"TokenThenEmpty", "/v1/operations", []string{"Bearer " + g.token, ""}, operationBody},
		{"UnknownThenToken", "/v1/operations", []string{"Bearer og_not-a-token", "Bearer " + g.token}, operationBody},
		{"MCPSameTokenTwice", "/mcp", []string{"Bearer " + g.token, "Bearer " + g.token}, mcpOperationBody},
		{"MCPTwoTokens", "/mcp", []string{"Bearer " + g.token, "Bearer " + other}, mcpOperationBody},
	} {
		t.Run(c.name, func(t *testing.T) {
			order := "auth-twice-" + strconv.Itoa(i)
			key := "test:invoice.create:" + order + ":v1"
			r := g.send("POST", c.path, http.Header{
				"Authorization":   c.auth,
				"Content-Type":    {"application/json"},
				"Accept":          {"application/json, text/event-stream"},
				"Idempotency-Key": {key},
			}, c.body(order))
			if got, want := r.Code, http.StatusBadRequest; got != want {
				t.Fatalf("status %d, want %d; body %s", got, want, r.Raw)
			}
			if got, want := r.Header.Get("Content-Type"), "application/problem+json"; !strings.HasPrefix(got, want) {
				t.Errorf("Content-Type %q, want %s", got, want)
			}
			if got, want := r.errCode(), "VALIDATION_ERROR"; got != want {
				t.Errorf("code %q, want %q; body %s", got, want, r.Raw)
			}
			if got, want := r.errField(), "Authorization"; got != want {
				t.Errorf("field %q, want %q", got, want)
			}
			expectStatusMember(t, r)
			if got := r.Header.Get("WWW-Authenticate"); !strings.Contains(got, `error="invalid_request"`) {
				t.Errorf("WWW-Authenticate %q, want a Bearer challenge with invalid_request", got)
			}
			for _, a := range c.auth {
				if tok := strings.TrimPrefix(a, "Bearer "); tok != "" && strings.Contains(r.Raw+r.Header.Get("WWW-Authenticate"), tok) {
					t.Errorf("the answer repeats a token: %s", r.Raw)
				}
			}
			if _, err := g.store.Get(context.Background(), key); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the refused request was journaled: %v", err)
			}
			if n := g.sim.Calls(sim.OneC, key); n != 0 {
				t.Errorf("the refused request reached 1C %d times", n)
			}
		})
	}
	// One line still works.
	r := g.do("GET", "/v1/intents", g.token, nil, nil)
	if r.Code != http.StatusOK {
		t.Fatalf("one Authorization line: %d %s", r.Code, r.Raw)
	}
}

// operationBody is an invoice.create envelope for order.
func operationBody(order string) []byte {
	b, _ := json.Marshal(invoice(order, 1))
	return b
}

// mcpOperationBody is an MCP tools/call of invoice.create for order, with
// the operation key test:invoice.create:<order>:v1.
func mcpOperationBody(order string) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": "invoice.create", "arguments": map[string]any{
			"operation_key": "test:invoice.create:" + order + ":v1", "actor_id": "user-42", "payload": adapterstest.InvoicePayload(order, 1),
		},
	}})
	return b
}
