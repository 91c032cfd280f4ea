package admin

import (
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
// an initial password (which is never logged nor audited).
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
	_, err := h.d.Store.CreateUser(actorCtx(c), name, role, password)
	switch {
	case errors.Is(err, store.ErrConflict):
		return fail(l.ErrUserTaken)
	case errors.Is(err, store.ErrInvalid):
		return fail(l.ErrUserName)
	case err != nil:
		return fmt.Errorf("add user: %w", err)
	}
	return h.redirectWith(c, "/admin/users", "user_created", name)
}

// handleUserRole serves POST /admin/users/{name}/role: it applies to the
// user's open sessions at once. The last enabled admin keeps the role.
func (h *Handler) handleUserRole(c echo.Context) error {
	role := c.FormValue("role")
	if !slices.Contains(store.Roles, role) {
		name, _ := url.PathUnescape(c.Param("name"))
		return h.renderUsers(c, http.StatusUnprocessableEntity, "", "", name, labels(c).ErrRole)
	}
	return h.changeUser(c, "user.role_changed", "role_changed",
		func(name string) error { return h.d.Store.SetRole(actorCtx(c), name, role) })
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
			PasswordSet: formatTime(u.PasswordChangedAt, h.d.Location, lg), Roles: roles(u.Role),
			RoleURL: base + "/role", DisableURL: base + "/disable", EnableURL: base + "/enable", PasswordURL: base + "/password",
		})
	}
	return Render(c, status, views.UserList(v))
}
