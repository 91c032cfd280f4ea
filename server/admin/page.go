package admin

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// Render writes a templ component as an HTML page with status: every page
// of the gateway, the admin UI's and the home page, goes through it. The
// page is rendered whole first, so a failed render sends no half page,
// and its bidirectional controls are shown neutralized.
func Render(c echo.Context, status int, component templ.Component) error {
	var buf bytes.Buffer
	if err := component.Render(c.Request().Context(), &buf); err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(status)
	_, err := bidiControls.WriteString(c.Response(), buf.String())
	return err
}

// bidiControls shows every bidirectional control character as its code
// point in brackets. No template holds one, so each comes from text an
// agent or a target sent: a right-to-left override in a description or
// an actor id would otherwise show "user-42" for "user-24", or reorder the
// words of a payment's purpose before the person deciding on it.
var bidiControls = func() *strings.Replacer {
	var pairs []string
	for _, r := range []rune{0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069} {
		pairs = append(pairs, string(r), fmt.Sprintf("[U+%04X]", r))
	}
	return strings.NewReplacer(pairs...)
}()

// lang is the language of the request: the lang cookie's "en", else Russian.
func lang(c echo.Context) string {
	if ck, err := c.Cookie(LangCookie); err == nil && ck.Value == "en" {
		return "en"
	}
	return "ru"
}

// labels are the interface texts of the request's language.
func labels(c echo.Context) *views.Labels { return views.LabelsFor(lang(c)) }

// navItem is a section of the shell's navigation and who sees it.
type navItem struct {
	id, href string
	label    func(*views.Labels) string
	roles    []string // nil: everyone
}

var nav = []navItem{
	{"dashboard", "/admin/", func(l *views.Labels) string { return l.NavDashboard }, nil},
	{"approvals", "/admin/approvals", func(l *views.Labels) string { return l.NavApprovals }, nil},
	{"review", "/admin/review", func(l *views.Labels) string { return l.NavReview }, nil},
	{"operations", "/admin/operations", func(l *views.Labels) string { return l.NavOperations }, nil},
	{"processes", "/admin/processes", func(l *views.Labels) string { return l.NavProcesses }, nil},
	{"webhooks", "/admin/webhooks", func(l *views.Labels) string { return l.NavWebhooks }, nil},
	{"events", "/admin/events", func(l *views.Labels) string { return l.NavEvents }, nil},
	{"audit", "/admin/audit", func(l *views.Labels) string { return l.NavAudit }, nil},
	{"intents", "/admin/intents", func(l *views.Labels) string { return l.NavIntents }, nil},
	{"tokens", "/admin/tokens", func(l *views.Labels) string { return l.NavTokens }, []string{store.RoleAdmin, store.RoleAuditor}},
	{"users", "/admin/users", func(l *views.Labels) string { return l.NavUsers }, []string{store.RoleAdmin, store.RoleAuditor}},
}

// page builds the shell's model for a page titled title in section
// active, and takes the one-time message if there is one.
func (h *Handler) page(c echo.Context, active, title string) views.Page {
	lg := lang(c)
	l := views.LabelsFor(lg)
	loc := cmp.Or(h.d.Location, time.Local)
	p := views.Page{Title: title, Lang: lg, L: l, Contour: h.d.Contour, TimeZone: zoneName(time.Now().In(loc))}
	if loc == time.Local {
		// No time_zone set: the server's own zone, said to be so, since
		// a server in UTC shows the firm's people times hours off theirs.
		p.TimeZone = fmt.Sprintf(l.ZoneServerFmt, p.TimeZone)
	}

	other := "en"
	if lg == "en" {
		other = "ru"
	}
	// Back to this page; after a form post, to the sign-in page or home
	// (a post's address answers only posts).
	back := c.Request().URL.RequestURI()
	if c.Request().Method != http.MethodGet {
		back = "/admin/"
		if c.Request().URL.Path == "/admin/login" {
			back = "/admin/login"
		}
	}
	p.LangSwitch = views.Link{
		Href:  "/admin/lang/" + other + "?next=" + url.QueryEscape(back),
		Label: l.SwitchTo,
	}
	sess := session(c)
	if sess.User.Name == "" {
		return p
	}
	p.User, p.RoleLabel, p.CSRF = sess.User.Name, l.RoleLabel(sess.User.Role), sess.CSRF
	for _, n := range nav {
		if sess.User.MustChangePassword {
			break // nowhere to go before choosing one's own password
		}
		if n.roles != nil && !can(c, n.roles...) {
			continue
		}
		if n.id == "processes" && (h.d.Catalog == nil || len(h.d.Catalog.Processes()) == 0) || n.id == "webhooks" && len(h.d.Webhooks) == 0 ||
			n.id == "events" && len(h.d.EventSources) == 0 {
			continue // a firm that has none is not shown the section
		}
		item := views.NavItem{ID: n.id, Href: n.href, Label: n.label(l), Active: n.id == active}
		if n.id == "approvals" && h.d.Store != nil {
			// What waits for a person, on every page. A journal that
			// cannot count now shows no number rather than no page.
			if k, err := h.d.Store.CountPendingApprovals(c.Request().Context()); err == nil {
				item.Count = k
			}
		}
		p.Nav = append(p.Nav, item)
	}
	if kind, code, arg, ok := h.takeFlash(c); ok {
		if f, ok := l.Flashes[code]; ok {
			if strings.Contains(f, "%s") {
				f = fmt.Sprintf(f, arg)
			}
			p.Flash, p.FlashKind = f, kind
		}
	}
	return p
}

// redirectWith redirects (303) to target with a one-time message: code
// names a text of Labels.Flashes, arg fills its %s.
func (h *Handler) redirectWith(c echo.Context, target, code, arg string) error {
	return h.redirectKind(c, "ok", target, code, arg)
}

// redirectKind is redirectWith with a message of kind "ok" or "error".
func (h *Handler) redirectKind(c echo.Context, kind, target, code, arg string) error {
	v := url.Values{"k": {kind}, "c": {code}, "a": {arg}}
	h.setCookie(c, flashCookie, base64.RawURLEncoding.EncodeToString([]byte(v.Encode())), 60)
	return c.Redirect(http.StatusSeeOther, target)
}

// takeFlash reads and clears the one-time message.
func (h *Handler) takeFlash(c echo.Context) (kind, code, arg string, ok bool) {
	ck, err := c.Cookie(flashCookie)
	if err != nil || ck.Value == "" {
		return "", "", "", false
	}
	h.clearCookie(c, flashCookie)
	raw, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil {
		return "", "", "", false
	}
	v, err := url.ParseQuery(string(raw))
	if err != nil {
		return "", "", "", false
	}
	return v.Get("k"), v.Get("c"), v.Get("a"), true
}

// keyPath is an operation key as one escaped path segment: keys hold ':'
// and '.', which are escaped so no browser or proxy reads them otherwise.
func keyPath(key string) string {
	return strings.ReplaceAll(url.PathEscape(key), ":", "%3A")
}

// keyParam is the operation key in the route's :key segment.
func keyParam(c echo.Context) (string, error) {
	k, err := url.PathUnescape(c.Param("key"))
	if err != nil || k == "" {
		return "", echo.NewHTTPError(http.StatusNotFound, "bad key")
	}
	return k, nil
}

// operationHref is the page of one operation.
func operationHref(key string) string { return "/admin/operations/" + keyPath(key) }
