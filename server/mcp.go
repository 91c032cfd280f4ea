package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/adapters/codes"
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
		Refusal: func(r *codes.Refusal) (int, []byte) {
			status, a := s.refusalAnswer(r, nil)
			body, _ := json.Marshal(a)
			return status, body
		},
	})
	return func(c echo.Context) error {
		r := c.Request()
		h.ServeHTTP(c.Response(), r.WithContext(context.WithValue(r.Context(), mcpScopesKey{}, token(c).Scopes)))
		return nil
	}
}

// mcpOrigin refuses, 403, a request to /mcp from a web page of another
// origin, as MCP's streamable HTTP transport requires of servers (a page
// that rebinds its DNS name to the gateway's address must not reach it
// through the person's browser). MCP clients send no Origin; a page of
// the gateway's own origin (the same host and port as the request's Host)
// may call it. Without Origin, a browser's Sec-Fetch-Site saying another
// site is refused too.
func mcpOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		origin := r.Header.Values("Origin")
		foreign := false
		switch {
		case len(origin) > 1:
			foreign = true
		case len(origin) == 1:
			u, err := url.Parse(origin[0])
			foreign = err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !strings.EqualFold(u.Host, r.Host)
		default:
			site := r.Header.Get("Sec-Fetch-Site")
			foreign = site == "cross-site" || site == "same-site"
		}
		if foreign {
			return codes.New(codes.PermissionDenied, "", "the MCP endpoint refuses requests from a web page of another origin (the Origin header); MCP clients send none")
		}
		return next(c)
	}
}
