package admin

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// detailOrder is the order an event's detail fields are shown in: what
// happened first, then whose, then the references; fields not named here
// follow in the order of their names.
var detailOrder = []string{
	"intent", "target", "code", "field", "target_detail", "answer", "object_id", "found", "checked", "check", "reason", "comment",
	"from", "attempt", "lookup_failures", "next_check_at", "approval_id", "kind",
	"name", "role", "password_confirmed", "sessions_ended", "must_change", "agent", "scopes", "token_id", "token_ids", "ref", "count",
	"duplicate_of", "duplicate_action", "request_id", "actor_id", "addr",
	"completed_before", "oldest_key", "oldest_completed_at", "newest_key", "newest_completed_at", "fingerprint",
}

// detailTimes are the detail fields holding a moment (UTC text).
var detailTimes = map[string]bool{"next_check_at": true, "completed_before": true, "oldest_completed_at": true, "newest_completed_at": true}

// detailMono are the detail fields holding keys, ids and hashes.
var detailMono = map[string]bool{"fingerprint": true, "request_id": true, "object_id": true, "duplicate_of": true, "oldest_key": true, "newest_key": true}

// detailFields is an audit event's detail as labelled fields in the
// page's language, redacted as shownDetail redacts it; nil when the
// detail is empty or no JSON object.
func (h *Handler) detailFields(raw []byte, target string, l *views.Labels, lg string) []views.Field {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil
	}
	h.redactJSON(m, "")
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	rank := func(k string) int {
		if i := slices.Index(detailOrder, k); i >= 0 {
			return i
		}
		return len(detailOrder)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	var out []views.Field
	for _, k := range keys {
		v := h.detailValue(k, m[k], l, lg)
		if v == "" {
			continue
		}
		label := l.DetailFields[k]
		if label == "" {
			label = k
		}
		f := views.Field{Label: label, Value: v, TestID: k, Mono: detailMono[k]}
		if targetSaid[k] {
			// What a target said, in words first (the page's language);
			// its own text one click away.
			who := l.TargetGeneric
			if target != "" {
				who = l.TargetLabel(target)
			}
			f.Value, f.Raw = targetErrorText(l, who, v), v
		}
		out = append(out, f)
	}
	return out
}

// targetSaid are the detail fields that hold what a target answered.
var targetSaid = map[string]bool{"answer": true, "target_detail": true}

// detailValue is one detail field's value for people: a status, a target,
// a role or an error code by its name, a moment in the firm's zone, yes
// or no, a list joined.
func (h *Handler) detailValue(k string, v any, l *views.Labels, lg string) string {
	switch x := v.(type) {
	case nil:
		return ""
	case bool:
		if x {
			return l.Yes
		}
		return l.No
	case json.Number:
		return x.String()
	case string:
		switch {
		case x == "":
			return ""
		case detailTimes[k]:
			if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
				return formatSeconds(t, h.d.Location, lg)
			}
		case k == "target":
			return l.TargetLabel(x)
		case k == "from":
			if slices.Contains(store.Roles, x) { // a change of role
				return l.RoleLabel(x)
			}
			return l.StatusLabel(x)
		case k == "role":
			return l.RoleLabel(x)
		case k == "code":
			if text := l.ErrorText(x, ""); text != x {
				return text + " (" + x + ")"
			}
		}
		return x
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			if s := h.detailValue(k, e, l, lg); s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, ", ")
	default:
		return marshalPlain(x)
	}
}

// repeatedPairs are the pairs of events that come again and again while
// a target does not answer look-ups: the look-up failed, the operation
// was taken up again.
var repeatedPairs = [][2]string{
	{"operation.resumed", "operation.lookup_failed"},
	{"operation.lookup_failed", "operation.resumed"},
}

// collapseRepeats folds a run of the same pair of events, repeated, into
// one line, counted: a history of a target that kept failing reads
// as one line with a count, not a page of the same two lines. Rows are in
// the order they are shown (either way round).
func collapseRepeats(rows []views.EventRow) []views.EventRow {
	out := make([]views.EventRow, 0, len(rows))
	for i := 0; i < len(rows); {
		if i+1 < len(rows) && isPair(rows[i].Event, rows[i+1].Event) {
			a, b := rows[i].Event, rows[i+1].Event
			n := 1
			for i+2*n+1 < len(rows) && rows[i+2*n].Event == a && rows[i+2*n+1].Event == b {
				n++
			}
			if n > 1 {
				// One line for the run: both events' names, the count, and
				// the details (the target's answer, the failure count, the
				// next look-up) of its newest look-up.
				newest := rows[i : i+2]
				if rows[0].ID < rows[len(rows)-1].ID {
					newest = rows[i+2*(n-1) : i+2*n]
				}
				line := newest[0]
				if newest[1].Event == "operation.lookup_failed" {
					line = newest[1]
				}
				line.Label = rows[i].Label + " · " + rows[i+1].Label
				line.Repeat = n
				out = append(out, line)
				i += 2 * n
				continue
			}
		}
		out = append(out, rows[i])
		i++
	}
	return out
}

func isPair(a, b string) bool {
	for _, p := range repeatedPairs {
		if p[0] == a && p[1] == b {
			return true
		}
	}
	return false
}
