package sim_test

import (
	"net/http"
	"testing"

	"github.com/oncegate/oncegate/adapters/sim"
)

// TestBitrix24_EntityAddGetList: deals, leads, contacts and companies are
// added, read and listed by their origin, each add one effect under its
// ORIGIN_ID, none deduped.
func TestBitrix24_EntityAddGetList(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		entity, title string
		firstID       float64
	}{
		{"deal", "Сделка #1", 1},
		{"lead", "Лид #1", 1},
		{"company", "Компания #1", 1},
		{"contact", "", 4}, // after the three seeded customers
	} {
		t.Run(tc.entity, func(t *testing.T) {
			t.Parallel()
			s, base := b24Setup(t)
			m := "crm." + tc.entity + "."
			fields := map[string]any{"OPPORTUNITY": "1500.5", "CURRENCY_ID": "USD", "COMMENTS": "x",
				"ORIGINATOR_ID": "oncegate", "ORIGIN_ID": "op-1", "ID": 99, "DATE_CREATE": "2000-01-01T00:00:00+00:00"}
			answer := b24Must(t, base+m+"add", map[string]any{"FIELDS": fields}, http.StatusOK)
			if answer["result"] != tc.firstID {
				t.Fatalf("add result = %v, want %v", answer["result"], tc.firstID)
			}
			b24AssertTime(t, answer)
			b24Must(t, base+m+"add.json", map[string]any{"fields": fields}, http.StatusOK)
			if got := s.Effects(sim.Bitrix24, "op-1"); got != 2 {
				t.Fatalf("effects = %d, want 2 (an add never dedupes)", got)
			}

			got := b24Must(t, base+m+"get", map[string]any{"id": tc.firstID}, http.StatusOK)["result"].(map[string]any)
			if got["ID"] != "1" && tc.entity != "contact" {
				t.Fatalf("get ID = %v", got["ID"])
			}
			if got["ORIGINATOR_ID"] != "oncegate" || got["ORIGIN_ID"] != "op-1" || got["COMMENTS"] != "x" ||
				got["ASSIGNED_BY_ID"] != "1" || got["CREATED_BY_ID"] != "1" || got["DATE_CREATE"] == "2000-01-01T00:00:00+00:00" {
				t.Fatalf("get = %v", got)
			}
			if tc.entity == "deal" || tc.entity == "lead" {
				if got["OPPORTUNITY"] != "1500.50" || got["CURRENCY_ID"] != "USD" {
					t.Fatalf("OPPORTUNITY, CURRENCY_ID = %v, %v; want 1500.50, USD", got["OPPORTUNITY"], got["CURRENCY_ID"])
				}
			}
			if tc.title != "" && got["TITLE"] != tc.title {
				t.Fatalf("TITLE = %v, want the default %q", got["TITLE"], tc.title)
			}
			answer = b24Must(t, base+m+"get", map[string]any{"id": 1000}, http.StatusBadRequest)
			b24AssertError(t, answer, "", "Not found")

			list := b24Must(t, base+m+"list", map[string]any{
				"filter": map[string]any{"ORIGINATOR_ID": "ONCEGATE", "ORIGIN_ID": "OP-1"},
				"select": []string{"ID", "ORIGIN_ID"}, "order": map[string]string{"ID": "DESC"},
			}, http.StatusOK)
			rows := list["result"].([]any)
			if list["total"] != float64(2) || len(rows) != 2 || len(rows[0].(map[string]any)) != 2 {
				t.Fatalf("list = %v, want the two adds, ID and ORIGIN_ID alone", list)
			}
			if a, b := rows[0].(map[string]any)["ID"].(string), rows[1].(map[string]any)["ID"].(string); a <= b {
				t.Fatalf("list order %s, %s; want DESC", a, b)
			}
			list = b24Must(t, base+m+"list", map[string]any{"filter": map[string]any{"ORIGIN_ID": "op-2"}}, http.StatusOK)
			if list["total"] != float64(0) {
				t.Fatalf("another origin listed: %v", list)
			}
		})
	}
}

// TestBitrix24_EntityFaults: the adds take execute faults, get and list
// lookup faults, as activities do.
func TestBitrix24_EntityFaults(t *testing.T) {
	t.Parallel()
	s, base := b24Setup(t)
	deal := map[string]any{"fields": map[string]any{"TITLE": "T", "ORIGINATOR_ID": "oncegate", "ORIGIN_ID": "d"}}
	s.Inject(sim.Fault{Target: sim.Bitrix24, Fault: sim.FaultDropResponse})
	if _, _, _, err := b24Call(t, http.DefaultClient, base+"crm.deal.add", deal); err == nil {
		t.Fatal("an answer came despite the drop")
	}
	if got := s.Effects(sim.Bitrix24, "d"); got != 1 {
		t.Fatalf("effects = %d, want 1: the drop comes after the commit", got)
	}
	s.Inject(sim.Fault{Target: sim.Bitrix24, Fault: sim.FaultStatus, Status: 503})
	if status, _, _, _ := b24Call(t, http.DefaultClient, base+"crm.lead.add", deal); status != http.StatusServiceUnavailable {
		t.Fatalf("lead add under fault: status %d", status)
	}
	if got := s.Effects(sim.Bitrix24, "d"); got != 1 {
		t.Fatalf("effects = %d, want 1: a 503 fault commits nothing", got)
	}
	s.Inject(sim.Fault{Target: sim.Bitrix24, Fault: sim.FaultStatus, Status: 502, On: sim.OnLookup})
	if status, _, _, _ := b24Call(t, http.DefaultClient, base+"crm.deal.list", map[string]any{}); status != http.StatusBadGateway {
		t.Fatalf("deal list under a lookup fault: status %d", status)
	}
	s.Inject(sim.Fault{Target: sim.Bitrix24, Fault: sim.FaultStatus, Status: 502, On: sim.OnLookup})
	if status, _, _, _ := b24Call(t, http.DefaultClient, base+"crm.company.get", map[string]any{"id": 1}); status != http.StatusBadGateway {
		t.Fatalf("company get under a lookup fault: status %d", status)
	}
	list := b24Must(t, base+"crm.deal.list", map[string]any{"filter": map[string]any{"ORIGIN_ID": "d"}}, http.StatusOK)
	if list["total"] != float64(1) {
		t.Fatalf("deals = %v, want the one committed before the drop", list)
	}
	s.Reset()
	if list = b24Must(t, base+"crm.deal.list", map[string]any{}, http.StatusOK); list["total"] != float64(0) {
		t.Fatalf("deals survived the reset: %v", list)
	}
	if answer := b24Must(t, base+"crm.deal.add", deal, http.StatusOK); answer["result"] != float64(1) {
		t.Fatalf("id after reset = %v, want 1", answer["result"])
	}
}

// TestBitrix24_EntityRights: a user reads the records its view holds; an
// activity bound to a deal is read through the deal.
func TestBitrix24_EntityRights(t *testing.T) {
	t.Parallel()
	p := sim.DefaultBitrix24Portal()
	p.PerSecond = 0
	p.WebhookUser, p.Teams = 5, map[int][]int{5: {7}}
	_, base := b24Portal(t, p)
	own := b24Must(t, base+"crm.deal.add", map[string]any{"fields": map[string]any{"ORIGIN_ID": "mine"}}, http.StatusOK)
	team := b24Must(t, base+"crm.deal.add", map[string]any{"fields": map[string]any{"ORIGIN_ID": "team", "ASSIGNED_BY_ID": 7}}, http.StatusOK)
	other := b24Must(t, base+"crm.deal.add", map[string]any{"fields": map[string]any{"ORIGIN_ID": "other", "ASSIGNED_BY_ID": 9}}, http.StatusOK)
	list := b24Must(t, base+"crm.deal.list", map[string]any{"order": map[string]string{"ID": "ASC"}}, http.StatusOK)
	if list["total"] != float64(2) {
		t.Fatalf("user 5 sees %v deals, want its own and user 7's", list["total"])
	}
	for _, id := range []any{own["result"], team["result"]} {
		b24Must(t, base+"crm.deal.get", map[string]any{"id": id}, http.StatusOK)
	}
	answer := b24Must(t, base+"crm.deal.get", map[string]any{"id": other["result"]}, http.StatusBadRequest)
	b24AssertError(t, answer, "", "Access denied.")

	// An activity of user 9 bound to user 7's deal is read through the deal.
	fields := b24Fields("on-deal")
	fields["OWNER_TYPE_ID"], fields["OWNER_ID"], fields["RESPONSIBLE_ID"] = 2, team["result"], 9
	added := b24Must(t, base+"crm.activity.add", map[string]any{"fields": fields}, http.StatusOK)
	b24Must(t, base+"crm.activity.get", map[string]any{"id": added["result"]}, http.StatusOK)
	fields["OWNER_ID"], fields["ORIGIN_ID"] = other["result"], "on-other"
	added = b24Must(t, base+"crm.activity.add", map[string]any{"fields": fields}, http.StatusOK)
	answer = b24Must(t, base+"crm.activity.get", map[string]any{"id": added["result"]}, http.StatusBadRequest)
	b24AssertError(t, answer, "", "Access denied.")
	// An activity bound to no record is refused, as before.
	fields["OWNER_ID"] = 1000
	answer = b24Must(t, base+"crm.activity.add", map[string]any{"fields": fields}, http.StatusBadRequest)
	b24AssertError(t, answer, "", "Could not build binding. Please ensure that owner info and communications are defined correctly.")
}

// TestBitrix24_EntityFields: the fields methods describe each entity with
// its user fields.
func TestBitrix24_EntityFields(t *testing.T) {
	t.Parallel()
	_, base := b24Setup(t)
	for method, want := range map[string][]string{
		"crm.deal.fields":     {"TITLE", "OPPORTUNITY", "ORIGIN_ID", "UF_CRM_BUDGET_CODE"},
		"crm.lead.fields":     {"TITLE", "PHONE", "STATUS_ID"},
		"crm.contact.fields":  {"NAME", "PHONE", "UF_CRM_ONCEGATE_BLOCKED"},
		"crm.company.fields":  {"TITLE", "UF_CRM_ONCEGATE_BLOCKED"},
		"crm.activity.fields": {"SUBJECT", "OWNER_ID", "COMMUNICATIONS"},
	} {
		answer := b24Must(t, base+method, map[string]any{}, http.StatusOK)
		fields := answer["result"].(map[string]any)
		for _, name := range want {
			if _, ok := fields[name]; !ok {
				t.Errorf("%s lacks %s", method, name)
			}
		}
		if f, ok := fields["ID"].(map[string]any); !ok || f["isReadOnly"] != true {
			t.Errorf("%s: ID = %v, want read-only", method, fields["ID"])
		}
	}
}
