package yookassa

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/oncegate/oncegate/adapters"
)

// currencies are the currencies this adapter sends to YooKassa. The list
// is deliberately small: a currency that is not here is refused before
// anything is sent, rather than guessed. It is also the gateway's list of
// the currencies it knows (Currencies), which the configuration is checked
// against. Their minor units come from adapters.MinorDigits.
//
// They are the values YooKassa's API reference lists for amount.currency
// (https://yookassa.ru/developers/api#payment_object_amount_currency):
// RUB, USD, EUR, BYN and KZT. CNY is not among them, and a shop registered
// in Russia is acquired in roubles only (https://yookassa.ru/questions/q219/),
// so the others are for shops that YooKassa opened for them.
var currencies = []string{"BYN", "EUR", "KZT", "RUB", "USD"}

// maxMinor bounds amounts so that formatting and parsing never overflow and
// an absurd amount is refused locally (10^15 minor units).
const maxMinor = 1_000_000_000_000_000

// Currencies are the upper-case ISO 4217 codes of the currencies the
// adapter sends, sorted.
func Currencies() []string { return slices.Clone(currencies) }

// exponent returns the minor-unit exponent of an upper-case ISO 4217 code
// this adapter sends.
func exponent(currency string) (int, bool) {
	if !slices.Contains(currencies, currency) {
		return 0, false
	}
	return adapters.MinorDigits(currency)
}

// formatAmount renders minor units as YooKassa's amount.value: a decimal
// string with exactly exp digits after the point ("1250.00" for 125000 at
// exponent 2). No floating point is involved.
func formatAmount(minor int64, exp int) (string, error) {
	if minor < 0 || minor > maxMinor {
		return "", errors.New("amount out of range")
	}
	if exp < 0 || exp > 4 {
		return "", errors.New("unsupported exponent")
	}
	s := strconv.FormatInt(minor, 10)
	if exp == 0 {
		return s, nil
	}
	if len(s) <= exp {
		s = strings.Repeat("0", exp-len(s)+1) + s
	}
	return s[:len(s)-exp] + "." + s[len(s)-exp:], nil
}

// parseAmount reads YooKassa's amount.value back into minor units, exactly.
// It accepts at most exp fractional digits ("1250", "1250.5" and "1250.50"
// are all 125050 at exponent 2) and refuses signs, exponents, spaces and
// anything else a decimal string of the API does not contain.
func parseAmount(value string, exp int) (int64, error) {
	if exp < 0 || exp > 4 {
		return 0, errors.New("unsupported exponent")
	}
	whole, frac, dot := strings.Cut(value, ".")
	if whole == "" || (dot && frac == "") || len(frac) > exp || !digits(whole) || !digits(frac) {
		return 0, errors.New("malformed amount " + strconv.Quote(value))
	}
	if len(whole) > 16 {
		return 0, errors.New("amount out of range")
	}
	frac += strings.Repeat("0", exp-len(frac))
	n, err := strconv.ParseInt(whole+frac, 10, 64)
	if err != nil || n > maxMinor {
		return 0, errors.New("amount out of range")
	}
	return n, nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
