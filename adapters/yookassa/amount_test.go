package yookassa

import "testing"

func TestFormatAmount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		minor int64
		exp   int
		want  string
	}{
		{125000, 2, "1250.00"},
		{125050, 2, "1250.50"},
		{1, 2, "0.01"},
		{10, 2, "0.10"},
		{100, 2, "1.00"},
		{0, 2, "0.00"},
		{100_000_000, 2, "1000000.00"},
		{999_999_999_999_999, 2, "9999999999999.99"},
		{5, 0, "5"},
		{1234, 3, "1.234"},
		{7, 3, "0.007"},
	} {
		got, err := formatAmount(tc.minor, tc.exp)
		if err != nil || got != tc.want {
			t.Errorf("formatAmount(%d, %d) = %q, %v; want %q", tc.minor, tc.exp, got, err, tc.want)
		}
		back, err := parseAmount(got, tc.exp)
		if err != nil || back != tc.minor {
			t.Errorf("parseAmount(%q, %d) = %d, %v; want %d", got, tc.exp, back, err, tc.minor)
		}
	}
	for _, minor := range []int64{-1, maxMinor + 1} {
		if got, err := formatAmount(minor, 2); err == nil {
			t.Errorf("formatAmount(%d) = %q, want an error", minor, got)
		}
	}
}

func TestParseAmount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value string
		exp   int
		want  int64
	}{
		{"1250", 2, 125000},
		{"1250.5", 2, 125050},
		{"1250.50", 2, 125050},
		{"0.01", 2, 1},
		{"007.00", 2, 700},
		{"2.00", 2, 200},
		{"5", 0, 5},
	} {
		got, err := parseAmount(tc.value, tc.exp)
		if err != nil || got != tc.want {
			t.Errorf("parseAmount(%q, %d) = %d, %v; want %d", tc.value, tc.exp, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", ".50", "1.", "1.234", "-1.00", "+1.00", "1e3", " 1.00", "1.00 ", "1,00", "0x10", "1.2.3", "12345678901234567.00", "10000000000000.01"} {
		if got, err := parseAmount(bad, 2); err == nil {
			t.Errorf("parseAmount(%q) = %d, want an error", bad, got)
		}
	}
	if got, err := parseAmount("5.0", 0); err == nil {
		t.Errorf("parseAmount(5.0, 0) = %d, want an error", got)
	}
}
