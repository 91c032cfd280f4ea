package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/store"
)

// problem is one member of an answer's errors list: its code and field.
type problem struct{ Code, Field string }

// problems are r's errors, code and field each, in the answer's order.
func (r reply) problems() []problem {
	var out []problem
	errs, _ := r.Body["errors"].([]any)
	for _, e := range errs {
		m, _ := e.(map[string]any)
		code, _ := m["code"].(string)
		field, _ := m["field"].(string)
		out = append(out, problem{code, field})
	}
	return out
}

// wantProblems asserts that r lists exactly want, and that the problem's
// detail is the first one's message.
func wantProblems(tb testing.TB, r reply, want ...problem) {
	tb.Helper()
	if got := r.problems(); !reflect.DeepEqual(got, want) {
		tb.Fatalf("errors %v,\nwant   %v; body %s", got, want, r.Raw)
	}
	if r.str("detail") != r.errMessage() || r.errMessage() == "" {
		tb.Fatalf("detail %q is not the first error's message %q", r.str("detail"), r.errMessage())
	}
}

// A payload with several problems is answered with every one of them, one
// per field, in a fixed order: unknown fields first, then the other
// violations, each shallower fields first and then by field path. The
// answer's code and detail are the first's.
func TestEveryPayloadProblemListed(t *testing.T) {
	t.Parallel()
	g := setup(t)

	t.Run("UnknownFields", func(t *testing.T) {
		env := invoice("order-many-1", 1)
		p := env["payload"].(map[string]any)
		p["note"], p["discount"] = "rush", 5
		p["items"].([]any)[0].(map[string]any)["colour"] = "red"
		r := g.post("test:invoice.create:order-many-1:v1", env)
		expect(t, r, http.StatusBadRequest, "rejected", "UNKNOWN_FIELD")
		wantProblems(t, r, problem{"UNKNOWN_FIELD", "discount"}, problem{"UNKNOWN_FIELD", "note"},
			problem{"UNKNOWN_FIELD", "items[0].colour"})
	})

	t.Run("MissingFields", func(t *testing.T) {
		env := invoice("order-many-2", 1)
		env["payload"] = map[string]any{"order_id": "order-many-2", "items": []any{map[string]any{"product_id": "product-778"}}}
		r := g.post("test:invoice.create:order-many-2:v1", env)
		expect(t, r, http.StatusBadRequest, "rejected", "VALIDATION_ERROR")
		wantProblems(t, r, problem{"VALIDATION_ERROR", "currency"}, problem{"VALIDATION_ERROR", "customer_id"},
			problem{"VALIDATION_ERROR", "organization_id"}, problem{"VALIDATION_ERROR", "items[0].price_minor"},
			problem{"VALIDATION_ERROR", "items[0].quantity"}, problem{"VALIDATION_ERROR", "items[0].unit"})
	})

	t.Run("Mixed", func(t *testing.T) {
		// An unknown field, a wrong type, an empty required string (also
		// of the wrong form: said once, as empty) and a bad nested value.
		env := invoice("order-many-3", 1)
		p := env["payload"].(map[string]any)
		p["posted"] = true
		p["customer_id"] = 1042
		p["organization_id"] = ""
		p["items"].([]any)[0].(map[string]any)["quantity"] = -1
		r := g.post("test:invoice.create:order-many-3:v1", env)
		expect(t, r, http.StatusBadRequest, "rejected", "UNKNOWN_FIELD")
		wantProblems(t, r, problem{"UNKNOWN_FIELD", "posted"}, problem{"VALIDATION_ERROR", "customer_id"},
			problem{"VALIDATION_ERROR", "organization_id"}, problem{"VALIDATION_ERROR", "items[0].quantity"})
		if e := r.Body["errors"].([]any)[2].(map[string]any); e["message"] != "organization_id must not be empty" {
			t.Fatalf("an empty id is said as %q", e["message"])
		}
	})

	t.Run("UnknownEnvelopeFields", func(t *testing.T) {
		env := invoice("order-many-4", 1)
		env["method"], env["callback_url"] = "Документ.Записать()", "http://example.invalid/"
		r := g.post("test:invoice.create:order-many-4:v1", env)
		expect(t, r, http.StatusBadRequest, "rejected", "UNKNOWN_FIELD")
		wantProblems(t, r, problem{"UNKNOWN_FIELD", "callback_url"}, problem{"UNKNOWN_FIELD", "method"})
	})

	t.Run("AtMostMaxProblems", func(t *testing.T) {
		env := invoice("order-many-5", 1)
		p := env["payload"].(map[string]any)
		for i := range 3 * codes.MaxProblems {
			p[fmt.Sprintf("extra_%03d", i)] = i
		}
		r := g.post("test:invoice.create:order-many-5:v1", env)
		expect(t, r, http.StatusBadRequest, "rejected", "UNKNOWN_FIELD")
		if got := r.problems(); len(got) != codes.MaxProblems || got[0].Field != "extra_000" || got[len(got)-1].Field != fmt.Sprintf("extra_%03d", codes.MaxProblems-1) {
			t.Fatalf("%d problems listed, from %v to %v; want %d", len(got), got[0], got[len(got)-1], codes.MaxProblems)
		}
	})

	for _, key := range []string{"order-many-1", "order-many-2", "order-many-3", "order-many-4", "order-many-5"} {
		if n := g.sim.Calls(sim.OneC, "test:invoice.create:"+key+":v1"); n != 0 {
			t.Fatalf("%s: %d calls reached 1C", key, n)
		}
	}
}

// Validate names every reference the target cannot resolve, not the
// first; execute of the same request makes nothing at 1C and is journaled
// failed_final with the first.
func TestValidateEveryReference(t *testing.T) {
	t.Parallel()
	g := setup(t)
	const key = "test:invoice.create:order-refs-1:v1"
	env := invoice("order-refs-1", 1)
	p := env["payload"].(map[string]any)
	p["organization_id"] = "org-nowhere"
	p["customer_id"] = "customer-blocked-1"
	p["items"] = []any{
		map[string]any{"product_id": "product-404", "quantity": 1, "unit": "pcs", "price_minor": 100},
		map[string]any{"product_id": "product-778", "quantity": 1, "unit": "pcs", "price_minor": 100},
		map[string]any{"product_id": "product-deleted-1", "quantity": 1, "unit": "pcs", "price_minor": 100},
	}
	want := []problem{{"REFERENCE_NOT_FOUND", "organization_id"}, {"REFERENCE_INACTIVE", "customer_id"},
		{"REFERENCE_NOT_FOUND", "items[0].product_id"}, {"REFERENCE_INACTIVE", "items[2].product_id"}}

	r := g.post(key, withMode(env, "validate"))
	expect(t, r, http.StatusUnprocessableEntity, "rejected", "REFERENCE_NOT_FOUND")
	wantProblems(t, r, want...)

	delete(env, "mode")
	ex := g.post(key, env)
	expect(t, ex, http.StatusUnprocessableEntity, "failed_final", "REFERENCE_NOT_FOUND")
	if ex.errField() != "organization_id" {
		t.Fatalf("execute refused on %q, want organization_id: %s", ex.errField(), ex.Raw)
	}
	if made := g.sim.Effects(sim.OneC, key); made != 0 {
		t.Fatalf("1C made %d documents with unresolved references", made)
	}
	if op := g.row(key); op.Status != store.StatusFailedFinal || op.ErrorCode != "REFERENCE_NOT_FOUND" {
		t.Fatalf("journal row %+v", op)
	}
}

// The example key every key refusal gives is of this gateway's contour
// and the intent asked for: one an agent can send as it is.
func TestKeyHintsInOwnContour(t *testing.T) {
	t.Parallel()
	g := setup(t)
	for _, c := range []struct {
		name, key, want string
		env             map[string]any
	}{
		{"Missing", "", "test:invoice.create:order-48291:v1", invoice("order-hint-1", 1)},
		{"Short", "test:x", "test:invoice.create:order-48291:v1", invoice("order-hint-2", 1)},
		{"Secret", "test:invoice.create:og_AbCdEfGhIjKlMnOpQrStUv:v1", "test:invoice.create:order-48291:v1", invoice("order-hint-3", 1)},
		{"OtherContour", "prod:sales_order.create_draft:d-1:v1", "test:sales_order.create_draft:order-48291:v1", draft()},
	} {
		r := g.post(c.key, c.env)
		if r.Code != http.StatusBadRequest || !strings.Contains(r.errMessage(), "e.g. "+c.want) || strings.Contains(r.Raw, "prod:invoice") {
			t.Errorf("%s: HTTP %d %q, want an example %s", c.name, r.Code, r.errMessage(), c.want)
		}
	}
	body, _ := json.Marshal(invoice("order-hint-4", 1))
	r := g.do("POST", "/v1/operations", g.token, map[string]string{"Idempotency-Key": `""`}, body)
	if !strings.Contains(r.errMessage(), "e.g. test:invoice.create:order-48291:v1") {
		t.Errorf("an empty quoted key: %q", r.errMessage())
	}
}
