package adapters

import (
	"context"
	"errors"
)

// Notice is what an incoming notice of a source says, before any of it is
// believed: which event, about which object. Its body is a hint; what the
// gateway acts on is the object as the source answers a read of it
// (EventSource.ReadBack).
type Notice struct {
	// Event is the source's name of the event: payment.succeeded,
	// ONCRMDEALUPDATE.
	Event string
	// ObjectID is the source's id of the object the event is about.
	ObjectID string
}

// ID is the notice's stable id: the same for every delivery of one
// notice, and what the key of the operation it runs is made from. Neither
// YooKassa nor Bitrix24 numbers its notices, so it is the event and the
// object: a payment succeeds once, and a rule on a deal's change runs once
// per deal (docs/events.md).
func (n Notice) ID() string { return n.Event + "-" + n.ObjectID }

// EventSource is a target that tells of its own changes (YooKassa's HTTP
// notifications, Bitrix24's outbound events) and reads back the object a
// notice names.
type EventSource interface {
	// Events are the events it sends, in the source's own names.
	Events() []string
	// ParseNotice reads one notice's body as the source sends it
	// (contentType is the request's). token is the credential the notice
	// carried for the gateway to check, "" where the source sends none
	// (YooKassa: its notices are trusted only once read back). An error
	// says what is wrong with the body, never repeating a credential.
	ParseNotice(contentType string, body []byte) (n Notice, token string, err error)
	// ReadBack reads the object n names as the source holds it now: a JSON
	// object in the source's own field names, what a rule's event: paths
	// read. It returns ErrNotFound when the source has no such object, a
	// *Mismatch when it has one that is not as the event says (a payment
	// whose status is not the event's), and any other error (an *Error
	// classified as for any read) when it could not tell.
	ReadBack(ctx context.Context, n Notice) (map[string]any, error)
}

// ErrEventNotSent is what ParseNotice's error wraps for a notice of an
// event the source is not read for (none of Events): the gateway answers
// it as an event no rule runs on, not as a malformed body.
var ErrEventNotSent = errors.New("an event this source is not read for")

// EventNotSent is ParseNotice's refusal of a notice of an event the
// source is not read for: msg, which errors.Is takes for ErrEventNotSent.
func EventNotSent(msg string) error { return eventNotSent(msg) }

type eventNotSent string

func (e eventNotSent) Error() string        { return string(e) }
func (e eventNotSent) Is(target error) bool { return target == ErrEventNotSent }

// Mismatch is a read-back that finds the object otherwise than the notice
// says; the notice is dropped for Reason.
type Mismatch struct {
	// Reason says what the source answered, for a person: "the payment's
	// status is canceled".
	Reason string
}

func (m *Mismatch) Error() string { return m.Reason }

// IsMismatch reports whether err is a *Mismatch, and its reason.
func IsMismatch(err error) (string, bool) {
	var m *Mismatch
	if errors.As(err, &m) {
		return m.Reason, true
	}
	return "", false
}
