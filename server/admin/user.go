package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// userNameShape is what a user name can look like (the store's rule),
// checked here so the form answers with its own message.
var userNameShape = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// handleUserList serves GET /admin/users: the people who can sign in.
func (h *Handler) handleUserList(c echo.Context) error {
	return h.renderUsers(c, http.StatusOK, "", "", "", "")
}

// handleUserCreate serves POST /admin/users: adds a user with a role and
// an initial password (which is never logged nor audited). A role that
// decides money is granted only with the admin's own password typed again
// (confirmGrant).
func (h *Handler) handleUserCreate(c echo.Context) error {
	l := labels(c)
	name, role, password := strings.TrimSpace(c.FormValue("name")), c.FormValue("role"), c.FormValue("password")
	fail := func(msg string) error { return h.renderUsers(c, http.StatusUnprocessableEntity, name, role, "", msg) }
	switch {
	case !userNameShape.MatchString(name):
		return fail(l.ErrUserName)
	case !slices.Contains(store.Roles, role):
		return fail(l.ErrRole)
	case store.ValidatePassword(password) != nil:
		return fail(l.ErrPasswordRules)
	}
	var conf store.Confirmation
	if store.DecidesMoney(role) {
		var err error
		conf, err = h.confirmGrant(c, name, role)
		var rf *refusal
		switch {
		case errors.As(err, &rf):
			return h.renderUsers(c, rf.status, name, role, "", rf.msg)
		case err != nil:
			return fmt.Errorf("add user: %w", err)
		}
	}
	_, err := h.d.Store.CreateUserConfirmed(actorCtx(c), name, role, password, conf)
	switch {
	case errors.Is(err, store.ErrConflict):
		return fail(l.ErrUserTaken)
	case errors.Is(err, store.ErrConfirmRequired):
		return fail(l.ErrGrantPassword)
	case errors.Is(err, store.ErrInvalid):
		return fail(l.ErrUserName)
	case err != nil:
		return fmt.Errorf("add user: %w", err)
	}
	return h.redirectWith(c, "/admin/users", "user_created", name)
}

// handleUserRole serves POST /admin/users/{name}/role: it applies to the
// user's open sessions at once. The last enabled admin keeps the role. No
// one changes their own role, so no one approves money by promoting
// themselves; a role that decides money is granted only with the admin's
// own password typed again (confirmGrant), and ends the grantee's
// sessions (the store does, in the same step).
func (h *Handler) handleUserRole(c echo.Context) error {
	l := labels(c)
	name, err := url.PathUnescape(c.Param("name"))
	if err != nil || name == "" {
		return echo.NewHTTPError(http.StatusNotFound, "bad user name")
	}
	// The user as stored: a refusal is shown on their row and audited
	// under their name.
	u, err := h.userNamed(c.Request().Context(), name)
	if err != nil {
		return fmt.Errorf("set role: %w", err)
	}
	role := c.FormValue("role")
	refuse := func(status int, msg string) error { return h.renderUsers(c, status, "", "", u.Name, msg) }
	switch {
	case !slices.Contains(store.Roles, role):
		return refuse(http.StatusUnprocessableEntity, l.ErrRole)
	case u.ID == session(c).User.ID:
		if err := h.auditRoleRefused(c, u.Name, role, "own_role"); err != nil {
			return err
		}
		return refuse(http.StatusUnprocessableEntity, l.ErrOwnRole)
	}
	// A grant: a role that decides money to someone who did not hold one.
	flash, conf := "role_changed", store.Confirmation{}
	if store.DecidesMoney(role) && !store.DecidesMoney(u.Role) {
		flash = "role_granted"
		conf, err = h.confirmGrant(c, u.Name, role)
		var rf *refusal
		switch {
		case errors.As(err, &rf):
			return refuse(rf.status, rf.msg)
		case err != nil:
			return fmt.Errorf("set role: %w", err)
		}
	}
	return h.changeUser(c, "user.role_changed", flash,
		func(name string) error { return h.d.Store.SetRoleConfirmed(actorCtx(c), name, role, conf) })
}

// refusal is a change refused before anything was written: the reason
// for people, and the status to answer with.
type refusal struct {
	status int
	msg    string
}

func (r *refusal) Error() string { return r.msg }

// userNamed is the user called name (names compare without letter
// case); echo's 404 when there is none.
func (h *Handler) userNamed(ctx context.Context, name string) (store.User, error) {
	users, err := h.d.Store.Users(ctx)
	if err != nil {
		return store.User{}, err
	}
	for _, u := range users {
		if strings.EqualFold(u.Name, name) {
			return u, nil
		}
	}
	return store.User{}, echo.NewHTTPError(http.StatusNotFound, "no such user")
}

// confirmGrant asks again for the signed-in admin's own password (the
// form's own_password, from its body only) to grant role, which decides
// money, to the user name, and checks it as a sign-in is checked, under
// the same throttle: a session left open or taken over cannot hand out
// the approval of money. A missing, wrong, throttled or busy password is
// a *refusal; the last three are audited as user.role_change_failed, as
// a failed sign-in is.
func (h *Handler) confirmGrant(c echo.Context, name, role string) (store.Confirmation, error) {
	l := labels(c)
	conf, wait, err := h.d.Store.ConfirmPassword(actorCtx(c), c.Request().PostFormValue("own_password"), h.clientIP(c))
	var reason string
	rf := &refusal{status: http.StatusUnprocessableEntity}
	switch {
	case err == nil:
		return conf, nil
	case errors.Is(err, store.ErrConfirmRequired):
		rf.msg = l.ErrGrantPassword
		return conf, rf
	case errors.Is(err, store.ErrThrottled):
		reason, rf.status, rf.msg = "throttled", http.StatusTooManyRequests, fmt.Sprintf(l.ErrThrottledFmt, formatDuration(wait+59e9, l))
	case errors.Is(err, store.ErrLoginBusy):
		reason, rf.status, rf.msg = "busy", http.StatusTooManyRequests, l.ErrLoginBusy
	case errors.Is(err, store.ErrBadCredentials):
		reason, rf.msg = "bad_credentials", l.ErrGrantPasswordWrong
	default:
		return conf, err
	}
	if err := h.auditRoleRefused(c, name, role, reason); err != nil {
		return conf, err
	}
	return conf, rf
}

// auditRoleRefused records user.role_change_failed: who was refused what
// role for whom, why, and from where. Nothing else changes.
func (h *Handler) auditRoleRefused(c echo.Context, name, role, reason string) error {
	err := h.d.Store.Audit(actorCtx(c), "user.role_change_failed", "", map[string]any{
		"name": name, "role": role, "reason": reason, "addr": h.clientIP(c),
	})
	if err != nil {
		return fmt.Errorf("set role: %w", err)
	}
	return nil
}

// handleUserDisable serves POST /admin/users/{name}/disable: the user can
// no longer sign in and their sessions end. The last enabled admin stays.
func (h *Handler) handleUserDisable(c echo.Context) error {
	return h.changeUser(c, "user.disabled", "user_disabled",
		func(name string) error { return h.d.Store.DisableUser(actorCtx(c), name) })
}

// handleUserEnable serves POST /admin/users/{name}/enable.
func (h *Handler) handleUserEnable(c echo.Context) error {
	return h.changeUser(c, "user.enabled", "user_enabled",
		func(name string) error { return h.d.Store.EnableUser(actorCtx(c), name) })
}

// handleUserPassword serves POST /admin/users/{name}/password: sets a new
// password and ends the user's sessions (one's own too).
func (h *Handler) handleUserPassword(c echo.Context) error {
	password := c.FormValue("password")
	if store.ValidatePassword(password) != nil {
		name, _ := url.PathUnescape(c.Param("name"))
		return h.renderUsers(c, http.StatusUnprocessableEntity, "", "", name, labels(c).ErrPasswordRules)
	}
	return h.changeUser(c, "user.password_set", "password_set",
		func(name string) error { return h.d.Store.SetPassword(actorCtx(c), name, password) })
}

// changeUser runs change on the user named in the path (the store audits
// it as event, in the same transaction) and redirects with the flash
// code; refusals re-render the list with the reason on the user's row.
func (h *Handler) changeUser(c echo.Context, event, flash string, change func(name string) error) error {
	name, err := url.PathUnescape(c.Param("name"))
	if err != nil || name == "" {
		return echo.NewHTTPError(http.StatusNotFound, "bad user name")
	}
	err = change(name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return echo.NewHTTPError(http.StatusNotFound, "no such user")
	case errors.Is(err, store.ErrOwnRole):
		return h.renderUsers(c, http.StatusUnprocessableEntity, "", "", name, labels(c).ErrOwnRole)
	case errors.Is(err, store.ErrConfirmRequired):
		return h.renderUsers(c, http.StatusUnprocessableEntity, "", "", name, labels(c).ErrGrantPassword)
	case errors.Is(err, store.ErrInvalid):
		return h.renderUsers(c, http.StatusUnprocessableEntity, "", "", name, labels(c).ErrLastAdmin)
	case err != nil:
		return fmt.Errorf("%s: %w", event, err)
	}
	return h.redirectWith(c, "/admin/users", flash, name)
}

// renderUsers renders the user list; name and role are the add form as
// submitted, errUser the row msg is about ("" for the add form).
func (h *Handler) renderUsers(c echo.Context, status int, name, role, errUser, msg string) error {
	users, err := h.d.Store.Users(c.Request().Context())
	if err != nil {
		return fmt.Errorf("users: %w", err)
	}
	l, lg := labels(c), lang(c)
	v := views.UserListView{Page: h.page(c, "users", l.UsersTitle), CanManage: canManage(c), Name: name, Error: msg, ErrorUser: errUser}
	if role == "" {
		role = store.RoleAccountant
	}
	roles := func(sel string) []views.Option {
		out := make([]views.Option, 0, len(store.Roles))
		for _, r := range store.Roles {
			out = append(out, views.Option{Value: r, Label: l.RoleLabel(r), Selected: r == sel})
		}
		return out
	}
	v.Roles = roles(role)
	me := session(c).User.Name
	for _, u := range users {
		base := "/admin/users/" + url.PathEscape(u.Name)
		v.Rows = append(v.Rows, views.UserRow{
			Name: u.Name, Role: u.Role, RoleLabel: l.RoleLabel(u.Role), Disabled: u.Disabled,
			Self: strings.EqualFold(u.Name, me), Created: formatTime(u.CreatedAt, h.d.Location, lg),
			PasswordSet: formatTime(u.PasswordChangedAt, h.d.Location, lg), MustChange: u.MustChangePassword, Roles: roles(u.Role),
			RoleURL: base + "/role", DisableURL: base + "/disable", EnableURL: base + "/enable", PasswordURL: base + "/password",
		})
	}
	return Render(c, status, views.UserList(v))
}
