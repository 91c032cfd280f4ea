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
// form). Money moves only on a deliberate confirmation: the first approve
// shows the amount, the customer and the purpose once more and asks to
// confirm (confirm=yes); a denial needs its reason. An approval wakes the
// executor; a refused decision (expired, already decided: by whom, when)
// re-renders the queue with the reason and changes nothing.
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
	if a.Status != store.ApprovalPending || !a.ExpiresAt.After(h.now()) {
		return h.renderApprovals(c, http.StatusUnprocessableEntity, id, h.staleMessage(c, a), comment)
	}
	if !approve && comment == "" {
		return h.renderApprovals(c, http.StatusUnprocessableEntity, id, l.ErrDenyReason, comment)
	}
	row := h.approvalRow(c, a)
	from := c.FormValue("from")
	if approve && c.FormValue("confirm") != "yes" {
		v := views.ApprovalConfirmView{Page: h.page(c, "approvals", l.ConfirmTitle), Row: row, Comment: comment, From: from, Back: "/admin/approvals"}
		if from == "operation" {
			v.Back = operationHref(a.OperationKey)
		}
		return Render(c, http.StatusOK, views.ApprovalConfirm(v))
	}
	err = h.d.Store.DecideApproval(actorCtx(c), id, approve, session(c).User.Name, comment)
	switch {
	case errors.Is(err, store.ErrApprovalExpired), errors.Is(err, store.ErrApprovalDecided):
		if now, rerr := h.d.Store.ApprovalByID(c.Request().Context(), id); rerr == nil {
			a = now
		}
		return h.renderApprovals(c, http.StatusUnprocessableEntity, id, h.staleMessage(c, a), comment)
	case err != nil:
		return fmt.Errorf("decide approval: %w", err)
	}
	next := "/admin/approvals"
	if from == "operation" {
		next = operationHref(a.OperationKey)
	}
	what := decisionText(row, l)
	if approve {
		h.d.Wake()
		return h.redirectWith(c, next, "approved", what)
	}
	return h.redirectWith(c, next, "denied", what)
}

// staleMessage says why a decision on a no longer pending approval was
// not recorded: who decided it and when, or when it expired.
func (h *Handler) staleMessage(c echo.Context, a store.Approval) string {
	l, lg := labels(c), lang(c)
	switch a.Status {
	case store.ApprovalPending, store.ApprovalExpired:
		return fmt.Sprintf(l.ErrApprovalExpiredAt, formatTime(a.ExpiresAt, h.d.Location, lg))
	default:
		state := l.ApprovalLabel(string(a.Status))
		if a.Status == store.ApprovalConsumed {
			state = l.ApprovalLabel(string(store.ApprovalApproved))
		}
		return fmt.Sprintf(l.ErrApprovalDecidedBy, state, orDash(a.DecidedBy), formatSeconds(a.DecidedAt, h.d.Location, lg))
	}
}

// decisionText names what was decided, for the message after it: the
// amount, the customer and the order.
func decisionText(r views.ApprovalRow, l *views.Labels) string {
	parts := []string{r.IntentLabel + " " + r.Amount}
	if r.Customer != "" {
		parts = append(parts, r.CustomerLabel+": "+r.CustomerText())
	}
	if r.OrderID != "" {
		parts = append(parts, r.OrderLabel+": "+r.OrderID)
	}
	return strings.Join(parts, ", ")
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
	if v.Approvers, err = h.approvers(c); err != nil {
		return err
	}
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
// the customer and the description in full; others see them masked. Each
// field is named as the intent's definition titles it.
func (h *Handler) approvalRow(c echo.Context, a store.Approval) views.ApprovalRow {
	l, lg, now := labels(c), lang(c), h.now()
	op := a.Operation
	def := h.definition(op)
	p := parsePayload(op.Payload)
	show := mask
	if canDecide(c) {
		show = func(s string) string { return s }
	}
	r := views.ApprovalRow{
		ID: a.ID, Key: a.OperationKey, KeyHref: operationHref(a.OperationKey),
		Intent: op.Intent, IntentLabel: h.intentTitle(c, op.Intent),
		Amount:        p.amount(lg),
		OrderID:       p.str("order_id"),
		OrderLabel:    fieldLabel(def, "order_id", lg),
		PaymentID:     p.str("payment_id"),
		PaymentLabel:  fieldLabel(def, "payment_id", lg),
		Customer:      show(p.str("customer_id")),
		CustomerLabel: fieldLabel(def, "customer_id", lg),
		Account:       show(p.str("account_id")),
		AccountLabel:  fieldLabel(def, "account_id", lg),
		Note:          show(p.str("description") + p.str("reason")),
		NoteLabel:     fieldLabel(def, "description", lg),
		Agent:         op.Agent, ActorID: op.ActorID,
		Age:        fmt.Sprintf(l.Ago, formatDuration(now.Sub(a.CreatedAt), l)),
		Created:    formatTime(a.CreatedAt, h.d.Location, lg),
		Expires:    formatTime(a.ExpiresAt, h.d.Location, lg),
		TimeLeft:   l.Expired,
		Urgent:     true,
		ApproveURL: fmt.Sprintf("/admin/approvals/%d/approve", a.ID),
		DenyURL:    fmt.Sprintf("/admin/approvals/%d/deny", a.ID),
	}
	if p.str("reason") != "" {
		r.NoteLabel = fieldLabel(def, "reason", lg)
	}
	if r.CustomerLabel == "customer_id" {
		r.CustomerLabel = l.Customer
	}
	if r.OrderLabel == "order_id" {
		r.OrderLabel = l.Order
	}
	if r.PaymentLabel == "payment_id" {
		r.PaymentLabel = l.Payment
	}
	if r.NoteLabel == "description" || r.NoteLabel == "reason" {
		r.NoteLabel = l.Note
	}
	// The order's invoice is checked against what the money is: the
	// charge's own amount, or for a refund the charge it refunds.
	orderMinor, _ := p.minor()
	orderCur := p.str("currency")
	if pid := p.str("payment_id"); pid != "" {
		// A refund: the charge it refunds, when it went through here,
		// tells the accountant whose money goes back and for what.
		if charge, err := h.d.Store.ByObject(c.Request().Context(), op.TargetSystem, pid); err == nil && charge.Intent == "payment.charge" {
			cp := parsePayload(charge.Payload)
			r.ChargeHref, r.Charged = operationHref(charge.Key), cp.amount(lg)
			r.OrderID = cp.str("order_id")
			orderMinor, _ = cp.minor()
			orderCur = cp.str("currency")
			if r.Customer == "" {
				r.Customer = show(cp.str("customer_id"))
			}
			if r.Account == "" {
				r.Account = show(cp.str("account_id"))
				// Named as the charge names it: the customer's saved
				// payment method, never a bare «Счёт» beside the 1C invoice.
				r.AccountLabel = fieldLabel(h.definition(charge), "account_id", lg)
			}
		}
	}
	if r.AccountLabel == "account_id" || r.AccountLabel == "" {
		r.AccountLabel = l.Account
	}
	if a.Kind == store.ApprovalDuplicate {
		r.Duplicate = h.duplicateReview(c, a)
	}
	// Who the customer is, as the target knows them: only for whoever
	// decides (the others see the id masked), never from the agent's text.
	if canDecide(c) {
		id := p.str("customer_id")
		if id == "" && r.ChargeHref != "" {
			id = r.Customer
		}
		ans := h.party(c.Request().Context(), def, "customer_id", id)
		if ans.ok {
			r.CustomerName, r.CustomerINN, r.CustomerKPP = ans.party.Name, ans.party.INN, ans.party.KPP
			r.CustomerFrom = l.TargetLabel(ans.from)
		}
		for _, f := range ans.failed {
			r.CustomerUnchecked = append(r.CustomerUnchecked, l.TargetLabel(f))
		}
	}
	r.ShopName = h.shopName(c.Request().Context(), op.TargetSystem)
	r.ShopSetting = "targets." + op.TargetSystem + ".shop_name"
	if def != nil && def.Money {
		h.orderInvoice(c, &r, orderMinor, orderCur)
	}
	r.Direction = direction(op.Intent, r, l)
	if left := a.ExpiresAt.Sub(now); left > 0 {
		r.TimeLeft = fmt.Sprintf(l.LeftFmt, formatDuration(left, l))
		r.Urgent = left < 2*time.Hour
	}
	r.Process = h.approvalProcess(c, op.Key)
	return r
}

// direction says in words who pays whom: the customer's card to the
// shop (by the name the configuration gives it) for a charge, back to
// the customer for a refund. The account_id is the customer's saved
// payment method, never the shop. A shop the configuration names not is
// said to be unnamed, with the setting that names it, not as a bare
// «магазин» an accountant would take for a name.
func direction(intentName string, r views.ApprovalRow, l *views.Labels) string {
	shop := r.ShopName
	if shop == "" {
		shop = fmt.Sprintf(l.ShopUnnamed, r.ShopSetting)
	}
	switch intentName {
	case "payment.charge":
		return fmt.Sprintf(l.DirectionCharge, shop)
	case "payment.refund":
		return fmt.Sprintf(l.DirectionRefund, shop)
	}
	return ""
}
