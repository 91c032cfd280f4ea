package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// WebhookEndpoint is a configured webhook endpoint as the admin UI shows
// it.
type WebhookEndpoint struct {
	Name, URL string
	Events    []string
}

// deliveriesShown bounds the deliveries listed per endpoint.
const deliveriesShown = 50

// handleWebhooks serves GET /admin/webhooks: each configured endpoint,
// whether deliveries go to it, and its latest deliveries.
func (h *Handler) handleWebhooks(c echo.Context) error {
	ctx := c.Request().Context()
	l, lg := labels(c), lang(c)
	v := views.WebhooksView{Page: h.page(c, "webhooks", l.WebhooksTitle), CanAct: can(c, store.RoleAdmin, store.RoleOperator)}
	stopped, err := h.d.Store.StoppedEndpoints(ctx)
	if err != nil {
		return fmt.Errorf("webhooks: %w", err)
	}
	for _, ep := range h.d.Webhooks {
		ev := views.WebhookEndpointView{Name: ep.Name, URL: withoutQuery(ep.URL), Events: strings.Join(ep.Events, ", "),
			ResumeURL: "/admin/webhooks/" + url.PathEscape(ep.Name) + "/resume"}
		if st, ok := stopped[ep.Name]; ok {
			ev.State, ev.Reason = st[0], st[1]
			ev.StateLabel = l.WebhookPaused
			if st[0] == "gone" {
				ev.StateLabel, ev.Reason = l.WebhookGone, ""
			}
		}
		ds, err := h.d.Store.Deliveries(ctx, ep.Name, deliveriesShown)
		if err != nil {
			return fmt.Errorf("webhooks: %w", err)
		}
		for _, d := range ds {
			row := views.WebhookDeliveryRow{
				ID: strconv.FormatInt(d.ID, 10), WebhookID: d.WebhookID, Event: d.Event, Key: d.OperationKey, KeyHref: h.keyHref(ctx, d.OperationKey),
				State: d.State, StateLabel: l.DeliveryStateLabel(d.State), Attempts: d.Attempts, Error: d.LastError,
				Created: formatTime(d.CreatedAt, h.d.Location, lg),
			}
			if d.LastStatus > 0 {
				row.LastStatus = strconv.Itoa(d.LastStatus)
			}
			if d.State == store.DeliveryPending && !d.NextAt.IsZero() {
				row.Next = formatTime(d.NextAt, h.d.Location, lg)
			}
			if d.State != store.DeliveryDelivered || d.Attempts > 0 {
				row.ResendURL = "/admin/webhooks/deliveries/" + row.ID + "/resend"
			}
			ev.Deliveries = append(ev.Deliveries, row)
		}
		v.Endpoints = append(v.Endpoints, ev)
	}
	return Render(c, http.StatusOK, views.Webhooks(v))
}

// keyHref is the page of what a delivery is about: a process's or an
// operation's.
func (h *Handler) keyHref(ctx context.Context, key string) string {
	if _, err := h.d.Store.GetProcess(ctx, key); err == nil {
		return processHref(key)
	}
	return operationHref(key)
}

// withoutQuery is a URL for people: no query, which may carry a token.
func withoutQuery(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		return u[:i]
	}
	return u
}

// handleWebhookResend serves POST /admin/webhooks/deliveries/{id}/resend.
func (h *Handler) handleWebhookResend(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return echo.NewHTTPError(http.StatusNotFound, "no such delivery")
	}
	if _, err := h.d.Store.ResendDelivery(actorCtx(c), id, session(c).User.Name); errors.Is(err, store.ErrNoSuchDelivery) {
		return echo.NewHTTPError(http.StatusNotFound, "no such delivery")
	} else if err != nil {
		return fmt.Errorf("resend delivery %d: %w", id, err)
	}
	return c.Redirect(http.StatusSeeOther, "/admin/webhooks")
}

// handleWebhookResume serves POST /admin/webhooks/{name}/resume.
func (h *Handler) handleWebhookResume(c echo.Context) error {
	name, err := url.PathUnescape(c.Param("name"))
	if err != nil {
		return echo.NewHTTPError(http.StatusNotFound, "no such endpoint")
	}
	if err := h.d.Store.ResumeEndpoint(actorCtx(c), name, session(c).User.Name); err != nil {
		return fmt.Errorf("resume endpoint %q: %w", name, err)
	}
	return c.Redirect(http.StatusSeeOther, "/admin/webhooks")
}
