package server

import (
	"errors"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/store"
)

// Context keys set by middleware and handlers.
const (
	ctxToken       = "oncegate.token"
	ctxKey         = "oncegate.key"
	ctxIntent      = "oncegate.intent"
	ctxFingerprint = "oncegate.fingerprint"
)

// authenticate requires a valid, unrevoked agent token as a bearer token.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Request().Header.Get(echo.HeaderAuthorization)
		scheme, secret, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || secret == "" {
			return refuse(CodeUnauthenticated, "", "send an agent token as Authorization: Bearer <token>")
		}
		tok, err := s.store.TokenBySecret(c.Request().Context(), strings.TrimSpace(secret))
		if errors.Is(err, store.ErrNotFound) {
			return refuse(CodeUnauthenticated, "", "the token is unknown or revoked")
		}
		if err != nil {
			return err
		}
		c.Set(ctxToken, tok)
		return next(c)
	}
}

// token returns the authenticated agent's token.
func token(c echo.Context) store.Token {
	t, _ := c.Get(ctxToken).(store.Token)
	return t
}
