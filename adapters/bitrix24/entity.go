package bitrix24

import "strings"

// entity is a CRM entity a declared intent may create: its add and list
// methods and the fields a mapping may set. The list is the entity's
// writable fields in the REST reference (crm.<entity>.fields), so a
// misspelt name is refused when the gateway starts instead of being
// ignored by the portal, which drops names it does not know.
type entity struct {
	name     string // "deal"
	noun     string // how a refusal names its records
	add      string // "crm.deal.add"
	list     string // "crm.deal.list"
	update   string // "crm.deal.update"
	get      string // "crm.deal.get"
	typeID   int    // CRM object type: OWNER_TYPE_ID, ENTITY_TYPE_ID
	fields   map[string]bool
	userFlds bool // takes user fields UF_CRM_*
}

// multiFields are the multiple fields of leads, contacts and companies
// (arrays of {VALUE, VALUE_TYPE}); a mapping gives one value, sent as the
// one WORK entry.
var multiFields = map[string]bool{"PHONE": true, "EMAIL": true, "WEB": true, "IM": true}

// keyFields carry the operation key: the gateway writes them, no mapping
// may.
var keyFields = map[string]bool{"ORIGINATOR_ID": true, "ORIGIN_ID": true}

func set(names string) map[string]bool {
	m := map[string]bool{}
	for _, n := range strings.Fields(names) {
		m[n] = true
	}
	return m
}

const (
	utm     = " UTM_SOURCE UTM_MEDIUM UTM_CAMPAIGN UTM_CONTENT UTM_TERM"
	address = " ADDRESS ADDRESS_2 ADDRESS_CITY ADDRESS_POSTAL_CODE ADDRESS_REGION ADDRESS_PROVINCE ADDRESS_COUNTRY"
	multi   = " PHONE EMAIL WEB IM"
)

// entities by their add method: the only methods a mapping may name.
var entities = map[string]*entity{
	"crm.deal.add": {name: "deal", noun: "deal", add: "crm.deal.add", list: "crm.deal.list", typeID: 2, userFlds: true,
		fields: set("TITLE TYPE_ID CATEGORY_ID STAGE_ID IS_RECURRING IS_RETURN_CUSTOMER IS_REPEATED_APPROACH PROBABILITY " +
			"CURRENCY_ID OPPORTUNITY IS_MANUAL_OPPORTUNITY TAX_VALUE COMPANY_ID CONTACT_ID BEGINDATE CLOSEDATE OPENED CLOSED " +
			"COMMENTS ASSIGNED_BY_ID SOURCE_ID SOURCE_DESCRIPTION ADDITIONAL_INFO LEAD_ID" + utm)},
	"crm.lead.add": {name: "lead", noun: "lead", add: "crm.lead.add", list: "crm.lead.list", typeID: 1, userFlds: true,
		fields: set("TITLE NAME SECOND_NAME LAST_NAME HONORIFIC BIRTHDATE COMPANY_TITLE SOURCE_ID SOURCE_DESCRIPTION STATUS_ID " +
			"STATUS_DESCRIPTION POST CURRENCY_ID OPPORTUNITY IS_MANUAL_OPPORTUNITY OPENED COMMENTS ASSIGNED_BY_ID CONTACT_ID COMPANY_ID" +
			address + utm + multi)},
	"crm.contact.add": {name: "contact", noun: "contact", add: "crm.contact.add", list: "crm.contact.list", typeID: 3, userFlds: true,
		fields: set("NAME SECOND_NAME LAST_NAME HONORIFIC BIRTHDATE TYPE_ID SOURCE_ID SOURCE_DESCRIPTION POST OPENED EXPORT " +
			"COMMENTS ASSIGNED_BY_ID COMPANY_ID LEAD_ID" + address + utm + multi)},
	"crm.company.add": {name: "company", noun: "company", add: "crm.company.add", list: "crm.company.list", typeID: 4, userFlds: true,
		fields: set("TITLE COMPANY_TYPE INDUSTRY EMPLOYEES CURRENCY_ID REVENUE OPENED COMMENTS ASSIGNED_BY_ID BANKING_DETAILS LEAD_ID" +
			address + utm + multi)},
	// An activity is bound to the contact or company its OWNER_ID refers
	// to; OWNER_TYPE_ID and COMMUNICATIONS follow from that reference.
	"crm.activity.add": {name: "activity", noun: "activity", add: "crm.activity.add", list: "crm.activity.list",
		fields: set("OWNER_ID TYPE_ID SUBJECT DESCRIPTION DESCRIPTION_TYPE START_TIME END_TIME DEADLINE COMPLETED PRIORITY " +
			"RESPONSIBLE_ID DIRECTION LOCATION NOTIFY_TYPE NOTIFY_VALUE")},
}

func init() {
	for _, e := range entities {
		e.update, e.get = "crm."+e.name+".update", "crm."+e.name+".get"
		updates[e.update] = e
	}
}

// updates are the entities by their update method (update.go).
var updates = map[string]*entity{}

// updateMethods lists the updates a mapping may name, for refusals.
const updateMethods = "crm.deal.update, crm.lead.update, crm.contact.update, crm.company.update, crm.activity.update"

// addMethods lists the methods a mapping may name, for refusals.
const addMethods = "crm.deal.add, crm.lead.add, crm.contact.add, crm.company.add, crm.activity.add"

// refEntities are the entities a reference is resolved in, by their
// origin fields, and their CRM object types.
var refEntities = map[string]int{"contact": 3, "company": 4}

// DefaultReferences are the kinds of external id a Bitrix24 target
// resolves when its configuration names none: a customer is a contact, a
// company a company, each carrying ORIGINATOR_ID = Originator and
// ORIGIN_ID = the external id.
func DefaultReferences() map[string]string {
	return map[string]string{"customer": "contact", "company": "company"}
}

// takes reports whether a mapping may set the field.
func (e *entity) takes(field string) bool {
	return e.fields[field] || e.userFlds && strings.HasPrefix(field, "UF_CRM_") && len(field) > len("UF_CRM_")
}
