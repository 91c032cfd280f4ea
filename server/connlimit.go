package server

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/oncegate/oncegate/adapters/codes"
)

// Every open connection costs the process memory, even idle between
// requests (net/http's goroutine, its read and write buffers): a client
// that opens thousands would grow the gateway without bound. The listener
// therefore holds at most max_connections open at once, for everything it
// serves (the API, MCP, the admin UI, /readyz, /metrics), and answers one
// more itself: 503 with Retry-After, then closes it.
const (
	// busyRetryAfter is the Retry-After, in seconds, of a connection
	// refused at the limit: slots free as soon as connections close.
	busyRetryAfter = 2
	// maxRefusing bounds the refused connections being answered at once;
	// beyond it a connection is closed unanswered, so that a flood of
	// connections cannot grow the process through its refusals either.
	maxRefusing = 64
	// refuseWithin is how long reading the request and writing the
	// refusal may take, the TLS handshake included: a client that sends
	// nothing in that time is closed unanswered.
	refuseWithin = 2 * time.Second
	// drainWithin and drainBytes bound what is read of a refused client's
	// request once answered: closing with its bytes unread would reset the
	// connection, and the reset can destroy the answer before the client
	// reads it (net/http waits as long before closing for the same reason).
	drainWithin = 500 * time.Millisecond
	drainBytes  = 64 << 10
	// warnEvery spaces the log's warnings that the limit is reached.
	warnEvery = time.Minute
)

// connLimit is a listener that holds at most max connections open at
// once. An accepted connection counts until its first Close, whoever
// closes it: the HTTP server, or a handler that hijacked it.
type connLimit struct {
	net.Listener
	max  int64
	open atomic.Int64
	// refusal is the whole HTTP/1.1 answer to a connection beyond max.
	refusal []byte
	// tls, when the gateway serves HTTPS, is what a refused connection is
	// answered over; nil for plain HTTP.
	tls      *tls.Config
	refusing atomic.Int64
	refused  atomic.Int64 // since the last warning
	warned   atomic.Int64 // when the last warning was logged, Unix ns
	log      *slog.Logger
}

// limitConnections wraps ln to hold at most max connections open; a
// connection beyond is answered refusal (over TLS with tlsCfg, when not
// nil) and closed.
func limitConnections(ln net.Listener, max int, refusal []byte, tlsCfg *tls.Config, log *slog.Logger) *connLimit {
	return &connLimit{Listener: ln, max: int64(max), refusal: refusal, tls: tlsCfg, log: log}
}

// Accept returns the next connection there is room for, answering those
// beyond the limit meanwhile.
func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &countedConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		l.refuse(c)
	}
}

// refuse answers c, beyond the limit, in a goroutine of its own, or
// closes it at once when maxRefusing are being answered already.
func (l *connLimit) refuse(c net.Conn) {
	l.warn()
	if l.refusing.Add(1) > maxRefusing {
		l.refusing.Add(-1)
		c.Close()
		return
	}
	go func() {
		defer l.refusing.Add(-1)
		l.answer(c)
	}()
}

// answer reads the request on c, answers it with the refusal and closes
// c, having read what else the client sent.
func (l *connLimit) answer(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(refuseWithin))
	if l.tls != nil {
		c = tls.Server(c, l.tls) // the handshake runs in the first Read
	}
	// The request first: a client takes an answer that comes before its
	// request for a stray one and drops it (Go's does). Its header is
	// bounded as the server bounds it.
	http.ReadRequest(bufio.NewReader(io.LimitReader(c, maxHeaderBytes+4<<10)))
	if _, err := c.Write(l.refusal); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(drainWithin))
	io.Copy(io.Discard, io.LimitReader(c, drainBytes))
}

// warn logs that the limit is reached, at most once every warnEvery,
// with the count of connections refused since the last warning.
func (l *connLimit) warn() {
	n := l.refused.Add(1)
	now, last := time.Now().UnixNano(), l.warned.Load()
	if now-last < int64(warnEvery) || !l.warned.CompareAndSwap(last, now) {
		return
	}
	l.refused.Add(-n)
	l.log.Warn("the connection limit is reached: new connections are answered 503 until open ones close",
		"max_connections", l.max, "refused", n)
}

// countedConn is a connection the limit counts until its first Close.
type countedConn struct {
	net.Conn
	l      *connLimit
	closed atomic.Bool
}

// Close closes the connection and frees its slot, once.
func (c *countedConn) Close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.l.open.Add(-1)
	}
	return err
}

// CloseWrite shuts the sending side, as the HTTP server does before
// closing a connection whose client may still be sending.
func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ReadFrom keeps the connection's own ReadFrom (sendfile) for the HTTP
// server's copies of files.
func (c *countedConn) ReadFrom(r io.Reader) (int64, error) { return io.Copy(c.Conn, r) }

// busyAnswer is the HTTP/1.1 answer to a connection beyond the limit: 503
// GATEWAY_BUSY with Retry-After, the API's problem, which says nothing was
// done.
func (s *Server) busyAnswer() []byte {
	r := codes.New(codes.GatewayBusy, "", "the gateway has as many connections open as it is configured to hold; this request sent nothing; send the same request again after Retry-After")
	status, a := s.refusalAnswer(r, nil)
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	enc.Encode(a)
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n")
	b.WriteString("Content-Type: application/problem+json\r\n")
	b.WriteString("Retry-After: " + strconv.Itoa(busyRetryAfter) + "\r\n")
	b.WriteString("Connection: close\r\n")
	b.WriteString("Content-Length: " + strconv.Itoa(body.Len()) + "\r\n\r\n")
	b.Write(body.Bytes())
	return b.Bytes()
}
