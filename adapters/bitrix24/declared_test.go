package bitrix24_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/bitrix24"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/sim"
)

// dealSchema is the deal.create payload of docs/intents.md's example, with an optional
// company and date for the cases below.
const dealSchema = `{
  "type": "object", "additionalProperties": false,
  "required": ["customer_id", "title", "amount_minor", "currency"],
  "properties": {
    "customer_id":  {"type": "string", "minLength": 1, "maxLength": 128},
    "company_id":   {"type": "string", "minLength": 1, "maxLength": 128},
    "title":        {"type": "string", "minLength": 1, "maxLength": 255},
    "amount_minor": {"type": "integer", "minimum": 1, "maximum": 100000000000},
    "currency":     {"type": "string", "minLength": 3, "maxLength": 3},
    "due_at":       {"type": "string", "format": "date-time", "maxLength": 64},
    "phone":        {"type": "string", "maxLength": 32},
    "hot":          {"type": "boolean"}
  }
}`

// dealMap is the deal.create mapping of docs/intents.md's example.
const dealMap = `{
  "method": "crm.deal.add",
  "fields": {
    "CONTACT_ID":  {"ref": "customer_id"},
    "TITLE":       {"from": "title"},
    "OPPORTUNITY": {"from": "amount_minor", "money": "minor"},
    "CURRENCY_ID": {"from": "currency"}
  }
}`

func dealBinding(m string) adapters.Binding {
	return adapters.Binding{Intent: "deal.create", Version: 1, Schema: json.RawMessage(dealSchema),
		References: map[string]string{"customer_id": "customer"}, Map: json.RawMessage(m)}
}

// builtinBinding is crm.callback.create as the catalog gives it: no map.
var builtinBinding = adapters.Binding{Intent: bitrix24.Intent, Version: 1, Schema: json.RawMessage(`{"type":"object"}`)}

func mustBind(t *testing.T, c *bitrix24.Client, bs ...adapters.Binding) {
	t.Helper()
	if err := c.Bind(bs); err != nil {
		t.Fatalf("bind: %v", err)
	}
}

func dealOp(t *testing.T, payload map[string]any) adapters.Op {
	t.Helper()
	raw, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	return adapters.Op{Key: fmt.Sprintf("test:deal:create:d-%d:v1", keySeq.Add(1)), Intent: "deal.create", Version: 1, Payload: raw, Attempt: 1}
}

func defaultDeal() map[string]any {
	return map[string]any{"customer_id": "customer-1042", "title": "Boiler service", "amount_minor": 150000, "currency": "RUB"}
}

// simCall calls the simulated portal directly, as a person in its UI would
// see the records.
func simCall(t *testing.T, base, method string, params any) map[string]any {
	t.Helper()
	body, _ := json.Marshal(params)
	resp, err := http.Post(base+method, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d, %v, %v", method, resp.StatusCode, answer, err)
	}
	return answer
}

// dealsOf lists the deals carrying the key, as the portal holds them.
func dealsOf(t *testing.T, base, key string) []map[string]any {
	t.Helper()
	answer := simCall(t, base, "crm.deal.list", map[string]any{"filter": map[string]any{"ORIGIN_ID": key}, "select": []string{"*"}})
	var out []map[string]any
	for _, r := range answer["result"].([]any) {
		out = append(out, r.(map[string]any))
	}
	return out
}

func TestDeclaredDeal(t *testing.T) {
	t.Parallel()

	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		s, c, base := setup(t)
		mustBind(t, c, builtinBinding, dealBinding(dealMap))
		op := dealOp(t, defaultDeal())
		res, err := c.Execute(context.Background(), op)
		if err != nil {
			t.Fatalf("execute: %v", err)
		}
		deals := dealsOf(t, base, op.Key)
		if len(deals) != 1 {
			t.Fatalf("deals = %v, want one", deals)
		}
		d := deals[0]
		for field, want := range map[string]any{"ID": res.ObjectID, "ORIGINATOR_ID": "oncegate", "ORIGIN_ID": op.Key,
			"TITLE": "Boiler service", "OPPORTUNITY": "1500.00", "CURRENCY_ID": "RUB", "CONTACT_ID": "1"} {
			if d[field] != want {
				t.Errorf("deal %s = %v, want %v", field, d[field], want)
			}
		}
		if got, want := res.Data, map[string]any{"deal_id": res.ObjectID}; !reflect.DeepEqual(got, want) {
			t.Fatalf("data = %v, want %v", got, want)
		}
		if got := s.Effects(sim.Bitrix24, op.Key); got != 1 {
			t.Fatalf("effects = %d, want 1", got)
		}
		found, err := c.Lookup(context.Background(), op)
		if err != nil || !reflect.DeepEqual(found, res) {
			t.Fatalf("lookup = %+v, %v; want %+v", found, err, res)
		}
	})

	t.Run("LostAnswerFoundByLookup", func(t *testing.T) {
		t.Parallel()
		s, c, base := setup(t)
		mustBind(t, c, dealBinding(dealMap))
		op := dealOp(t, defaultDeal())
		inject(t, s, sim.Fault{Fault: sim.FaultDropResponse})
		_, err := c.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Reconcile, codes.OutcomeUnknown, "", secret)
		res, err := c.Lookup(context.Background(), op)
		if err != nil {
			t.Fatalf("lookup after a lost answer: %v", err)
		}
		deals := dealsOf(t, base, op.Key)
		if len(deals) != 1 || deals[0]["ID"] != res.ObjectID || res.Data["deal_id"] != res.ObjectID {
			t.Fatalf("lookup = %+v, deals %v; want the one deal", res, deals)
		}
		if got := s.Effects(sim.Bitrix24, op.Key); got != 1 {
			t.Fatalf("effects = %d, want 1: nothing was sent again", got)
		}
	})

	t.Run("LookupNotFound", func(t *testing.T) {
		t.Parallel()
		_, c, _ := setup(t)
		mustBind(t, c, dealBinding(dealMap))
		if _, err := c.Lookup(context.Background(), dealOp(t, defaultDeal())); !errors.Is(err, adapters.ErrNotFound) {
			t.Fatalf("lookup of a key never sent = %v, want ErrNotFound", err)
		}
	})

	t.Run("LookupHiddenFromUserIsUnknown", func(t *testing.T) {
		t.Parallel()
		// The webhook's user 7 is no administrator and the deal goes to
		// user 9 at once: an empty list proves nothing.
		s := sim.New()
		p := sim.DefaultBitrix24Portal()
		p.WebhookUser, p.WebhookSecret, p.Admins, p.PerSecond = testUser, secret, []int{1}, 0
		s.SetBitrix24Portal(p)
		s.AssignBitrix24Contact("customer-1042", testUser)
		srv := httptest.NewServer(s)
		t.Cleanup(srv.Close)
		c, err := bitrix24.New(bitrix24.Config{WebhookURL: srv.URL + "/bitrix24/rest/7/" + secret + "/", Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		mustBind(t, c, dealBinding(strings.Replace(dealMap, `"TITLE"`, `"ASSIGNED_BY_ID": {"value": 9}, "TITLE"`, 1)))
		op := dealOp(t, defaultDeal())
		inject(t, s, sim.Fault{Fault: sim.FaultDropResponse})
		_, err = c.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Reconcile, codes.OutcomeUnknown, "", secret)
		_, err = c.Lookup(context.Background(), op)
		e := adapterstest.WantError(t, err, adapters.Reconcile, codes.OutcomeUnknown, "", secret)
		if !strings.Contains(e.Message, "may not see every deal") {
			t.Fatalf("message = %q", e.Message)
		}
		if got := s.Effects(sim.Bitrix24, op.Key); got != 1 {
			t.Fatalf("effects = %d, want 1", got)
		}
	})

	t.Run("LookupFaultIsRetry", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t)
		mustBind(t, c, dealBinding(dealMap))
		inject(t, s, sim.Fault{Fault: sim.FaultStatus, Status: 503, On: sim.OnLookup})
		_, err := c.Lookup(context.Background(), dealOp(t, defaultDeal()))
		if adapters.ClassOf(err) != adapters.Retry {
			t.Fatalf("lookup under a 503 = %v, want Retry", err)
		}
	})

	t.Run("Validate", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t)
		mustBind(t, c, dealBinding(dealMap))
		op := dealOp(t, defaultDeal())
		plan, err := c.Validate(context.Background(), op)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"method": "crm.deal.add", "fields": map[string]any{
			"CONTACT_ID": "1", "TITLE": "Boiler service", "OPPORTUNITY": "1500.00", "CURRENCY_ID": "RUB"}}
		if !reflect.DeepEqual(plan.Data, want) {
			t.Fatalf("plan = %v, want %v", plan.Data, want)
		}
		if got := s.Calls(sim.Bitrix24, op.Key); got != 0 {
			t.Fatalf("validate sent %d adds", got)
		}
	})

	t.Run("References", func(t *testing.T) {
		t.Parallel()
		s, c, base := setup(t)
		// A company the firm marked with its external id.
		simCall(t, base, "crm.company.add", map[string]any{"fields": map[string]any{
			"TITLE": "Acme", "ORIGINATOR_ID": "oncegate", "ORIGIN_ID": "company-77"}})
		b := dealBinding(strings.Replace(dealMap, `"TITLE"`, `"COMPANY_ID": {"ref": "company_id"}, "TITLE"`, 1))
		b.References["company_id"] = "company"
		mustBind(t, c, b)

		payload := defaultDeal()
		payload["company_id"] = "company-77"
		op := dealOp(t, payload)
		if _, err := c.Execute(context.Background(), op); err != nil {
			t.Fatal(err)
		}
		if d := dealsOf(t, base, op.Key); len(d) != 1 || d[0]["COMPANY_ID"] != "1" || d[0]["CONTACT_ID"] != "1" {
			t.Fatalf("deals = %v, want company 1 and contact 1", d)
		}
		for _, tc := range []struct {
			field, value, code string
		}{
			{"customer_id", "customer-9999", codes.ReferenceNotFound},
			{"customer_id", "customer-blocked-1", codes.ReferenceInactive},
			{"company_id", "company-78", codes.ReferenceNotFound},
		} {
			payload := defaultDeal()
			payload["company_id"] = "company-77"
			payload[tc.field] = tc.value
			op := dealOp(t, payload)
			_, err := c.Execute(context.Background(), op)
			if e := adapterstest.WantError(t, err, adapters.Final, tc.code, tc.field, secret); e.Field != tc.field {
				t.Fatalf("%s=%s: field = %q", tc.field, tc.value, e.Field)
			}
			if got := s.Calls(sim.Bitrix24, op.Key); got != 0 {
				t.Fatalf("%s=%s: %d adds sent", tc.field, tc.value, got)
			}
		}
	})

	t.Run("EveryReference", func(t *testing.T) {
		// Both references unknown: validate names each, by its field.
		t.Parallel()
		s, c, _ := setup(t)
		b := dealBinding(strings.Replace(dealMap, `"TITLE"`, `"COMPANY_ID": {"ref": "company_id"}, "TITLE"`, 1))
		b.References["company_id"] = "company"
		mustBind(t, c, b)
		payload := defaultDeal()
		payload["customer_id"], payload["company_id"] = "customer-blocked-1", "company-78"
		op := dealOp(t, payload)
		_, err := c.Validate(context.Background(), op)
		e := adapterstest.WantError(t, err, adapters.Final, codes.ReferenceNotFound, "company_id", secret)
		if len(e.Also) != 1 || e.Also[0].Code != codes.ReferenceInactive || e.Also[0].Field != "customer_id" {
			t.Fatalf("further refusals %v, want customer_id's REFERENCE_INACTIVE", e.Also)
		}
		if got := s.Calls(sim.Bitrix24, op.Key); got != 0 {
			t.Fatalf("%d adds sent", got)
		}
	})

	t.Run("UnknownCurrencyIsValidation", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t)
		mustBind(t, c, dealBinding(dealMap))
		payload := defaultDeal()
		payload["currency"] = "XXY"
		op := dealOp(t, payload)
		_, err := c.Execute(context.Background(), op)
		if e := adapterstest.WantError(t, err, adapters.Final, codes.Validation, "amount_minor", secret); e.Field != "amount_minor" {
			t.Fatalf("field = %q", e.Field)
		}
		if got := s.Calls(sim.Bitrix24, op.Key); got != 0 {
			t.Fatalf("%d adds sent", got)
		}
	})

	t.Run("UnboundIntentRefused", func(t *testing.T) {
		t.Parallel()
		_, c, _ := setup(t)
		mustBind(t, c, dealBinding(dealMap))
		op := dealOp(t, defaultDeal())
		op.Version = 2
		_, err := c.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Final, codes.IntentNotAllowed, "", secret)
	})
}

// TestDeclaredVersionsSideBySide: each version runs its own mapping.
func TestDeclaredVersionsSideBySide(t *testing.T) {
	t.Parallel()
	_, c, base := setup(t)
	v2 := dealBinding(`{"method": "crm.lead.add", "fields": {"TITLE": {"from": "title"}, "PHONE": {"from": "phone"},
		"OPPORTUNITY": {"from": "amount_minor", "money": "minor"}, "CURRENCY_ID": {"from": "currency"}, "OPENED": {"from": "hot"}}}`)
	v2.Version = 2
	mustBind(t, c, dealBinding(dealMap), v2)

	payload := defaultDeal()
	payload["phone"], payload["hot"] = "+79001112233", false
	op := dealOp(t, payload)
	op.Version = 2
	res, err := c.Execute(context.Background(), op)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Data, map[string]any{"lead_id": res.ObjectID}; !reflect.DeepEqual(got, want) {
		t.Fatalf("data = %v, want %v", got, want)
	}
	lead := simCall(t, base, "crm.lead.get", map[string]any{"id": res.ObjectID})["result"].(map[string]any)
	phones, _ := lead["PHONE"].([]any)
	if lead["ORIGIN_ID"] != op.Key || lead["OPPORTUNITY"] != "1500.00" || lead["OPENED"] != "N" || len(phones) != 1 ||
		phones[0].(map[string]any)["VALUE"] != "+79001112233" {
		t.Fatalf("lead = %v", lead)
	}
	if found, err := c.Lookup(context.Background(), op); err != nil || found.ObjectID != res.ObjectID {
		t.Fatalf("lookup = %+v, %v", found, err)
	}
	op.Version = 1
	if _, err := c.Lookup(context.Background(), op); !errors.Is(err, adapters.ErrNotFound) {
		t.Fatalf("lookup under v1 (deals) = %v, want ErrNotFound", err)
	}
}

// TestDeclaredActivity: an activity bound to the referenced contact, its
// owner type and communications following from the reference.
func TestDeclaredActivity(t *testing.T) {
	t.Parallel()
	s, c, base := setup(t)
	mustBind(t, c, adapters.Binding{Intent: "call.plan", Version: 1, Schema: json.RawMessage(dealSchema),
		References: map[string]string{"customer_id": "customer"},
		Map: json.RawMessage(`{"method": "crm.activity.add", "fields": {
			"OWNER_ID": {"ref": "customer_id"}, "TYPE_ID": {"value": 2}, "SUBJECT": {"from": "title"},
			"START_TIME": {"from": "due_at"}, "END_TIME": {"from": "due_at"}, "DIRECTION": {"value": 2}}}`)})
	payload := defaultDeal()
	payload["due_at"] = "2026-05-01T10:00:00Z"
	raw, _ := json.Marshal(payload)
	op := adapters.Op{Key: "test:call:plan:c-1:v1", Intent: "call.plan", Payload: raw, Attempt: 1}
	res, err := c.Execute(context.Background(), op)
	if err != nil {
		t.Fatal(err)
	}
	a := simCall(t, base, "crm.activity.get", map[string]any{"id": res.ObjectID})["result"].(map[string]any)
	listed := simCall(t, base, "crm.activity.list", map[string]any{"filter": map[string]any{"ID": res.ObjectID}, "select": []string{"ID", "COMMUNICATIONS"}})
	comms, _ := listed["result"].([]any)[0].(map[string]any)["COMMUNICATIONS"].([]any)
	if a["OWNER_ID"] != "1" || a["OWNER_TYPE_ID"] != "3" || a["SUBJECT"] != "Boiler service" || a["ORIGIN_ID"] != op.Key ||
		a["RESPONSIBLE_ID"] != "1" || a["START_TIME"] != "2026-05-01T13:00:00+03:00" || len(comms) != 1 ||
		comms[0].(map[string]any)["ENTITY_ID"] != "1" || comms[0].(map[string]any)["ENTITY_TYPE_ID"] != "3" {
		t.Fatalf("activity = %v", a)
	}
	if got := res.Data; !reflect.DeepEqual(got, map[string]any{"activity_id": res.ObjectID}) {
		t.Fatalf("data = %v", got)
	}
	if found, err := c.Lookup(context.Background(), op); err != nil || !reflect.DeepEqual(found, res) {
		t.Fatalf("lookup = %+v, %v", found, err)
	}
	if got := s.Effects(sim.Bitrix24, op.Key); got != 1 {
		t.Fatalf("effects = %d", got)
	}
}

// TestBindRefusals: every refusal names the intent, the path inside its
// definition and what is wrong; a refused Bind keeps what was bound.
func TestBindRefusals(t *testing.T) {
	t.Parallel()
	deal := func(fields string) string {
		return `{"method": "crm.deal.add", "fields": {` + fields + `}}`
	}
	for _, tc := range []struct {
		name string
		b    adapters.Binding
		want string
	}{
		{"UpdateWithoutID", dealBinding(`{"method": "crm.deal.update", "fields": {"TITLE": {"from": "title"}}}`),
			`deal.create v1: map.id: is required by an update: {from: the payload field holding the record's ID}`},
		{"DeleteMethod", dealBinding(`{"method": "crm.deal.delete", "fields": {"TITLE": {"from": "title"}}}`),
			`deal.create v1: map.method: "crm.deal.delete" is not a method this target calls (want one of crm.deal.add, crm.lead.add, crm.contact.add, crm.company.add, crm.activity.add, or an update: crm.deal.update, crm.lead.update, crm.contact.update, crm.company.update, crm.activity.update)`},
		{"MethodNotString", dealBinding(`{"method": ["crm.deal.add"], "fields": {"TITLE": {"from": "title"}}}`),
			`deal.create v1: map.method: must be one of crm.deal.add, crm.lead.add, crm.contact.add, crm.company.add, crm.activity.add or crm.deal.update, crm.lead.update, crm.contact.update, crm.company.update, crm.activity.update`},
		{"NoMethod", dealBinding(`{"fields": {"TITLE": {"from": "title"}}}`),
			`deal.create v1: map.method: is required: one of crm.deal.add, crm.lead.add, crm.contact.add, crm.company.add, crm.activity.add or crm.deal.update, crm.lead.update, crm.contact.update, crm.company.update, crm.activity.update`},
		{"NoFields", dealBinding(`{"method": "crm.deal.add"}`), `deal.create v1: map.fields: is required`},
		{"UnknownMapKey", dealBinding(`{"method": "crm.deal.add", "entity": "deal", "fields": {"TITLE": {"from": "title"}}}`),
			`deal.create v1: map.entity: unknown key (want method and fields, and id for an update)`},
		{"OriginID", dealBinding(deal(`"TITLE": {"from": "title"}, "ORIGIN_ID": {"from": "customer_id"}`)),
			`deal.create v1: map.fields.ORIGIN_ID: carries the operation key, which the gateway writes; no mapping may set it`},
		{"OriginatorID", dealBinding(deal(`"ORIGINATOR_ID": {"value": "erp"}`)),
			`deal.create v1: map.fields.ORIGINATOR_ID: carries the operation key, which the gateway writes; no mapping may set it`},
		{"UnknownTargetField", dealBinding(deal(`"TITEL": {"from": "title"}`)),
			`deal.create v1: map.fields.TITEL: crm.deal.add has no field "TITEL" a mapping may set`},
		{"ReadOnlyField", dealBinding(deal(`"ID": {"value": 5}`)),
			`deal.create v1: map.fields.ID: crm.deal.add has no field "ID" a mapping may set`},
		{"UnknownPayloadField", dealBinding(deal(`"TITLE": {"from": "name"}`)),
			`deal.create v1: map.fields.TITLE.from: the schema has no payload field "name"`},
		{"UnknownTransform", dealBinding(deal(`"OPPORTUNITY": {"from": "amount_minor", "money": "major"}`)),
			`deal.create v1: map.fields.OPPORTUNITY.money: unknown transform "major" (want "minor")`},
		{"LocalDateWithoutZone", dealBinding(deal(`"CLOSEDATE": {"from": "due_at", "date": "local"}`)),
			`deal.create v1: map.fields.CLOSEDATE.date: this target has no time zone for local dates`},
		{"UndeclaredRef", dealBinding(deal(`"COMPANY_ID": {"ref": "company_id"}`)),
			`deal.create v1: map.fields.COMPANY_ID.ref: payload field "company_id" is not declared in references`},
		{"UnknownRefKind", adapters.Binding{Intent: "deal.create", Version: 1, Schema: json.RawMessage(dealSchema),
			References: map[string]string{"customer_id": "product"}, Map: json.RawMessage(dealMap)},
			`deal.create v1: references.customer_id: kind "product" is not one this CRM target resolves (company → company, customer → contact)`},
		{"ContactIDOfACompany", adapters.Binding{Intent: "deal.create", Version: 1, Schema: json.RawMessage(dealSchema),
			References: map[string]string{"customer_id": "customer", "company_id": "company"}, Map: json.RawMessage(deal(`"CONTACT_ID": {"ref": "company_id"}`))},
			`deal.create v1: map.fields.CONTACT_ID.ref: payload field "company_id" is a company, resolved as a CRM company; CONTACT_ID takes a CRM contact`},
		{"NoMapNotBuiltin", adapters.Binding{Intent: "deal.create", Version: 1, Schema: json.RawMessage(dealSchema)},
			`deal.create v1: map: the CRM target needs a map (method and fields) for an intent it does not know by name`},
		{"ActivityWithoutOwner", dealBinding(`{"method": "crm.activity.add", "fields": {"TYPE_ID": {"value": 2}, "SUBJECT": {"from": "title"}}}`),
			`deal.create v1: map.fields.OWNER_ID: is required as {ref: …}: an activity is bound to a contact or company`},
		{"ActivityCommunications", dealBinding(`{"method": "crm.activity.add", "fields": {"OWNER_ID": {"ref": "customer_id"}, "COMMUNICATIONS": {"from": "phone"}}}`),
			`deal.create v1: map.fields.COMMUNICATIONS: follows from the reference OWNER_ID names; no mapping may set it`},
		{"ActivityWithoutSubject", dealBinding(`{"method": "crm.activity.add", "fields": {"OWNER_ID": {"ref": "customer_id"}, "TYPE_ID": {"value": 2}}}`),
			`deal.create v1: map.fields.SUBJECT: is required by crm.activity.add`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, c, _ := setup(t)
			mustBind(t, c, builtinBinding)
			err := c.Bind([]adapters.Binding{builtinBinding, tc.b})
			if err == nil || err.Error() != tc.want {
				t.Fatalf("bind = %v\nwant   %s", err, tc.want)
			}
			// Nothing of the refused set was bound: the built-in still runs.
			if _, err := c.Execute(context.Background(), newOp(t, "customer-1042")); err != nil {
				t.Fatalf("built-in after a refused bind: %v", err)
			}
		})
	}

	t.Run("BoundTwice", func(t *testing.T) {
		t.Parallel()
		_, c, _ := setup(t)
		err := c.Bind([]adapters.Binding{dealBinding(dealMap), dealBinding(dealMap)})
		if err == nil || err.Error() != "deal.create v1: bound twice" {
			t.Fatalf("bind = %v", err)
		}
	})

	t.Run("ReferencesConfig", func(t *testing.T) {
		t.Parallel()
		_, err := bitrix24.New(bitrix24.Config{WebhookURL: "https://portal.bitrix24.ru/rest/1/" + secret + "/",
			References: map[string]string{"customer": "deal"}})
		if err == nil || !strings.Contains(err.Error(), `references.customer: entity "deal"`) {
			t.Fatalf("new = %v", err)
		}
		c, err := bitrix24.New(bitrix24.Config{WebhookURL: "https://portal.bitrix24.ru/rest/1/" + secret + "/",
			References: map[string]string{"client": "contact"}, TimeZone: time.UTC})
		if err != nil {
			t.Fatal(err)
		}
		b := dealBinding(strings.Replace(dealMap, `"TITLE"`, `"CLOSEDATE": {"from": "due_at", "date": "local"}, "TITLE"`, 1))
		b.References = map[string]string{"customer_id": "client"}
		if err := c.Bind([]adapters.Binding{b}); err != nil {
			t.Fatalf("bind with a configured kind and zone: %v", err)
		}
	})
}

// TestBuiltinUnchangedByBind: crm.callback.create sends the very same
// requests, and answers the very same result, whether or not the target
// was given declared intents.
func TestBuiltinUnchangedByBind(t *testing.T) {
	t.Parallel()
	run := func(bind bool) ([]string, adapters.Result, adapters.Result) {
		s := newSim()
		var (
			mu   sync.Mutex
			seen []string
		)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			seen = append(seen, r.URL.Path+" "+string(body))
			mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(body))
			s.ServeHTTP(w, r)
		}))
		defer srv.Close()
		c, err := bitrix24.New(bitrix24.Config{WebhookURL: srv.URL + "/bitrix24/rest/7/" + secret + "/", Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if bind {
			mustBind(t, c, builtinBinding, dealBinding(dealMap))
		}
		op := newOp(t, "customer-1042")
		op.Key = "test:crm.callback:create:same:v1"
		if _, err := c.Validate(context.Background(), op); err != nil {
			t.Fatal(err)
		}
		res, err := c.Execute(context.Background(), op)
		if err != nil {
			t.Fatal(err)
		}
		found, err := c.Lookup(context.Background(), op)
		if err != nil {
			t.Fatal(err)
		}
		op.Key = "test:crm.callback:create:never:v1"
		if _, err := c.Lookup(context.Background(), op); !errors.Is(err, adapters.ErrNotFound) {
			t.Fatal(err)
		}
		return seen, res, found
	}
	plainReqs, plainRes, plainFound := run(false)
	boundReqs, boundRes, boundFound := run(true)
	if !reflect.DeepEqual(plainReqs, boundReqs) {
		t.Fatalf("requests differ:\nunbound %q\nbound   %q", plainReqs, boundReqs)
	}
	if !reflect.DeepEqual(plainRes, boundRes) || !reflect.DeepEqual(plainFound, boundFound) {
		t.Fatalf("results differ: %+v / %+v, %+v / %+v", plainRes, boundRes, plainFound, boundFound)
	}
	if got := strings.Join(plainReqs, "\n"); !strings.Contains(got, `crm.activity.add.json {"fields":{"COMMUNICATIONS":[{"ENTITY_ID":"1","ENTITY_TYPE_ID":3,"VALUE":"+79000000001"}],"COMPLETED":"N","DESCRIPTION":"wants to discuss the invoice","DESCRIPTION_TYPE":1,"DIRECTION":2,"END_TIME":"2026-05-01T10:00:00+00:00","ORIGINATOR_ID":"oncegate","ORIGIN_ID":"test:crm.callback:create:same:v1","OWNER_ID":"1","OWNER_TYPE_ID":3,"PRIORITY":2,"RESPONSIBLE_ID":"1","START_TIME":"2026-05-01T10:00:00+00:00","SUBJECT":"Call back the customer","TYPE_ID":2}}`) {
		t.Fatalf("the activity add is not what it always was:\n%s", got)
	}
}

// TestProbeDeclaredFields: check asks each bound entity for its fields and
// names a mapped field the portal does not have.
func TestProbeDeclaredFields(t *testing.T) {
	t.Parallel()
	_, c, _ := setup(t)
	lead := dealBinding(`{"method": "crm.lead.add", "fields": {"TITLE": {"from": "title"}, "PHONE": {"from": "phone"}}}`)
	lead.Intent = "lead.create"
	budget := dealBinding(strings.Replace(dealMap, `"TITLE"`, `"UF_CRM_BUDGET_CODE": {"value": "B-1"}, "TITLE"`, 1))
	mustBind(t, c, builtinBinding, budget, lead)
	got, err := c.Probe(context.Background())
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	if want := "; the fields of deal.create v1 (crm.deal.add), lead.create v1 (crm.lead.add) exist"; !strings.HasSuffix(got, want) {
		t.Fatalf("probe = %q, want it to end %q", got, want)
	}

	missing := dealBinding(strings.Replace(dealMap, `"TITLE"`, `"UF_CRM_REGION": {"value": "north"}, "TITLE"`, 1))
	mustBind(t, c, builtinBinding, missing, lead)
	_, err = c.Probe(context.Background())
	e := adapterstest.WantError(t, err, adapters.Retry, codes.TargetNotPublished, "", secret)
	if !strings.Contains(e.Message, "deal.create v1 maps UF_CRM_REGION, which crm.deal.add does not have") {
		t.Fatalf("message = %q", e.Message)
	}
}
