package sim

// The CRM entities the Bitrix24 simulator keeps besides activities: leads,
// deals, contacts and companies, each with its add, get and list method
// (crm.deal.add, crm.deal.get, crm.deal.list, …).
//
// add takes {"fields": {…}} as the REST API does: it keeps every field
// whose name is an upper-case identifier and not read-only (Bitrix24
// ignores names it does not know; the simulator keeps them, so a test
// sees what was sent), stores scalars as the strings the API answers
// with, fills the defaults a portal fills (TITLE "Сделка #<id>",
// ASSIGNED_BY_ID the webhook's user, OPPORTUNITY "0.00", CURRENCY_ID
// "RUB"), renders OPPORTUNITY with two decimals as the API does, and
// counts one effect under the ORIGIN_ID it carried. Like the real thing it
// never dedupes by ORIGIN_ID. get answers the record by ID (400 "Not
// found" or "Access denied."), list filters, orders and pages as the other
// list methods do. crm.<entity>.fields (and crm.activity.fields) describe
// the entity's fields as a portal does ({"TITLE": {"type": "string",
// "isRequired": false, "isReadOnly": false, "isMultiple": false, "title":
// "TITLE"}, …}); the user fields are those of Bitrix24UserFields. A user reads the records whose ASSIGNED_BY_ID is in its
// view (bitrix24_portal.go).

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// b24Entity is what differs between the CRM entities.
type b24Entity struct {
	name     string          // "deal", as in the method names
	typeID   int             // CRM object type (OWNER_TYPE_ID, ENTITY_TYPE_ID)
	title    string          // default title: title + " #" + id; "" for none
	multiple map[string]bool // multiple fields (arrays of objects)
	defaults map[string]any  // fields a new record has unless sent
	fields   string          // the fields crm.<entity>.fields describes
}

const (
	b24ReadOnlyFields = "ID DATE_CREATE DATE_MODIFY CREATED_BY_ID MODIFY_BY_ID ORIGIN_VERSION "
	b24OriginFields   = "ORIGINATOR_ID ORIGIN_ID "
	b24UTMFields      = "UTM_SOURCE UTM_MEDIUM UTM_CAMPAIGN UTM_CONTENT UTM_TERM "
	b24AddressFields  = "ADDRESS ADDRESS_2 ADDRESS_CITY ADDRESS_POSTAL_CODE ADDRESS_REGION ADDRESS_PROVINCE ADDRESS_COUNTRY "
	b24MultiFields    = "PHONE EMAIL WEB IM "
	// b24ActivityFields are what crm.activity.fields describes.
	b24ActivityFields = "ID OWNER_ID OWNER_TYPE_ID TYPE_ID PROVIDER_ID PROVIDER_TYPE_ID SUBJECT CREATED LAST_UPDATED START_TIME " +
		"END_TIME DEADLINE COMPLETED STATUS RESPONSIBLE_ID PRIORITY NOTIFY_TYPE NOTIFY_VALUE DESCRIPTION DESCRIPTION_TYPE " +
		"DIRECTION LOCATION SETTINGS ORIGINATOR_ID ORIGIN_ID AUTHOR_ID EDITOR_ID COMMUNICATIONS"
)

// Bitrix24UserFields are the user fields each entity of the simulated
// portal has (as made with crm.<entity>.userfield.add): the flag of a
// blocked customer on contacts and companies, and a budget code on deals.
var Bitrix24UserFields = map[string][]string{
	"contact": {b24BlockedField},
	"company": {b24BlockedField},
	"deal":    {"UF_CRM_BUDGET_CODE"},
}

var b24Multiple = map[string]bool{"PHONE": true, "EMAIL": true, "WEB": true, "IM": true, "LINK": true}

// b24Entities by name; activities are served by their own code.
var b24Entities = map[string]*b24Entity{
	"lead": {name: "lead", typeID: 1, title: "Лид", multiple: b24Multiple,
		fields: b24ReadOnlyFields + b24OriginFields + b24UTMFields + b24AddressFields + b24MultiFields +
			"TITLE NAME SECOND_NAME LAST_NAME HONORIFIC BIRTHDATE COMPANY_TITLE SOURCE_ID SOURCE_DESCRIPTION STATUS_ID " +
			"STATUS_DESCRIPTION POST CURRENCY_ID OPPORTUNITY IS_MANUAL_OPPORTUNITY OPENED COMMENTS ASSIGNED_BY_ID CONTACT_ID COMPANY_ID",
		defaults: map[string]any{"STATUS_ID": "NEW", "SOURCE_ID": "CALL", "OPPORTUNITY": "0.00", "CURRENCY_ID": "RUB", "OPENED": "Y"}},
	"deal": {name: "deal", typeID: 2, title: "Сделка", multiple: map[string]bool{"CONTACT_IDS": true},
		fields: b24ReadOnlyFields + b24OriginFields + b24UTMFields +
			"TITLE TYPE_ID CATEGORY_ID STAGE_ID IS_RECURRING IS_RETURN_CUSTOMER IS_REPEATED_APPROACH PROBABILITY CURRENCY_ID " +
			"OPPORTUNITY IS_MANUAL_OPPORTUNITY TAX_VALUE COMPANY_ID CONTACT_ID CONTACT_IDS BEGINDATE CLOSEDATE OPENED CLOSED " +
			"COMMENTS ASSIGNED_BY_ID SOURCE_ID SOURCE_DESCRIPTION ADDITIONAL_INFO LEAD_ID",
		defaults: map[string]any{"TYPE_ID": "SALE", "CATEGORY_ID": "0", "STAGE_ID": "NEW", "OPPORTUNITY": "0.00",
			"CURRENCY_ID": "RUB", "OPENED": "Y", "CLOSED": "N", "CONTACT_ID": nil, "COMPANY_ID": nil}},
	"contact": {name: "contact", typeID: 3, multiple: b24Multiple,
		fields: b24ReadOnlyFields + b24OriginFields + b24UTMFields + b24AddressFields + b24MultiFields +
			"NAME SECOND_NAME LAST_NAME HONORIFIC BIRTHDATE TYPE_ID SOURCE_ID SOURCE_DESCRIPTION POST OPENED EXPORT " +
			"COMMENTS ASSIGNED_BY_ID COMPANY_ID LEAD_ID",
		defaults: map[string]any{"TYPE_ID": "CLIENT", "SOURCE_ID": "SELF", "OPENED": "Y", "EXPORT": "Y", "COMPANY_ID": nil}},
	"company": {name: "company", typeID: 4, title: "Компания", multiple: b24Multiple,
		fields: b24ReadOnlyFields + b24OriginFields + b24UTMFields + b24AddressFields + b24MultiFields +
			"TITLE COMPANY_TYPE INDUSTRY EMPLOYEES CURRENCY_ID REVENUE OPENED COMMENTS ASSIGNED_BY_ID BANKING_DETAILS LEAD_ID",
		defaults: map[string]any{"COMPANY_TYPE": "CUSTOMER", "OPENED": "Y", "CURRENCY_ID": "RUB"}},
}

// b24EntityByType names the entity of a CRM object type.
var b24EntityByType = map[int]string{1: "lead", 2: "deal", 3: "contact", 4: "company"}

// b24ReadOnly are the fields an add ignores: the portal sets them.
var b24ReadOnly = map[string]bool{"ID": true, "DATE_CREATE": true, "DATE_MODIFY": true, "CREATED_BY_ID": true,
	"MODIFY_BY_ID": true, "HAS_PHONE": true, "HAS_EMAIL": true, "HAS_IMOL": true}

var b24FieldName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// b24EntityMethod splits "crm.deal.add" into its entity and operation.
func b24EntityMethod(method string) (*b24Entity, string, bool) {
	parts := strings.Split(method, ".")
	if len(parts) != 3 || parts[0] != "crm" {
		return nil, "", false
	}
	e, ok := b24Entities[parts[1]]
	if !ok {
		return nil, "", false
	}
	switch parts[2] {
	case "add", "get", "list", "fields", "update":
		return e, parts[2], true
	}
	return nil, "", false
}

// rowsOf returns the records of an entity. Called with b.mu held.
func (b *bitrix24Sim) rowsOf(entity string) []b24Record {
	if entity == "contact" {
		return b.contacts
	}
	return b.records[entity]
}

// owner finds the record an activity is bound to. Called with b.mu held.
func (b *bitrix24Sim) owner(typeID int, id string) b24Record {
	for _, r := range b.rowsOf(b24EntityByType[typeID]) {
		if r["ID"] == id {
			return r
		}
	}
	return nil
}

// b24Describe serves a fields method: every field named, with the user
// fields of the entity.
func b24Describe(names string, multiple map[string]bool, userFields []string) func(http.ResponseWriter, map[string]json.RawMessage, b24Req) {
	return func(w http.ResponseWriter, _ map[string]json.RawMessage, c b24Req) {
		out := map[string]any{}
		describe := func(name, typ string, readOnly bool) {
			out[name] = map[string]any{"type": typ, "isRequired": false, "isReadOnly": readOnly,
				"isImmutable": false, "isMultiple": multiple[name], "isDynamic": false, "title": name}
		}
		for _, name := range strings.Fields(names) {
			typ := "string"
			switch {
			case multiple[name]:
				typ = "crm_multifield"
			case strings.HasSuffix(name, "_ID") || name == "ID":
				typ = "integer"
			case name == "OPPORTUNITY" || name == "TAX_VALUE" || name == "REVENUE":
				typ = "double"
			}
			describe(name, typ, b24ReadOnly[name])
		}
		for _, name := range userFields {
			describe(name, "string", false)
		}
		WriteJSON(w, http.StatusOK, map[string]any{"result": out, "time": c.time()})
	}
}

// entityList serves crm.<entity>.list.
func (b *bitrix24Sim) entityList(e *b24Entity) func(http.ResponseWriter, map[string]json.RawMessage, b24Req) {
	return func(w http.ResponseWriter, params map[string]json.RawMessage, c b24Req) {
		sees := b.seesOf(c.user)
		b.mu.Lock()
		var rows []b24Record
		for _, r := range b.rowsOf(e.name) {
			if sees.record(r) {
				rows = append(rows, r)
			}
		}
		b.mu.Unlock()
		b24List(w, params, c, rows, b24ListSpec{
			multiple:      e.multiple,
			defaultSelect: []string{"*", "UF_*"},
			defaultOrder:  [][2]string{{"ID", "ASC"}},
		})
	}
}

// entityGet serves crm.<entity>.get.
func (b *bitrix24Sim) entityGet(e *b24Entity) func(http.ResponseWriter, map[string]json.RawMessage, b24Req) {
	return func(w http.ResponseWriter, params map[string]json.RawMessage, c b24Req) {
		id, ok := b24PositiveInt(params["id"])
		if !ok {
			b24Error(w, http.StatusBadRequest, "", "ID is not defined or invalid.")
			return
		}
		sees := b.seesOf(c.user)
		b.mu.Lock()
		var found b24Record
		for _, r := range b.rowsOf(e.name) {
			if r["ID"] == strconv.Itoa(id) {
				found = r
				break
			}
		}
		visible := found != nil && sees.record(found)
		var out b24Record
		if visible {
			out = make(b24Record, len(found))
			for k, v := range found {
				out[k] = v
			}
		}
		b.mu.Unlock()
		switch {
		case found == nil:
			b24Error(w, http.StatusBadRequest, "", "Not found")
			return
		case !visible:
			b24Error(w, http.StatusBadRequest, "", "Access denied.")
			return
		}
		WriteJSON(w, http.StatusOK, map[string]any{"result": out, "time": c.time()})
	}
}

// entityAdd serves crm.<entity>.add: it commits the record, counts the
// effect under its ORIGIN_ID, then applies the fault's after-commit part.
func (b *bitrix24Sim) entityAdd(e *b24Entity, w http.ResponseWriter, params map[string]json.RawMessage, c b24Req, f *Fault) {
	var fields map[string]any
	if raw, ok := params["fields"]; !ok || b24Decode(raw, &fields) != nil || fields == nil {
		b24Error(w, http.StatusBadRequest, "", "The parameter 'fields' must be array.")
		return
	}
	originID := b24Scalar(fields["ORIGIN_ID"])
	b.s.Call(Bitrix24, originID)

	rec := b24Record{}
	for k, v := range e.defaults {
		rec[k] = v
	}
	for k, v := range fields {
		if !b24FieldName.MatchString(k) || b24ReadOnly[k] {
			continue
		}
		switch v := v.(type) {
		case []any:
			if e.multiple[k] {
				rec[k] = v
			}
		case map[string]any:
			// No scalar field takes an object; Bitrix24 drops it.
		default:
			rec[k] = b24Nullable(v)
		}
	}
	if v, ok := rec["OPPORTUNITY"]; ok {
		n, err := strconv.ParseFloat(b24Scalar(v), 64)
		if err != nil {
			n = 0
		}
		rec["OPPORTUNITY"] = strconv.FormatFloat(n, 'f', 2, 64)
	}
	if ids, ok := rec["CONTACT_IDS"].([]any); ok && len(ids) > 0 && rec["CONTACT_ID"] == nil {
		rec["CONTACT_ID"] = b24Scalar(ids[0])
	}
	user := strconv.Itoa(c.user)
	if _, ok := b24PositiveInt(rec["ASSIGNED_BY_ID"]); !ok {
		rec["ASSIGNED_BY_ID"] = user
	}

	b.mu.Lock()
	n := b.next[e.name]
	b.next[e.name]++
	id := strconv.Itoa(n)
	now := time.Now().In(b24Zone).Format(b24DateTime)
	rec["ID"], rec["DATE_CREATE"], rec["DATE_MODIFY"] = id, now, now
	rec["CREATED_BY_ID"], rec["MODIFY_BY_ID"] = user, user
	rec["ORIGINATOR_ID"], rec["ORIGIN_ID"] = b24Nullable(fields["ORIGINATOR_ID"]), b24Nullable(fields["ORIGIN_ID"])
	if e.title != "" && b24Scalar(rec["TITLE"]) == "" {
		rec["TITLE"] = e.title + " #" + id
	}
	if e.name == "contact" {
		b.contacts = append(b.contacts, rec)
	} else {
		b.records[e.name] = append(b.records[e.name], rec)
	}
	b.s.Effect(Bitrix24, originID) // under b.mu: a record a lookup sees is always counted
	b.mu.Unlock()
	b.changed(e, "ADD", id, c.origin)
	if f.After(w) {
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"result": n, "time": c.time()})
}
