// Package enginetest gives tests of the engine, and of the server that
// runs it, what they share.
package enginetest

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// Eventually polls cond until it holds, failing tb after 10 s, for what
// no worker reports.
func Eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Log is a log several goroutines write to, for a test to read: all of
// it, or its last lines when the test fails.
type Log struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String is all that was written.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Tail is the last n lines written.
func (l *Log) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(l.String(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
