package server

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/server/mcp"
)

type mcpScopesKey struct{}

// mcpHandler serves the MCP endpoint after authenticate: its tools are the
// intents the token's scopes allow, each call answered by this API.
func (s *Server) mcpHandler() echo.HandlerFunc {
	h := mcp.Handler(mcp.Config{
		Contour: s.cfg.Contour,
		Catalog: s.catalog,
		Log:     s.log,
		API:     s.echo,
		Scopes: func(r *http.Request) []string {
			scopes, _ := r.Context().Value(mcpScopesKey{}).([]string)
			return scopes
		},
		InProcess: func(ctx context.Context) context.Context { return context.WithValue(ctx, inProcessKey{}, true) },
		Refusal: func(code, field, message string) []byte {
			ae := refuse(code, field, message)
			a := answer{State: "rejected", Errors: []ErrorItem{ae.ErrorItem}}
			a.finish(statusOf(code))
			body, _ := json.Marshal(a)
			return body
		},
	})
	return func(c echo.Context) error {
		r := c.Request()
		h.ServeHTTP(c.Response(), r.WithContext(context.WithValue(r.Context(), mcpScopesKey{}, token(c).Scopes)))
		return nil
	}
}
