package server

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"
)

// A connection counts from its accept until its first Close, whoever
// closes it and however often: the HTTP server, or a handler that
// hijacked it and closes it twice.
func TestConnLimitCountsUntilFirstClose(t *testing.T) {
	t.Parallel()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := limitConnections(inner, 2, []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"), nil, slog.New(slog.DiscardHandler))
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/hijack", func(w http.ResponseWriter, r *http.Request) {
		c, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		rw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
		rw.Flush()
		<-release
		c.Close()
		c.Close()
	})
	mux.HandleFunc("/long", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		<-release
	})
	hs := &http.Server{Handler: mux}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })

	get := func(path string) (net.Conn, int) {
		t.Helper()
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		return c, resp.StatusCode
	}
	waitOpen := func(want int64) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ln.open.Load() != want; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("open %d, want %d", ln.open.Load(), want)
			}
		}
	}

	if _, code := get("/hijack"); code != http.StatusOK {
		t.Fatalf("hijack: %d", code)
	}
	long, code := get("/long")
	if code != http.StatusOK {
		t.Fatalf("long: %d", code)
	}
	waitOpen(2)
	if _, code := get("/long"); code != http.StatusServiceUnavailable {
		t.Fatalf("a third connection: %d, want 503", code)
	}
	close(release) // the hijacker closes twice, the long handler ends
	long.Close()
	waitOpen(0)
	if _, code := get("/long"); code != http.StatusOK {
		t.Fatalf("after both closed: %d", code)
	}
	waitOpen(1)
}
