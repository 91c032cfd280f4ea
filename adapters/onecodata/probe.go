package onecodata

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// The write probe (check --probe): what a copy of the base does with the
// writes the adapter relies on, where 1C's documentation is silent. It
// writes throwaway documents with keys of its own (random, version 4, so
// never an operation's) and marks them for deletion afterwards.

// probeUnknown is the property the probe sends that no type has.
const probeUnknown = "OncegateProbeUnknown"

// WireReport is what the write probe of one entity set found.
type WireReport struct {
	// Entity is the entity set written.
	Entity string
	// KeepsKeys: 1C created the document under the Ref_Key sent.
	KeepsKeys bool
	// Second is the answer to the same POST sent again: its status, 1C's
	// code and message; SecondMade when it made another document.
	SecondStatus  int
	SecondCode    string
	SecondMessage string
	SecondMade    bool
	// LongProp is the limited string sent too long (LongSent characters,
	// its MaxLength LongMax); LongKept how many 1C kept (-1: refused).
	LongProp                     string
	LongSent, LongMax, LongKept  int
	UnknownIgnored, ThirdRefused bool
	ThirdStatus                  int
	ThirdCode, ThirdMessage      string
	// Made are the documents made; Unmarked those that could not be
	// marked for deletion (to be removed by hand).
	Made, Unmarked []string
	// KeyField is the binding's key_field, "" for none; KeyFieldFault
	// what is wrong with it, if anything.
	KeyField, KeyFieldFault string
}

// Usable reports whether creates at this entity set can be made exactly
// once: 1C keeps the keys and refuses a second POST, or a fit key_field
// guards.
func (r WireReport) Usable() bool {
	if r.KeepsKeys && !r.SecondMade {
		return true
	}
	return r.KeyField != "" && r.KeyFieldFault == ""
}

// Lines are the findings in plain words, then what the gateway will do.
func (r WireReport) Lines() []string {
	var out []string
	if r.KeepsKeys {
		out = append(out, "1C keeps the Ref_Key the gateway sends (the document was created and read back under it)")
	} else {
		out = append(out, "1C does NOT keep the Ref_Key the gateway sends: it created the document under a key of its own")
	}
	switch {
	case r.SecondMade:
		out = append(out, fmt.Sprintf("the same POST sent again made a second document (HTTP %d): 1C itself refuses no repeat here", r.SecondStatus))
	case r.SecondCode != "":
		out = append(out, fmt.Sprintf("the same POST sent again was refused: HTTP %d, code %s (%s)", r.SecondStatus, r.SecondCode, r.SecondMessage)+secondMeaning(r))
	default:
		out = append(out, fmt.Sprintf("the same POST sent again was refused: HTTP %d without 1C's error body", r.SecondStatus))
	}
	switch {
	case r.LongProp == "":
		out = append(out, "no limited string attribute is published in "+r.Entity+": truncation was not tried")
	case r.ThirdRefused:
		out = append(out, fmt.Sprintf("a document with %s of %d characters (its length is %d) and an unknown property was refused: HTTP %d, code %s (%s)",
			r.LongProp, r.LongSent, r.LongMax, r.ThirdStatus, r.ThirdCode, r.ThirdMessage))
	default:
		if r.LongKept < r.LongSent {
			out = append(out, fmt.Sprintf("1C truncates: %s was sent with %d characters and kept %d (its length), answered as a success", r.LongProp, r.LongSent, r.LongKept))
		} else {
			out = append(out, fmt.Sprintf("1C kept all %d characters of %s (its declared length is %d): it does not truncate", r.LongKept, r.LongProp, r.LongMax))
		}
		if r.UnknownIgnored {
			out = append(out, "1C ignores unknown properties: "+probeUnknown+" was accepted and not stored")
		} else {
			out = append(out, "1C stored the unknown property "+probeUnknown)
		}
	}
	out = append(out, r.verdict()...)
	if len(r.Unmarked) > 0 {
		out = append(out, "could NOT mark for deletion: "+strings.Join(r.Unmarked, ", ")+" in "+r.Entity+"; mark or delete them by hand")
	} else if len(r.Made) > 0 {
		out = append(out, fmt.Sprintf("the %d documents made (%s) are marked for deletion", len(r.Made), strings.Join(r.Made, ", ")))
	}
	return out
}

// secondMeaning is how the adapter reads the second POST's refusal.
func secondMeaning(r WireReport) string {
	e := odataError{Status: r.SecondStatus, Code: r.SecondCode, Message: r.SecondMessage}
	switch {
	case keyTaken(e):
		return ": oncegate reads this as \"the document exists\" and settles it by reading the document under its key"
	case e.Code == odataBusiness:
		return ": the configuration's own refusal (code -1); oncegate settles it by reading the document under its key"
	}
	return ": oncegate settles any refused create by reading the document under its key"
}

// verdict says what the gateway will therefore do.
func (r WireReport) verdict() []string {
	var out []string
	switch {
	case r.KeepsKeys && !r.SecondMade:
		out = append(out, "so oncegate relies on 1C's own key: one document per operation, a lost answer settled by one GET by the key")
	case r.KeyField != "" && r.KeyFieldFault == "":
		out = append(out, "so oncegate guards creates by key_field "+r.KeyField+": the operation's key is written there, the document is found by $filter before anything is sent again, and after settle_ms; 1C itself refuses no second document, so this is weaker than a kept Ref_Key")
	case r.KeyFieldFault != "":
		out = append(out, "so oncegate refuses creates here (TARGET_IGNORES_KEYS): "+r.KeyFieldFault)
	default:
		out = append(out, "so oncegate refuses creates here (TARGET_IGNORES_KEYS) until key_field names a limited string attribute of the documents (at least 36 characters) for the operation's key")
	}
	if r.LongProp != "" && !r.ThirdRefused && r.LongKept < r.LongSent {
		out = append(out, "a value 1C cuts or does not store is reported in the answer's warnings as TARGET_CHANGED_VALUE, naming the field")
	}
	return out
}

// WireProbe writes, at a copy of the base, what each entity set a create
// binding writes needs to be known: one document with a client Ref_Key,
// read back; the same POST again; a document with a string longer than
// its attribute and an unknown property; then every document made is
// marked for deletion. It returns a report per entity set.
func (c *Client) WireProbe(ctx context.Context) ([]WireReport, error) {
	m, err := c.metadata(ctx)
	if err != nil {
		return nil, err
	}
	var sets []*binding
	seen := map[string]bool{}
	for _, b := range c.sortedBindings() {
		if !b.post && !b.read && !seen[b.entity] {
			seen[b.entity] = true
			sets = append(sets, b)
		}
	}
	if len(sets) == 0 {
		return nil, errors.New("no intent creates anything at this target: nothing to probe")
	}
	var out []WireReport
	for _, b := range sets {
		et, ok := m.sets[b.entity]
		if !ok {
			return out, fmt.Errorf("%s is not published", b.entity)
		}
		r, err := c.probeSet(ctx, b, et)
		out = append(out, r)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// probeSet runs the probe on one entity set.
func (c *Client) probeSet(ctx context.Context, b *binding, et *entityType) (r WireReport, err error) {
	r = WireReport{Entity: b.entity, KeyField: b.keyField, KeyFieldFault: b.keyFieldFault(et)}
	defer func() { r.Unmarked = c.markDeleted(ctx, b.entity, r.Made) }()
	first := probeKey()
	base := c.probeBody(b, et, first)
	status, doc, oe, err := c.probePost(ctx, b.entity, base)
	if err != nil {
		return r, err
	}
	if doc == nil {
		return r, fmt.Errorf("1C refused the probe's first document: HTTP %d, code %s: %s", status, oe.Code, safeMessage(c, oe.Message))
	}
	got, _ := doc["Ref_Key"].(string)
	r.Made = append(r.Made, strings.ToLower(got))
	if strings.EqualFold(got, first) {
		_, found, err := c.get(ctx, b.entity, first)
		if err != nil {
			return r, err
		}
		r.KeepsKeys = found
	}
	status, doc, oe, err = c.probePost(ctx, b.entity, base)
	if err != nil {
		return r, err
	}
	r.SecondStatus, r.SecondCode, r.SecondMessage = status, oe.Code, safeMessage(c, oe.Message)
	if doc != nil {
		r.SecondMade = true
		id, _ := doc["Ref_Key"].(string)
		if id = strings.ToLower(id); !slices.Contains(r.Made, id) {
			r.Made = append(r.Made, id)
		}
	}
	r.LongProp, r.LongMax = longProp(et, b.keyField)
	if r.LongProp == "" {
		return r, nil
	}
	third := c.probeBody(b, et, probeKey())
	r.LongSent = r.LongMax + 20
	third[r.LongProp] = strings.Repeat("x", r.LongSent)
	third[probeUnknown] = "oncegate probe"
	status, doc, oe, err = c.probePost(ctx, b.entity, third)
	if err != nil {
		return r, err
	}
	if doc == nil {
		r.ThirdRefused, r.ThirdStatus, r.ThirdCode, r.ThirdMessage, r.LongKept = true, status, oe.Code, safeMessage(c, oe.Message), -1
		return r, nil
	}
	id, _ := doc["Ref_Key"].(string)
	r.Made = append(r.Made, strings.ToLower(id))
	kept, _ := doc[r.LongProp].(string)
	r.LongKept = utf8.RuneCountInString(kept)
	_, stored := doc[probeUnknown]
	r.UnknownIgnored = !stored
	return r, nil
}

// probeBody is a throwaway object of b's entity set under ref: a document
// dated now in the base's zone, a catalog item named for the probe; the
// key_field holds the key where one is declared.
func (c *Client) probeBody(b *binding, et *entityType, ref string) map[string]any {
	body := map[string]any{"Ref_Key": ref}
	if _, ok := et.props["Date"]; ok {
		body["Date"] = time.Now().In(c.zone).Format("2006-01-02T15:04:05")
	}
	if _, ok := et.props["Description"]; ok {
		body["Description"] = "oncegate probe"
	}
	if b.keyField != "" && b.keyFieldFault(et) == "" {
		body[b.keyField] = ref
	}
	return body
}

// probePost POSTs body; doc is the entity on a success, oe 1C's error
// otherwise. A transport failure is an error: what 1C did is unknown.
func (c *Client) probePost(ctx context.Context, set string, body map[string]any) (int, map[string]any, odataError, error) {
	raw, _ := json.Marshal(body)
	status, _, answer, err := c.call(ctx, http.MethodPost, c.entityURL(set, "", "", jsonQuery), raw)
	if err != nil {
		return 0, nil, odataError{}, err
	}
	if status == http.StatusCreated || status == http.StatusOK {
		doc, err := decodeEntity(answer)
		if err != nil {
			return status, nil, odataError{}, c.badAnswer(err)
		}
		return status, doc, odataError{}, nil
	}
	return status, nil, parseError(status, answer), nil
}

// markDeleted marks each document for deletion (never deletes it: DELETE
// removes an object physically) and returns those it could not mark.
func (c *Client) markDeleted(ctx context.Context, set string, refs []string) []string {
	var left []string
	for _, ref := range refs {
		status, _, _, err := c.call(ctx, http.MethodPatch, c.entityURL(set, ref, "", jsonQuery), []byte(`{"DeletionMark":true}`))
		if err != nil || status != http.StatusOK && status != http.StatusNoContent {
			left = append(left, ref)
		}
	}
	return left
}

// longProp is the limited string attribute the probe sends too long: the
// key_field when it has one, else the first by name that is none of the
// standard properties; "" when the set has none.
func longProp(et *entityType, keyField string) (string, int) {
	if n := et.maxLen[keyField]; keyField != "" && n > 0 {
		return keyField, n
	}
	var names []string
	for name, n := range et.maxLen {
		if n > 0 && !slices.Contains([]string{"DataVersion", "Number", "Code", "Description"}, name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "", 0
	}
	return names[0], et.maxLen[names[0]]
}

// probeKey is a random version-4 UUID: never an operation's key.
func probeKey() string {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return formatUUID(u)
}
