package sim

// The Bitrix24 simulator speaks REST through inbound webhooks:
//
//	POST /bitrix24/rest/{user_id}/{secret}/{method}[.json]
//
// with a JSON body, answering {"result": …, "time": {…}} (list methods add
// "total" and, when more than 50 match, "next") or, on failure,
// {"error": "CODE", "error_description": "…"} with the REST API's statuses:
// 401 INVALID_CREDENTIALS for a user id that is not a positive number,
// 404 ERROR_METHOD_NOT_FOUND for an unknown method, 400 with an empty code
// and a text for a method's own refusals. Only one webhook is accepted
// (user and secret of BITRIX24_WEBHOOK_URL, else user 1 with secret
// DefaultBitrix24Secret; see Bitrix24Portal), the portal's limits and each
// user's rights are enforced (bitrix24_portal.go).
//
// Methods: crm.activity.add, crm.activity.list, crm.activity.get,
// crm.activity.fields, the add, get, list and fields of leads, deals, contacts and companies
// (bitrix24_entities.go), crm.requisite.list and crm.requisite.add (bitrix24_requisites.go),
// user.admin. Contacts are seeded from Customers (ids 1, 2, 3, … in
// the order of their external ids; names of b24SeedNames) with ORIGINATOR_ID "oncegate" and
// ORIGIN_ID = the external id; a Blocked customer has the boolean user
// field UF_CRM_ONCEGATE_BLOCKED = "1". Like the real thing, the simulator
// does not dedupe by ORIGIN_ID: every add creates an activity and counts one
// effect under the ORIGIN_ID it carried, and so does every add of another
// entity. Filters compare as MySQL's
// case-insensitive collation does, and filter keys naming no field are
// ignored, as Bitrix24 ignores them.
//
// Faults: the add methods take execute faults, the list and get methods
// take lookup faults.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	b24Originator   = "oncegate"
	b24BlockedField = "UF_CRM_ONCEGATE_BLOCKED"
	b24PageSize     = 50
	b24DateTime     = "2006-01-02T15:04:05-07:00"
)

// b24Zone is the portal's time zone; answers carry its offset, as a portal
// in Moscow does.
var b24Zone = time.FixedZone("MSK", 3*60*60)

func init() { registrations = append(registrations, registerBitrix24) }

// b24Record is one entity as the REST API shows it: scalar fields as strings
// or null, multiple fields as arrays of objects.
type b24Record map[string]any

type bitrix24Sim struct {
	s *Server
	b24Limits

	mu            sync.Mutex
	contacts      []b24Record
	activities    []b24Record
	nextActivity  int
	requisites    []b24Record // of contacts and companies (bitrix24_requisites.go)
	nextRequisite int
	records       map[string][]b24Record // leads, deals, companies by entity
	next          map[string]int         // the next ID of each entity but activities
}

func registerBitrix24(s *Server) {
	b := &bitrix24Sim{s: s}
	b.portal = DefaultBitrix24Portal()
	b.reset()
	s.b24 = b
	s.Handle("POST /bitrix24/rest/{user}/{secret}/{method}", b.serve)
	s.Handle("GET /_sim/bitrix24/refusals", s.handleBitrix24Refusals)
	s.OnReset(b.reset)
}

// b24SeedNames are the seeded contacts' NAME, SECOND_NAME and LAST_NAME by
// external id; a customer not named here is "Customer" and its id.
var b24SeedNames = map[string][3]string{
	"customer-1042":      {"Ирина", "Сергеевна", "Волкова"},
	"customer-2001":      {"Андрей", "Викторович", "Соколов"},
	"customer-blocked-1": {"Олег", "", "Закрытов"},
}

// reset forgets created activities and requisites and reseeds the contacts.
func (b *bitrix24Sim) reset() {
	ids := make([]string, 0, len(Customers))
	for id := range Customers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	created := time.Date(2024, 2, 20, 10, 0, 0, 0, b24Zone).Format(b24DateTime)
	contacts := make([]b24Record, 0, len(ids))
	for i, ext := range ids {
		blocked := "0"
		if Customers[ext] == Blocked {
			blocked = "1"
		}
		n := strconv.Itoa(i + 1)
		name, ok := b24SeedNames[ext]
		if !ok {
			name = [3]string{"Customer", "", ext}
		}
		contacts = append(contacts, b24Record{
			"ID": n, "NAME": name[0], "SECOND_NAME": b24Nullable(name[1]), "LAST_NAME": name[2], "TYPE_ID": "CLIENT",
			"SOURCE_ID": "SELF", "ASSIGNED_BY_ID": "1", "CREATED_BY_ID": "1", "OPENED": "Y", "EXPORT": "Y",
			"DATE_CREATE": created, "DATE_MODIFY": created, "HAS_PHONE": "Y", "HAS_EMAIL": "N",
			"ORIGINATOR_ID": b24Originator, "ORIGIN_ID": ext, "ORIGIN_VERSION": nil,
			b24BlockedField: blocked,
			"PHONE": []any{map[string]any{"ID": strconv.Itoa(100 + i), "VALUE_TYPE": "WORK",
				"VALUE": fmt.Sprintf("+7900000%04d", i+1), "TYPE_ID": "PHONE"}},
		})
	}
	b.mu.Lock()
	b.contacts = contacts
	b.activities = nil
	b.nextActivity = 1
	b.records = map[string][]b24Record{}
	b.next = map[string]int{"lead": 1, "deal": 1, "contact": len(contacts) + 1, "company": 1}
	b.seedRequisites()
	b.mu.Unlock()
	b.resetLimits()
}

// b24Req is one call being served: its method, the webhook's user, and
// when it started.
type b24Req struct {
	b       *bitrix24Sim
	method  string
	user    int
	started time.Time
}

// time is the "time" block of the call's answer, accounting the call's
// execution time to its method.
func (c b24Req) time() map[string]any {
	now := time.Now()
	operating, resetAt := c.b.account(c.method, c.started, now)
	return b24Time(c.started, now, operating, resetAt)
}

// serve dispatches one webhook call.
func (b *bitrix24Sim) serve(w http.ResponseWriter, r *http.Request) {
	started := time.Now()
	method := strings.ToLower(strings.TrimSuffix(r.PathValue("method"), ".json"))
	var (
		handle func(http.ResponseWriter, map[string]json.RawMessage, b24Req)
		kind   string
	)
	entity, op, isEntity := b24EntityMethod(method)
	switch {
	case method == "crm.contact.list":
		handle, kind = b.contactList, OnLookup
	case isEntity && op == "list":
		handle, kind = b.entityList(entity), OnLookup
	case isEntity && op == "get":
		handle, kind = b.entityGet(entity), OnLookup
	case isEntity && op == "add":
		handle, kind = nil, OnExecute
	case isEntity && op == "fields":
		handle, kind = b24Describe(entity.fields, entity.multiple, Bitrix24UserFields[entity.name]), OnLookup
	case method == "crm.activity.fields":
		handle, kind = b24Describe(b24ActivityFields, map[string]bool{"COMMUNICATIONS": true}, nil), OnLookup
	case method == "crm.activity.list":
		handle, kind = b.activityList, OnLookup
	case method == "crm.activity.get":
		handle, kind = b.activityGet, OnLookup
	case method == "crm.activity.add":
		handle, kind = nil, OnExecute
	case method == "user.admin":
		handle, kind = b.userAdmin, OnLookup
	case method == "crm.requisite.list":
		handle, kind = b.requisiteList, OnLookup
	case method == "crm.requisite.add":
		handle, kind = nil, OnExecute
	default:
		b24Error(w, http.StatusNotFound, "ERROR_METHOD_NOT_FOUND", "Method not found!")
		return
	}
	user, ok := b.authorized(r)
	if !ok {
		b24Error(w, http.StatusUnauthorized, "INVALID_CREDENTIALS", "Invalid request credentials")
		return
	}
	switch status, code := b.admit(method, started); code {
	case "QUERY_LIMIT_EXCEEDED":
		b24Error(w, status, code, "Too many requests")
		return
	case "OPERATION_TIME_LIMIT":
		b24Error(w, status, code, "Method is blocked due to operation time limit.")
		return
	}
	c := b24Req{b: b, method: method, user: user, started: started}
	f := b.s.TakeFault(Bitrix24, kind)
	var body []byte
	var readErr error
	if f != nil && f.Fault == FaultDelay {
		// Read while the caller is surely there; the commit after the
		// delay must not depend on it.
		body, readErr = io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	}
	if f.Before(w) {
		return
	}
	if body == nil && readErr == nil {
		body, readErr = io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	}
	if readErr != nil {
		b24Error(w, http.StatusBadRequest, "", "Could not read the request body.")
		return
	}
	params, ok := b24Params(w, body)
	if !ok {
		return
	}
	if method == "crm.activity.add" {
		b.activityAdd(w, params, c, f)
		return
	}
	if isEntity && op == "add" {
		b.entityAdd(entity, w, params, c, f)
		return
	}
	if method == "crm.requisite.add" {
		b.requisiteAdd(w, params, c, f)
		return
	}
	handle(w, params, c)
}

// b24Params decodes the body; parameter names are case-insensitive, as in
// Bitrix24 (FILTER and filter are one).
func b24Params(w http.ResponseWriter, body []byte) (map[string]json.RawMessage, bool) {
	params := map[string]json.RawMessage{}
	if len(strings.TrimSpace(string(body))) == 0 {
		return params, true
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		b24Error(w, http.StatusBadRequest, "", "Invalid JSON in the request body.")
		return nil, false
	}
	for k, v := range raw {
		params[strings.ToLower(k)] = v
	}
	return params, true
}

func (b *bitrix24Sim) contactList(w http.ResponseWriter, params map[string]json.RawMessage, c b24Req) {
	sees := b.seesOf(c.user)
	b.mu.Lock()
	var rows []b24Record
	for _, ct := range b.contacts {
		if sees.contact(ct) {
			rows = append(rows, ct)
		}
	}
	b.mu.Unlock()
	b24List(w, params, c, rows, b24ListSpec{
		multiple:      map[string]bool{"PHONE": true, "EMAIL": true, "WEB": true, "IM": true, "LINK": true},
		defaultSelect: []string{"*", "UF_*"},
		defaultOrder:  [][2]string{{"ID", "ASC"}},
	})
}

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

// userAdmin answers whether the webhook's user is an administrator.
func (b *bitrix24Sim) userAdmin(w http.ResponseWriter, _ map[string]json.RawMessage, c b24Req) {
	WriteJSON(w, http.StatusOK, map[string]any{"result": b.seesOf(c.user).all, "time": c.time()})
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

// b24ListSpec is what differs between the list methods.
type b24ListSpec struct {
	multiple      map[string]bool // fields "*" leaves out
	defaultSelect []string
	defaultOrder  [][2]string
}

// b24List filters, orders, pages and projects rows as a list method does.
func b24List(w http.ResponseWriter, params map[string]json.RawMessage, c b24Req, rows []b24Record, spec b24ListSpec) {
	filter := map[string]any{}
	if raw, ok := params["filter"]; ok && !b24EmptyArray(raw) {
		if b24Decode(raw, &filter) != nil || filter == nil {
			b24Error(w, http.StatusBadRequest, "", "Parameter 'filter' must be array.")
			return
		}
	}
	order := spec.defaultOrder
	if raw, ok := params["order"]; ok && !b24EmptyArray(raw) {
		var err error
		if order, err = b24OrderPairs(raw); err != nil {
			b24Error(w, http.StatusBadRequest, "", "Parameter 'order' must be array.")
			return
		}
	}
	sel := spec.defaultSelect
	if raw, ok := params["select"]; ok && !b24EmptyArray(raw) {
		if err := json.Unmarshal(raw, &sel); err != nil {
			b24Error(w, http.StatusBadRequest, "", "Parameter 'select' must be array.")
			return
		}
	}
	start := 0
	if raw, ok := params["start"]; ok {
		if n, ok := b24PositiveInt(b24Raw(raw)); ok {
			start = n
		}
	}

	var matched []b24Record
	for _, row := range rows {
		ok, unsupported := b24Match(row, filter)
		if unsupported != "" {
			b24Error(w, http.StatusBadRequest, "", "The filter operation of '"+unsupported+"' is not supported by the simulator.")
			return
		}
		if ok {
			matched = append(matched, row)
		}
	}
	sort.SliceStable(matched, func(i, j int) bool {
		for _, o := range order {
			c := b24Compare(matched[i][strings.ToUpper(o[0])], matched[j][strings.ToUpper(o[0])])
			if strings.EqualFold(o[1], "DESC") {
				c = -c
			}
			if c != 0 {
				return c < 0
			}
		}
		return b24Compare(matched[i]["ID"], matched[j]["ID"]) < 0
	})
	page := []b24Record{}
	for i := start; i < len(matched) && i < start+b24PageSize; i++ {
		page = append(page, b24Project(matched[i], sel, spec.multiple))
	}
	answer := map[string]any{"result": page, "total": len(matched), "time": c.time()}
	if start+b24PageSize < len(matched) {
		answer["next"] = start + b24PageSize
	}
	WriteJSON(w, http.StatusOK, answer)
}

// b24Match applies a filter: "=" (the default), "!"/"!=" and "@"/"!@" (IN).
// A key naming no field of the row is ignored, as Bitrix24 ignores it. A
// key with another operation (<, >, LIKE) is returned as unsupported.
func b24Match(row b24Record, filter map[string]any) (ok bool, unsupported string) {
	for key, want := range filter {
		op, field := "=", key
		for _, p := range []string{"!@", "!=", "@", "!", "="} {
			if strings.HasPrefix(key, p) {
				op, field = p, key[len(p):]
				break
			}
		}
		if strings.ContainsAny(field[:min(1, len(field))], "<>%") {
			return false, key
		}
		got, known := row[field]
		if !known {
			continue
		}
		var hit bool
		switch op {
		case "=":
			hit = b24Equal(got, want)
		case "!", "!=":
			hit = !b24Equal(got, want)
		case "@", "!@":
			list, isList := want.([]any)
			if !isList {
				list = []any{want}
			}
			hit = slices.ContainsFunc(list, func(v any) bool { return b24Equal(got, v) })
			if op == "!@" {
				hit = !hit
			}
		}
		if !hit {
			return false, ""
		}
	}
	return true, ""
}

// b24Equal compares as MySQL's default collation does: case-insensitive,
// trailing spaces ignored; NULL equals nothing.
func b24Equal(got, want any) bool {
	if got == nil {
		return false
	}
	return strings.EqualFold(strings.TrimRight(b24Scalar(got), " "), strings.TrimRight(b24Scalar(want), " "))
}

// b24Compare orders numbers numerically, other values as strings, null first.
func b24Compare(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	sa, sb := b24Scalar(a), b24Scalar(b)
	na, errA := strconv.ParseFloat(sa, 64)
	nb, errB := strconv.ParseFloat(sb, 64)
	if errA == nil && errB == nil {
		switch {
		case na < nb:
			return -1
		case na > nb:
			return 1
		}
		return 0
	}
	return strings.Compare(sa, sb)
}

// b24Project keeps the selected fields: "*" is every field but the multiple
// and user fields, "UF_*" every user field, a name that field. ID always.
func b24Project(row b24Record, sel []string, multiple map[string]bool) b24Record {
	all, uf := slices.Contains(sel, "*"), slices.Contains(sel, "UF_*")
	out := b24Record{"ID": row["ID"]}
	for k, v := range row {
		isUF := strings.HasPrefix(k, "UF_")
		if slices.Contains(sel, k) || (all && !isUF && !multiple[k]) || (uf && isUF) {
			out[k] = v
		}
	}
	return out
}

// b24OrderPairs reads an order object keeping its keys in order.
func b24OrderPairs(raw json.RawMessage) ([][2]string, error) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("order is not an object")
	}
	var pairs [][2]string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var dir string
		if err := dec.Decode(&dir); err != nil {
			return nil, err
		}
		pairs = append(pairs, [2]string{k.(string), dir})
	}
	return pairs, nil
}

func b24Error(w http.ResponseWriter, status int, code, description string) {
	WriteJSON(w, status, map[string]string{"error": code, "error_description": description})
}

// b24Time is the "time" block every answer carries.
func b24Time(started, now time.Time, operating float64, resetAt int64) map[string]any {
	sec := func(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
	d := now.Sub(started).Seconds()
	return map[string]any{
		"start": sec(started), "finish": sec(now), "duration": d, "processing": d,
		"date_start":         started.In(b24Zone).Format(b24DateTime),
		"date_finish":        now.In(b24Zone).Format(b24DateTime),
		"operating_reset_at": resetAt, "operating": operating,
	}
}

func b24Decode(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	return dec.Decode(v)
}

func b24Raw(raw json.RawMessage) any {
	var v any
	b24Decode(raw, &v)
	return v
}

// b24EmptyArray reports an empty JSON array, which PHP clients send for an
// empty object.
func b24EmptyArray(raw json.RawMessage) bool {
	return strings.ReplaceAll(strings.TrimSpace(string(raw)), " ", "") == "[]"
}

// b24Scalar renders a scalar as the API compares and stores it.
func b24Scalar(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case json.Number:
		return v.String()
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case int:
		return strconv.Itoa(v)
	case bool:
		if v {
			return "Y"
		}
		return "N"
	}
	return fmt.Sprint(v)
}

func b24PositiveInt(v any) (int, bool) {
	if raw, ok := v.(json.RawMessage); ok {
		v = b24Raw(raw)
	}
	n, err := strconv.Atoi(strings.TrimSpace(b24Scalar(v)))
	return n, err == nil && n > 0
}

// b24Int reads an integer field, 0 when it is none.
func b24Int(v any) int {
	n, _ := strconv.Atoi(b24Scalar(v))
	return n
}

func b24Default(v any, def string) string {
	if s := b24Scalar(v); s != "" {
		return s
	}
	return def
}

func b24Nullable(v any) any {
	if s := b24Scalar(v); s != "" {
		return s
	}
	return nil
}
