package admin

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// handleTokenList serves GET /admin/tokens: agent tokens, newest first
// (never their secrets).
func (h *Handler) handleTokenList(c echo.Context) error {
	return h.renderTokens(c, http.StatusOK, "", nil, "")
}

// handleTokenCreate serves POST /admin/tokens: makes a token for an agent
// with the chosen scopes and shows its secret on the answer page, the
// only time it is ever shown; the audit trail records the token's id,
// agent and scopes.
func (h *Handler) handleTokenCreate(c echo.Context) error {
	l := labels(c)
	agent := strings.TrimSpace(c.FormValue("agent"))
	form, _ := c.FormParams()
	chosen := form["scope"]
	if store.ValidateAgentName(agent) != nil {
		return h.renderTokens(c, http.StatusUnprocessableEntity, agent, chosen, l.ErrAgentName)
	}
	scopes, err := store.ParseScopes(strings.Join(chosen, ","))
	if err != nil {
		return h.renderTokens(c, http.StatusUnprocessableEntity, agent, chosen, l.ErrScopes)
	}
	secret, tok, err := h.d.Store.CreateToken(actorCtx(c), agent, scopes)
	if errors.Is(err, store.ErrInvalid) {
		return h.renderTokens(c, http.StatusUnprocessableEntity, agent, chosen, l.ErrAgentName)
	}
	if err != nil {
		return fmt.Errorf("create token: %w", err)
	}
	v := views.TokenCreatedView{
		Page: h.page(c, "tokens", l.TokenCreatedTitle), ID: strconv.FormatInt(tok.ID, 10),
		Agent: tok.Agent, Scopes: strings.Join(tok.Scopes, ", "), Secret: secret,
	}
	return Render(c, http.StatusOK, views.TokenCreated(v))
}

// handleTokenRevoke serves POST /admin/tokens/{id}/revoke: the token stops
// working at once. An agent is cut off only on a deliberate confirmation
// (confirm=yes) that names it, its rights and its payments still waiting
// for approval; the message after it and the audit event name the agent.
func (h *Handler) handleTokenRevoke(c echo.Context) error {
	// Only a number: the store would read a name as "every token of
	// that agent".
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return echo.NewHTTPError(http.StatusNotFound, "bad token id")
	}
	ctx, l := c.Request().Context(), labels(c)
	toks, err := h.d.Store.ListTokens(ctx)
	if err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	i := slices.IndexFunc(toks, func(t store.Token) bool { return t.ID == id })
	if i < 0 || !toks[i].RevokedAt.IsZero() {
		return h.renderTokens(c, http.StatusUnprocessableEntity, "", nil, l.ErrTokenGone)
	}
	tok := toks[i]
	if c.FormValue("confirm") != "yes" {
		v := views.TokenRevokeView{
			Page: h.page(c, "tokens", l.RevokeTitle), ID: tok.ID, Agent: tok.Agent,
			Scopes: strings.Join(tok.Scopes, ", "), Created: formatTime(tok.CreatedAt, h.d.Location, lang(c)),
			RevokeURL: fmt.Sprintf("/admin/tokens/%d/revoke", tok.ID),
		}
		if slices.Contains(tok.Scopes, "pay") {
			list, err := h.d.Store.Approvals(ctx, store.ApprovalPending, 500)
			if err != nil {
				return fmt.Errorf("revoke token: %w", err)
			}
			for _, a := range list {
				if a.Operation.Agent == tok.Agent {
					v.Waiting++
				}
			}
		}
		return Render(c, http.StatusOK, views.TokenRevoke(v))
	}
	ref := strconv.FormatInt(id, 10)
	if _, err := h.d.Store.RevokeToken(actorCtx(c), ref); errors.Is(err, store.ErrNotFound) {
		return h.renderTokens(c, http.StatusUnprocessableEntity, "", nil, l.ErrTokenGone)
	} else if err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	return h.redirectWith(c, "/admin/tokens", "token_revoked", fmt.Sprintf("%s (№ %s)", tok.Agent, ref))
}

// renderTokens renders the token list with the create form as submitted.
func (h *Handler) renderTokens(c echo.Context, status int, agent string, scopes []string, msg string) error {
	toks, err := h.d.Store.ListTokens(c.Request().Context())
	if err != nil {
		return fmt.Errorf("tokens: %w", err)
	}
	l, lg := labels(c), lang(c)
	v := views.TokenListView{Page: h.page(c, "tokens", l.TokensTitle), CanManage: canManage(c), Agent: agent, AgentPattern: store.AgentNamePattern, Error: msg}
	for _, sc := range store.Scopes {
		v.Scopes = append(v.Scopes, views.Option{Value: sc, Label: l.ScopeFor[sc], Selected: slices.Contains(scopes, sc)})
	}
	for _, t := range toks {
		r := views.TokenRow{
			ID: t.ID, Agent: t.Agent, Scopes: strings.Join(t.Scopes, ", "),
			Created:   formatTime(t.CreatedAt, h.d.Location, lg),
			RevokeURL: fmt.Sprintf("/admin/tokens/%d/revoke", t.ID),
		}
		if !t.RevokedAt.IsZero() {
			r.Revoked = formatTime(t.RevokedAt, h.d.Location, lg)
		}
		v.Rows = append(v.Rows, r)
	}
	return Render(c, status, views.TokenList(v))
}
