package sim_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// receiver is a shop's or an integration's handler of notices on
// loopback: it keeps every request and answers the statuses given, in
// turn, then 200.
type receiver struct {
	url string

	mu       sync.Mutex
	got      []received
	statuses []int
	arrived  chan struct{}
}

// received is one request a receiver got.
type received struct {
	contentType string
	body        string
}

func newReceiver(tb testing.TB, statuses ...int) *receiver {
	tb.Helper()
	rc := &receiver{statuses: statuses, arrived: make(chan struct{}, 1000)}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{contentType: r.Header.Get("Content-Type"), body: string(body)})
		status := http.StatusOK
		if len(rc.statuses) > 0 {
			status, rc.statuses = rc.statuses[0], rc.statuses[1:]
		}
		rc.mu.Unlock()
		w.WriteHeader(status)
		rc.arrived <- struct{}{}
	}))
	tb.Cleanup(hs.Close)
	rc.url = hs.URL + "/hook"
	return rc
}

// wait returns the first n requests once they have come, failing after
// five seconds.
func (rc *receiver) wait(tb testing.TB, n int) []received {
	tb.Helper()
	deadline := time.After(5 * time.Second)
	for {
		rc.mu.Lock()
		got := append([]received{}, rc.got...)
		rc.mu.Unlock()
		if len(got) >= n {
			return got[:n]
		}
		select {
		case <-rc.arrived:
		case <-deadline:
			tb.Fatalf("the receiver got %d requests, want %d", len(got), n)
		}
	}
}

// event waits for n requests and returns the one that names event: the
// simulators post each notice on its own, so two may land in either order.
func (rc *receiver) event(tb testing.TB, n int, event string) received {
	tb.Helper()
	for _, got := range rc.wait(tb, n) {
		if strings.Contains(got.body, `"event":"`+event+`"`) || strings.HasPrefix(got.body, "event="+event+"&") {
			return got
		}
	}
	tb.Fatalf("none of the %d requests is of %s", n, event)
	return received{}
}

// count is how many requests came so far.
func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got)
}
