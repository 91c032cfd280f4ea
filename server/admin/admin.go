// Package admin is the browser UI of oncegate for people: accountants
// approve money operations, operators settle operations whose outcome is
// unknown, everyone with access browses the journal and the audit trail,
// and admins manage agent tokens and users. Pages are plain HTML forms
// (templ views) over server-side sessions; they work without JavaScript.
package admin

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/redact"
	"github.com/oncegate/oncegate/server/engine"
	"github.com/oncegate/oncegate/server/intent"
	"github.com/oncegate/oncegate/store"
)

// Session and sign-in rules.
const (
	// SessionCookie holds the browser's session id.
	SessionCookie = "oncegate_session"
	// SessionTTL is a session's absolute lifetime.
	SessionTTL = 12 * time.Hour
	// SessionIdle ends a session unused for this long.
	SessionIdle = 30 * time.Minute
	// LangCookie holds the chosen language: "ru" (default) or "en".
	LangCookie = "lang"

	loginCookie = "oncegate_login" // the sign-in form's double-submit token
	flashCookie = "oncegate_flash" // a one-time message after a redirect
	cookiePath  = "/admin"
	maxForm     = 64 << 10 // bytes of a form body

	ctxContour = "oncegate.admin.contour"
)

// Deps is what the admin UI needs from the gateway. The server passes
// its Wake and ReconcileNow, so this package never imports it.
type Deps struct {
	Store *store.Store
	Log   *slog.Logger
	// Wake pokes the executor after an approval.
	Wake func()
	// ReconcileNow looks one operation up at its target at once; the
	// actor in ctx is audited.
	ReconcileNow func(ctx context.Context, key string) (store.Operation, error)
	// CheckObject asks an operation's target whether an object id a person
	// typed names an object that can be the operation's effect
	// (adapters.ObjectChecker); nil: no target can be asked.
	CheckObject func(ctx context.Context, key, id string) (adapters.Result, error)
	// Process reads a process and its steps as their rows stand; nil: no
	// process can be shown.
	Process func(ctx context.Context, key string) (store.Process, []engine.StepView, error)
	// ProcessOfStep reads the process an operation is a step of (or
	// undoes a step of), for its approval card; nil: none is shown.
	ProcessOfStep func(ctx context.Context, stepKey string) (store.Process, []engine.StepView, error)
	// Secure marks cookies Secure: set it when served under TLS. A request
	// that a proxy says came over HTTPS (X-Forwarded-Proto) gets Secure
	// cookies too.
	Secure bool
	// ClientIP is the address a request came from, for sign-in throttling
	// and the audit trail: the connection's peer when nil. Set it to trust
	// X-Forwarded-For from the firm's own reverse proxies only.
	ClientIP func(*http.Request) string
	// Catalog is the whitelist: the intents' titles, targets and rights;
	// the built-ins when nil.
	Catalog *intent.Catalog
	// Describers are the target instances that can say who an id names
	// (adapters.Describer), by name: the approvals show a customer's name
	// and ИНН as the target knows them, read when the card is shown.
	Describers map[string]adapters.Describer
	// ShopNames are the names the configuration gives the shops payments
	// go to, by the target instance (shop_name), for the approvals.
	ShopNames map[string]string
	// TargetKinds are the kinds (onec, onec_odata, bitrix24, yookassa) of
	// the target instances, by name, for the intents page.
	TargetKinds map[string]string
	// Webhooks are the configured webhook endpoints, for the webhooks
	// page; none: the page is not shown.
	Webhooks []WebhookEndpoint
	// EventSources are the sources whose notices some rule of events runs
	// on, for the events page's filter; none: the page is not in the
	// navigation (it still lists what the journal holds).
	EventSources []string
	// Channels are the channels notices go by (store.ChannelEmail, …), for
	// a person's own page; none: notices are off.
	Channels []string
	// TelegramBot is the bot's @username without the @, for the link a
	// person opens to link their chat; "" when not configured.
	TelegramBot string
	// Contour is the gateway's contour (test, prod), shown in the header.
	Contour string
	// Now is the clock; the store's clock when nil.
	Now func() time.Time
	// Location is the time zone dates are shown in; time.Local when nil.
	Location *time.Location
	// PageSize is how many rows a list page shows; 50 when zero.
	PageSize int
	// Redactor masks the targets' secrets in the audit details the pages
	// and the CSV show, rows written before they were masked included;
	// the credential patterns alone when nil.
	Redactor *redact.Redactor
}

// Handler serves the admin UI.
type Handler struct {
	d       Deps
	parties parties
}

// New returns the admin UI over d.
func New(d Deps) *Handler {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Catalog == nil {
		d.Catalog = intent.Builtin()
	}
	if d.Wake == nil {
		d.Wake = func() {}
	}
	if d.ClientIP == nil {
		d.ClientIP = peerIP
	}
	if d.Now == nil {
		d.Now = func() time.Time { return d.Store.Now() }
	}
	if d.Location == nil {
		d.Location = time.Local
	}
	if d.PageSize <= 0 {
		d.PageSize = 50
	}
	return &Handler{d: d}
}

// Register adds the admin UI's routes under /admin to e.
func (h *Handler) Register(e *echo.Echo) {
	e.GET("/admin", func(c echo.Context) error { return c.Redirect(http.StatusMovedPermanently, "/admin/") })

	g := e.Group("/admin", h.protect)
	g.GET("/login", h.handleLoginForm)
	g.POST("/login", h.handleLogin)
	g.GET("/lang/:lang", h.handleLang)

	// Everything else needs a session; state changes also need the
	// session's form token and a role allowed to make them.
	s := g.Group("", h.requireSession)
	s.GET("/logout", h.handleLogoutForm)
	s.POST("/logout", h.handleLogout, h.checkCSRF)
	s.GET("/me", h.handleMe)
	s.POST("/me/channels", h.handleMeChannels, h.checkCSRF)
	s.POST("/me/telegram", h.handleMeTelegram, h.checkCSRF)
	s.POST("/me/telegram/unlink", h.handleMeTelegramUnlink, h.checkCSRF)
	s.GET("/password", h.handlePasswordForm)
	s.POST("/password", h.handlePasswordChange, h.checkCSRF)
	s.GET("/", h.handleDashboard)

	s.GET("/approvals", h.handleApprovalList)
	decide := []echo.MiddlewareFunc{h.checkCSRF, allow(store.RoleAccountant)}
	s.POST("/approvals/:id/approve", h.handleApprovalApprove, decide...)
	s.POST("/approvals/:id/deny", h.handleApprovalDeny, decide...)
	dupReview := []echo.MiddlewareFunc{h.checkCSRF, allow(store.RoleAdmin, store.RoleOperator, store.RoleAccountant)}
	s.POST("/approvals/:id/not-duplicate", h.handleDuplicateNo, dupReview...)
	s.POST("/approvals/:id/duplicate", h.handleDuplicateYes, dupReview...)

	s.GET("/review", h.handleReviewList)
	review := []echo.MiddlewareFunc{h.checkCSRF, allow(store.RoleAdmin, store.RoleOperator)}
	s.POST("/review/:key/reconcile", h.handleReviewReconcile, review...)
	s.POST("/review/:key/resolve", h.handleReviewResolve, review...)

	s.GET("/processes", h.handleProcessList)
	s.GET("/processes/:key", h.handleProcessShow)
	s.POST("/processes/:key/resolve", h.handleProcessResolve, review...)

	s.GET("/webhooks", h.handleWebhooks)
	s.POST("/webhooks/deliveries/:id/resend", h.handleWebhookResend, review...)
	s.POST("/webhooks/:name/resume", h.handleWebhookResume, review...)

	s.GET("/events", h.handleEventList)

	s.GET("/operations", h.handleOperationList)
	s.GET("/operations/:key", h.handleOperationShow)
	s.GET("/audit", h.handleAuditList)
	s.GET("/intents", h.handleIntentList)

	// Tokens and users: admins manage them; auditors may look.
	look := allow(store.RoleAdmin, store.RoleAuditor)
	manage := []echo.MiddlewareFunc{h.checkCSRF, allow(store.RoleAdmin)}
	s.GET("/tokens", h.handleTokenList, look)
	s.POST("/tokens", h.handleTokenCreate, manage...)
	s.POST("/tokens/:id/revoke", h.handleTokenRevoke, manage...)
	s.GET("/users", h.handleUserList, look)
	s.POST("/users", h.handleUserCreate, manage...)
	s.POST("/users/:name/role", h.handleUserRole, manage...)
	s.POST("/users/:name/disable", h.handleUserDisable, manage...)
	s.POST("/users/:name/enable", h.handleUserEnable, manage...)
	s.POST("/users/:name/password", h.handleUserPassword, manage...)
}

// protect sets the headers every admin page carries and bounds form
// bodies: no caching of pages that hold journal data, no framing, no
// scripts but our own, forms only to ourselves.
func (h *Handler) protect(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Set(ctxContour, h.d.Contour)
		hd := c.Response().Header()
		hd.Set("Cache-Control", "no-store")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		if r := c.Request(); r.Body != nil && r.Method != http.MethodGet && r.Method != http.MethodHead {
			r.Body = http.MaxBytesReader(c.Response(), r.Body, maxForm)
		}
		return next(c)
	}
}

// now is the clock.
func (h *Handler) now() time.Time { return h.d.Now() }
