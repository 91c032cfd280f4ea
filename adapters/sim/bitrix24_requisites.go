package sim

// Requisites (реквизиты) of the simulated portal: the legal details of a
// contact or company — among them the tax id, RQ_INN — kept apart from the
// record itself, as Bitrix24 keeps them
// (https://apidocs.bitrix24.com/api-reference/crm/requisites/universal/index.html).
//
// crm.requisite.list filters, orders and pages as the other list methods
// do; with no select it answers every field, scalars as strings or null
// ({"ID": "1", "ENTITY_TYPE_ID": "3", "ENTITY_ID": "2", "PRESET_ID": "2",
// "RQ_INN": "770220010001", "RQ_KPP": null, …}). A user reads the
// requisites of the records it reads. crm.requisite.add takes {"fields":
// {…}} and answers the new id as a number; it refuses, with 400 and an
// empty code, "ENTITY_TYPE_ID is not defined or invalid." (neither 3, a
// contact, nor 4, a company), "ENTITY_ID is not defined or invalid.",
// "PRESET_ID is not defined or invalid.", "Entity not found." and "Access
// denied.". Adding a requisite is no operation of the gateway: it counts
// no call or effect.
//
// Seeded: the contact of customer-2001 (an individual entrepreneur, as 1C
// knows the same customer) has one requisite of the preset «ИП».

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// b24RequisiteFields are the fields of a requisite of a Russian portal:
// the record's own, then the legal details (RQ_…).
const b24RequisiteFields = "ID ENTITY_TYPE_ID ENTITY_ID PRESET_ID DATE_CREATE DATE_MODIFY CREATED_BY_ID MODIFY_BY_ID " +
	"NAME CODE XML_ID ORIGINATOR_ID ACTIVE ADDRESS_ONLY SORT " +
	"RQ_NAME RQ_FIRST_NAME RQ_LAST_NAME RQ_SECOND_NAME RQ_COMPANY_ID RQ_COMPANY_NAME RQ_COMPANY_FULL_NAME " +
	"RQ_COMPANY_REG_DATE RQ_DIRECTOR RQ_ACCOUNTANT RQ_CEO_NAME RQ_CEO_WORK_POS RQ_CONTACT RQ_EMAIL RQ_PHONE RQ_FAX " +
	"RQ_IDENT_DOC RQ_IDENT_DOC_SER RQ_IDENT_DOC_NUM RQ_IDENT_DOC_DATE RQ_IDENT_DOC_ISSUED_BY RQ_IDENT_DOC_DEP_CODE " +
	"RQ_INN RQ_KPP RQ_IFNS RQ_OGRN RQ_OGRNIP RQ_OKPO RQ_OKTMO RQ_OKVED RQ_VAT_PAYER"

// b24RequisiteReadOnly are the fields an add ignores: the portal sets them.
var b24RequisiteReadOnly = map[string]bool{"ID": true, "DATE_CREATE": true, "DATE_MODIFY": true,
	"CREATED_BY_ID": true, "MODIFY_BY_ID": true}

// b24Requisite is a requisite with every field, unset ones null.
func b24Requisite(set map[string]any) b24Record {
	r := b24Record{}
	for _, f := range strings.Fields(b24RequisiteFields) {
		r[f] = nil
	}
	for k, v := range set {
		r[k] = v
	}
	return r
}

// seedRequisites are the requisites of the seeded contacts (b.mu held).
func (b *bitrix24Sim) seedRequisites() {
	created := time.Date(2024, 2, 20, 10, 0, 0, 0, b24Zone).Format(b24DateTime)
	b.requisites = nil
	for _, c := range b.contacts {
		if c["ORIGIN_ID"] != "customer-2001" {
			continue
		}
		b.requisites = append(b.requisites, b24Requisite(map[string]any{
			"ID": "1", "ENTITY_TYPE_ID": "3", "ENTITY_ID": c["ID"], "PRESET_ID": "2",
			"DATE_CREATE": created, "DATE_MODIFY": "", "CREATED_BY_ID": "1", "NAME": "ИП",
			"ACTIVE": "Y", "ADDRESS_ONLY": "N", "SORT": "500",
			"RQ_NAME": "Соколов Андрей Викторович", "RQ_FIRST_NAME": "Андрей", "RQ_LAST_NAME": "Соколов",
			"RQ_SECOND_NAME": "Викторович", "RQ_INN": "770220010001", "RQ_OGRNIP": "324770000012345", "RQ_VAT_PAYER": "N",
		}))
	}
	b.nextRequisite = len(b.requisites) + 1
}

// requisiteOwner is the contact or company a requisite belongs to, nil
// when there is none (b.mu held).
func (b *bitrix24Sim) requisiteOwner(r b24Record) b24Record {
	typeID := b24Int(r["ENTITY_TYPE_ID"])
	if typeID != 3 && typeID != 4 {
		return nil
	}
	return b.owner(typeID, b24Scalar(r["ENTITY_ID"]))
}

// requisiteList serves crm.requisite.list.
func (b *bitrix24Sim) requisiteList(w http.ResponseWriter, params map[string]json.RawMessage, c b24Req) {
	sees := b.seesOf(c.user)
	b.mu.Lock()
	var rows []b24Record
	for _, r := range b.requisites {
		if owner := b.requisiteOwner(r); owner != nil && sees.record(owner) {
			rows = append(rows, r)
		}
	}
	b.mu.Unlock()
	b24List(w, params, c, rows, b24ListSpec{
		multiple:      map[string]bool{},
		defaultSelect: []string{"*", "UF_*"},
		defaultOrder:  [][2]string{{"ID", "ASC"}},
	})
}

// requisiteAdd serves crm.requisite.add.
func (b *bitrix24Sim) requisiteAdd(w http.ResponseWriter, params map[string]json.RawMessage, c b24Req, f *Fault) {
	var fields map[string]any
	if raw, ok := params["fields"]; !ok || b24Decode(raw, &fields) != nil || fields == nil {
		b24Error(w, http.StatusBadRequest, "", "The parameter 'fields' must be array.")
		return
	}
	typeID, ok := b24PositiveInt(fields["ENTITY_TYPE_ID"])
	if !ok || (typeID != 3 && typeID != 4) {
		b24Error(w, http.StatusBadRequest, "", "ENTITY_TYPE_ID is not defined or invalid.")
		return
	}
	entityID, ok := b24PositiveInt(fields["ENTITY_ID"])
	if !ok {
		b24Error(w, http.StatusBadRequest, "", "ENTITY_ID is not defined or invalid.")
		return
	}
	if _, ok := b24PositiveInt(fields["PRESET_ID"]); !ok {
		b24Error(w, http.StatusBadRequest, "", "PRESET_ID is not defined or invalid.")
		return
	}
	set := map[string]any{}
	for k, v := range fields {
		if !b24FieldName.MatchString(k) || b24RequisiteReadOnly[k] {
			continue
		}
		switch v.(type) {
		case []any, map[string]any:
			// No requisite field takes a list or an object here.
		default:
			set[k] = b24Nullable(v)
		}
	}
	set["ENTITY_TYPE_ID"], set["ENTITY_ID"] = strconv.Itoa(typeID), strconv.Itoa(entityID)
	if b24Scalar(set["ACTIVE"]) == "" {
		set["ACTIVE"] = "Y"
	}
	if b24Scalar(set["ADDRESS_ONLY"]) == "" {
		set["ADDRESS_ONLY"] = "N"
	}
	if b24Scalar(set["SORT"]) == "" {
		set["SORT"] = "500"
	}

	sees := b.seesOf(c.user)
	b.mu.Lock()
	owner := b.owner(typeID, strconv.Itoa(entityID))
	switch {
	case owner == nil:
		b.mu.Unlock()
		b24Error(w, http.StatusBadRequest, "", "Entity not found.")
		return
	case !sees.record(owner):
		b.mu.Unlock()
		b24Error(w, http.StatusBadRequest, "", "Access denied.")
		return
	}
	n := b.nextRequisite
	b.nextRequisite++
	user := strconv.Itoa(c.user)
	set["ID"], set["CREATED_BY_ID"] = strconv.Itoa(n), user
	set["DATE_CREATE"], set["DATE_MODIFY"] = time.Now().In(b24Zone).Format(b24DateTime), ""
	b.requisites = append(b.requisites, b24Requisite(set))
	b.mu.Unlock()
	if f.After(w) {
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"result": n, "time": c.time()})
}
