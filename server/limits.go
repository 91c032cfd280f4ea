package server

import "github.com/oncegate/oncegate/server/engine"

// Codes of business limits. Each names the field it is about.
const (
	CodeLimitExceeded      = engine.CodeLimitExceeded
	CodeCurrencyNotAllowed = engine.CodeCurrencyNotAllowed
	CodeUnitNotAllowed     = engine.CodeUnitNotAllowed
)

// IntentLimits are the business limits of one intent, as the engine
// applies them.
type IntentLimits = engine.IntentLimits

// DefaultLimits are the limits when the configuration names none.
func DefaultLimits() map[string]IntentLimits { return engine.DefaultLimits() }
