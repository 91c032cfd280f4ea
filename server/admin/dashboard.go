package admin

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// statusOrder is the order statuses are listed in.
var statusOrder = []store.Status{
	store.StatusAwaitingApproval, store.StatusStarted, store.StatusUnknown,
	store.StatusFailedRetryable, store.StatusSucceeded, store.StatusFailedFinal,
}

// handleDashboard serves GET /admin/: counts by status and what waits for
// people, each linking to its list.
func (h *Handler) handleDashboard(c echo.Context) error {
	sum, err := h.d.Store.Summarize(c.Request().Context())
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	l := labels(c)
	v := views.DashboardView{Page: h.page(c, "dashboard", l.DashboardTitle)}
	v.Page.Refresh = 30
	if failing, err := h.d.Store.FailingChannels(c.Request().Context()); err == nil {
		for _, ch := range slices.Sorted(maps.Keys(failing)) {
			v.Alerts = append(v.Alerts, views.Link{Label: fmt.Sprintf(l.NoticesFailingFmt, l.ChannelLabel(ch), failing[ch])})
		}
	}
	if stopped, err := h.d.Store.StoppedEndpoints(c.Request().Context()); err == nil && len(stopped) > 0 {
		names := slices.Sorted(maps.Keys(stopped))
		v.Alerts = append(v.Alerts, views.Link{Href: "/admin/webhooks", Label: fmt.Sprintf(l.WebhookBannerFmt, strings.Join(names, ", "))})
	}
	if a := h.eventAlert(c); a != nil {
		v.Alerts = append(v.Alerts, *a)
	}

	unknown := sum.ByStatus[store.StatusUnknown]
	// Flagged rows that are still unknown: the review page's list. (A
	// flagged row the reconciler later found absent stays flagged in the
	// journal, but is the agent's to send again, not a person's.)
	flagged, err := h.d.Store.ListOperations(c.Request().Context(), store.OperationFilter{Status: store.StatusUnknown, NeedsReview: true, Limit: 500})
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	flaggedN := strconv.Itoa(len(flagged))
	if len(flagged) == 500 {
		flaggedN = "500+"
	}
	oldest := views.StatCard{ID: "oldest", Label: l.CardOldest, Value: l.CardNoneOK, Href: "/admin/operations"}
	if !sum.OldestUnresolved.IsZero() {
		oldest.Value = formatDuration(h.now().Sub(sum.OldestUnresolved), l)
		oldest.Hint = fmt.Sprintf(l.CardOldestHint, formatTime(sum.OldestUnresolved, h.d.Location, lang(c)))
		oldest.Alert = h.now().Sub(sum.OldestUnresolved) > SessionTTL
		// Link the operation itself: the newest rows created no later
		// than that moment start with it.
		ops, err := h.d.Store.ListOperations(c.Request().Context(), store.OperationFilter{To: sum.OldestUnresolved.Add(time.Microsecond), Limit: 20})
		if err != nil {
			return fmt.Errorf("dashboard: %w", err)
		}
		for _, op := range ops {
			if op.CreatedAt.Equal(sum.OldestUnresolved) && !op.Status.Terminal() {
				oldest.Href = operationHref(op.Key)
				break
			}
		}
	}
	// Money approvals only: an operation held as a suspected duplicate
	// waits for a person too, but moves no money until it is found not
	// to be one; it is counted apart.
	money, held, err := h.pendingByKind(c)
	if err != nil {
		return err
	}
	hint := l.CardApprovalsHint
	if held > 0 {
		hint += " " + fmt.Sprintf(l.CardHeldFmt, held)
	}
	v.Cards = []views.StatCard{
		{ID: "approvals", Label: l.CardApprovals, Value: strconv.Itoa(money), Hint: hint,
			Href: "/admin/approvals", Alert: money > 0},
		{ID: "unknown", Label: l.CardUnknown, Value: strconv.Itoa(unknown), Hint: l.CardUnknownHint,
			Href: "/admin/review", Alert: unknown > 0},
		{ID: "flagged", Label: l.CardFlagged, Value: flaggedN,
			Href: "/admin/review?flagged=1", Alert: len(flagged) > 0},
		oldest,
	}
	for _, st := range statusOrder {
		n := sum.ByStatus[st]
		v.Total += n
		v.ByStatus = append(v.ByStatus, views.StatusCount{
			Status: string(st), Label: l.StatusLabel(string(st)), Count: n,
			Href: "/admin/operations?status=" + string(st),
		})
	}
	return Render(c, http.StatusOK, views.Dashboard(v))
}

// pendingByKind counts the approvals waiting for a person: those of
// money and the reviews of suspected duplicates.
func (h *Handler) pendingByKind(c echo.Context) (money, held int, err error) {
	list, err := h.d.Store.Approvals(c.Request().Context(), store.ApprovalPending, 5000)
	if err != nil {
		return 0, 0, fmt.Errorf("dashboard: %w", err)
	}
	for _, a := range list {
		if a.Kind == store.ApprovalDuplicate {
			held++
		} else {
			money++
		}
	}
	return money, held, nil
}
