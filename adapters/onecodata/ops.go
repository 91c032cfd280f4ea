package onecodata

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

var guidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// jsonQuery asks 1C for JSON.
var jsonQuery = url.Values{"$format": {"json"}}

// Execute implements adapters.Target: a create POSTs the mapped object
// with the Ref_Key derived from the operation key; a posting posts the
// document the payload names unless it is posted already; a change
// (change.go) marks, unposts or updates it unless that is done already.
func (c *Client) Execute(ctx context.Context, op adapters.Op) (adapters.Result, error) {
	b, err := c.bindingOf(op)
	if err != nil {
		return adapters.Result{}, err
	}
	if b.post {
		return c.postDocument(ctx, b, op)
	}
	if b.read {
		return adapters.Result{}, readOnly(b)
	}
	if b.change != "" {
		et, err := c.published(ctx, b)
		if err != nil {
			return adapters.Result{}, err
		}
		return c.executeChange(ctx, b, et, op)
	}
	if c.ignored.Load() && b.keyField == "" {
		return adapters.Result{}, c.ignoringError()
	}
	et, err := c.published(ctx, b)
	if err != nil {
		return adapters.Result{}, err
	}
	body, err := c.body(ctx, b, et, op)
	if err != nil {
		return adapters.Result{}, err
	}
	return c.create(ctx, b, et, body)
}

// Validate runs every check of op at 1C, writing nothing: the binding,
// the published properties, every reference; its plan is the exact body
// a create will send (or the document a posting will post, or what a
// change sets on which object).
func (c *Client) Validate(ctx context.Context, op adapters.Op) (adapters.Plan, error) {
	b, err := c.bindingOf(op)
	if err != nil {
		return adapters.Plan{}, err
	}
	et, err := c.published(ctx, b)
	if err != nil {
		return adapters.Plan{}, err
	}
	if b.read {
		return adapters.Plan{}, readOnly(b)
	}
	if b.change != "" {
		return c.validateChange(ctx, b, et, op)
	}
	if b.post {
		id, doc, err := c.postTarget(ctx, b, op)
		if err != nil {
			return adapters.Plan{}, err
		}
		return adapters.Plan{Data: map[string]any{"entity": b.entity, "ref_key": id, "post": true, "posted": doc["Posted"] == true}}, nil
	}
	if c.ignored.Load() && b.keyField == "" {
		return adapters.Plan{}, c.ignoringError()
	}
	body, err := c.body(ctx, b, et, op)
	if err != nil {
		return adapters.Plan{}, err
	}
	return adapters.Plan{Data: planData(b.entity, body)}, nil
}

// create POSTs body. A refusal that 1C answered is settled by one look-up
// of the document (by the key, or by the key_field): a document there
// with what was sent is this operation's (its answer was lost, or its key
// was sent twice); nothing there is the refusal itself. What 1C answers
// is compared with what was sent (withChanges).
func (c *Client) create(ctx context.Context, b *binding, et *entityType, body map[string]any) (adapters.Result, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return adapters.Result{}, &adapters.Error{Class: adapters.Final, Code: codes.Validation, Message: "the mapped body could not be encoded", Err: err}
	}
	ref := body["Ref_Key"].(string)
	status, h, answer, err := c.call(ctx, http.MethodPost, c.entityURL(b.entity, "", "", jsonQuery), raw)
	if err != nil {
		return adapters.Result{}, err
	}
	if status == http.StatusCreated || status == http.StatusOK {
		doc, err := decodeEntity(answer)
		if err != nil {
			return adapters.Result{}, c.badAnswer(err)
		}
		got, _ := doc["Ref_Key"].(string)
		switch {
		case got == "":
			return adapters.Result{}, c.badAnswer(errors.New("create answer without Ref_Key"))
		case !strings.EqualFold(got, ref) && b.keyField == "":
			return adapters.Result{}, c.keysIgnored(b.entity, ref, strings.ToLower(got))
		case !strings.EqualFold(got, ref):
			// Guarded by the key_field: the document is 1C's own key's.
			c.keysIgnoredGuarded(b, ref, strings.ToLower(got))
			return b.withChanges(result(got, doc), body, doc), nil
		}
		return b.withChanges(result(ref, doc), body, doc), nil
	}
	oe := parseError(status, answer)
	refused := c.classify(oe, h)
	if refused.Class == adapters.Retry {
		return adapters.Result{}, refused // nothing was done (sign-in, publication, 429/502/503)
	}
	id, doc, found, err := c.find(ctx, b, ref)
	switch {
	case err != nil:
		// Refused, and the document could not be looked up: a duplicate
		// cannot be told from a refusal yet. Looked up later.
		return adapters.Result{}, &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown,
			Message: "1C refused the create and the document could not be looked up by its key", Err: fmt.Errorf("%v; look-up: %v", refused.Err, err)}
	case found:
		if diff := keptAsSent(et, body, doc); diff != "" {
			return adapters.Result{}, mismatch(id, diff, refused.Err)
		}
		return b.withChanges(result(id, doc), body, doc), nil
	case keyTaken(oe):
		return adapters.Result{}, &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown,
			Message: "1C says the key exists but does not show the document to the gateway's user", Err: refused.Err}
	}
	return adapters.Result{}, refused
}

// Lookup implements adapters.Target: one GET by the Ref_Key derived from
// the operation key (of the named document, for a posting or a change,
// done when it is posted or holds what the change sets). A 404 with code 9 is "not found"; right after a
// timeout it is no proof of absence (the first request may still
// commit): the engine trusts it only once the target's settle time has
// passed, and 1C's own key refuses a second document in any case.
func (c *Client) Lookup(ctx context.Context, op adapters.Op) (adapters.Result, error) {
	b, err := c.bindingOf(op)
	if err != nil {
		return adapters.Result{}, adapters.LookupFailure(err)
	}
	if b.read {
		return adapters.Result{}, adapters.LookupFailure(readOnly(b))
	}
	if b.change != "" {
		return c.lookupChange(ctx, b, op)
	}
	if b.post {
		id, doc, err := c.postTarget(ctx, b, op)
		var ae *adapters.Error
		switch {
		case errors.As(err, &ae) && ae.Code == codes.ReferenceNotFound:
			return adapters.Result{}, adapters.ErrNotFound
		case err != nil:
			return adapters.Result{}, adapters.LookupFailure(err)
		case doc["Posted"] != true:
			return adapters.Result{}, adapters.ErrNotFound
		}
		return posted(id, doc), nil
	}
	if ignored, note := c.IgnoresKeys(); ignored && b.keyField == "" {
		return adapters.Result{}, &adapters.Error{Class: adapters.Reconcile, Code: codes.TargetIgnoresKeys,
			Message: "this 1C base does not keep the keys the gateway chooses, so an operation cannot be found there by its key; check by hand", Err: errors.New(note)}
	}
	if b.keyField != "" {
		if _, err := c.published(ctx, b); err != nil {
			return adapters.Result{}, adapters.LookupFailure(err)
		}
	}
	id, doc, found, err := c.find(ctx, b, RefKey(c.instance, op.Intent, op.Key))
	switch {
	case err != nil:
		return adapters.Result{}, adapters.LookupFailure(err)
	case !found:
		return adapters.Result{}, adapters.ErrNotFound
	}
	return result(id, doc), nil
}

// Read implements adapters.Reader: a read binding's document, by the
// Ref_Key its payload names, answered with its number and state (draft,
// posted, or marked for deletion).
func (c *Client) Read(ctx context.Context, op adapters.Op) (adapters.Result, error) {
	b, err := c.bindingOf(op)
	if err != nil {
		return adapters.Result{}, err
	}
	if !b.read {
		return adapters.Result{}, &adapters.Error{Class: adapters.Final, Code: codes.IntentNotAllowed,
			Message: op.Intent + " is no read at this target; its mapping writes"}
	}
	if _, err := c.published(ctx, b); err != nil {
		return adapters.Result{}, err
	}
	id, doc, found, err := c.document(ctx, b, op)
	switch {
	case err != nil:
		return adapters.Result{}, err
	case !found:
		return adapters.Result{}, notFound(b)
	}
	return changeResult(id, doc), nil
}

// readOnly is the refusal of a write through a read binding.
func readOnly(b *binding) *adapters.Error {
	return &adapters.Error{Class: adapters.Final, Code: codes.IntentNotAllowed,
		Message: b.intent + " only reads " + b.entity + "; it has no write to make"}
}

// notFound is the refusal of a document the payload names that 1C does
// not hold.
func notFound(b *binding) *adapters.Error {
	return &adapters.Error{Class: adapters.Final, Code: codes.ReferenceNotFound, Field: b.docPath,
		Message: "no such document in " + b.entity + " in 1C"}
}

// document reads the document whose Ref_Key is the payload's docPath.
func (c *Client) document(ctx context.Context, b *binding, op adapters.Op) (string, map[string]any, bool, error) {
	id, err := b.documentID(op)
	if err != nil {
		return "", nil, false, err
	}
	doc, found, err := c.get(ctx, b.entity, id)
	return id, doc, found, err
}

// documentID is the Ref_Key the payload's docPath holds, lower-cased.
func (b *binding) documentID(op adapters.Op) (string, error) {
	var p map[string]any
	json.Unmarshal(op.Payload, &p)
	id, _ := p[b.docPath].(string)
	if !guidPattern.MatchString(id) {
		return "", &adapters.Error{Class: adapters.Final, Code: codes.Validation, Field: b.docPath,
			Message: "must be the document's id in 1C (its Ref_Key, the target_object_id of the operation that created it)"}
	}
	return strings.ToLower(id), nil
}

// get reads the entity of set with key; found is false on 404 code 9.
func (c *Client) get(ctx context.Context, set, key string) (map[string]any, bool, error) {
	status, h, body, err := c.readCall(ctx, c.entityURL(set, key, "", jsonQuery))
	if err != nil {
		return nil, false, adapters.ReadFailure(err)
	}
	if status == http.StatusOK {
		doc, err := decodeEntity(body)
		if err != nil {
			return nil, false, c.badAnswer(err)
		}
		return doc, true, nil
	}
	e := c.classify(parseError(status, body), h)
	if e.Code == codes.NotFound {
		return nil, false, nil
	}
	return nil, false, adapters.ReadFailure(e)
}

// postTarget finds the document a posting names and reads it.
func (c *Client) postTarget(ctx context.Context, b *binding, op adapters.Op) (string, map[string]any, error) {
	id, doc, found, err := c.document(ctx, b, op)
	switch {
	case err != nil:
		return "", nil, err
	case !found:
		return "", nil, notFound(b)
	case doc["DeletionMark"] == true:
		return "", nil, &adapters.Error{Class: adapters.Final, Code: codes.ReferenceInactive, Field: b.docPath,
			Message: "the document is marked for deletion in 1C"}
	}
	return id, doc, nil
}

// postDocument posts a document: already posted is success (a repeat);
// otherwise POST …/Post?PostingModeOperational=false (17.4.13.1.7). A
// refusal (500, code -1, the configuration's message) is final
// POSTING_REFUSED with the message, trimmed and safe; 1C failing
// internally is an unknown outcome, settled by reading the document's
// Posted.
func (c *Client) postDocument(ctx context.Context, b *binding, op adapters.Op) (adapters.Result, error) {
	if _, err := c.published(ctx, b); err != nil {
		return adapters.Result{}, err
	}
	id, doc, err := c.postTarget(ctx, b, op)
	if err != nil {
		return adapters.Result{}, err
	}
	if doc["Posted"] == true {
		return posted(id, doc), nil
	}
	q := url.Values{"PostingModeOperational": {"false"}}
	status, h, body, err := c.call(ctx, http.MethodPost, c.entityURL(b.entity, id, "Post", q), nil)
	if err != nil {
		return adapters.Result{}, err
	}
	if status >= 200 && status < 300 {
		doc["Posted"] = true
		return posted(id, doc), nil
	}
	oe := parseError(status, body)
	if oe.Code == odataBusiness && !internalError(oe) {
		msg := safeMessage(c, oe.Message)
		if msg == "" {
			msg = "1C refused to post the document"
		}
		return adapters.Result{}, &adapters.Error{Class: adapters.Final, Code: codes.PostingRefused, ObjectID: id,
			Message: msg, Err: fmt.Errorf("%d: code -1: %s", status, c.clean(oe.Message))}
	}
	return adapters.Result{}, c.classify(oe, h)
}

// result is a created document as an operation's result.
func result(ref string, doc map[string]any) adapters.Result {
	number, _ := doc["Number"].(string)
	return adapters.Result{ObjectID: strings.ToLower(ref), Data: map[string]any{"number": number}}
}

func posted(id string, doc map[string]any) adapters.Result {
	r := result(id, doc)
	r.Data["state"] = "posted"
	return r
}

func decodeEntity(body []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil || doc == nil {
		return nil, fmt.Errorf("entity answer is not a JSON object: %v", err)
	}
	return doc, nil
}

func sameValue(sent, got any) bool {
	a, b := fmt.Sprint(sent), fmt.Sprint(got)
	if strings.EqualFold(a, b) {
		return true
	}
	fa, errA := strconv.ParseFloat(a, 64)
	fb, errB := strconv.ParseFloat(b, 64)
	return errA == nil && errB == nil && fa == fb
}

// badAnswer is a success with a body the adapter cannot read: the object
// may exist, so the outcome is unknown until a look-up.
func (c *Client) badAnswer(cause error) *adapters.Error {
	return &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown,
		Message: "1C answered with a body the gateway could not read", Err: errors.New(c.clean(cause.Error()))}
}
