package admin

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// unknownName stands for a typed name that is no user's in audit events.
const unknownName = "?"

// handleLoginForm serves GET /admin/login: the sign-in form, with a fresh
// form token in a cookie and the form (double submit), so a sign-in cannot
// be posted from another site.
func (h *Handler) handleLoginForm(c echo.Context) error {
	next := safeNext(c.QueryParam("next"))
	if ck, err := c.Cookie(SessionCookie); err == nil {
		if _, err := h.d.Store.SessionByID(c.Request().Context(), ck.Value, SessionIdle); err == nil {
			return c.Redirect(http.StatusSeeOther, next)
		}
	}
	return h.renderLogin(c, http.StatusOK, "", next, "")
}

// renderLogin renders the sign-in form with a fresh form token.
func (h *Handler) renderLogin(c echo.Context, status int, name, next, msg string) error {
	buf := make([]byte, 24)
	rand.Read(buf)
	token := base64.RawURLEncoding.EncodeToString(buf)
	h.setCookie(c, loginCookie, token, int(SessionIdle.Seconds()))
	l := labels(c)
	p := h.page(c, "", l.SignInTitle)
	return Render(c, status, views.Login(views.LoginView{Page: p, Name: name, Next: next, Token: token, Error: msg}))
}

// handleLogin serves POST /admin/login. The store counts the sign-in
// against the name and the address before it checks the password, in one
// step with the throttle's decision, so parallel tries cannot outrun the
// limit; a throttled sign-in is refused unchecked. Success starts a
// session and audits user.login; a user whose password someone else chose
// goes to choose their own first. Failure audits user.login_failed.
func (h *Handler) handleLogin(c echo.Context) error {
	ctx := c.Request().Context()
	l := labels(c)
	r := c.Request()
	// The form's body only: a password or a token in the address would
	// be kept in logs and histories.
	name, password := r.PostFormValue("name"), r.PostFormValue("password")
	next := safeNext(r.PostFormValue("next"))
	ip := h.clientIP(c)

	ck, err := c.Cookie(loginCookie)
	if err != nil || !equalToken(ck.Value, r.PostFormValue("csrf")) {
		return h.renderLogin(c, http.StatusForbidden, name, next, l.ErrLoginExpired)
	}
	who, err := h.knownName(ctx, name)
	if err != nil {
		return fmt.Errorf("sign in: %w", err)
	}
	failed := func(reason string) error {
		actor := store.WithActor(ctx, store.Actor{Kind: store.ActorUser, Name: who})
		if err := h.d.Store.Audit(actor, "user.login_failed", "", map[string]any{"addr": ip, "reason": reason}); err != nil {
			return fmt.Errorf("sign in: %w", err)
		}
		return nil
	}
	u, wait, err := h.d.Store.Login(ctx, name, password, ip)
	switch {
	case errors.Is(err, store.ErrThrottled):
		if err := failed("throttled"); err != nil {
			return err
		}
		return h.renderLogin(c, http.StatusTooManyRequests, name, next, fmt.Sprintf(l.ErrThrottledFmt, formatDuration(wait+59e9, l)))
	case errors.Is(err, store.ErrLoginBusy):
		if err := failed("busy"); err != nil {
			return err
		}
		return h.renderLogin(c, http.StatusTooManyRequests, name, next, l.ErrLoginBusy)
	case errors.Is(err, store.ErrBadCredentials):
		if err := failed("bad_credentials"); err != nil {
			return err
		}
		return h.renderLogin(c, http.StatusUnprocessableEntity, name, next, l.ErrBadCredentials)
	case err != nil:
		return fmt.Errorf("sign in: %w", err)
	}

	id, _, err := h.d.Store.CreateSession(ctx, u.ID, SessionTTL, ip)
	if err != nil {
		return fmt.Errorf("sign in: %w", err)
	}
	actor := store.WithActor(ctx, store.Actor{Kind: store.ActorUser, Name: u.Name})
	if err := h.d.Store.Audit(actor, "user.login", "", map[string]any{"addr": ip, "role": u.Role}); err != nil {
		return fmt.Errorf("sign in: %w", err)
	}
	h.setCookie(c, SessionCookie, id, int(SessionTTL.Seconds()))
	h.clearCookie(c, loginCookie)
	if u.MustChangePassword {
		return c.Redirect(http.StatusSeeOther, passwordPath(next))
	}
	return c.Redirect(http.StatusSeeOther, next)
}

// knownName is the stored name of the user called name (names compare
// without letter case), or unknownName when there is no such user. A
// failed sign-in is audited under it: text typed into the name field may
// be a password typed into the wrong field, and the audit trail is kept
// for good and exported, so only a real user's name is ever recorded.
func (h *Handler) knownName(ctx context.Context, name string) (string, error) {
	users, err := h.d.Store.Users(ctx)
	if err != nil {
		return "", err
	}
	for _, u := range users {
		if strings.EqualFold(u.Name, name) {
			return u.Name, nil
		}
	}
	return unknownName, nil
}

// handleLogoutForm serves GET /admin/logout (typed or bookmarked): a page
// with the sign-out form. It changes nothing; signing out is the form's
// POST with the session's token.
func (h *Handler) handleLogoutForm(c echo.Context) error {
	l := labels(c)
	return Render(c, http.StatusOK, views.Logout(views.LogoutView{Page: h.page(c, "", l.SignOutTitle)}))
}

// handleLogout serves POST /admin/logout: ends the session (its id stops
// working at once) and audits user.logout.
func (h *Handler) handleLogout(c echo.Context) error {
	ck, err := c.Cookie(SessionCookie)
	if err == nil {
		if err := h.d.Store.DeleteSession(c.Request().Context(), ck.Value); err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("sign out: %w", err)
		}
	}
	if err := h.d.Store.Audit(actorCtx(c), "user.logout", "", map[string]any{"addr": h.clientIP(c)}); err != nil {
		return fmt.Errorf("sign out: %w", err)
	}
	h.clearCookie(c, SessionCookie)
	return c.Redirect(http.StatusSeeOther, "/admin/login")
}

// handleLang serves GET /admin/lang/{ru|en}: remembers the language in a
// cookie (a preference of this browser; nothing in the journal changes)
// and goes back.
func (h *Handler) handleLang(c echo.Context) error {
	lg := c.Param("lang")
	if lg != "ru" && lg != "en" {
		return echo.NewHTTPError(http.StatusNotFound, "unknown language")
	}
	c.SetCookie(&http.Cookie{
		Name: LangCookie, Value: lg, Path: cookiePath, MaxAge: 365 * 24 * 3600,
		HttpOnly: true, Secure: h.secure(c), SameSite: http.SameSiteLaxMode,
	})
	// Back to where the link was, the sign-in page included.
	next, ok := adminPath(c.QueryParam("next"))
	if !ok {
		next = "/admin/"
	}
	return c.Redirect(http.StatusSeeOther, next)
}
