// Package codestest gives tests of what refuses requests (the contract,
// the intents) one check of a refusal.
package codestest

import (
	"errors"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/codes"
)

// WantRefusal asserts err is a 400 *codes.Refusal with the given code and
// field, and a message that says something and leaks no schema URL, and
// returns it.
func WantRefusal(tb testing.TB, err error, code, field string) *codes.Refusal {
	tb.Helper()
	var ce *codes.Refusal
	if !errors.As(err, &ce) {
		tb.Fatalf("got error %v (%T), want *codes.Refusal %s", err, err, code)
	}
	if got, want := ce.Code, code; got != want {
		tb.Fatalf("code = %s, want %s (%v)", got, want, ce)
	}
	if got, want := ce.Field, field; got != want {
		tb.Fatalf("field = %q, want %q (%v)", got, want, ce)
	}
	if got, want := ce.Status, 400; got != want {
		tb.Fatalf("status = %d, want %d", got, want)
	}
	if ce.Message == "" {
		tb.Fatalf("empty message")
	}
	if strings.Contains(ce.Message, "oncegate.invalid") || strings.Contains(ce.Message, "://") {
		tb.Fatalf("message leaks a schema URL: %s", ce.Message)
	}
	return ce
}
