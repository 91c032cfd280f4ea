package adapters_test

import (
	"testing"

	"github.com/oncegate/oncegate/adapters"
)

func TestMinorDigits(t *testing.T) {
	for code, want := range map[string]int{"RUB": 2, "USD": 2, "KZT": 2, "JPY": 0, "KRW": 0, "KWD": 3, "BHD": 3} {
		if got, ok := adapters.MinorDigits(code); !ok || got != want {
			t.Errorf("MinorDigits(%s) = %d, %v; want %d", code, got, ok, want)
		}
	}
	for _, code := range []string{"", "rub", "XXX", "BTC", "RUR"} {
		if d, ok := adapters.MinorDigits(code); ok {
			t.Errorf("MinorDigits(%q) = %d, known; want unknown", code, d)
		}
	}
}
