package bitrix24_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/oncegate/oncegate/adapters"
)

// Describe says who a customer (a contact) or a company is, as the CRM
// knows them: the record found by its external origin, its name, and the
// ИНН of its requisites; an id no record carries is ErrNotFound.
func TestDescribe(t *testing.T) {
	t.Parallel()
	_, c, base := setup(t)
	var _ adapters.Describer = c
	ctx := context.Background()

	// A company with two requisites, the first (by SORT) holding no ИНН, and
	// another company's requisite beside them.
	vector := rest(t, base, "crm.company.add", map[string]any{"fields": map[string]any{
		"TITLE": "ООО «Вектор»", "ORIGINATOR_ID": "oncegate", "ORIGIN_ID": "company-77"}})
	other := rest(t, base, "crm.company.add", map[string]any{"fields": map[string]any{
		"TITLE": "АО «Другое»", "ORIGINATOR_ID": "oncegate", "ORIGIN_ID": "company-78"}})
	for _, f := range []map[string]any{
		{"ENTITY_TYPE_ID": 4, "ENTITY_ID": other, "PRESET_ID": 1, "NAME": "Организация", "RQ_INN": "7707083893", "SORT": 10},
		{"ENTITY_TYPE_ID": 4, "ENTITY_ID": vector, "PRESET_ID": 1, "NAME": "Филиал", "RQ_INN": "7702104200", "SORT": 200},
		{"ENTITY_TYPE_ID": 4, "ENTITY_ID": vector, "PRESET_ID": 1, "NAME": "Адрес", "ADDRESS_ONLY": "Y", "SORT": 100},
	} {
		rest(t, base, "crm.requisite.add", map[string]any{"fields": f})
	}

	for _, tc := range []struct{ kind, id, name, inn string }{
		{"customer", "customer-2001", "Соколов Андрей Викторович", "770220010001"},
		{"customer", "customer-1042", "Волкова Ирина Сергеевна", ""},
		{"customer", "customer-blocked-1", "Закрытов Олег", ""}, // blocked, still who the id names
		{"company", "company-77", "ООО «Вектор»", "7702104200"},
	} {
		p, err := c.Describe(ctx, tc.kind, tc.id)
		if err != nil || p.Name != tc.name || p.INN != tc.inn {
			t.Errorf("%s %s = %+v, %v; want %q, ИНН %q", tc.kind, tc.id, p, err, tc.name, tc.inn)
		}
	}
	for _, tc := range [][2]string{{"customer", "customer-nobody"}, {"customer", "CUSTOMER-2001"}, {"company", "customer-2001"}, {"supplier", "company-77"}} {
		if _, err := c.Describe(ctx, tc[0], tc[1]); !errors.Is(err, adapters.ErrNotFound) {
			t.Errorf("%s %s: %v, want ErrNotFound", tc[0], tc[1], err)
		}
	}
}

// rest calls a method of the simulated portal and returns its result.
func rest(t *testing.T, base, method string, params map[string]any) any {
	t.Helper()
	body, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(base+method+".json", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Result any `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s, %v", method, resp.Status, err)
	}
	return answer.Result
}
