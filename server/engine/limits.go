package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/contract"
)

// IntentLimits are the business limits of one intent, as the
// configuration gives them.
type IntentLimits = config.IntentLimits

// limitPayload is the part of a normalized payload that limits look at.
type limitPayload struct {
	Currency    string       `json:"currency"`
	AmountMinor *json.Number `json:"amount_minor"`
	Items       []struct {
		Quantity   json.Number  `json:"quantity"`
		Unit       string       `json:"unit"`
		PriceMinor *json.Number `json:"price_minor"`
	} `json:"items"`
}

// checkLimits applies the configured business limits to a normalized
// payload; a violation is 422 rejected with a stable code naming the field.
func (e *Engine) checkLimits(in *contract.Intent, norm contract.Normalized) error {
	lim, ok := e.cfg.Limits[in.Name]
	if !ok {
		return nil
	}
	var p limitPayload
	dec := json.NewDecoder(bytes.NewReader(norm.Payload))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("limits: %w", err)
	}
	// Limit codes are not in the status table: they answer 422.
	bad := func(code, field, format string, args ...any) error {
		return &Refusal{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
	}
	if p.Currency != "" && len(lim.Currencies) > 0 && !slices.Contains(lim.Currencies, p.Currency) {
		return bad(codes.CurrencyNotAllowed, "currency", "currency %s is not allowed for %s; allowed: %s", p.Currency, in.Name, strings.Join(lim.Currencies, ", "))
	}
	if lim.MaxItems > 0 && len(p.Items) > lim.MaxItems {
		return bad(codes.LimitExceeded, "items", "%d items exceed the limit of %d for %s", len(p.Items), lim.MaxItems, in.Name)
	}
	total := new(big.Rat)
	for i, it := range p.Items {
		field := fmt.Sprintf("items[%d]", i)
		if len(lim.Units) > 0 && !slices.Contains(lim.Units, it.Unit) {
			return bad(codes.UnitNotAllowed, field+".unit", "unit %q is not allowed; allowed: %s", it.Unit, strings.Join(lim.Units, ", "))
		}
		q, ok := new(big.Rat).SetString(it.Quantity.String())
		if !ok {
			continue
		}
		if lim.MaxQuantity > 0 && q.Cmp(new(big.Rat).SetFloat64(lim.MaxQuantity)) > 0 {
			return bad(codes.LimitExceeded, field+".quantity", "quantity %s exceeds the limit of %v", it.Quantity, lim.MaxQuantity)
		}
		if it.PriceMinor != nil {
			price, _ := new(big.Rat).SetString(it.PriceMinor.String())
			if price != nil {
				total.Add(total, new(big.Rat).Mul(q, price))
			}
		}
	}
	ceiling, capped := lim.AmountCeiling[p.Currency]
	if !capped {
		return nil
	}
	if p.AmountMinor != nil {
		if amount, ok := new(big.Rat).SetString(p.AmountMinor.String()); ok && amount.Cmp(new(big.Rat).SetInt64(ceiling)) > 0 {
			return bad(codes.LimitExceeded, "amount_minor", "amount %s exceeds the ceiling of %d minor units of %s", p.AmountMinor, ceiling, p.Currency)
		}
	}
	if len(p.Items) > 0 && total.Cmp(new(big.Rat).SetInt64(ceiling)) > 0 {
		return bad(codes.LimitExceeded, "items", "the total %s exceeds the ceiling of %d minor units of %s", total.FloatString(0), ceiling, p.Currency)
	}
	return nil
}
