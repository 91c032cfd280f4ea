package admin

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// passwordPage is where users choose their own password.
const passwordPage = "/admin/password"

// errMustChangePassword refuses every change a user makes before they
// chose their own password (store.User.MustChangePassword).
var errMustChangePassword = echo.NewHTTPError(http.StatusForbidden, "choose your own password first")

// passwordPath is the password page, coming back to next afterwards.
func passwordPath(next string) string {
	if next == "/admin/" || next == passwordPage {
		return passwordPage
	}
	return passwordPage + "?next=" + url.QueryEscape(next)
}

// handlePasswordForm serves GET /admin/password: the form to choose one's
// own password, which is all a user whose password someone else chose
// can see until they do.
func (h *Handler) handlePasswordForm(c echo.Context) error {
	return h.renderPassword(c, http.StatusOK, safeNext(c.QueryParam("next")), "")
}

// handlePasswordChange serves POST /admin/password: the signed-in user
// chooses their own password. The current one is checked as a sign-in is,
// under the same throttle, so a session left open is not a way to guess
// it; the new one must differ from it, so a password someone else chose
// does not stay. All of the user's sessions end (one another browser
// opened with the old password too) and this browser gets a new one.
func (h *Handler) handlePasswordChange(c echo.Context) error {
	ctx := c.Request().Context()
	r := c.Request()
	l := labels(c)
	me := session(c).User
	current, password, again := r.PostFormValue("current"), r.PostFormValue("password"), r.PostFormValue("repeat")
	next := safeNext(r.PostFormValue("next"))
	ip := h.clientIP(c)
	fail := func(status int, msg string) error { return h.renderPassword(c, status, next, msg) }
	switch {
	case password != again:
		return fail(http.StatusUnprocessableEntity, l.ErrPasswordsDiffer)
	case store.ValidatePassword(password) != nil:
		return fail(http.StatusUnprocessableEntity, l.ErrPasswordRules)
	case password == current:
		return fail(http.StatusUnprocessableEntity, l.ErrPasswordSame)
	}

	failed := func(reason string) error {
		if err := h.d.Store.Audit(actorCtx(c), "user.password_change_failed", "", map[string]any{"addr": ip, "reason": reason}); err != nil {
			return fmt.Errorf("change password: %w", err)
		}
		return nil
	}
	_, wait, err := h.d.Store.Login(ctx, me.Name, current, ip)
	switch {
	case errors.Is(err, store.ErrThrottled):
		if err := failed("throttled"); err != nil {
			return err
		}
		return fail(http.StatusTooManyRequests, fmt.Sprintf(l.ErrThrottledFmt, formatDuration(wait+59e9, l)))
	case errors.Is(err, store.ErrLoginBusy):
		if err := failed("busy"); err != nil {
			return err
		}
		return fail(http.StatusTooManyRequests, l.ErrLoginBusy)
	case errors.Is(err, store.ErrBadCredentials):
		if err := failed("bad_credentials"); err != nil {
			return err
		}
		return fail(http.StatusUnprocessableEntity, l.ErrCurrentPassword)
	case err != nil:
		return fmt.Errorf("change password: %w", err)
	}

	if err := h.d.Store.ChangeOwnPassword(actorCtx(c), me.Name, password, ip); err != nil {
		return fmt.Errorf("change password: %w", err)
	}
	id, _, err := h.d.Store.CreateSession(ctx, me.ID, SessionTTL, ip)
	if err != nil {
		return fmt.Errorf("change password: %w", err)
	}
	h.setCookie(c, SessionCookie, id, int(SessionTTL.Seconds()))
	return h.redirectWith(c, next, "password_changed", "")
}

// renderPassword renders the password form.
func (h *Handler) renderPassword(c echo.Context, status int, next, msg string) error {
	l := labels(c)
	v := views.PasswordView{Page: h.page(c, "", l.OwnPasswordTitle), Required: session(c).User.MustChangePassword, Next: next, Error: msg}
	return Render(c, status, views.Password(v))
}
