package config

// IntentLimits are the configuration's business limits of one intent
// (limits: NAME: …): each value set replaces the one the intent's
// definition declares, which also says which payload fields they apply
// to. Zero values leave the definition's.
type IntentLimits struct {
	MaxItems    int      `yaml:"max_items"`
	MaxQuantity float64  `yaml:"max_quantity"`
	Currencies  []string `yaml:"currencies"`
	Units       []string `yaml:"units"`
	// AmountCeiling caps the amount per currency, in minor units: the
	// definition's amount field, or its lines' total.
	AmountCeiling map[string]int64 `yaml:"amount_ceiling"`
}

// DuplicateOverride changes an intent's duplicate rule (its definition's
// duplicates:) for this gateway: each value set here replaces the
// definition's; action off switches the rule off.
type DuplicateOverride struct {
	Window Duration `yaml:"window"`
	Action string   `yaml:"action"` // block | hold | warn | off
}
