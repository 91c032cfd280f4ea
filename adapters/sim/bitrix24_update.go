package sim

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"time"
)

// update serves crm.<entity>.update and crm.activity.update (entity nil):
// {"id": …, "fields": {…}} sets the fields named on the record with that
// ID and answers {"result": true}; an ID no record has is 400 "Not found"
// ("Activity is not found." for an activity), a record out of the
// user's sight "Access denied.". Fields are stored as an add stores them;
// a multiple field sent gets its values added, as the portal adds the
// entries sent without an ID. The portal's own fields (ID, the dates, who
// made it) are kept, and so is an activity's binding (OWNER_ID,
// OWNER_TYPE_ID, COMMUNICATIONS). An update that changes a value counts
// once in GET /_sim/effects under "bitrix24_changes" by the record's ID;
// one that sets what is already set counts nothing. The fault's
// after-commit part is applied after the record is changed.
func (b *bitrix24Sim) update(e *b24Entity, w http.ResponseWriter, params map[string]json.RawMessage, c b24Req, f *Fault) {
	id, ok := b24PositiveInt(params["id"])
	if !ok {
		b24Error(w, http.StatusBadRequest, "", "ID is not defined or invalid.")
		return
	}
	var fields map[string]any
	if raw, ok := params["fields"]; !ok || b24Decode(raw, &fields) != nil || fields == nil {
		b24Error(w, http.StatusBadRequest, "", "The parameter 'fields' must be array.")
		return
	}
	sees := b.seesOf(c.user)
	key := strconv.Itoa(id)
	b.mu.Lock()
	var rec b24Record
	rows, multiple, notFound := b.activities, map[string]bool{"COMMUNICATIONS": true}, "Activity is not found."
	if e != nil {
		rows, multiple, notFound = b.rowsOf(e.name), e.multiple, "Not found"
	}
	for _, r := range rows {
		if r["ID"] == key {
			rec = r
			break
		}
	}
	visible := rec != nil
	switch {
	case rec == nil:
	case e == nil:
		visible = sees.activity(rec, b.owner(b24Int(rec["OWNER_TYPE_ID"]), b24Scalar(rec["OWNER_ID"])))
	default:
		visible = sees.record(rec)
	}
	if visible {
		before := make(b24Record, len(rec))
		for k, v := range rec {
			before[k] = v
		}
		b.apply(rec, fields, multiple, e == nil)
		if !reflect.DeepEqual(before, rec) {
			now := time.Now().In(b24Zone).Format(b24DateTime)
			if e == nil {
				rec["LAST_UPDATED"], rec["EDITOR_ID"] = now, strconv.Itoa(c.user)
			} else {
				rec["DATE_MODIFY"], rec["MODIFY_BY_ID"] = now, strconv.Itoa(c.user)
			}
			b.s.Effect(Bitrix24Changes, key) // under b.mu: a change a get sees is always counted
		}
	}
	b.mu.Unlock()
	switch {
	case rec == nil:
		b24Error(w, http.StatusBadRequest, "", notFound)
		return
	case !visible:
		b24Error(w, http.StatusBadRequest, "", "Access denied.")
		return
	}
	// The portal fires the update event for every update saved, whether
	// or not it changed a value.
	b.changed(e, "UPDATE", key, c.origin)
	if f.After(w) {
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"result": true, "time": c.time()})
}

// b24Kept are the fields an update leaves as they are: the portal's, and
// an activity's binding.
var b24Kept = map[string]bool{"OWNER_ID": true, "OWNER_TYPE_ID": true, "COMMUNICATIONS": true,
	"CREATED": true, "LAST_UPDATED": true, "AUTHOR_ID": true, "EDITOR_ID": true}

// apply sets fields on rec as an add stores them. Called with b.mu held.
func (b *bitrix24Sim) apply(rec b24Record, fields map[string]any, multiple map[string]bool, activity bool) {
	for k, v := range fields {
		if !b24FieldName.MatchString(k) || b24ReadOnly[k] || activity && b24Kept[k] {
			continue
		}
		switch v := v.(type) {
		case []any:
			if multiple[k] {
				have, _ := rec[k].([]any)
				rec[k] = append(append([]any{}, have...), v...)
			}
		case map[string]any:
			// No scalar field takes an object; Bitrix24 drops it.
		default:
			rec[k] = b24Nullable(v)
		}
	}
	if v, ok := fields["OPPORTUNITY"]; ok && !activity {
		n, err := strconv.ParseFloat(b24Scalar(v), 64)
		if err != nil {
			n = 0
		}
		rec["OPPORTUNITY"] = strconv.FormatFloat(n, 'f', 2, 64)
	}
}
