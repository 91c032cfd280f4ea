package sim

// The notices the simulated systems send on their own, as the real ones
// tell a shop or an integration of a change: YooKassa's HTTP notifications
// (yookassa_notify.go) and Bitrix24's outbound webhooks
// (bitrix24_events.go). Each notice is posted in the background, apart
// from the request that caused it, attempted again on its system's
// schedule until answered 200, and kept for tests to read.

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"
)

// noticeTimeout bounds one attempt: a receiver slower than this has not
// answered.
const noticeTimeout = 10 * time.Second

// Notice is one notice a simulator posted (or is still posting) to a
// receiver, as tests read it.
type Notice struct {
	// URL is where it was posted.
	URL string `json:"url"`
	// Event is the system's name of what happened: payment.succeeded,
	// ONCRMDEALUPDATE, …
	Event string `json:"event"`
	// ContentType and Body are the request's, byte for byte.
	ContentType string `json:"content_type"`
	Body        string `json:"body"`
	// Attempts holds the status of each attempt so far, 0 for one that
	// got no answer (refused, reset, timed out).
	Attempts []int `json:"attempts"`
	// Delivered: an attempt was answered 200.
	Delivered bool `json:"delivered"`
	// At is when the notice was made.
	At time.Time `json:"at"`
}

// notifier posts one simulator's notices. Reset abandons those still
// being posted and forgets all; close stops them and waits.
type notifier struct {
	client *http.Client

	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
	closed bool
	wg     sync.WaitGroup
	sent   []*Notice
}

func newNotifier() *notifier {
	// Its own transport: a proxy in the environment never stands between
	// a simulator and the receiver on loopback.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	n := &notifier{client: &http.Client{Transport: tr, Timeout: noticeTimeout,
		// A notice is posted where it was told to go, not where a
		// redirect points.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	return n
}

// post sends a notice in the background: at once, then again after each
// delay of retry while no attempt is answered 200; with copies above 1,
// the same notice again once the one before is done. It never blocks, so
// it may be called under a simulator's lock.
func (n *notifier) post(url, event, contentType string, body []byte, retry []time.Duration, copies int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	ctx := n.ctx
	record := func() *Notice {
		nt := &Notice{URL: url, Event: event, ContentType: contentType, Body: string(body), Attempts: []int{}, At: time.Now()}
		n.sent = append(n.sent, nt)
		return nt
	}
	first := record() // listed at once, in the order the changes happened
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.deliver(ctx, first, retry)
		for range copies - 1 {
			n.mu.Lock()
			if ctx.Err() != nil {
				n.mu.Unlock()
				return
			}
			nt := record()
			n.mu.Unlock()
			n.deliver(ctx, nt, retry)
		}
	}()
}

// deliver makes the attempts of one notice.
func (n *notifier) deliver(ctx context.Context, nt *Notice, retry []time.Duration) {
	for i := 0; ; i++ {
		status := n.attempt(ctx, nt)
		if status == 0 && ctx.Err() != nil {
			return // cut short by a reset or close: not an attempt the receiver failed
		}
		n.mu.Lock()
		nt.Attempts = append(nt.Attempts, status)
		nt.Delivered = status == http.StatusOK
		n.mu.Unlock()
		if status == http.StatusOK || i >= len(retry) {
			return
		}
		t := time.NewTimer(retry[i])
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// attempt posts the notice once and says the answer's status, 0 for none.
func (n *notifier) attempt(ctx context.Context, nt *Notice) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, nt.URL, strings.NewReader(nt.Body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", nt.ContentType)
	resp, err := n.client.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// notices returns copies of the notices made since the last reset, oldest
// first.
func (n *notifier) notices() []Notice {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]Notice, len(n.sent))
	for i, nt := range n.sent {
		out[i] = *nt
		out[i].Attempts = append([]int{}, nt.Attempts...)
	}
	return out
}

// reset abandons the notices still being posted and forgets them all.
func (n *notifier) reset() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cancel()
	n.sent = nil
	if !n.closed {
		n.ctx, n.cancel = context.WithCancel(context.Background())
	}
}

// close stops the notices being posted, waits for their goroutines, and
// posts nothing more.
func (n *notifier) close() {
	n.mu.Lock()
	n.closed = true
	n.cancel()
	n.mu.Unlock()
	n.wg.Wait()
}

// OnClose registers a function that stops a target simulator's background
// work when the Server closes.
func (s *Server) OnClose(f func()) {
	s.mu.Lock()
	s.closers = append(s.closers, f)
	s.mu.Unlock()
}

// Close stops the notices the simulators are still sending and waits for
// them; nothing is sent afterwards. The simulators keep answering
// requests. Start has an http.Server's Shutdown call it.
func (s *Server) Close() {
	s.mu.Lock()
	closers := s.closers
	s.closers = nil
	s.mu.Unlock()
	for _, f := range closers {
		f()
	}
}
