package server

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"
)

// intentInfo is one entry of GET /v1/intents.
type intentInfo struct {
	Name        string          `json:"name"`
	Target      string          `json:"target"`
	Scope       string          `json:"scope"`
	Money       bool            `json:"money"`
	KeyRequired bool            `json:"key_required"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	// A process: the scopes its steps need, and its steps' intents.
	Scopes []string `json:"scopes,omitempty"`
	Steps  []string `json:"steps,omitempty"`
}

// handleIntentList serves GET /v1/intents: the whitelist with each
// intent's target, scope, money flag and payload JSON Schema.
func (s *Server) handleIntentList(c echo.Context) error {
	all := s.catalog.Offered()
	out := make([]intentInfo, 0, len(all))
	for _, def := range all {
		info := intentInfo{
			Name: def.Name, Target: def.Target, Scope: def.Scope, Money: def.Money,
			KeyRequired: def.Journaled, Description: def.Description, Schema: def.Schema,
		}
		if def.IsProcess() {
			info.Target, info.Scope, info.Scopes, info.Steps = "process", "", def.Needs(), def.StepIntents()
		}
		out = append(out, info)
	}
	return c.JSON(http.StatusOK, map[string]any{"schema_version": "1.0", "intents": out})
}
