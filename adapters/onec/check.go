package onec

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

// effect is the document a built-in route leaves at 1C: its kind (the
// word of the module's register of external ids) and whether the route
// posts it.
type effect struct {
	kind  string
	posts bool
}

// effects are the built-in routes that make or change a document.
var effects = map[string]effect{
	"invoice.create":           {kind: "invoice"},
	"sales_order.create_draft": {kind: "sales_order"},
	"sales_order.post":         {kind: "sales_order", posts: true},
}

// kindWords say each kind of the module's documents in plain words.
var kindWords = map[string]string{"invoice": "an invoice", "sales_order": "a sales order"}

var (
	// builtinID is an object id the module gives a document of a
	// built-in route: its prefix and the reference's UUID in lower case.
	builtinID = regexp.MustCompile(`^(INV|SO)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	// anyID is an object id of any document the module writes: a firm's
	// handler chooses its own prefix (PO- in the module's example).
	anyID = regexp.MustCompile(`^[A-Z][A-Z0-9]{0,7}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	// wordPattern is a kind or state word that may be quoted in a message.
	wordPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,29}$`)
)

// document is the module's answer to GET /documents/{object_id}.
type document struct {
	ObjectID     string `json:"object_id"`
	Kind         string `json:"kind"`
	Number       string `json:"number"`
	State        string `json:"state"`
	OperationKey string `json:"operation_key"`
}

// CheckObject implements adapters.ObjectChecker: GET
// /documents/{id}?intent= reads the document id names, found as the
// module registered it or, for one a person made in 1C, by its prefix and
// UUID, with the key of the operation of op's route whose effect it is.
// It only reads. A document of the kind op's route makes, not marked for
// deletion, posted where the route posts, and made by op's key or by no
// key at all, is a Result shaped as Lookup's: the number and the state it
// has now. Any other document is a Final *adapters.Error saying why; an
// id the module does not know is adapters.ErrNotFound; a module published
// before the route existed answers its bare 404, which is
// adapters.ErrCannotCheck. For a route the firm added, the gateway does
// not know which kind of document it makes: only the document its key
// made is a Result, and one no key made cannot be checked.
func (c *Client) CheckObject(ctx context.Context, op adapters.Op, id string) (adapters.Result, error) {
	r := c.route(op)
	if r.name == orderStatusIntent {
		return adapters.Result{}, adapters.NotEffect(codes.IntentNotAllowed, op.Intent+" only reads: no document at 1C is its effect")
	}
	id = strings.TrimSpace(id)
	want, builtin := effects[r.name]
	if builtin && !builtinID.MatchString(id) || !anyID.MatchString(id) {
		return adapters.Result{}, adapters.NotEffect(codes.Validation,
			"the id is not one the 1C service gives: a prefix such as INV- or SO- and the document's UUID in lower case")
	}
	resp, err := c.read(ctx, "/documents/"+url.PathEscape(id)+"?"+url.Values{"intent": {r.name}}.Encode())
	if err != nil {
		return adapters.Result{}, err
	}
	defer adapters.Drain(resp)
	switch resp.StatusCode {
	case http.StatusOK:
		var d document
		if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(&d); err != nil || d.ObjectID != id || d.State == "" {
			return adapters.Result{}, &adapters.Error{Class: adapters.Retry, Code: codes.TargetUnavailable,
				Message: "1C answered a document read with a body the gateway could not read", Err: fmt.Errorf("document answer: %v", err)}
		}
		return judge(op, r, want, builtin, d)
	case http.StatusNotFound:
		e := c.statusError(resp)
		switch e.Code {
		case codes.NotFound:
			return adapters.Result{}, adapters.ErrNotFound
		case codes.TargetNotPublished:
			return adapters.Result{}, fmt.Errorf("%w: %v", adapters.ErrCannotCheck, e.Err)
		}
		return adapters.Result{}, unsure(e)
	}
	return adapters.Result{}, unsure(c.statusError(resp))
}

// judge says whether the document d can be the effect of op, sent by
// route r, which makes want when builtin.
func judge(op adapters.Op, r route, want effect, builtin bool, d document) (adapters.Result, error) {
	switch {
	case builtin && d.Kind != want.kind:
		return adapters.Result{}, adapters.NotEffect(codes.Validation,
			fmt.Sprintf("the id names %s in 1C, not %s, which %s makes", words(d.Kind), words(want.kind), op.Intent))
	case d.State == "deleted":
		return adapters.Result{}, adapters.NotEffect(codes.ReferenceInactive, "the document is marked for deletion in 1C")
	case d.OperationKey != "" && d.OperationKey != op.Key:
		made := "made"
		if want.posts {
			made = "posted"
		}
		return adapters.Result{}, adapters.NotEffect(codes.Validation, "the document was "+made+" by operation "+d.OperationKey+", not by this one")
	case builtin && want.posts && d.State != "posted":
		return adapters.Result{}, adapters.NotEffect(codes.InvalidState,
			fmt.Sprintf("the document is %s in 1C, not posted, and %s posts it", stateWords(d.State), op.Intent))
	case !builtin && d.OperationKey == "":
		// Nothing says the document is of the kind the firm's handler
		// makes: no answer, and a person may still settle, saying so.
		return adapters.Result{}, fmt.Errorf("%w: the gateway does not know which documents %s makes at 1C, and no operation of it made this one",
			adapters.ErrCannotCheck, r.name)
	}
	return adapters.Result{ObjectID: d.ObjectID, Data: map[string]any{"number": d.Number, "state": d.State}}, nil
}

// unsure is a failed read: a refusal of the read itself says nothing of
// the document, so it is never Final (which would say the document cannot
// be the effect).
func unsure(e *adapters.Error) error {
	if e.Class != adapters.Final {
		return adapters.ReadFailure(e)
	}
	m := *e
	m.Class, m.Code, m.Field = adapters.Retry, codes.TargetUnavailable, ""
	m.Message = "1C refused to read the document; the gateway cannot tell whether it can be the operation's effect"
	return &m
}

// words names a kind of the module's documents in plain words.
func words(kind string) string {
	switch w, ok := kindWords[kind]; {
	case ok:
		return w
	case wordPattern.MatchString(kind):
		return "a document of kind " + kind
	}
	return "another kind of document"
}

// stateWords names a document's state that is not posted.
func stateWords(state string) string {
	switch {
	case state == "draft":
		return "a draft"
	case wordPattern.MatchString(state):
		return "in state " + state
	}
	return "in another state"
}
