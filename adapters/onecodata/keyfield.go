package onecodata

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

// The second guard, for a base that does not keep the Ref_Key the gateway
// sends: the same key (RefKey, a name-based UUID of the operation key) is
// written into a string attribute of the document the firm names
// (key_field), and a document is found by $filter on it. 1C itself then
// refuses nothing: the journal sends a create once, and again only after a
// look-up by the key_field found nothing once the target's settle time
// passed. A weaker guarantee than 1C refusing a second Ref_Key, stated in
// docs/targets.md.

// refKeyLen is how long a key_field's value is: a UUID's 36 characters.
const refKeyLen = 36

// keyFieldName is the binding's key_field as a property list.
func (b *binding) keyFieldName() []string {
	if b.keyField == "" {
		return nil
	}
	return []string{b.keyField}
}

// keyFieldFault says what is wrong with the binding's key_field in what
// $metadata declares, "" when it is fit: a string attribute limited in
// length (1C cannot filter on an unlimited one), long enough for the key.
func (b *binding) keyFieldFault(et *entityType) string {
	if b.keyField == "" || et == nil {
		return ""
	}
	typ, ok := et.props[b.keyField]
	n := et.maxLen[b.keyField]
	switch {
	case !ok:
		return fmt.Sprintf("key_field %s is not published in %s", b.keyField, b.entity)
	case typ != "Edm.String":
		return fmt.Sprintf("key_field %s of %s is %s, not a string attribute", b.keyField, b.entity, typ)
	case n == 0:
		return fmt.Sprintf("key_field %s of %s is a string of unlimited length, which 1C cannot filter on: give the attribute a length (at least %d)", b.keyField, b.entity, refKeyLen)
	case n < refKeyLen:
		return fmt.Sprintf("key_field %s of %s holds %d characters, fewer than the %d of the operation's key", b.keyField, b.entity, n, refKeyLen)
	}
	return ""
}

// keyFieldBinding reports whether any create at this target is guarded
// by a key_field.
func (c *Client) keyFieldBinding() bool {
	if c.keyField != "" {
		return true
	}
	for _, b := range c.bindings {
		if b.keyField != "" {
			return true
		}
	}
	return false
}

// keylessBinding reports whether a create at this target relies on the
// Ref_Key alone.
func (c *Client) keylessBinding() bool {
	for _, b := range c.bindings {
		if !b.post && !b.read && b.change == "" && b.keyField == "" {
			return true
		}
	}
	return len(c.bindings) == 0 && c.keyField == ""
}

// find reads the document an operation created: by its Ref_Key, or, where
// a key_field guards, by $filter on it (one match; none is not found;
// several is no answer a person need not see). It returns the document's
// own Ref_Key.
func (c *Client) find(ctx context.Context, b *binding, ref string) (string, map[string]any, bool, error) {
	if b.keyField == "" {
		doc, found, err := c.get(ctx, b.entity, ref)
		return ref, doc, found, err
	}
	q := url.Values{"$format": {"json"}, "$filter": {b.keyField + " eq '" + ref + "'"}}
	status, h, body, err := c.readCall(ctx, c.entityURL(b.entity, "", "", q))
	if err != nil {
		return "", nil, false, adapters.ReadFailure(err)
	}
	if status != http.StatusOK {
		return "", nil, false, adapters.ReadFailure(c.classify(parseError(status, body), h))
	}
	list, err := decodeCollection(body)
	if err != nil {
		return "", nil, false, c.badAnswer(err)
	}
	switch len(list) {
	case 0:
		return "", nil, false, nil
	case 1:
		id, _ := list[0]["Ref_Key"].(string)
		if !guidPattern.MatchString(id) {
			return "", nil, false, c.badAnswer(errors.New("a document found by key_field without a Ref_Key"))
		}
		return strings.ToLower(id), list[0], true, nil
	}
	return "", nil, false, &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown,
		Message: fmt.Sprintf("1C holds %d documents in %s with this operation's key in %s; check them by hand", len(list), b.entity, b.keyField),
		Err:     fmt.Errorf("%d documents with %s eq %s", len(list), b.keyField, ref)}
}

// decodeCollection reads a collection answer's value list.
func decodeCollection(body []byte) ([]map[string]any, error) {
	doc, err := decodeEntity(body)
	if err != nil {
		return nil, err
	}
	raw, ok := doc["value"].([]any)
	if !ok {
		return nil, errors.New("collection answer without value")
	}
	out := make([]map[string]any, 0, len(raw))
	for _, v := range raw {
		if m, ok := v.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out, nil
}
