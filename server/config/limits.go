package config

// IntentLimits are the business limits of one intent: data in the
// configuration, not code paths. Zero values mean no limit.
type IntentLimits struct {
	MaxItems    int      `yaml:"max_items"`
	MaxQuantity float64  `yaml:"max_quantity"`
	Currencies  []string `yaml:"currencies"`
	Units       []string `yaml:"units"`
	// AmountCeiling caps the amount per currency, in minor units: the
	// amount_minor of a payment, the total (sum of quantity × price_minor)
	// of an invoice.
	AmountCeiling map[string]int64 `yaml:"amount_ceiling"`
}

// DefaultLimits are the limits when the configuration names none.
func DefaultLimits() map[string]IntentLimits {
	items := IntentLimits{MaxItems: 100, MaxQuantity: 1e6, Currencies: []string{"RUB"}, Units: []string{"pcs", "kg"}}
	invoice := items
	invoice.AmountCeiling = map[string]int64{"RUB": 10_000_000_000}                                           // 100 million roubles
	money := IntentLimits{Currencies: []string{"RUB"}, AmountCeiling: map[string]int64{"RUB": 1_000_000_000}} // 10 million roubles
	return map[string]IntentLimits{
		"invoice.create":           invoice,
		"sales_order.create_draft": items,
		"payment.charge":           money,
		"payment.refund":           money,
	}
}
