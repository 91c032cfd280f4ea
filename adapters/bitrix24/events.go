package bitrix24

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"strconv"
	"strings"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

// Bitrix24's outbound events (an outbound webhook, or an application's
// event.bind): a POST of application/x-www-form-urlencoded in PHP's array
// form, event=ONCRMDEALUPDATE&event_handler_id=17&data[FIELDS][ID]=123&
// ts=…&auth[domain]=…&auth[member_id]=…&auth[application_token]=…
// (https://apidocs.bitrix24.com/api-reference/events/index.html). The
// notice names the record and nothing else of it; what it is now is read
// with the entity's get method.

var _ adapters.EventSource = (*Client)(nil)

// eventEntities are the events read back, each with the entity whose get
// method reads its record.
var eventEntities = map[string]string{
	"ONCRMDEALADD": "deal", "ONCRMDEALUPDATE": "deal",
	"ONCRMLEADADD": "lead", "ONCRMLEADUPDATE": "lead",
	"ONCRMCONTACTADD": "contact", "ONCRMCONTACTUPDATE": "contact",
	"ONCRMCOMPANYADD": "company", "ONCRMCOMPANYUPDATE": "company",
}

// Events implements adapters.EventSource: the adds and updates of deals,
// leads, contacts and companies, in the upper case Bitrix24 sends them in.
func (c *Client) Events() []string {
	return []string{"ONCRMDEALADD", "ONCRMDEALUPDATE", "ONCRMLEADADD", "ONCRMLEADUPDATE",
		"ONCRMCONTACTADD", "ONCRMCONTACTUPDATE", "ONCRMCOMPANYADD", "ONCRMCOMPANYUPDATE"}
}

// ParseNotice implements adapters.EventSource. The body must be a form
// (application/x-www-form-urlencoded, UTF-8) with one event, of Events in
// any case (the notice's Event is it in upper case, onCrmDealUpdate being
// ONCRMDEALUPDATE), and one data[FIELDS][ID], a positive integer (the
// notice's ObjectID is it without leading zeros). The token is
// auth[application_token], "" when the form has none: the caller compares
// it with the one the portal gave the handler, and no error repeats it.
// Other fields are let pass.
func (c *Client) ParseNotice(contentType string, body []byte) (adapters.Notice, string, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	switch {
	case strings.TrimSpace(contentType) == "":
		return adapters.Notice{}, "", errors.New("the notice has no content type; Bitrix24 sends application/x-www-form-urlencoded")
	case err != nil || mt != "application/x-www-form-urlencoded":
		return adapters.Notice{}, "", fmt.Errorf("the notice's content type is %q, not application/x-www-form-urlencoded", clip(contentType, 64))
	case params["charset"] != "" && !strings.EqualFold(params["charset"], "utf-8"):
		return adapters.Notice{}, "", fmt.Errorf("the notice's charset is %q, not UTF-8", clip(params["charset"], 32))
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return adapters.Notice{}, "", errors.New("the notice is not a form (application/x-www-form-urlencoded)")
	}
	events := form["event"]
	switch {
	case len(events) == 0 || events[0] == "":
		return adapters.Notice{}, "", errors.New("the notice names no event")
	case len(events) > 1:
		return adapters.Notice{}, "", errors.New("the notice names more than one event")
	}
	event := strings.ToUpper(events[0])
	if eventEntities[event] == "" {
		return adapters.Notice{}, "", adapters.EventNotSent(fmt.Sprintf("the notice's event %q is none this source reads (%s)", clip(events[0], 64), strings.Join(c.Events(), ", ")))
	}
	ids := form["data[FIELDS][ID]"]
	switch {
	case len(ids) == 0 || ids[0] == "":
		return adapters.Notice{}, "", errors.New("the notice names no record (data[FIELDS][ID])")
	case len(ids) > 1:
		return adapters.Notice{}, "", errors.New("the notice names more than one record (data[FIELDS][ID])")
	}
	id, ok := recordID(ids[0])
	if !ok {
		return adapters.Notice{}, "", errors.New("the notice's record id (data[FIELDS][ID]) is not a positive whole number")
	}
	tokens := form["auth[application_token]"]
	if len(tokens) > 1 {
		return adapters.Notice{}, "", errors.New("the notice carries more than one auth[application_token]")
	}
	token := ""
	if len(tokens) == 1 {
		token = tokens[0]
	}
	return adapters.Notice{Event: event, ObjectID: strconv.FormatInt(id, 10)}, token, nil
}

// ReadBack implements adapters.EventSource: crm.deal.get, crm.lead.get,
// crm.contact.get or crm.company.get with {id}, through the client's call
// path (its pacing, timeout and error classes; the webhook URL never in an
// error). It returns the record's result object whole, decoded with
// UseNumber: a JSON number is a json.Number, never a float64 (Bitrix24
// sends most scalars as strings: ID "123", OPPORTUNITY "1500.00"); the
// multiple fields (PHONE, EMAIL) are []any of map[string]any. An add or
// an update has no state to contradict the event, so there is no
// *adapters.Mismatch. The portal has no such record (400 "Not found"):
// adapters.ErrNotFound. The webhook's user may not see it ("Access
// denied."): the Retry *adapters.Error of a webhook not allowed to do
// this, code TARGET_PERMISSION_DENIED, an operator's matter. Any other
// failure is an *adapters.Error as for any read, Retry but for a refusal
// of the request's arguments (Final).
func (c *Client) ReadBack(ctx context.Context, n adapters.Notice) (map[string]any, error) {
	entity := eventEntities[n.Event]
	if entity == "" {
		return nil, &adapters.Error{Class: adapters.Final, Code: codes.Validation,
			Message: "the event is none the CRM's notices are read back for", Err: fmt.Errorf("event %q", clip(n.Event, 64))}
	}
	id, ok := recordID(n.ObjectID)
	if !ok {
		return nil, adapters.ErrNotFound
	}
	method := "crm." + entity + ".get"
	r, err := c.call(ctx, method, map[string]any{"id": id}, false)
	if errors.Is(err, errNoRecord) {
		return nil, adapters.ErrNotFound
	}
	if err != nil {
		return nil, adapters.ReadFailure(err)
	}
	dec := json.NewDecoder(bytes.NewReader(r.Result))
	dec.UseNumber()
	var rec map[string]any
	if err := dec.Decode(&rec); err != nil || rec == nil {
		return nil, shapeError(method, fmt.Errorf("result is not a record: %v", err))
	}
	var got text
	if raw, err := json.Marshal(rec["ID"]); err == nil {
		_ = json.Unmarshal(raw, &got)
	}
	if string(got) != strconv.FormatInt(id, 10) {
		return nil, shapeError(method, fmt.Errorf("asked for record %d, got %q", id, clip(string(got), 32)))
	}
	return rec, nil
}
