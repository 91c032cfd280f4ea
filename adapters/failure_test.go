package adapters_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

// How the failure of a read is classified: a read is made again unless the
// target refused it; a look-up of an effect is never Final and never
// "not found" unless the target said so.
func TestReadAndLookupFailures(t *testing.T) {
	noAnswer := &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown, Message: "the request was sent but no answer came back"}
	refused := &adapters.Error{Class: adapters.Final, Code: "PERMISSION_DENIED", Message: "no right to read"}
	busy := &adapters.Error{Class: adapters.Retry, Code: "RATE_LIMITED", Message: "slow down"}
	raw := errors.New("unexpected end of JSON input")
	notFound := fmt.Errorf("payment: %w", adapters.ErrNotFound)

	for _, tc := range []struct {
		name        string
		classify    func(error) error
		in          error
		class       adapters.Class
		code        string
		notFoundOut bool
	}{
		{"read, no answer", adapters.ReadFailure, noAnswer, adapters.Retry, codes.TargetUnavailable, false},
		{"read, refused", adapters.ReadFailure, refused, adapters.Final, "PERMISSION_DENIED", false},
		{"read, busy", adapters.ReadFailure, busy, adapters.Retry, "RATE_LIMITED", false},
		{"read, unreadable", adapters.ReadFailure, raw, adapters.Retry, codes.TargetUnavailable, false},
		{"read, not found", adapters.ReadFailure, notFound, 0, "", true},
		{"look-up, no answer", adapters.LookupFailure, noAnswer, adapters.Retry, codes.TargetUnavailable, false},
		{"look-up, refused", adapters.LookupFailure, refused, adapters.Reconcile, "PERMISSION_DENIED", false},
		{"look-up, busy", adapters.LookupFailure, busy, adapters.Retry, "RATE_LIMITED", false},
		{"look-up, unreadable", adapters.LookupFailure, raw, adapters.Reconcile, codes.OutcomeUnknown, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.classify(tc.in)
			if tc.notFoundOut {
				if !errors.Is(out, adapters.ErrNotFound) {
					t.Fatalf("%v: want ErrNotFound to pass through", out)
				}
				return
			}
			var e *adapters.Error
			if !errors.As(out, &e) || e.Class != tc.class || e.Code != tc.code {
				t.Fatalf("%#v: want class %v, code %s", out, tc.class, tc.code)
			}
		})
	}
	if refused.Class != adapters.Final || noAnswer.Class != adapters.Reconcile {
		t.Fatal("a classifier changed its argument")
	}
}
