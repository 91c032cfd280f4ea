package sim

// The Bitrix24 simulator speaks REST through inbound webhooks:
//
//	POST /bitrix24/rest/{user_id}/{secret}/{method}[.json]
//
// with a JSON body, answering {"result": …, "time": {…}} (list methods add
// "total" and, when more than 50 match, "next") or, on failure,
// {"error": "CODE", "error_description": "…"} with the REST API's statuses:
// 401 NO_AUTH_FOUND "Wrong authorization data" for a webhook the portal
// does not have (a wrong secret or user id), 404 ERROR_METHOD_NOT_FOUND
// for an unknown method, 400 with an empty code and a text for a method's
// own refusals, PAYMENT_REQUIRED "Subscription has been ended" for every
// call once the portal's plan has ended (Bitrix24Portal.SubscriptionEnded).
// Only one webhook is accepted
// (user and secret of BITRIX24_WEBHOOK_URL, else user 1 with secret
// DefaultBitrix24Secret; see Bitrix24Portal), the portal's limits and each
// user's rights are enforced (bitrix24_portal.go).
//
// Methods: crm.activity.add, crm.activity.list, crm.activity.get,
// crm.activity.fields, the add, get, list and fields of leads, deals, contacts and companies
// (bitrix24_entities.go), the update of each of them and of activities (bitrix24_update.go), crm.requisite.list and crm.requisite.add (bitrix24_requisites.go),
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
// Faults: the add and update methods take execute faults, the list and
// get methods take lookup faults.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
	events        *b24Events             // outbound webhooks (bitrix24_events.go)
}

func registerBitrix24(s *Server) {
	b := &bitrix24Sim{s: s}
	b.portal = DefaultBitrix24Portal()
	b.reset()
	b.registerEvents()
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

// b24Req is one call being served: its method, the webhook's user, when
// it started, and where it reached the simulator (for the events it
// causes).
type b24Req struct {
	b       *bitrix24Sim
	method  string
	user    int
	started time.Time
	origin  string
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
	case isEntity && (op == "add" || op == "update"):
		handle, kind = nil, OnExecute
	case isEntity && op == "fields":
		handle, kind = b24Describe(entity.fields, entity.multiple, Bitrix24UserFields[entity.name]), OnLookup
	case method == "crm.activity.fields":
		handle, kind = b24Describe(b24ActivityFields, map[string]bool{"COMMUNICATIONS": true}, nil), OnLookup
	case method == "crm.activity.list":
		handle, kind = b.activityList, OnLookup
	case method == "crm.activity.get":
		handle, kind = b.activityGet, OnLookup
	case method == "crm.activity.add" || method == "crm.activity.update":
		handle, kind = nil, OnExecute
	case method == "user.admin":
		handle, kind = b.userAdmin, OnLookup
	case method == "crm.requisite.list":
		handle, kind = b.requisiteList, OnLookup
	case method == "crm.requisite.add":
		handle, kind = nil, OnExecute
	case method == "event.bind" || method == "event.get" || method == "event.unbind":
		// Only faults injected "on": "any" apply: binding is neither.
		handle, kind = b.eventMethod, OnAny
	default:
		b24Error(w, http.StatusNotFound, "ERROR_METHOD_NOT_FOUND", "Method not found!")
		return
	}
	user, ok := b.authorized(r)
	if !ok {
		b24Error(w, http.StatusUnauthorized, "NO_AUTH_FOUND", "Wrong authorization data")
		return
	}
	if b.portalNow().SubscriptionEnded {
		b24Error(w, http.StatusPaymentRequired, "PAYMENT_REQUIRED", "Subscription has been ended")
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
	c := b24Req{b: b, method: method, user: user, started: started, origin: b24Origin(r)}
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
	if isEntity && op == "update" || method == "crm.activity.update" {
		b.update(entity, w, params, c, f)
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

// userAdmin answers whether the webhook's user is an administrator.
func (b *bitrix24Sim) userAdmin(w http.ResponseWriter, _ map[string]json.RawMessage, c b24Req) {
	WriteJSON(w, http.StatusOK, map[string]any{"result": b.seesOf(c.user).all, "time": c.time()})
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
