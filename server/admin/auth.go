package admin

import (
	"context"
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/store"
)

// ctxSession is where requireSession leaves the signed-in session.
const ctxSession = "oncegate.admin.session"

// crossOrigin refuses state changes that a browser says come from another
// site (Sec-Fetch-Site, Origin): a second line behind the CSRF token.
var crossOrigin = http.NewCrossOriginProtection()

// requireSession lets through requests of a live session and sends
// everyone else to the sign-in page, remembering where they were going.
// A user whose password someone else chose gets only the password page
// and signing out until they choose their own: other pages send them
// there, anything else is refused, so whoever chose the password cannot
// act as them.
func (h *Handler) requireSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ck, err := c.Cookie(SessionCookie)
		if err != nil || ck.Value == "" {
			return toLogin(c)
		}
		find := h.d.Store.SessionByID
		if c.Request().Header.Get(LiveHeader) == "1" {
			find = h.d.Store.PeekSession
		}
		sess, err := find(c.Request().Context(), ck.Value, SessionIdle)
		if errors.Is(err, store.ErrNotFound) {
			h.clearCookie(c, SessionCookie)
			return toLogin(c)
		}
		if err != nil {
			return err
		}
		c.Set(ctxSession, sess)
		if sess.User.MustChangePassword && c.Path() != passwordPage && c.Path() != "/admin/logout" {
			if r := c.Request(); r.Method == http.MethodGet || r.Method == http.MethodHead {
				return c.Redirect(http.StatusSeeOther, passwordPath(safeNext(r.URL.RequestURI())))
			}
			return errMustChangePassword
		}
		return next(c)
	}
}

// LiveHeader marks a page's own periodic refresh (static/live.js), which
// is no sign of a person at the browser and so does not keep the session
// alive.
const LiveHeader = "X-Oncegate-Live"

// toLogin redirects to the sign-in page; a GET comes back to where it was.
func toLogin(c echo.Context) error {
	target := "/admin/login"
	if r := c.Request(); r.Method == http.MethodGet {
		if next := safeNext(r.URL.RequestURI()); next != "/admin/" {
			target += "?next=" + url.QueryEscape(next)
		}
	}
	return c.Redirect(http.StatusSeeOther, target)
}

// checkCSRF refuses, with 403 and no change, a form whose csrf field is
// not the session's token, or that the browser says came from elsewhere.
// The token counts only in the form's body: one in the address would be
// kept in logs, histories and Referer headers.
func (h *Handler) checkCSRF(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		sess := session(c)
		if err := crossOrigin.Check(c.Request()); err != nil {
			return errCSRF
		}
		if !sess.CheckCSRF(c.Request().PostFormValue("csrf")) {
			return errCSRF
		}
		return next(c)
	}
}

// errCSRF is a form without the session's token.
var errCSRF = echo.NewHTTPError(http.StatusForbidden, "csrf")

// allow lets through only users with one of roles; others get 403.
func allow(roles ...string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !slices.Contains(roles, session(c).User.Role) {
				return echo.NewHTTPError(http.StatusForbidden, "role")
			}
			return next(c)
		}
	}
}

// session is the signed-in session of the request.
func session(c echo.Context) store.Session {
	s, _ := c.Get(ctxSession).(store.Session)
	return s
}

// can reports whether the signed-in user has one of roles.
func can(c echo.Context, roles ...string) bool {
	return slices.Contains(roles, session(c).User.Role)
}

// canDecide, canReview, canManage: who may act where.
func canDecide(c echo.Context) bool { return can(c, store.RoleAccountant) }
func canReview(c echo.Context) bool { return can(c, store.RoleAdmin, store.RoleOperator) }
func canManage(c echo.Context) bool { return can(c, store.RoleAdmin) }

// actorCtx is the request's context with the signed-in user as the actor
// of every journal write, so the audit trail names them.
func actorCtx(c echo.Context) context.Context {
	return store.WithActor(c.Request().Context(), store.Actor{Kind: store.ActorUser, Name: session(c).User.Name})
}

// safeNext returns next if it is a local admin path other than the
// sign-in and sign-out pages, else the dashboard: a sign-in must never
// send the browser to another site, nor straight to signing out.
func safeNext(next string) string {
	p, ok := adminPath(next)
	if !ok || strings.HasPrefix(p, "/admin/login") || strings.HasPrefix(p, "/admin/logout") {
		return "/admin/"
	}
	return p
}

// adminPath reports whether next is a path (with its query) under /admin
// of this site, and returns it cleaned.
func adminPath(next string) (string, bool) {
	if next == "" || strings.ContainsAny(next, "\\\r\n\t") || strings.HasPrefix(next, "//") {
		return "", false
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "", false
	}
	if u.Path != "/admin" && !strings.HasPrefix(u.Path, "/admin/") {
		return "", false
	}
	return u.RequestURI(), true
}

// clientIP is the address the request came from (Deps.ClientIP).
func (h *Handler) clientIP(c echo.Context) string { return h.d.ClientIP(c.Request()) }

// peerIP is the peer of the connection, never a header a client could
// forge.
func peerIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// setCookie sets an admin cookie: HttpOnly, SameSite=Strict, under
// /admin, Secure under HTTPS. maxAge < 0 deletes it.
func (h *Handler) setCookie(c echo.Context, name, value string, maxAge int) {
	c.SetCookie(&http.Cookie{
		Name: name, Value: value, Path: cookiePath, MaxAge: maxAge,
		HttpOnly: true, Secure: h.secure(c), SameSite: http.SameSiteStrictMode,
	})
}

// secure reports whether the browser reached us over HTTPS: our own TLS,
// or a proxy's that says so. A client that claims HTTPS falsely only keeps
// its own cookies from being sent back.
func (h *Handler) secure(c echo.Context) bool {
	return h.d.Secure || c.Request().TLS != nil || strings.EqualFold(c.Request().Header.Get(echo.HeaderXForwardedProto), "https")
}

func (h *Handler) clearCookie(c echo.Context, name string) { h.setCookie(c, name, "", -1) }

// equalToken compares two tokens in constant time; empty never matches.
func equalToken(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
