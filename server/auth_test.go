package server_test

import (
	"context"
	"net/http"
	"path/filepath"
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
