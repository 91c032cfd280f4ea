package contract_test

import (
	"fmt"
	"github.com/oncegate/oncegate/adapters/codes/codestest"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/contract"
)

func TestKeyFromRequest(t *testing.T) {
	t.Parallel()
	const key = "prod:invoice.create:order-77001:v1"
	tests := []struct {
		name      string
		header    string
		hasHeader bool
		requestID string
		want      string
		wantCode  string
		wantField string
	}{
		{name: "Bare", header: key, hasHeader: true, want: key},
		{name: "BareWithOWS", header: " \t" + key + " ", hasHeader: true, want: key},
		{name: "Quoted", header: `"` + key + `"`, hasHeader: true, want: key},
		{name: "QuotedEscapes", header: `"a\"b\\c"`, hasHeader: true, want: `a"b\c`},
		{name: "RequestIDOnly", requestID: key, want: key},
		{name: "BothEqual", header: key, hasHeader: true, requestID: key, want: key},
		{name: "QuotedAndRequestIDEqual", header: `"` + key + `"`, hasHeader: true, requestID: key, want: key},
		{name: "Neither", want: ""},
		{name: "AbsentHeaderValueIgnored", header: "ignored", hasHeader: false, want: ""},

		{name: "ErrEmptyHeader", header: "  ", hasHeader: true, wantCode: codes.KeyInvalid, wantField: contract.KeyField},
		{name: "ErrEmptyQuoted", header: `""`, hasHeader: true, wantCode: codes.KeyInvalid, wantField: contract.KeyField},
		{name: "ErrUnterminated", header: `"prod:x`, hasHeader: true, wantCode: codes.KeyInvalid, wantField: contract.KeyField},
		{name: "ErrBadEscape", header: `"prod\n:x"`, hasHeader: true, wantCode: codes.KeyInvalid, wantField: contract.KeyField},
		{name: "ErrTrailingEscape", header: `"prod:x\`, hasHeader: true, wantCode: codes.KeyInvalid, wantField: contract.KeyField},
		{name: "ErrInnerQuote", header: `"prod"x"`, hasHeader: true, wantCode: codes.KeyInvalid, wantField: contract.KeyField},
		{name: "ErrParameters", header: `"prod:x";a=1`, hasHeader: true, wantCode: codes.KeyInvalid, wantField: contract.KeyField},
		{name: "ErrControlChar", header: "\"prod\x01x\"", hasHeader: true, wantCode: codes.KeyInvalid, wantField: contract.KeyField},
		{name: "ErrNonASCII", header: `"prodж"`, hasHeader: true, wantCode: codes.KeyInvalid, wantField: contract.KeyField},
		{name: "ErrDiffer", header: key, hasHeader: true, requestID: "prod:invoice.create:order-77002:v1",
			wantCode: codes.KeyInvalid, wantField: "request_id"},
		{name: "ErrEmptyHeaderWithRequestID", header: "", hasHeader: true, requestID: key,
			wantCode: codes.KeyInvalid, wantField: contract.KeyField},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := contract.KeyFromRequest(tt.header, tt.hasHeader, tt.requestID, "prod", "invoice.create")
			if tt.wantCode != "" {
				ce := codestest.WantRefusal(t, err, tt.wantCode, tt.wantField)
				if tt.name == "ErrDiffer" && !strings.Contains(ce.Message, "differ") {
					t.Fatalf("message %q does not say the keys differ", ce.Message)
				}
				if strings.Contains(ce.Message, "77001") || strings.Contains(ce.Message, "77002") {
					t.Fatalf("message echoes a key: %s", ce.Message)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got != tt.want {
				t.Fatalf("key = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCheckKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		key     string
		contour string
		intent  string
		ok      bool
	}{
		// docs/api.md's examples and the shapes that must pass.
		{"OK", "prod:invoice.create:order-48291:v1", "prod", "invoice.create", true},
		{"OKCallback", "prod:crm.callback:create:event-90173:v1", "prod", "crm.callback.create", true},
		{"OKCallbackOneSegment", "prod:crm.callback.create:event-90173:v1", "prod", "crm.callback.create", true},
		{"OKApproval", "prod:payment.charge:approval-6f3c2a:v1", "prod", "payment.charge", true},
		{"OKTestContour", "test:invoice.create:order-demo-1:v1", "test", "invoice.create", true},
		{"OKUUID", "prod:invoice.create:550e8400-e29b-41d4-a716-446655440000:v1", "prod", "invoice.create", true},
		// A UUID whose hex groups happen to be decimal and pass the Luhn check.
		{"OKUUIDOfDigits", "prod:invoice.create:abcd4111-1111-1111-1111-abcdefabcdef:v1", "prod", "invoice.create", true},
		{"OKVersion12", "prod:invoice.create:order-1:v12", "prod", "invoice.create", true},
		{"OKIdWithColonlessDots", "prod:sales_order.post:SO-000123.2026_01:v1", "prod", "sales_order.post", true},
		{"OKMinLength", "p:a:b:v1", "p", "a", true},
		{"OKMaxLength", "prod:invoice.create:" + strings.Repeat("ab-", 77) + "x:v1", "prod", "invoice.create", true},
		{"OKLuhnFails", "prod:payment.charge:4111111111111112:v1", "prod", "payment.charge", true},
		{"OKShortLuhnRun", "prod:payment.charge:79927398713:v1", "prod", "payment.charge", true},
		{"OKLongDigitRun", "prod:payment.charge:41111111111111110000:v1", "prod", "payment.charge", true},
		{"OKDate", "prod:invoice.create:order-2026-01-15-1:v1", "prod", "invoice.create", true},
		{"OKBlog", "prod:invoice.create:blog_abcdefghijklmnopqrstuvwxyz:v1", "prod", "invoice.create", true},
		{"OKLettersBlob", "prod:invoice.create:abcdefghijklmnopqrstuvwxyzabcdefghij:v1", "prod", "invoice.create", true},
		{"OKDigitsBlob", "prod:invoice.create:order-12345678901234567890123456789012:v1", "prod", "invoice.create", true},
		{"OK31Blob", "prod:invoice.create:a234567890123456789012345678901:v1", "prod", "invoice.create", true},
		{"OKTestWord", "prod:invoice.create:test_order_2026_01_15_customer:v1", "prod", "invoice.create", true},

		// Length and alphabet.
		{"ErrTooShort", "p:a:b:v", "p", "a", false},
		{"ErrTooLong", "prod:invoice.create:" + strings.Repeat("ab-", 77) + "xy:v1", "prod", "invoice.create", false},
		{"ErrEmpty", "", "prod", "invoice.create", false},
		{"ErrSpace", "prod:invoice.create:order 1:v1", "prod", "invoice.create", false},
		{"ErrSlash", "prod:invoice.create:order/1:v1", "prod", "invoice.create", false},
		{"ErrNonASCII", "prod:invoice.create:заказ-1:v1", "prod", "invoice.create", false},
		{"ErrQuote", `prod:invoice.create:"x":v1`, "prod", "invoice.create", false},

		// Structure.
		{"ErrThreeSegments", "prod:invoice.create:v1", "prod", "invoice.create", false},
		{"ErrEmptySegment", "prod:invoice.create::order-1:v1", "prod", "invoice.create", false},
		{"ErrTrailingColon", "prod:invoice.create:order-1:v1:", "prod", "invoice.create", false},
		{"ErrContour", "test:invoice.create:order-48291:v1", "prod", "invoice.create", false},
		{"ErrContourCase", "PROD:invoice.create:order-48291:v1", "prod", "invoice.create", false},
		{"ErrVersionMissing", "prod:invoice.create:order-48291:1", "prod", "invoice.create", false},
		{"ErrVersionUpper", "prod:invoice.create:order-48291:V1", "prod", "invoice.create", false},
		{"ErrVersionNoDigits", "prod:invoice.create:order-48291:v", "prod", "invoice.create", false},
		{"ErrVersionLetters", "prod:invoice.create:order-48291:v1a", "prod", "invoice.create", false},
		{"ErrIntent", "prod:invoice.create:order-48291:v1", "prod", "payment.charge", false},
		{"ErrIntentPartial", "prod:crm.callback:event-90173:v1", "prod", "crm.callback.create", false},
		{"ErrIntentExtra", "prod:invoice:create:x:order-1:v1", "prod", "invoice.create", false},

		// Card numbers.
		{"ErrCard", "prod:payment.charge:4111111111111111:v1", "prod", "payment.charge", false},
		{"ErrCardInSegment", "prod:payment.charge:card4111111111111111x:v1", "prod", "payment.charge", false},
		{"ErrCardDashes", "prod:payment.charge:4111-1111-1111-1111:v1", "prod", "payment.charge", false},
		{"ErrCardDots", "prod:payment.charge:order-1.4111.1111.1111.1111:v1", "prod", "payment.charge", false},
		{"ErrCardUnderscores", "prod:payment.charge:4111_1111_1111_1111:v1", "prod", "payment.charge", false},
		{"ErrCardAfterDate", "prod:payment.charge:2026-01-15-4111-1111-1111-1111:v1", "prod", "payment.charge", false},
		{"ErrCardAmex", "prod:payment.charge:3782-822463-10005:v1", "prod", "payment.charge", false},
		{"ErrCard13", "prod:payment.charge:4222222222222:v1", "prod", "payment.charge", false},
		{"ErrCard19", "prod:payment.charge:6011000000000000001:v1", "prod", "payment.charge", false},
		{"ErrCardDiners", "prod:payment.charge:3056-930902-5904:v1", "prod", "payment.charge", false},
		{"ErrCard19Grouped", "prod:payment.charge:6011-0000-0000-0000-001:v1", "prod", "payment.charge", false},
		// Runs of separators between the groups hide nothing.
		{"ErrCardDoubledDashes", "test:invoice.create:4111--1111--1111--1111:v1", "test", "invoice.create", false},
		{"ErrCardDoubledUnderscores", "test:invoice.create:4111__1111__1111__1111:v1", "test", "invoice.create", false},
		{"ErrCardDoubledDots", "test:invoice.create:4111..1111..1111..1111:v1", "test", "invoice.create", false},
		{"ErrCardMixedRuns", "test:invoice.create:4111-_-1111._.1111---1111:v1", "test", "invoice.create", false},
		{"ErrCardAmexDoubled", "prod:payment.charge:3782__822463--10005:v1", "prod", "payment.charge", false},
		{"ErrCardDoubledAfterText", "test:invoice.create:order--4111--1111--1111--1111:v1", "test", "invoice.create", false},
		{"ErrCardColons", "prod:payment.charge:4111:1111:1111:1111:v1", "prod", "payment.charge", false},
		// Separate numbers are business ids, however many digits they hold together.
		{"OKTimestampAndCounter", "test:invoice.create:o-1796370520-1000000:v1", "test", "invoice.create", true},
		{"OKDateAndNumber", "test:invoice.create:2026-12-04-000123456789:v1", "test", "invoice.create", true},
		{"OKDoubledDate", "test:invoice.create:order--2026--12--06:v1", "test", "invoice.create", true},
		{"OKDoubledOrderNumber", "test:invoice.create:order__48291__7:v1", "test", "invoice.create", true},
		{"OKDoubledShortRuns", "test:invoice.create:12--34__56..78:v1", "test", "invoice.create", true},
		{"OKDoubledLuhnFails", "test:invoice.create:4111--1111--1111--1112:v1", "test", "invoice.create", true},
		{"OKDoubledTimestampAndCounter", "test:invoice.create:o--1796370520--1000000:v1", "test", "invoice.create", true},

		// Secrets.
		{"ErrPassword", "prod:invoice.create:password-hunter2:v1", "prod", "invoice.create", false},
		{"ErrPasswdUpper", "prod:invoice.create:PASSWD-x:v1", "prod", "invoice.create", false},
		{"ErrSecret", "prod:invoice.create:client_secret-abc:v1", "prod", "invoice.create", false},
		{"ErrAPIKey", "prod:invoice.create:apikey-abc:v1", "prod", "invoice.create", false},
		{"ErrAPI_Key", "prod:invoice.create:api_key-abc:v1", "prod", "invoice.create", false},
		{"ErrBearer", "prod:invoice.create:Bearer-abc:v1", "prod", "invoice.create", false},
		{"ErrToken", "prod:invoice.create:token-abc:v1", "prod", "invoice.create", false},
		{"ErrAgentToken", "prod:invoice.create:og_AbCdEfGhIjKlMnOpQrStUv:v1", "prod", "invoice.create", false},
		{"ErrJWT", "prod:invoice.create:eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig:v1", "prod", "invoice.create", false},
		{"ErrStripeLive", "prod:payment.charge:sk_live_abcdef:v1", "prod", "payment.charge", false},
		{"ErrStripeTest", "prod:payment.charge:x-sk_test_abcdef:v1", "prod", "payment.charge", false},
		{"ErrYooKassa", "prod:payment.charge:live_Fh8hUAVVBGUGbjmlzba6TB0iyUbos_lueTHE:v1", "prod", "payment.charge", false},
		{"ErrYooKassaTest", "test:payment.charge:test_Fh8hUAVVBGUGbjmlzba6TB0iyUbos_lueTHE:v1", "test", "payment.charge", false},
		{"ErrAWS", "prod:invoice.create:AKIAIOSFODNN7EXAMPLE:v1", "prod", "invoice.create", false},
		{"ErrBlob", "prod:invoice.create:a2345678901234567890123456789012:v1", "prod", "invoice.create", false},
		{"ErrUUIDNoDashes", "prod:invoice.create:550e8400e29b41d4a716446655440000:v1", "prod", "invoice.create", false},
		{"ErrSecretBadStructure", "password:hunter2", "prod", "invoice.create", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := contract.CheckKey(tt.key, tt.contour, tt.intent)
			if tt.ok {
				if err != nil {
					t.Fatalf("CheckKey(%q) = %v, want nil", tt.key, err)
				}
				return
			}
			ce := codestest.WantRefusal(t, err, codes.KeyInvalid, contract.KeyField)
			if strings.HasPrefix(tt.name, "ErrCard") || secretCase(tt.name) {
				// Neither the key nor a piece that may hold the secret is echoed.
				for _, seg := range strings.Split(tt.key, ":") {
					if len(seg) < 6 || seg == tt.contour || strings.Contains(tt.intent, seg) || seg == "password" {
						continue
					}
					if strings.Contains(ce.Message, seg) {
						t.Fatalf("message echoes %q: %s", seg, ce.Message)
					}
				}
			}
		})
	}
}

// secretCase reports whether a TestCheckKey case is about a secret.
func secretCase(name string) bool {
	for _, s := range []string{"Password", "Passwd", "Secret", "API", "Bearer", "Token", "JWT", "Stripe", "YooKassa", "AWS", "Blob", "UUIDNoDashes"} {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

func TestCheckKey_Messages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key, contour, intent string
		want                 []string
	}{
		{"test:invoice.create:order-1:v1", "prod", "invoice.create", []string{`"prod"`}},
		{"prod:invoice.create:order-1:v1", "prod", "payment.charge", []string{"payment.charge", "invoice.create"}},
		{"prod:invoice.create:order-1:1", "prod", "invoice.create", []string{"v<digits>"}},
		{"prod:payment.charge:4111111111111111:v1", "prod", "payment.charge", []string{"card number"}},
		{"test:invoice.create:4111--1111--1111--1111:v1", "test", "invoice.create", []string{"card number"}},
		{"test:invoice.create:4111__1111__1111__1111:v1", "test", "invoice.create", []string{"card number"}},
		{"prod:payment.charge:4111:1111:1111:1111:v1", "prod", "payment.charge", []string{"card number"}},
		{"short", "prod", "invoice.create", []string{"8 to 255"}},
		{"prod:invoice.create:order#1:v1", "prod", "invoice.create", []string{"position 26"}},
	}
	for _, tt := range tests {
		ce := codestest.WantRefusal(t, contract.CheckKey(tt.key, tt.contour, tt.intent), codes.KeyInvalid, contract.KeyField)
		for _, w := range tt.want {
			if !strings.Contains(ce.Message, w) {
				t.Errorf("CheckKey(%q) message %q lacks %q", tt.key, ce.Message, w)
			}
		}
	}
}

// Keys made of separate business numbers are never taken for card numbers: order ids
// built from timestamps, counters, dates and document numbers, in every joining the key
// alphabet allows, singly or in runs. (A Luhn check passes one chain in ten; the layout
// decides.)
func TestCheckKey_NoCardFalsePositives(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	num := func(lo, hi int) string {
		n := lo + r.IntN(hi-lo+1)
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + r.IntN(10))
		}
		b[0] = byte('1' + r.IntN(9))
		return string(b)
	}
	shapes := []func() string{
		func() string { return "o-" + num(10, 10) + "-" + num(1, 9) },                     // unix time and counter
		func() string { return "order-" + num(5, 9) + "." + num(5, 9) },                   // shop and order
		func() string { return "2026-12-04-" + num(6, 12) },                               // a date and a number
		func() string { return "inv_" + num(7, 9) + "_" + num(6, 9) },                     // series and number
		func() string { return num(6, 8) + "-" + num(6, 8) + "-" + num(1, 3) },            // three ids
		func() string { return "doc-" + num(2, 3) + "-" + num(10, 12) + "-" + num(2, 3) }, // region, number, line
	}
	// doubled joins the parts of id with runs of one to three separators instead.
	doubled := func(id string) string {
		var b strings.Builder
		for i := 0; i < len(id); i++ {
			if !strings.ContainsRune("-._", rune(id[i])) {
				b.WriteByte(id[i])
				continue
			}
			for range 1 + r.IntN(3) {
				b.WriteByte("-._"[r.IntN(3)])
			}
		}
		return b.String()
	}
	for i := range 20000 {
		id := shapes[i%len(shapes)]()
		for _, id := range []string{id, doubled(id)} {
			key := "test:invoice.create:" + id + ":v1"
			if err := contract.CheckKey(key, "test", "invoice.create"); err != nil {
				t.Fatalf("CheckKey(%q) = %v, want nil: separate numbers are not a card number", key, err)
			}
		}
	}
}

// Random UUIDs, what most agents make their keys of, are never taken for
// a card number (before, about one in a few thousand was refused).
func TestCheckKeyRandomUUIDs(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	var b [16]byte
	for range 200_000 {
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		b[6] = b[6]&0x0f | 0x40 // version 4
		b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
		id := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
		key := "prod:invoice.create:" + id + ":v1"
		if err := contract.CheckKey(key, "prod", "invoice.create"); err != nil {
			t.Fatalf("a random UUID key is refused: %s: %v", key, err)
		}
	}
}
