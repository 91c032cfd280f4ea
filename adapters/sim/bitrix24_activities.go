package sim

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The activity methods of the Bitrix24 simulator: crm.activity.list, .get
// and .add, with the checks crm.activity.add makes of an activity's fields.

func (b *bitrix24Sim) activityList(w http.ResponseWriter, params map[string]json.RawMessage, c b24Req) {
	sees := b.seesOf(c.user)
	b.mu.Lock()
	var rows []b24Record
	for _, a := range b.activities {
		if sees.activity(a, b.owner(b24Int(a["OWNER_TYPE_ID"]), b24Scalar(a["OWNER_ID"]))) {
			rows = append(rows, a)
		}
	}
	b.mu.Unlock()
	b24List(w, params, c, rows, b24ListSpec{
		multiple:      map[string]bool{"COMMUNICATIONS": true, "FILES": true, "BINDINGS": true},
		defaultSelect: []string{"*"},
		defaultOrder:  [][2]string{{"START_TIME", "ASC"}},
	})
}
func (b *bitrix24Sim) activityGet(w http.ResponseWriter, params map[string]json.RawMessage, c b24Req) {
	id, ok := b24PositiveInt(params["id"])
	if !ok {
		b24Error(w, http.StatusBadRequest, "", "ID is not defined or invalid.")
		return
	}
	sees := b.seesOf(c.user)
	b.mu.Lock()
	var found b24Record
	for _, a := range b.activities {
		if a["ID"] == strconv.Itoa(id) {
			found = a
			break
		}
	}
	visible := found != nil && sees.activity(found, b.owner(b24Int(found["OWNER_TYPE_ID"]), b24Scalar(found["OWNER_ID"])))
	var out b24Record
	if visible {
		out = b24Project(found, []string{"*"}, map[string]bool{"COMMUNICATIONS": true})
	}
	b.mu.Unlock()
	switch {
	case found == nil:
		b24Error(w, http.StatusBadRequest, "", "Activity is not found.")
		return
	case !visible:
		b24Error(w, http.StatusBadRequest, "", "Access denied.")
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"result": out, "time": c.time()})
}

// activityAdd validates fields as crm.activity.add does, commits the
// activity and counts the effect under its ORIGIN_ID, then applies the
// fault's after-commit part. It never dedupes.
func (b *bitrix24Sim) activityAdd(w http.ResponseWriter, params map[string]json.RawMessage, c b24Req, f *Fault) {
	var fields map[string]any
	if raw, ok := params["fields"]; !ok || b24Decode(raw, &fields) != nil || fields == nil {
		b24Error(w, http.StatusBadRequest, "", "The parameter 'fields' must be array.")
		return
	}
	originID := b24Scalar(fields["ORIGIN_ID"])
	b.s.Call(Bitrix24, originID)
	a, refused := checkB24Activity(fields)
	if refused != "" {
		b24Error(w, http.StatusBadRequest, "", refused)
		return
	}
	id, ok := b.addActivity(fields, a, originID)
	if !ok {
		b24Error(w, http.StatusBadRequest, "", "Could not build binding. Please ensure that owner info and communications are defined correctly.")
		return
	}
	if f.After(w) {
		return
	}
	n, _ := strconv.Atoi(id)
	WriteJSON(w, http.StatusOK, map[string]any{"result": n, "time": c.time()})
}

// b24Activity is what crm.activity.add checked of an activity's fields.
type b24Activity struct {
	typeID, responsible, ownerType, ownerID int
	subject                                 string
	comms                                   []map[string]any
	times                                   map[string]any // START_TIME and END_TIME in the portal's format, or nil
	deadline                                any
}

// checkB24Activity checks an activity's fields as crm.activity.add
// does; refused is the portal's message when it refuses them.
func checkB24Activity(fields map[string]any) (a b24Activity, refused string) {
	var ok bool
	a.typeID, ok = b24PositiveInt(fields["TYPE_ID"])
	if !ok || a.typeID > 6 {
		return a, "The field TYPE_ID is not defined or invalid."
	}
	a.subject = strings.TrimSpace(b24Scalar(fields["SUBJECT"]))
	if a.subject == "" {
		return a, "The field SUBJECT is not defined or empty."
	}
	if a.responsible, ok = b24PositiveInt(fields["RESPONSIBLE_ID"]); !ok {
		return a, "The field RESPONSIBLE_ID is not defined or invalid."
	}
	if a.comms, ok = b24Communications(fields["COMMUNICATIONS"]); !ok {
		return a, "The field COMMUNICATIONS is not defined or invalid."
	}
	if a.typeID == 2 && len(a.comms) > 1 {
		return a, "The only one communication is allowed for activity of specified type."
	}
	a.times = map[string]any{}
	for _, name := range []string{"START_TIME", "END_TIME"} {
		v, present := fields[name]
		if !present || v == nil || v == "" {
			a.times[name] = nil
			continue
		}
		t, err := time.Parse(time.RFC3339, b24Scalar(v))
		if err != nil {
			return a, "The field " + name + " has an invalid date and time."
		}
		a.times[name] = t.In(b24Zone).Format(b24DateTime)
	}
	a.deadline = a.times["START_TIME"] // calls and meetings
	if a.typeID == 3 {
		a.deadline = a.times["END_TIME"] // tasks
	}
	a.ownerType, _ = b24PositiveInt(fields["OWNER_TYPE_ID"])
	a.ownerID, _ = b24PositiveInt(fields["OWNER_ID"])
	return a, ""
}

// addActivity commits the checked activity a, with the rest of fields,
// and counts the effect under originID; not ok when its owner does not
// exist. It returns the activity's id.
func (b *bitrix24Sim) addActivity(fields map[string]any, a b24Activity, originID string) (id string, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.owner(a.ownerType, strconv.Itoa(a.ownerID)) == nil {
		return "", false
	}
	id = strconv.Itoa(b.nextActivity)
	b.nextActivity++
	now := time.Now().In(b24Zone).Format(b24DateTime)
	for i, c := range a.comms {
		c["ID"] = strconv.Itoa(1000 + len(b.activities)*10 + i)
		c["ACTIVITY_ID"] = id
		if a.typeID == 2 {
			c["TYPE"] = "PHONE"
		}
	}
	completed := "N"
	if b24Scalar(fields["COMPLETED"]) == "Y" {
		completed = "Y"
	}
	b.activities = append(b.activities, b24Record{
		"ID": id, "OWNER_ID": strconv.Itoa(a.ownerID), "OWNER_TYPE_ID": strconv.Itoa(a.ownerType),
		"TYPE_ID": strconv.Itoa(a.typeID), "PROVIDER_ID": "CRM_CALL", "PROVIDER_TYPE_ID": "CALL",
		"PROVIDER_GROUP_ID": nil, "ASSOCIATED_ENTITY_ID": "0", "SUBJECT": a.subject,
		"CREATED": now, "LAST_UPDATED": now, "START_TIME": a.times["START_TIME"], "END_TIME": a.times["END_TIME"],
		"DEADLINE": a.deadline, "COMPLETED": completed, "STATUS": "1", "RESPONSIBLE_ID": strconv.Itoa(a.responsible),
		"PRIORITY": b24Default(fields["PRIORITY"], "2"), "NOTIFY_TYPE": "0", "NOTIFY_VALUE": "0",
		"DESCRIPTION": b24Scalar(fields["DESCRIPTION"]), "DESCRIPTION_TYPE": b24Default(fields["DESCRIPTION_TYPE"], "1"),
		"DIRECTION": b24Default(fields["DIRECTION"], "0"), "LOCATION": "", "SETTINGS": []any{},
		"ORIGINATOR_ID": b24Nullable(fields["ORIGINATOR_ID"]), "ORIGIN_ID": b24Nullable(fields["ORIGIN_ID"]),
		"AUTHOR_ID": "1", "EDITOR_ID": "1", "RESULT_MARK": "0", "RESULT_STATUS": "0", "RESULT_STREAM": "0",
		"AUTOCOMPLETE_RULE": "0", "COMMUNICATIONS": a.comms,
	})
	b.s.Effect(Bitrix24, originID) // under b.mu: an activity a lookup sees is always counted
	return id, true
}

// b24Communications checks COMMUNICATIONS: a non-empty array of objects
// naming the CRM entity (ENTITY_ID, ENTITY_TYPE_ID); VALUE is the phone.
func b24Communications(v any) ([]map[string]any, bool) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, false
	}
	out := make([]map[string]any, 0, len(list))
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, false
		}
		entity, ok1 := b24PositiveInt(m["ENTITY_ID"])
		entityType, ok2 := b24PositiveInt(m["ENTITY_TYPE_ID"])
		if !ok1 || !ok2 {
			return nil, false
		}
		out = append(out, map[string]any{
			"ENTITY_ID": strconv.Itoa(entity), "ENTITY_TYPE_ID": strconv.Itoa(entityType),
			"TYPE": b24Scalar(m["TYPE"]), "VALUE": b24Scalar(m["VALUE"]),
		})
	}
	return out, true
}
