package intent_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"github.com/oncegate/oncegate/server/config/configtest"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/intent"
)

func TestDuplicates_Load(t *testing.T) {
	t.Parallel()
	t.Run("Declared", func(t *testing.T) {
		t.Parallel()
		def := strings.Replace(purchaseOrder, "money: false", "money: false\nduplicates: { fields: [supplier_id, amount_minor, currency], window: 720h, action: hold }", 1)
		in := mustLoadDir(t, configtest.Dir(t, map[string]string{"po.v1.yaml": def})).Definitions()
		d := in[len(in)-1].Duplicates
		if d == nil || len(d.Fields) != 3 || d.Fields[1].Field != "amount_minor" || d.Window != 720*time.Hour || d.Action != intent.DuplicateHold {
			t.Fatalf("rule %+v", d)
		}
	})
	t.Run("DigestLeavesTheRuleOut", func(t *testing.T) {
		t.Parallel()
		// A rule decides only new keys: changing it does not change what
		// an accepted key means, so the digest does not cover it.
		var digests []string
		for _, rule := range []string{"", "duplicates: { fields: [supplier_id], window: 24h, action: warn }\n",
			"duplicates:\n  fields: [supplier_id, currency]\n  window: 720h   # 30 days\n  action: block\n"} {
			def := strings.Replace(purchaseOrder, "description:", rule+"description:", 1)
			in := mustLoadDir(t, configtest.Dir(t, map[string]string{"po.v1.yaml": def})).Definitions()
			digests = append(digests, in[len(in)-1].Digest)
		}
		if digests[0] != digests[1] || digests[0] != digests[2] {
			t.Fatalf("digests %v", digests)
		}
		other := strings.Replace(purchaseOrder, "maxItems: 100", "maxItems: 99", 1)
		in := mustLoadDir(t, configtest.Dir(t, map[string]string{"po.v1.yaml": other})).Definitions()
		if in[len(in)-1].Digest == digests[0] {
			t.Fatal("a change of meaning kept the digest")
		}
	})
	t.Run("DigestIsOfTheMeaning", func(t *testing.T) {
		t.Parallel()
		// The people's words are not the meaning: rewording them keeps
		// the digest, and a row that recorded the digest of the whole file
		// (journals before) still runs under the definition.
		load := func(def string) *intent.Intent {
			in := mustLoadDir(t, configtest.Dir(t, map[string]string{"po.v1.yaml": def})).Definitions()
			return in[len(in)-1]
		}
		base := load(purchaseOrder)
		reworded := strings.Replace(purchaseOrder, "description:", "description: Reviewed.", 1)
		if r := load(reworded); r.Digest != base.Digest {
			t.Fatalf("rewording the description changed the digest: %s → %s", base.Digest, r.Digest)
		}
		whole := sha256.Sum256([]byte(purchaseOrder))
		if !base.Accepts(hex.EncodeToString(whole[:])) || !base.Accepts(base.Digest) {
			t.Fatal("the digest of the whole file, as journals recorded it before, is not accepted")
		}
		if other := load(strings.Replace(purchaseOrder, "maxItems: 100", "maxItems: 99", 1)); other.Accepts(hex.EncodeToString(whole[:])) || other.Accepts(base.Digest) {
			t.Fatal("a definition of another meaning accepts the old one's digests")
		}
	})
	t.Run("BuiltinDefaults", func(t *testing.T) {
		t.Parallel()
		for _, c := range []struct {
			name, fields string
			window       time.Duration
			action       string
		}{
			{"invoice.create", "organization_id customer_id order_id", 720 * time.Hour, "hold"},
			{"payment.charge", "account_id order_id amount_minor currency", 24 * time.Hour, "hold"},
			{"payment.refund", "payment_id amount_minor", 24 * time.Hour, "block"},
			{"crm.callback.create", "customer_id due_at (day)", 24 * time.Hour, "warn"},
		} {
			d := mustLookup(t, c.name).Duplicates
			if d == nil {
				t.Fatalf("%s: no rule", c.name)
			}
			var fields []string
			for _, f := range d.Fields {
				fields = append(fields, f.String())
			}
			if got := strings.Join(fields, " "); got != c.fields || d.Window != c.window || d.Action != c.action {
				t.Errorf("%s: %s %v %s", c.name, got, d.Window, d.Action)
			}
		}
		for _, name := range []string{"sales_order.create_draft", "sales_order.post", "sales_order.get_status"} {
			if mustLookup(t, name).Duplicates != nil {
				t.Errorf("%s has a rule", name)
			}
		}
	})
}

// businessKey normalizes payload under the built-in name and returns its
// business key.
func businessKey(t *testing.T, name, payload string) string {
	t.Helper()
	in := mustLookup(t, name)
	norm, err := in.Normalize(json.RawMessage(payload))
	if err != nil {
		t.Fatal(err)
	}
	bk, err := in.BusinessKey(norm)
	if err != nil || len(bk) != 64 {
		t.Fatalf("business key %q, %v", bk, err)
	}
	return bk
}

func TestDuplicates_BusinessKey(t *testing.T) {
	t.Parallel()
	mk := func(order, customer, currency string, qty int) string {
		b, _ := json.Marshal(map[string]any{"order_id": order, "organization_id": "org-main", "customer_id": customer, "currency": currency,
			"items": []any{map[string]any{"product_id": "product-778", "quantity": qty, "unit": "pcs", "price_minor": 62500}}})
		return string(b)
	}
	base := businessKey(t, "invoice.create", mk("order-48291", "customer-1042", "RUB", 2))
	for _, c := range []struct {
		name    string
		payload string
		same    bool
	}{
		{"OtherLines", mk("order-48291", "customer-1042", "rub", 5), true},
		{"CaseAndSpaces", mk("  ORDER-48291 ", "Customer-1042", "RUB", 2), true},
		{"OtherOrder", mk("order-48292", "customer-1042", "RUB", 2), false},
		{"OtherCustomer", mk("order-48291", "customer-2001", "RUB", 2), false},
	} {
		if got := businessKey(t, "invoice.create", c.payload); (got == base) != c.same {
			t.Errorf("%s: same business key %v, want %v", c.name, got == base, c.same)
		}
	}
	// The day of a date-time, in UTC.
	cb := func(due string) string {
		return businessKey(t, "crm.callback.create", `{"customer_id":"customer-1042","due_at":"`+due+`"}`)
	}
	if cb("2026-12-03T10:00:00+03:00") != cb("2026-12-03T23:59:59Z") {
		t.Error("two times of one UTC day differ")
	}
	if cb("2026-12-03T10:00:00+03:00") == cb("2026-12-04T00:00:00Z") {
		t.Error("two days are one")
	}
	if cb("2026-12-04T01:00:00+03:00") != cb("2026-12-03T12:00:00Z") {
		t.Error("the day is not taken in UTC")
	}
	// Money: the amount is part of a charge's business key.
	ch := func(amount int) string {
		return businessKey(t, "payment.charge", `{"account_id":"merchant-account-17","order_id":"order-1","amount_minor":`+itoa(amount)+`,"currency":"rub"}`)
	}
	if ch(125000) == ch(125001) || ch(125000) != ch(125000) {
		t.Error("amounts")
	}
	// Another intent never shares a business key.
	if businessKey(t, "payment.refund", `{"payment_id":"order-1","amount_minor":100,"currency":"RUB"}`) == ch(100) {
		t.Error("two intents share a business key")
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// The configuration changes a rule's window and action, or switches it
// off; a value it cannot apply is refused naming the key.
func TestDuplicates_ConfigOverride(t *testing.T) {
	t.Parallel()
	load := func(over map[string]config.DuplicateOverride) (*intent.Catalog, error) {
		return intent.Load(intent.Options{Targets: intent.BuiltinTargets, Duplicates: over})
	}
	c, err := load(map[string]config.DuplicateOverride{
		"invoice.create": {Window: config.Duration(72 * time.Hour), Action: intent.DuplicateWarn},
		"payment.refund": {Action: "off"},
	})
	if err != nil {
		t.Fatal(err)
	}
	inv, _ := c.Lookup("invoice.create")
	if d := inv.Duplicates; d == nil || d.Window != 72*time.Hour || d.Action != intent.DuplicateWarn || len(d.Fields) == 0 {
		t.Fatalf("invoice.create's rule %+v, want its fields, 72h, warn", d)
	}
	if ref, _ := c.Lookup("payment.refund"); ref.Duplicates != nil {
		t.Fatalf("payment.refund's rule %+v, want none", ref.Duplicates)
	}
	if def, _ := intent.Builtin().Lookup("invoice.create"); def.Duplicates.Action != intent.DuplicateHold {
		t.Fatalf("the built-in's own rule changed: %+v", def.Duplicates)
	}
	for over, want := range map[string]map[string]config.DuplicateOverride{
		`config: duplicates.invoice.create.action: "maybe" is none of block, hold, warn, off`:                    {"invoice.create": {Action: "maybe"}},
		`config: duplicates.nothing.here: no such intent`:                                                        {"nothing.here": {Action: "warn"}},
		`config: duplicates.sales_order.create_draft: the definition (built-in) has no duplicate rule to change`: {"sales_order.create_draft": {Action: "warn"}},
	} {
		if _, err := load(want); err == nil || !strings.Contains(err.Error(), over) {
			t.Errorf("%v: err = %v, want %q", want, err, over)
		}
	}
}
