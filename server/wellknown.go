package server

import (
	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/adapters/codes"
)

// oauthDiscovery are the well-known documents MCP clients ask for when an
// answer is 401 (RFC 9728's protected resource metadata, RFC 8414's and
// OpenID's authorization server metadata), bare and with the resource's
// path appended.
var oauthDiscovery = []string{
	"/.well-known/oauth-protected-resource",
	"/.well-known/oauth-protected-resource/*",
	"/.well-known/oauth-authorization-server",
	"/.well-known/oauth-authorization-server/*",
	"/.well-known/openid-configuration",
	"/.well-known/openid-configuration/*",
}

// routeOAuthDiscovery answers the OAuth discovery documents with a 404
// problem saying why there is none: the gateway takes static agent
// tokens. A client that looks for OAuth after a 401 (the MCP SDKs, the
// Inspector) then shows that reason, and the 401's, rather than an
// OAuth flow that cannot succeed.
func (s *Server) routeOAuthDiscovery() {
	for _, path := range oauthDiscovery {
		s.get(s.echo, "", path, handleOAuthDiscovery)
	}
}

// handleOAuthDiscovery serves GET /.well-known/oauth-* and
// /.well-known/openid-configuration: 404, no OAuth here.
func handleOAuthDiscovery(echo.Context) error {
	return codes.New(codes.NotFound, "", "oncegate does not use OAuth: agents authenticate with a static agent token (og_…) that an admin creates with oncegate token create, sent as Authorization: Bearer <token>")
}
