package engine

import (
	"context"
	"encoding/json"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/store"
)

// Warnings are what an answer about op says beside its state: a suspected
// duplicate (DuplicateWarning), and a TARGET_CHANGED_VALUE for each value
// the target did not keep as sent, which its result lists under
// adapters.ChangedKey. Both are read from the journal row, so a replay
// says them again.
func (e *Engine) Warnings(ctx context.Context, op store.Operation) []Warning {
	var out []Warning
	if w := e.DuplicateWarning(ctx, op); w != nil {
		out = append(out, *w)
	}
	return append(out, ChangedWarnings(op.Result)...)
}

// ChangedWarnings are the TARGET_CHANGED_VALUE warnings of a result: one
// per value the target did not keep as sent, its field the payload's.
func ChangedWarnings(result json.RawMessage) []Warning {
	if len(result) == 0 {
		return nil
	}
	var r map[string]json.RawMessage
	if json.Unmarshal(result, &r) != nil || r[adapters.ChangedKey] == nil {
		return nil
	}
	var changed []struct {
		Field   string `json:"field"`
		Message string `json:"message"`
	}
	if json.Unmarshal(r[adapters.ChangedKey], &changed) != nil {
		return nil
	}
	out := make([]Warning, 0, len(changed))
	for _, c := range changed {
		out = append(out, Warning{Code: codes.TargetChangedValue, Field: c.Field, Message: c.Message})
	}
	return out
}
