package onecodata

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

var _ adapters.ObjectChecker = (*Client)(nil)

// CheckObject implements adapters.ObjectChecker: one GET of the object
// whose Ref_Key a person typed, in the entity set op's binding writes.
//
// For a create it answers what Lookup would for that document: this
// operation's own (its Ref_Key derived from the key), or one made some
// other way, by hand in 1C, which the person vouches for. A document made
// by another operation is refused: its Ref_Key is a name-based UUID (the
// gateway's choice) that is not this operation's. So is a document
// marked for deletion. For a posting the id must be the document the
// payload names, and it must be posted. A read has no effect to check.
//
// A base that ignores client keys does not stop the check: the check is
// by the document's own id, which such a base keeps.
func (c *Client) CheckObject(ctx context.Context, op adapters.Op, id string) (adapters.Result, error) {
	b, err := c.bindingOf(op)
	if err != nil {
		return adapters.Result{}, err
	}
	if b.read {
		return adapters.Result{}, &adapters.Error{Class: adapters.Final, Code: codes.IntentNotAllowed,
			Message: b.intent + " only reads " + b.entity + "; a read makes nothing at 1C to be found"}
	}
	if !guidPattern.MatchString(id) {
		return adapters.Result{}, adapters.NotEffect(codes.Validation,
			"this is not a 1C object id: it must be the object's Ref_Key, a GUID such as 3f2504e0-4f89-11d3-9a0c-0305e82c3301")
	}
	id = strings.ToLower(id)
	if b.post {
		return c.checkPosted(ctx, b, op, id)
	}
	if b.change != "" {
		return c.checkChanged(ctx, b, op, id)
	}
	doc, err := c.checkRead(ctx, b, id)
	if err != nil {
		return adapters.Result{}, err
	}
	if id != RefKey(c.instance, op.Intent, op.Key) && nameBased(id) {
		return adapters.Result{}, adapters.NotEffect(codes.InvalidState,
			"the document was made by another operation: its Ref_Key is a name-based id, which the gateway derives from an operation key and 1C never chooses, but not this operation's")
	}
	// Where a key_field guards, the document carries the key of the
	// operation that made it: another's is not this operation's effect.
	if b.keyField != "" {
		if k, _ := doc[b.keyField].(string); k != "" && !strings.EqualFold(k, RefKey(c.instance, op.Intent, op.Key)) {
			return adapters.Result{}, adapters.NotEffect(codes.InvalidState,
				"the document was made by another operation: its "+b.keyField+" holds another operation's key")
		}
	}
	return result(id, doc), nil
}

// checkPosted checks the document of a posting: the one the payload
// names, posted.
func (c *Client) checkPosted(ctx context.Context, b *binding, op adapters.Op, id string) (adapters.Result, error) {
	var p map[string]any
	json.Unmarshal(op.Payload, &p)
	named, _ := p[b.docPath].(string)
	if !strings.EqualFold(named, id) {
		msg := "this operation posts the document its " + b.docPath + " names"
		if guidPattern.MatchString(named) {
			msg += " (" + strings.ToLower(named) + ")"
		}
		return adapters.Result{}, adapters.NotEffect(codes.InvalidState, msg+", not this one")
	}
	doc, err := c.checkRead(ctx, b, id)
	switch {
	case err != nil:
		return adapters.Result{}, err
	case doc["Posted"] != true:
		return adapters.Result{}, adapters.NotEffect(codes.InvalidState, "the document is not posted in 1C (a draft): the posting is not done")
	}
	return posted(id, doc), nil
}

// checkRead reads the document id of the binding's entity set: a 404 is
// adapters.ErrNotFound (no such object, or one of another kind, which the
// set does not hold); a failed read is never Final, which would say the
// object cannot be the effect. A document marked for deletion is no
// operation's effect, made or posted.
func (c *Client) checkRead(ctx context.Context, b *binding, id string) (map[string]any, error) {
	doc, found, err := c.get(ctx, b.entity, id)
	switch {
	case err != nil:
		return nil, adapters.LookupFailure(err)
	case !found:
		return nil, adapters.ErrNotFound
	case doc["DeletionMark"] == true:
		return nil, adapters.NotEffect(codes.InvalidState, "the document is marked for deletion in 1C")
	}
	return doc, nil
}

// nameBased reports whether a Ref_Key is an RFC 9562 version-5 UUID, as
// RefKey derives. 1C chooses the keys of objects made in it itself, and
// they are never name-based (the platform's are version 1).
func nameBased(id string) bool {
	return len(id) == 36 && id[14] == '5' && strings.ContainsRune("89ab", rune(id[19]))
}
