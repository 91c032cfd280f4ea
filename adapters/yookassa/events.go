package yookassa

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/url"
	"strings"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

// YooKassa's HTTP notifications (https://yookassa.ru/developers/using-api/webhooks):
// a POST of {"type": "notification", "event": "payment.succeeded",
// "object": {…the payment as it was…}}. A notice carries no credential
// and no signature, so nothing in it is believed: the gateway reads the
// object back by its id, with the shop's own key, and acts on that.

var _ adapters.EventSource = (*Client)(nil)

// The events of payments and refunds a shop subscribes to. YooKassa has
// others (payout.*, deal.* of its Safe Deal, payment_method.active), of
// objects this target does not read.
const (
	EventPaymentWaitingForCapture = "payment.waiting_for_capture"
	EventPaymentSucceeded         = "payment.succeeded"
	EventPaymentCanceled          = "payment.canceled"
	EventRefundSucceeded          = "refund.succeeded"
)

// noticeEvents are the events read back, each with the kind of object it
// is about and the status that object must have: YooKassa names an event
// <object>.<status> and sends it when the object reaches that status,
// which it never leaves (succeeded and canceled are final;
// waiting_for_capture is left only for one of them).
var noticeEvents = map[string]struct{ noun, path, status string }{
	EventPaymentWaitingForCapture: {"payment", "/payments/", "waiting_for_capture"},
	EventPaymentSucceeded:         {"payment", "/payments/", "succeeded"},
	EventPaymentCanceled:          {"payment", "/payments/", "canceled"},
	EventRefundSucceeded:          {"refund", "/refunds/", "succeeded"},
}

// Events implements adapters.EventSource.
func (c *Client) Events() []string {
	return []string{EventPaymentWaitingForCapture, EventPaymentSucceeded, EventPaymentCanceled, EventRefundSucceeded}
}

// ParseNotice implements adapters.EventSource. The body must be one JSON
// object sent as application/json (UTF-8, the only charset YooKassa
// sends), of type "notification", with one of Events and an object whose
// id is of YooKassa's form; fields besides these are let pass, as
// YooKassa adds them. The token is always "": YooKassa signs nothing, its
// notices are believed only once read back. An error says, for an
// operator, what is wrong; it quotes at most the content type, the type
// and the event, clipped.
func (c *Client) ParseNotice(contentType string, body []byte) (adapters.Notice, string, error) {
	if err := jsonContent(contentType); err != nil {
		return adapters.Notice{}, "", err
	}
	env, err := jsonObject(body)
	if err != nil {
		return adapters.Notice{}, "", errors.New("the notice is not a JSON object")
	}
	typ, ok := stringField(env, "type")
	switch {
	case !ok:
		return adapters.Notice{}, "", errors.New(`the notice has no type "notification"`)
	case typ != "notification":
		return adapters.Notice{}, "", fmt.Errorf(`the notice's type is %q, not "notification"`, truncate(typ, 64))
	}
	event, ok := stringField(env, "event")
	switch {
	case !ok || event == "":
		return adapters.Notice{}, "", errors.New("the notice names no event")
	case noticeEvents[event].noun == "":
		return adapters.Notice{}, "", adapters.EventNotSent(fmt.Sprintf("the notice's event %q is none this source reads (%s)", truncate(event, 64), strings.Join(c.Events(), ", ")))
	}
	obj, err := jsonObject(env["object"])
	if err != nil {
		return adapters.Notice{}, "", errors.New("the notice has no object")
	}
	id, ok := stringField(obj, "id")
	switch {
	case !ok || id == "":
		return adapters.Notice{}, "", errors.New("the notice's object has no id")
	case !validProviderID(id):
		return adapters.Notice{}, "", errors.New("the notice's object id is not a YooKassa id (letters, digits, '-' and '_', at most 64)")
	}
	return adapters.Notice{Event: event, ObjectID: id}, "", nil
}

// jsonObject reads raw as exactly one JSON object, its members undecoded.
// (A null decodes into a map without an error, so it is refused here.)
func jsonObject(raw []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("null")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	return m, nil
}

// stringField reads m[key] as a JSON string; ok is false when it is
// missing or of another type.
func stringField(m map[string]json.RawMessage, key string) (string, bool) {
	var s string
	if raw, ok := m[key]; !ok || json.Unmarshal(raw, &s) != nil || string(bytes.TrimSpace(raw)) == "null" {
		return "", false
	}
	return s, true
}

// jsonContent refuses a content type other than application/json.
func jsonContent(contentType string) error {
	if strings.TrimSpace(contentType) == "" {
		return errors.New("the notice has no content type; YooKassa sends application/json")
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "application/json" {
		return fmt.Errorf("the notice's content type is %q, not application/json", truncate(contentType, 64))
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return fmt.Errorf("the notice's charset is %q, not UTF-8", truncate(cs, 32))
	}
	return nil
}

// ReadBack implements adapters.EventSource: GET /v3/payments/{id} for a
// payment's event, GET /v3/refunds/{id} for refund.succeeded, through the
// path every read takes (its timeout, auth and classes). The object is
// returned as YooKassa answered it, every field, decoded with UseNumber:
// a JSON number is a json.Number, never a float64 (amount.value is a
// decimal string, "1250.00", as YooKassa sends every amount). An object
// whose status is not the event's is a *adapters.Mismatch ("the
// payment's status is pending, not succeeded"). The shop has no such
// object (404, or 400 naming the id): adapters.ErrNotFound. Any other
// failure is an *adapters.Error of class Retry: a read changes nothing,
// so the notice can be read back again later. (An event none of Events is
// a Final refusal, asking nothing.) No error carries the secret key.
func (c *Client) ReadBack(ctx context.Context, n adapters.Notice) (map[string]any, error) {
	ev, ok := noticeEvents[n.Event]
	if !ok {
		return nil, &adapters.Error{Class: adapters.Final, Code: codes.Validation,
			Message: "the event is none the payment provider's notices are read back for", Err: fmt.Errorf("event %q", truncate(n.Event, 64))}
	}
	if !validProviderID(n.ObjectID) {
		return nil, adapters.ErrNotFound
	}
	var raw json.RawMessage
	if err := c.getByID(ctx, ev.path+url.PathEscape(n.ObjectID), &raw); err != nil {
		return nil, adapters.ReadFailure(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if dec.Decode(&obj) != nil || obj == nil {
		return nil, adapters.ReadFailure(unreadable(errors.New("the " + ev.noun + " is not a JSON object")))
	}
	if id, _ := obj["id"].(string); id != n.ObjectID {
		return nil, adapters.ReadFailure(unreadable(fmt.Errorf("asked for %s %s, the answer is of %q", ev.noun, n.ObjectID, truncate(id, 64))))
	}
	status, ok := obj["status"].(string)
	if !ok || status == "" {
		return nil, adapters.ReadFailure(unreadable(errors.New("the " + ev.noun + " has no status")))
	}
	if status != ev.status {
		return nil, &adapters.Mismatch{Reason: fmt.Sprintf("the %s's status is %s, not %s", ev.noun, quoteOdd(status), ev.status)}
	}
	return obj, nil
}

// quoteOdd writes a status as is when it is a plain token, as YooKassa's
// are, and quoted (clipped) when it is not, so that a reason shown to a
// person is never garbled by what an answer held.
func quoteOdd(s string) string {
	if safeToken(s) {
		return s
	}
	return fmt.Sprintf("%q", truncate(s, 32))
}
