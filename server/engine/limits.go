package engine

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/contract"
	"github.com/oncegate/oncegate/server/intent"
)

// checkLimits applies the intent's business limits to a normalized
// payload; a violation is 422 rejected with a stable code naming the
// field. Which fields hold the currency, the amount and the lines is the
// definition's to say (intent.Limits): nothing here knows a field by name.
func (e *Engine) checkLimits(def *intent.Intent, norm contract.Normalized) error {
	lim := def.Limits
	if lim.CurrencyField == "" && lim.AmountField == "" && lim.ItemsField == "" {
		return nil
	}
	p := norm.Object()
	// Limit codes are not in the status table: they answer 422.
	bad := func(code, field, format string, args ...any) error {
		return codes.Refusef(code, field, format, args...)
	}
	currency, _ := p[lim.CurrencyField].(string)
	if currency != "" && len(lim.Currencies) > 0 && !slices.Contains(lim.Currencies, currency) {
		return bad(codes.CurrencyNotAllowed, lim.CurrencyField, "currency %s is not allowed for %s; allowed: %s", currency, def.Name, strings.Join(lim.Currencies, ", "))
	}
	items, _ := p[lim.ItemsField].([]any)
	if lim.MaxItems > 0 && len(items) > lim.MaxItems {
		return bad(codes.LimitExceeded, lim.ItemsField, "%d items exceed the limit of %d for %s", len(items), lim.MaxItems, def.Name)
	}
	total := new(big.Rat)
	for i, raw := range items {
		it, _ := raw.(map[string]any)
		field := fmt.Sprintf("%s[%d]", lim.ItemsField, i)
		if unit, _ := it[lim.UnitField].(string); lim.UnitField != "" && len(lim.Units) > 0 && !slices.Contains(lim.Units, unit) {
			return bad(codes.UnitNotAllowed, field+"."+lim.UnitField, "unit %q is not allowed; allowed: %s", unit, strings.Join(lim.Units, ", "))
		}
		qn, _ := it[lim.QuantityField].(json.Number)
		q, ok := rat(qn)
		if !ok {
			continue
		}
		if lim.MaxQuantity > 0 && q.Cmp(new(big.Rat).SetFloat64(lim.MaxQuantity)) > 0 {
			return bad(codes.LimitExceeded, field+"."+lim.QuantityField, "quantity %s exceeds the limit of %v", qn, lim.MaxQuantity)
		}
		if pn, _ := it[lim.PriceField].(json.Number); lim.PriceField != "" {
			if price, ok := rat(pn); ok {
				total.Add(total, new(big.Rat).Mul(q, price))
			}
		}
	}
	ceiling, capped := lim.AmountCeiling[currency]
	if !capped {
		return nil
	}
	if an, _ := p[lim.AmountField].(json.Number); lim.AmountField != "" {
		if amount, ok := rat(an); ok && amount.Cmp(new(big.Rat).SetInt64(ceiling)) > 0 {
			return bad(codes.LimitExceeded, lim.AmountField, "amount %s exceeds the ceiling of %d minor units of %s", an, ceiling, currency)
		}
	}
	if lim.PriceField != "" && len(items) > 0 && total.Cmp(new(big.Rat).SetInt64(ceiling)) > 0 {
		return bad(codes.LimitExceeded, lim.ItemsField, "the total %s exceeds the ceiling of %d minor units of %s", total.FloatString(0), ceiling, currency)
	}
	return nil
}

// rat is the exact value of a JSON number; false when n is not one.
func rat(n json.Number) (*big.Rat, bool) {
	if n == "" {
		return nil, false
	}
	return new(big.Rat).SetString(n.String())
}
