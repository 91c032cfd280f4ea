package sim_test

import (
	"net/http"
	"testing"
)

// TestBitrix24_Requisites: a contact's or company's requisites are added
// and listed as the REST API does — every field with no select, scalars
// as strings, the ones not set null — and an add is refused with the
// portal's texts.
func TestBitrix24_Requisites(t *testing.T) {
	t.Parallel()
	_, base := b24Setup(t)

	// The seeded contact of customer-2001 (ID 2) has its «ИП» requisite.
	list := b24Must(t, base+"crm.requisite.list", map[string]any{
		"filter": map[string]any{"ENTITY_TYPE_ID": 3, "ENTITY_ID": "2"}}, http.StatusOK)
	rows := list["result"].([]any)
	if len(rows) != 1 || list["total"] != float64(1) {
		t.Fatalf("requisites of contact 2 = %v", list)
	}
	rq := rows[0].(map[string]any)
	if rq["RQ_INN"] != "770220010001" || rq["ENTITY_TYPE_ID"] != "3" || rq["ENTITY_ID"] != "2" || rq["PRESET_ID"] != "2" {
		t.Fatalf("requisite = %v", rq)
	}
	if v, ok := rq["RQ_KPP"]; !ok || v != nil {
		t.Fatalf("RQ_KPP = %v (present %v), want null", v, ok)
	}
	b24AssertTime(t, list)
	contact := b24Must(t, base+"crm.contact.get", map[string]any{"id": 2}, http.StatusOK)["result"].(map[string]any)
	if contact["LAST_NAME"] != "Соколов" || contact["NAME"] != "Андрей" || contact["SECOND_NAME"] != "Викторович" {
		t.Fatalf("contact 2 = %v", contact)
	}

	// A company's requisite, added and listed with a select.
	company := b24Must(t, base+"crm.company.add", map[string]any{"fields": map[string]any{"TITLE": "ООО «Вектор»"}}, http.StatusOK)["result"]
	added := b24Must(t, base+"crm.requisite.add", map[string]any{"fields": map[string]any{
		"ENTITY_TYPE_ID": 4, "ENTITY_ID": company, "PRESET_ID": 1, "NAME": "Организация",
		"RQ_INN": "7702104200", "RQ_KPP": "770201001", "ID": 99}}, http.StatusOK)
	if added["result"] != float64(2) {
		t.Fatalf("add result = %v, want 2", added["result"])
	}
	list = b24Must(t, base+"crm.requisite.list", map[string]any{
		"filter": map[string]any{"ENTITY_TYPE_ID": "4", "ENTITY_ID": company},
		"select": []string{"ID", "RQ_INN"}}, http.StatusOK)
	if rows := list["result"].([]any); len(rows) != 1 || rows[0].(map[string]any)["RQ_INN"] != "7702104200" ||
		rows[0].(map[string]any)["ID"] != "2" || len(rows[0].(map[string]any)) != 2 {
		t.Fatalf("company requisites = %v", list)
	}

	for _, tc := range []struct {
		fields map[string]any
		text   string
	}{
		{map[string]any{"ENTITY_TYPE_ID": 2, "ENTITY_ID": 1, "PRESET_ID": 1}, "ENTITY_TYPE_ID is not defined or invalid."},
		{map[string]any{"ENTITY_TYPE_ID": 3, "PRESET_ID": 1}, "ENTITY_ID is not defined or invalid."},
		{map[string]any{"ENTITY_TYPE_ID": 3, "ENTITY_ID": 1}, "PRESET_ID is not defined or invalid."},
		{map[string]any{"ENTITY_TYPE_ID": 4, "ENTITY_ID": 999, "PRESET_ID": 1}, "Entity not found."},
	} {
		b24AssertError(t, b24Must(t, base+"crm.requisite.add", map[string]any{"fields": tc.fields}, http.StatusBadRequest), "", tc.text)
	}
}
