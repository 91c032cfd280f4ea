package admin

import (
	"bytes"
	"encoding/json"
)

// targetDetail and lookupAnswer are the audit detail's fields holding
// what a target said (on an attempt, on a failed look-up).
const (
	targetDetail = "target_detail"
	lookupAnswer = "answer"
)

// shownDetail is an audit event's detail as the pages and the CSV show
// it: one line of plain JSON, what a target said (target_detail, answer) redacted
// as a target's text, every other string as the gateway's own (user and
// agent names stay readable). The engine masks details as it journals
// them; this masks rows journaled before, or by an older gateway on a
// shared journal, the same way.
func (h *Handler) shownDetail(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return h.d.Redactor.Foreign(string(raw))
	}
	return marshalPlain(h.redactJSON(v, ""))
}

// redactJSON is v with its strings redacted, those under target_detail
// as a target's text.
func (h *Handler) redactJSON(v any, key string) any {
	switch x := v.(type) {
	case string:
		if key == targetDetail || key == lookupAnswer {
			return h.d.Redactor.Foreign(x)
		}
		return h.d.Redactor.Own(x)
	case map[string]any:
		for k, m := range x {
			x[k] = h.redactJSON(m, k)
		}
	case []any:
		for i, m := range x {
			x[i] = h.redactJSON(m, key)
		}
	}
	return v
}
