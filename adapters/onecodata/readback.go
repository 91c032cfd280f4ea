package onecodata

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

// ChangedKey is the result's list of the values 1C did not keep as sent:
// each {"field": the payload's path (or the key_field), "property": 1C's
// attribute, "message": what 1C holds instead}. A live base answers a
// write 201 or 200 while it cuts a string to its attribute's length,
// ignores a property, or stores nothing for a value it cannot convert;
// the gateway reads back what 1C answered and says so, never a silent
// success. The engine turns each into a TARGET_CHANGED_VALUE warning.
const ChangedKey = adapters.ChangedKey

// maxShown bounds a value quoted in a change's message, in runes.
const maxShown = 60

// changes compares the document 1C answered with the body sent: every
// scalar header property, and every row of each tabular section sent.
func (b *binding) changes(body, doc map[string]any) []map[string]any {
	var out []map[string]any
	note := func(field, prop, msg string) {
		out = append(out, map[string]any{"field": field, "property": prop, "message": msg})
	}
	for _, k := range sentProps(body) {
		if msg := changed(body[k], doc, k); msg != "" {
			note(b.payloadPath(k), k, msg)
		}
	}
	sections := make([]string, 0)
	for k, v := range body {
		if _, ok := v.([]map[string]any); ok {
			sections = append(sections, k)
		}
	}
	sort.Strings(sections)
	for _, sec := range sections {
		rows := body[sec].([]map[string]any)
		got, _ := doc[sec].([]any)
		if len(got) != len(rows) {
			note(b.payloadPath(sec), sec, fmt.Sprintf("1C holds %d rows in %s, %d were sent", len(got), sec, len(rows)))
			continue
		}
		for i, row := range rows {
			gr, _ := got[i].(map[string]any)
			names := make([]string, 0, len(row))
			for rn := range row {
				names = append(names, rn)
			}
			sort.Strings(names)
			for _, rn := range names {
				if msg := changed(row[rn], gr, rn); msg != "" {
					note(fmt.Sprintf("%s[%d].%s", b.payloadPath(sec), i, b.rowPath(sec, rn)), sec+"."+rn, msg)
				}
			}
		}
	}
	return out
}

// changed says how doc's property k differs from sent, "" when it is the
// same value.
func changed(sent any, doc map[string]any, k string) string {
	if sent == nil {
		return ""
	}
	got, ok := doc[k]
	switch {
	case !ok:
		return fmt.Sprintf("1C's answer does not have %s: the value sent (%s) was not stored", k, shown(sent))
	case sameValue(sent, got):
		return ""
	}
	s, isString := sent.(string)
	g, gotString := got.(string)
	if isString && gotString && g != "" && strings.HasPrefix(s, g) {
		return fmt.Sprintf("1C cut %s to %d characters (%d were sent): it holds %s", k, utf8.RuneCountInString(g), utf8.RuneCountInString(s), shown(g))
	}
	return fmt.Sprintf("1C holds %s in %s, not the value sent (%s)", shown(got), k, shown(sent))
}

// shown quotes a value for a message, shortened.
func shown(v any) string {
	s := fmt.Sprint(v)
	if r := []rune(s); len(r) > maxShown {
		s = string(r[:maxShown]) + "…"
	}
	return fmt.Sprintf("%q", s)
}

// payloadPath is the payload field a header property is mapped from, or
// the property itself (a constant, the key_field).
func (b *binding) payloadPath(prop string) string {
	if b.fields != nil {
		if f := b.fields.Field(prop); f != nil {
			switch {
			case f.From != "":
				return f.From
			case f.Ref != "":
				return f.Ref
			}
		}
	}
	return prop
}

// rowPath is the row's field a row property is mapped from.
func (b *binding) rowPath(sec, prop string) string {
	if b.fields != nil {
		if f := b.fields.Field(sec); f != nil && f.Row != nil {
			if rf := f.Row.Field(prop); rf != nil {
				if rf.From != "" {
					return rf.From
				}
				if rf.Ref != "" {
					return rf.Ref
				}
			}
		}
	}
	return prop
}

// withChanges is a create's result with the changes 1C made, if any.
func (b *binding) withChanges(r adapters.Result, body, doc map[string]any) adapters.Result {
	if ch := b.changes(body, doc); len(ch) > 0 {
		r.Data[ChangedKey] = ch
	}
	return r
}

// keptAsSent reports whether a document found under the operation's key
// is what was sent, allowing for what 1C changes on every write of it
// (a string cut to its attribute's length): the rest names the first
// property that differs otherwise.
func keptAsSent(et *entityType, body, doc map[string]any) string {
	for _, k := range sentProps(body) {
		if sameValue(body[k], doc[k]) {
			continue
		}
		s, _ := body[k].(string)
		g, _ := doc[k].(string)
		if n := et.maxLen[k]; n > 0 && utf8.RuneCountInString(g) == n && strings.HasPrefix(s, g) {
			continue
		}
		return k
	}
	for k, v := range body {
		if rows, ok := v.([]map[string]any); ok {
			got, _ := doc[k].([]any)
			if len(got) != len(rows) {
				return k
			}
		}
	}
	return ""
}

// mismatch is the refusal of a document found under the operation's key
// with other values.
func mismatch(ref, diff string, cause error) *adapters.Error {
	return &adapters.Error{Class: adapters.Final, Code: codes.KeyMismatch, ObjectID: ref,
		Message: "1C holds a document under this operation's key with other values (" + diff + ")", Err: cause}
}
