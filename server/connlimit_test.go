package server_test

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/store/storetest"
)

// A connection beyond max_connections is answered 503 with Retry-After
// and the API's problem, whatever it asks for; those within are served,
// the admin UI's and /metrics' as much as the API's; one that closes
// frees its slot.
func TestConnectionLimit(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.MaxConnections = 2
	g := serveOver(t, cfg, storetest.Open(t))
	addr := strings.TrimPrefix(g.url, "http://")
	dial := func() net.Conn { return dialPlain(t, addr) }

	// The two slots, held by keep-alive connections that were served:
	// one of a person at the admin UI, one of a metrics scraper.
	admin, metrics := dial(), dial()
	if got := roundTrip(t, admin, "/admin/login"); got.StatusCode != http.StatusOK {
		t.Fatalf("GET /admin/login within the limit: %d", got.StatusCode)
	}
	if got := roundTrip(t, metrics, "/metrics"); got.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics within the limit: %d", got.StatusCode)
	}

	t.Run("ErrBeyond", func(t *testing.T) {
		for _, path := range []string{"/readyz", "/v1/intents", "/admin/login"} {
			expectBusy(t, roundTrip(t, dial(), path))
		}
		// An ordinary client reads the same answer.
		resp, err := g.client.Get(g.url + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got, want := resp.StatusCode, http.StatusServiceUnavailable; got != want {
			t.Fatalf("status %d, want %d", got, want)
		}
	})
	t.Run("KeepAliveWithin", func(t *testing.T) {
		// The held connections are still served, again and again.
		for range 3 {
			if got := roundTrip(t, metrics, "/readyz"); got.StatusCode != http.StatusOK {
				t.Fatalf("GET /readyz on a held connection: %d", got.StatusCode)
			}
		}
	})
	t.Run("CloseFreesSlot", func(t *testing.T) {
		admin.Close()
		// The gateway sees the close when its read of the next request
		// ends: until then a new connection may still be refused.
		deadline := time.Now().Add(5 * time.Second)
		for {
			resp := roundTrip(t, dial(), "/readyz")
			if resp.StatusCode == http.StatusOK {
				break
			}
			expectBusy(t, resp)
			if time.Now().After(deadline) {
				t.Fatal("a closed connection's slot was not freed")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// Under TLS the connection beyond the limit is answered over TLS, so the
// client reads the 503 rather than a broken handshake.
func TestConnectionLimitTLS(t *testing.T) {
	t.Parallel()
	certPath, keyPath, pool := selfSigned(t)
	cfg := testConfig()
	cfg.TLS = config.TLSConfig{CertFile: certPath, KeyFile: keyPath}
	cfg.MaxConnections = 1
	g := serveOver(t, cfg, storetest.Open(t))
	addr := strings.TrimPrefix(g.url, "http://")
	dial := func(protos ...string) net.Conn {
		t.Helper()
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, NextProtos: protos})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	held := dial("http/1.1")
	if got := roundTrip(t, held, "/readyz"); got.StatusCode != http.StatusOK {
		t.Fatalf("GET /readyz over TLS within the limit: %d", got.StatusCode)
	}
	// A browser offers HTTP/2 too; the refusal is HTTP/1.1's.
	expectBusy(t, roundTrip(t, dial("h2", "http/1.1"), "/readyz"))

	// An ordinary client sees the same answer.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get("https://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := resp.StatusCode, http.StatusServiceUnavailable; got != want {
		t.Fatalf("status %d, want %d", got, want)
	}
}

// dialPlain opens a TCP connection to addr, closed at the end of the
// test.
func dialPlain(tb testing.TB, addr string) net.Conn {
	tb.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// busyAnswer is what roundTrip read: the status, headers and body.
type busyAnswer struct {
	StatusCode int
	Header     http.Header
	Body       []byte
}

// roundTrip sends GET path on c, keeping it alive, and reads the answer.
func roundTrip(tb testing.TB, c net.Conn, path string) busyAnswer {
	tb.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: oncegate\r\n\r\n", path); err != nil {
		tb.Fatalf("GET %s: %v", path, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		tb.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("GET %s: %v", path, err)
	}
	return busyAnswer{StatusCode: resp.StatusCode, Header: resp.Header, Body: body}
}

// expectBusy checks a is the answer to a connection beyond the limit.
func expectBusy(tb testing.TB, a busyAnswer) {
	tb.Helper()
	if got, want := a.StatusCode, http.StatusServiceUnavailable; got != want {
		tb.Fatalf("status %d, want %d: %s", got, want, a.Body)
	}
	if a.Header.Get("Retry-After") == "" {
		tb.Error("no Retry-After")
	}
	if got, want := a.Header.Get("Content-Type"), "application/problem+json"; got != want {
		tb.Errorf("Content-Type %q, want %q", got, want)
	}
	var p struct {
		Status int    `json:"status"`
		State  string `json:"state"`
		Errors []struct {
			Code      string `json:"code"`
			Retryable bool   `json:"retryable"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(a.Body, &p); err != nil {
		tb.Fatalf("body %q: %v", a.Body, err)
	}
	if p.Status != http.StatusServiceUnavailable || p.State != "rejected" || len(p.Errors) != 1 || p.Errors[0].Code != codes.GatewayBusy || !p.Errors[0].Retryable {
		tb.Fatalf("problem %s", a.Body)
	}
}
