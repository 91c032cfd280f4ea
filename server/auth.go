package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/store"
)

// Context keys set by middleware and handlers.
const (
	ctxToken       = "oncegate.token"
	ctxKey         = "oncegate.key"
	ctxIntent      = "oncegate.intent"
	ctxFingerprint = "oncegate.fingerprint"
)

// authenticate requires a valid, unrevoked agent token as a bearer token,
// in one Authorization line: the agent API and the MCP endpoint both sit
// behind it.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if len(c.Request().Header.Values(echo.HeaderAuthorization)) > 1 {
			// Which line did the client mean? Proxies and servers disagree
			// on which of two wins, so neither is looked up: RFC 6750's
			// invalid_request, 400, as for two Idempotency-Key lines.
			const msg = "the request carries the Authorization header more than once; send the agent token in one Authorization: Bearer <token> line"
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, bearerChallenge("invalid_request", msg))
			return codes.New(codes.Validation, echo.HeaderAuthorization, msg)
		}
		h := c.Request().Header.Get(echo.HeaderAuthorization)
		scheme, secret, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || secret == "" {
			const msg = "send an agent token as Authorization: Bearer <token>"
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, bearerChallenge("invalid_request", msg))
			return codes.New(codes.Unauthenticated, "", msg)
		}
		tok, err := s.tokens.get(c.Request().Context(), s.store, strings.TrimSpace(secret))
		if errors.Is(err, store.ErrNotFound) {
			return codes.New(codes.Unauthenticated, "", "the token is unknown or revoked")
		}
		if err != nil {
			return err
		}
		c.Set(ctxToken, tok)
		return next(c)
	}
}

// bearerChallenge is the WWW-Authenticate of a 401 (RFC 6750 section 3):
// the bearer scheme, with the refusal's RFC 6750 error code and its safe
// message, so a client shows the gateway's reason instead of guessing
// that OAuth is wanted. The message is kept to the characters a quoted
// error_description may hold.
func bearerChallenge(errCode, message string) string {
	desc := strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return '\''
		}
		return r
	}, message)
	return `Bearer realm="oncegate", error="` + errCode + `", error_description="` + desc + `"`
}

// token returns the authenticated agent's token.
func token(c echo.Context) store.Token {
	t, _ := c.Get(ctxToken).(store.Token)
	return t
}

// TokenCacheTTL bounds how long a verified token is trusted without
// reading the journal again: a revocation (from the CLI, the admin UI or
// another process) stops a token within this time.
const TokenCacheTTL = 2 * time.Second

// maxCachedTokens bounds the cache; past it, the cache starts over.
const maxCachedTokens = 4096

// tokenCache keeps tokens found valid in the journal, by the SHA-256 of
// their secret (never the secret itself), for TokenCacheTTL. Unknown and
// revoked tokens are not kept: each is asked of the journal again.
type tokenCache struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]cachedToken
}

type cachedToken struct {
	tok   store.Token
	until time.Time
}

// get returns the valid token with secret, from the cache while fresh,
// else from st.
func (tc *tokenCache) get(ctx context.Context, st *store.Store, secret string) (store.Token, error) {
	h := sha256.Sum256([]byte(secret))
	now := time.Now()
	tc.mu.Lock()
	e, ok := tc.m[h]
	tc.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.tok, nil
	}
	tok, err := st.TokenBySecret(ctx, secret)
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if err != nil {
		delete(tc.m, h)
		return tok, err
	}
	if tc.m == nil || len(tc.m) >= maxCachedTokens {
		tc.m = make(map[[sha256.Size]byte]cachedToken)
	}
	tc.m[h] = cachedToken{tok: tok, until: now.Add(TokenCacheTTL)}
	return tok, nil
}
