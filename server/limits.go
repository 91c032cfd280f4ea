package server

import "github.com/oncegate/oncegate/server/engine"

// Codes of business limits. Each names the field it is about.
const (
	CodeLimitExceeded      = engine.CodeLimitExceeded
	CodeCurrencyNotAllowed = engine.CodeCurrencyNotAllowed
	CodeUnitNotAllowed     = engine.CodeUnitNotAllowed
)
