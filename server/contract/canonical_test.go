package contract_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/server/contract"
)

// TestCanonicalize_Numbers uses RFC 8785 appendix B: IEEE 754 bit patterns and their
// ECMAScript serialization.
func TestCanonicalize_Numbers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, tt := range tests {
		got, err := contract.Canonicalize(math.Float64frombits(tt.bits))
		if err != nil {
			t.Fatalf("%#x: %v", tt.bits, err)
		}
		if string(got) != tt.want {
			t.Errorf("%#x: got %s, want %s", tt.bits, got, tt.want)
		}
	}
}

func TestCanonicalize_JSONNumbers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{"125000", "125000"},
		{"2.5", "2.5"},
		{"2.50", "2.5"},
		{"1e2", "100"},
		{"1E2", "100"},
		{"1.25e5", "125000"},
		{"125000.0", "125000"},
		{"-0", "0"},
		{"-0.0", "0"},
		{"0.000001", "0.000001"},
		{"1e-7", "1e-7"},
		{"0.1", "0.1"},
		{"1000000000", "1000000000"},
		{"1000000000000000", "1000000000000000"},
		{"9007199254740992", "9007199254740992"},
		{"-9007199254740992", "-9007199254740992"},
		{"0.30000000000000004", "0.30000000000000004"},
	}
	for _, tt := range tests {
		got, err := contract.Canonicalize(json.Number(tt.in))
		if err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		if string(got) != tt.want {
			t.Errorf("%s: got %s, want %s", tt.in, got, tt.want)
		}
	}
	for _, bad := range []string{
		"9007199254740993", "-9007199254740993", "9007199254740992.5", "1e21", "1e400", "1e-400",
		"", "abc", "01", "1.", ".5", "+1", "0x10", "Inf", "NaN", "1_000", "1e", "--1",
	} {
		if got, err := contract.Canonicalize(json.Number(bad)); err == nil {
			t.Errorf("Canonicalize(json.Number(%q)) = %s, want error", bad, got)
		}
	}
	for _, bad := range []any{math.NaN(), math.Inf(1), math.Inf(-1), 3, int64(3), float32(1), struct{}{}, map[string]string{}, "\xff"} {
		if got, err := contract.Canonicalize(bad); err == nil {
			t.Errorf("Canonicalize(%#v) = %s, want error", bad, got)
		}
	}
}

// TestCanonicalize_RFC8785 is the example of RFC 8785 section 3.2.2.
func TestCanonicalize_RFC8785(t *testing.T) {
	t.Parallel()
	in := `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`
	want := `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`
	var v any
	if err := json.Unmarshal([]byte(in), &v); err != nil {
		t.Fatal(err)
	}
	got, err := contract.Canonicalize(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// TestCanonicalize_Sorting is the example of RFC 8785 section 3.2.3: members sorted by
// UTF-16 code units, not by UTF-8 bytes.
func TestCanonicalize_Sorting(t *testing.T) {
	t.Parallel()
	v := map[string]any{
		"\u20ac":       "Euro Sign",
		"\r":           "Carriage Return",
		"\ufb33":       "Hebrew Letter Dalet With Dagesh",
		"1":            "One",
		"\U0001F600":   "Emoji: Grinning Face",
		"\u0080":       "Control",
		"\u00f6":       "Latin Small Letter O With Diaeresis",
		"b":            map[string]any{"z": 1.0, "a": []any{}},
		"a_b":          nil,
		"a":            true,
		"operation_id": "x",
	}
	got, err := contract.Canonicalize(v)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"\r":"Carriage Return","1":"One","a":true,"a_b":null,"b":{"a":[],"z":1},"operation_id":"x",` +
		"\"\u0080\":\"Control\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\"," +
		"\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestCanonicalize_Strings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{"plain", `"plain"`},
		{`"quoted" \ back`, `"\"quoted\" \\ back"`},
		{"<a href='x'>&amp;</a>", `"<a href='x'>&amp;</a>"`}, // no HTML escaping
		{"\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"\x00\x01\x1f", `"\u0000\u0001\u001f"`},
		{"\x7f", "\"\x7f\""},
		{"\u2028\u2029", "\"\u2028\u2029\""},
		{"счёт на оплату", `"счёт на оплату"`},
		{"/", `"/"`},
	}
	for _, tt := range tests {
		got, err := contract.Canonicalize(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("%q: got %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestCanonicalize_Deep(t *testing.T) {
	t.Parallel()
	var v any = "x"
	for range 100 {
		v = []any{v}
	}
	if _, err := contract.Canonicalize(v); err == nil || !strings.Contains(err.Error(), "canonicalize") {
		t.Fatalf("err = %v, want a canonicalize error", err)
	}
}
