package adapters

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"sync/atomic"
	"syscall"

	"github.com/oncegate/oncegate/adapters/codes"
)

// maxIdlePerHost is how many idle connections a target's client keeps
// open to its host: as many as the requests the gateway may have in
// flight there, so a busy target is not dialed anew for most calls (the
// standard library keeps two).
const maxIdlePerHost = 64

// NewTransport is the transport of a target's client: the standard
// library's defaults (proxy from the environment, dial and TLS timeouts,
// HTTP/2), keeping enough idle connections for a busy gateway.
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = maxIdlePerHost
	return t
}

// Send performs req with client and classifies a transport failure:
//
//   - nothing was written (dial refused, DNS, TLS, a write that failed):
//     Retry, the target cannot have seen the request;
//   - the request was written and then the connection was reset before any
//     response: Retry when the target dedupes by key (a repeat is harmless),
//     Reconcile otherwise;
//   - the request was written and then the wait timed out or the connection
//     closed without an answer: Reconcile, the effect may be committed.
//
// A response, whatever its status, is returned as is; the adapter maps
// statuses. Error texts are stripped of URLs so that no host name or
// credential in a URL reaches the error message.
func Send(client *http.Client, req *http.Request, dedupes bool) (*http.Response, error) {
	// Set by the transport's writing goroutine, read here after Do.
	var wrote atomic.Bool
	trace := &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				wrote.Store(true)
			}
		},
	}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	// net/http silently sends a request again on a reused connection that
	// closed without answering when it can rewind the body and thinks the
	// request idempotent (an Idempotency-Key header is enough). Every send
	// must be seen and classified here, so forbid the rewind.
	req.GetBody = nil
	resp, err := client.Do(req)
	if err == nil {
		return resp, nil
	}
	cause := stripURL(err)
	switch {
	case !wrote.Load():
		return nil, &Error{Class: Retry, Code: codes.TargetUnavailable, Message: "the target could not be reached", Err: cause}
	case errors.Is(err, syscall.ECONNRESET) && dedupes:
		return nil, &Error{Class: Retry, Code: codes.TargetUnavailable, Message: "the target reset the connection", Err: cause}
	default:
		return nil, &Error{Class: Reconcile, Code: codes.OutcomeUnknown, Message: "the request was sent but no answer came back", Err: cause}
	}
}

// StatusError classifies an HTTP status that carries no business meaning
// for the adapter: 429, 502 and 503 are Retry (the target or its proxy
// refused before doing anything); any other status the adapter did not
// map is Reconcile (the request may have been applied before the failure).
func StatusError(resp *http.Response) *Error {
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable:
		return &Error{
			Class:      Retry,
			Code:       codes.TargetUnavailable,
			Message:    "the target is temporarily unavailable",
			RetryAfter: retryAfter(resp),
			Err:        errors.New(resp.Status),
		}
	}
	return &Error{Class: Reconcile, Code: codes.OutcomeUnknown, Message: "the target failed while handling the request", Err: errors.New(resp.Status)}
}

// Drain reads and closes a response body so the connection can be reused.
func Drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

func retryAfter(resp *http.Response) int {
	n, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// stripURL removes the URL from a *url.Error, keeping the operation and cause.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if errors.Is(ue.Err, context.DeadlineExceeded) || isTimeout(ue.Err) {
			return errors.New(ue.Op + ": timeout")
		}
		return errors.New(ue.Op + ": " + ue.Err.Error())
	}
	return err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
