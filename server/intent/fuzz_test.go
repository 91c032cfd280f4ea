package intent_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/contract"
)

// FuzzNormalize: Normalize never panics; an accepted payload's normalized form is
// accepted again (it re-validates) with the same fingerprint and bytes (idempotence),
// and the fingerprint is the SHA-256 of Canonical.
func FuzzNormalize(f *testing.F) {
	for _, name := range []string{"invoice.create", "payment.charge", "crm.callback.create", "sales_order.create_draft"} {
		f.Add(name, []byte(validPayloads[name]))
	}
	f.Add("invoice.create", []byte(`{"order_id":" o ","organization_id":"g","customer_id":"c","currency":" rub ","items":[{"product_id":"p","quantity":1e-300,"unit":"kg","price_minor":0}],"due_date":" "}`))
	f.Add("crm.callback.create", []byte(`{"customer_id":"c","due_at":"0001-01-01t00:30:00.123456789123+00:01","comment":null}`))
	f.Add("payment.charge", []byte(`{"account_id":"a","order_id":"o","amount_minor":1e15,"currency":"rub","description":"\u0000 x"}`))
	f.Add("payment.refund", []byte(`{"payment_id":"p","amount_minor":1,"currency":"RUB","reason":"r","reason":"s"}`))
	f.Fuzz(func(t *testing.T, name string, payload []byte) {
		in, ok := builtins.Lookup(name)
		if !ok {
			return
		}
		n, err := in.Normalize(payload)
		// The payload of a request is normalized from the value the
		// envelope's decode read: the same answer as from its bytes.
		body := append(append([]byte(`{"schema_version":"1.0","intent":"`+name+`","payload":`), payload...), '}')
		if env, envErr := contract.DecodeEnvelope(body); envErr == nil {
			viaEnv, errEnv := in.NormalizeEnvelope(&env)
			if fmt.Sprint(errEnv) != fmt.Sprint(err) || viaEnv.Fingerprint != n.Fingerprint || !bytes.Equal(viaEnv.Payload, n.Payload) {
				t.Fatalf("from the envelope: %s, %v; from the bytes: %s, %v", viaEnv.Payload, errEnv, n.Payload, err)
			}
		}
		if err != nil {
			if _, ok := err.(*codes.Refusal); !ok {
				t.Fatalf("error %T is not *codes.Refusal: %v", err, err)
			}
			return
		}
		sameObject(t, n)
		sum := sha256.Sum256(n.Canonical)
		if n.Fingerprint != hex.EncodeToString(sum[:]) {
			t.Fatal("fingerprint is not the SHA-256 of Canonical")
		}
		again, err := in.Normalize(n.Payload)
		if err != nil {
			t.Fatalf("normalized payload %s refused: %v", n.Payload, err)
		}
		if again.Fingerprint != n.Fingerprint || !bytes.Equal(again.Payload, n.Payload) || !bytes.Equal(again.Canonical, n.Canonical) {
			t.Fatalf("not idempotent:\n%s\n%s", n.Canonical, again.Canonical)
		}
	})
}

// FuzzNormalizeFields reaches further than FuzzNormalize: it fuzzes field values inside
// well-formed invoice.create, payment.charge and crm.callback.create payloads, so most
// inputs get past decoding and the normalization steps themselves are exercised.
func FuzzNormalizeFields(f *testing.F) {
	f.Add("order-48291", " rub ", "2.5", "62500", "2026-12-31", "2026-12-03T10:00:00+03:00", " note ")
	f.Add(" o ", "RUB", "1e-7", "0", "", "2026-12-03t10:00:00.5z", "")
	f.Add("o", "usd", "1000000000", "1000000000000000", "2024-02-29", "0001-01-01T00:00:00+00:01", "\u00a0\t")
	f.Add("a.b:c-d_e", "eur", "0.30000000000000004", "1.0e2", "9999-12-31", "9999-12-31T23:59:59.999999999-23:59", "<&>")
	f.Fuzz(func(t *testing.T, id, currency, quantity, price, dueDate, dueAt, comment string) {
		str := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		payloads := map[string]string{
			"invoice.create": `{"order_id":` + str(id) + `,"organization_id":"org","customer_id":"c","currency":` + str(currency) +
				`,"items":[{"product_id":"p","quantity":` + quantity + `,"unit":"kg","price_minor":` + price + `}],"due_date":` + str(dueDate) + `}`,
			"payment.charge": `{"account_id":"a","order_id":` + str(id) + `,"amount_minor":` + price + `,"currency":` + str(currency) +
				`,"description":` + str(comment) + `}`,
			"crm.callback.create": `{"customer_id":` + str(id) + `,"due_at":` + str(dueAt) + `,"comment":` + str(comment) + `}`,
		}
		for name, p := range payloads {
			in := mustLookup(t, name)
			n, err := in.Normalize([]byte(p))
			if err != nil {
				if _, ok := err.(*codes.Refusal); !ok {
					t.Fatalf("%s: error %T is not *codes.Refusal: %v", name, err, err)
				}
				continue
			}
			sameObject(t, n)
			again, err := in.Normalize(n.Payload)
			if err != nil {
				t.Fatalf("%s: normalized payload %s refused: %v", name, n.Payload, err)
			}
			if again.Fingerprint != n.Fingerprint || !bytes.Equal(again.Payload, n.Payload) {
				t.Fatalf("%s: not idempotent:\n%s\n%s", name, n.Canonical, again.Canonical)
			}
		}
	})
}

// sameObject fails t unless the decoded payload the normalization keeps
// for its readers (limits, the business key) is what decoding the
// normalized payload gives.
func sameObject(t *testing.T, n contract.Normalized) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(n.Payload))
	dec.UseNumber()
	var decoded map[string]any
	if err := dec.Decode(&decoded); err != nil {
		t.Fatal(err)
	}
	if kept := n.Object(); !reflect.DeepEqual(kept, decoded) {
		t.Fatalf("kept %#v\ndecoded %#v", kept, decoded)
	}
}
