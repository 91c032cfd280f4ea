package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/server/intent"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// maxComment bounds a decision's comment, in characters.
const maxComment = 500

// handleApprovalList serves GET /admin/approvals: money operations waiting
// for a person, oldest first.
func (h *Handler) handleApprovalList(c echo.Context) error {
	return h.renderApprovals(c, http.StatusOK, 0, "", "")
}

// handleApprovalApprove serves POST /admin/approvals/{id}/approve.
func (h *Handler) handleApprovalApprove(c echo.Context) error { return h.decide(c, true) }

// handleApprovalDeny serves POST /admin/approvals/{id}/deny.
func (h *Handler) handleApprovalDeny(c echo.Context) error { return h.decide(c, false) }

// decide records the signed-in user's decision (never a name from the
// form). An approval wakes the executor; a refused decision (expired,
// already decided) re-renders the queue with the reason and changes
// nothing.
func (h *Handler) decide(c echo.Context, approve bool) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return echo.NewHTTPError(http.StatusNotFound, "bad approval id")
	}
	comment := strings.TrimSpace(c.FormValue("comment"))
	a, err := h.d.Store.ApprovalByID(c.Request().Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return echo.NewHTTPError(http.StatusNotFound, "no such approval")
	}
	if err != nil {
		return fmt.Errorf("decide approval: %w", err)
	}
	l := labels(c)
	if utf8.RuneCountInString(comment) > maxComment {
		// Refused whole, never cut: the person's words are kept for them
		// to shorten.
		return h.renderApprovals(c, http.StatusUnprocessableEntity, id, fmt.Sprintf(l.ErrCommentTooLong, maxComment), comment)
	}
	err = h.d.Store.DecideApproval(actorCtx(c), id, approve, session(c).User.Name, comment)
	switch {
	case errors.Is(err, store.ErrApprovalExpired):
		return h.renderApprovals(c, http.StatusUnprocessableEntity, id, l.ErrApprovalExpired, comment)
	case errors.Is(err, store.ErrApprovalDecided):
		return h.renderApprovals(c, http.StatusUnprocessableEntity, id, l.ErrApprovalDecided, comment)
	case err != nil:
		return fmt.Errorf("decide approval: %w", err)
	}
	if approve {
		h.d.Wake()
		return h.redirectWith(c, "/admin/approvals", "approved", a.OperationKey)
	}
	return h.redirectWith(c, "/admin/approvals", "denied", a.OperationKey)
}

// renderApprovals renders the queue; errID and msg say which decision was
// refused and why, comment is what was typed for it.
func (h *Handler) renderApprovals(c echo.Context, status int, errID int64, msg, comment string) error {
	list, err := h.d.Store.Approvals(c.Request().Context(), store.ApprovalPending, 500)
	if err != nil {
		return fmt.Errorf("approvals: %w", err)
	}
	payers, err := h.payers(c.Request().Context())
	if err != nil {
		return err
	}
	l := labels(c)
	v := views.ApprovalListView{Page: h.page(c, "approvals", l.ApprovalsTitle), CanDecide: canDecide(c), CanReview: canReviewDuplicates(c), Error: msg}
	v.Page.Refresh = 30
	for _, a := range list {
		row := h.approvalRow(c, a)
		row.AgentGone = !payers[a.Operation.Agent]
		if a.ID == errID {
			v.ErrorID, row.Comment = errID, comment
		}
		v.Rows = append(v.Rows, row)
	}
	return Render(c, status, views.ApprovalList(v))
}

// payers are the agents that still hold a valid token with the pay scope:
// a request from any other was made before its access was revoked, which
// the accountant should know before approving it.
func (h *Handler) payers(ctx context.Context) (map[string]bool, error) {
	tokens, err := h.d.Store.ListTokens(ctx)
	if err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	out := map[string]bool{}
	for _, t := range tokens {
		if t.RevokedAt.IsZero() && t.Has(intent.ScopePay) {
			out[t.Agent] = true
		}
	}
	return out, nil
}

// approvalRow is one approval as the queue shows it. Who may decide sees
// the customer and the description in full; others see them masked.
func (h *Handler) approvalRow(c echo.Context, a store.Approval) views.ApprovalRow {
	l, lg, now := labels(c), lang(c), h.now()
	op := a.Operation
	p := parsePayload(op.Payload)
	show := mask
	if canDecide(c) {
		show = func(s string) string { return s }
	}
	r := views.ApprovalRow{
		ID: a.ID, Key: a.OperationKey, KeyHref: operationHref(a.OperationKey),
		Intent: op.Intent, IntentLabel: h.intentTitle(c, op.Intent),
		Amount:    p.amount(lg),
		OrderID:   p.str("order_id"),
		PaymentID: p.str("payment_id"),
		Customer:  show(p.str("customer_id")),
		Account:   show(p.str("account_id")),
		Note:      show(p.str("description") + p.str("reason")),
		Agent:     op.Agent, ActorID: op.ActorID,
		Age:        fmt.Sprintf(l.Ago, formatDuration(now.Sub(a.CreatedAt), l)),
		Created:    formatTime(a.CreatedAt, h.d.Location, lg),
		Expires:    formatTime(a.ExpiresAt, h.d.Location, lg),
		TimeLeft:   l.Expired,
		Urgent:     true,
		ApproveURL: fmt.Sprintf("/admin/approvals/%d/approve", a.ID),
		DenyURL:    fmt.Sprintf("/admin/approvals/%d/deny", a.ID),
	}
	if pid := p.str("payment_id"); pid != "" {
		// A refund: the charge it refunds, when it went through here,
		// tells the accountant whose money goes back and for what.
		if charge, err := h.d.Store.ByObject(c.Request().Context(), op.TargetSystem, pid); err == nil && charge.Intent == "payment.charge" {
			cp := parsePayload(charge.Payload)
			r.ChargeHref, r.Charged = operationHref(charge.Key), cp.amount(lg)
			r.OrderID = cp.str("order_id")
			if r.Customer == "" {
				r.Customer = show(cp.str("customer_id"))
			}
		}
	}
	if a.Kind == store.ApprovalDuplicate {
		r.Duplicate = h.duplicateReview(c, a)
	}
	if left := a.ExpiresAt.Sub(now); left > 0 {
		r.TimeLeft = fmt.Sprintf(l.LeftFmt, formatDuration(left, l))
		r.Urgent = left < 2*time.Hour
	}
	return r
}
