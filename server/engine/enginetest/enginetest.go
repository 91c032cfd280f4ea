// Package enginetest gives tests of the engine, and of the server that
// runs it, what they share.
package enginetest

import (
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
