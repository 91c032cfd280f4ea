package admin

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/server/engine"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// traceEvents bounds the events one operation page shows.
const traceEvents = 500

// handleOperationShow serves GET /admin/operations/{key}: the whole trace
// of one operation — request summary (sensitive fields masked),
// fingerprint, attempts, state transitions, approval, reconciliation and
// the target's object id.
func (h *Handler) handleOperationShow(c echo.Context) error {
	key, err := keyParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	op, err := h.d.Store.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return echo.NewHTTPError(http.StatusNotFound, "no such operation")
	}
	if err != nil {
		return fmt.Errorf("operation %q: %w", key, err)
	}
	evs, err := h.history(ctx, c, key, traceEvents, op.TargetSystem)
	if err != nil {
		return err
	}
	l, lg := labels(c), lang(c)

	v := views.OperationView{
		Page: h.page(c, "operations", key), Key: op.Key,
		Status: string(op.Status), StatusLabel: l.OutcomeLabel(string(op.Status), op.ErrorCode),
		AuditHref: "/admin/audit?key=" + url.QueryEscape(key),
	}
	if op.Status == store.StatusUnknown {
		v.ReviewHref = "/admin/review"
	}
	if v.Summary, err = h.operationSummary(c, op); err != nil {
		return err
	}
	// The request as the agent sent it, to whoever acts on operations;
	// masked for the auditor; secrets and card data masked for all. Each
	// field under the definition's title for it.
	p := parsePayload(op.Payload)
	def := h.definition(op)
	v.Amount = p.amount(lg)
	v.Request, v.Lines = newRequestView(def, p, lg, canSeeRequest(c)).show(p)
	v.SearchHint = h.searchHint(l, op)
	v.Result = plainJSON(op.Result)
	for _, w := range engine.ChangedWarnings(op.Result) {
		v.Changed = append(v.Changed, views.Field{Label: w.Field, Value: w.Message, Mono: true})
	}
	if err := h.operationApproval(c, op, &v); err != nil {
		return err
	}
	v.Reconciliation = h.operationReconciliation(c, op)
	v.StartedBy = h.eventOrigins(c, op.Key)
	// The first attempt is recorded with the start (by the claim or the
	// executor), later ones each by an attempt event.
	for _, e := range evs {
		if e.Event == "operation.started" || e.Event == "operation.attempt" {
			v.Attempts = append(v.Attempts, e)
		}
	}
	v.Transitions = evs
	return Render(c, http.StatusOK, views.OperationShow(v))
}

// operationSummary is the summary of op: who asked for what, when, with
// what outcome, and the other operations of its business event.
func (h *Handler) operationSummary(c echo.Context, op store.Operation) ([]views.Field, error) {
	l, lg := labels(c), lang(c)
	summary := []views.Field{
		{Label: l.OperationKey, Value: op.Key, Mono: true, TestID: "summary-key"},
		{Label: l.Intent, Value: op.Intent + " — " + h.intentTitle(c, op.Intent)},
		{Label: l.Status, Value: l.OutcomeLabel(string(op.Status), op.ErrorCode), TestID: "summary-status"},
		{Label: l.Target, Value: op.TargetSystem},
		{Label: l.Agent, Value: op.Agent, TestID: "summary-agent"},
		{Label: l.ActorID, Value: orDash(op.ActorID)},
		{Label: l.RequestID, Value: orDash(op.RequestID), Mono: true},
		{Label: l.Fingerprint, Value: op.Fingerprint, Mono: true, TestID: "fingerprint"},
		{Label: l.TargetObject, Value: orDash(op.TargetObjectID), Mono: true, TestID: "target-object"},
		{Label: l.Created, Value: formatSeconds(op.CreatedAt, h.d.Location, lg)},
		{Label: l.Updated, Value: formatSeconds(op.UpdatedAt, h.d.Location, lg)},
		{Label: l.Completed, Value: formatSeconds(op.CompletedAt, h.d.Location, lg)},
		{Label: l.AttemptsLabel, Value: strconv.Itoa(op.AttemptCount) + "; " + l.LastAttempt + ": " + formatSeconds(op.LastAttemptAt, h.d.Location, lg)},
	}
	// The journal keeps the API's English message; people read the
	// code's text in their language, and the code to search by.
	if op.ErrorCode != "" {
		summary = append(summary,
			views.Field{Label: l.ErrorCode, Value: op.ErrorCode, Mono: true, TestID: "error-code"},
			views.Field{Label: l.ErrorMessage, Value: l.ErrorText(op.ErrorCode, op.ErrorMessage), TestID: "error-message"})
		if op.ErrorField != "" {
			summary = append(summary, views.Field{Label: l.ErrorField, Value: op.ErrorField, Mono: true, TestID: "error-field"})
		}
	}
	// A duplicate rule's business event: the earlier operation this one
	// was suspected to duplicate, and every other operation of the event.
	if op.DuplicateOf != "" {
		summary = append(summary, views.Field{Label: l.DuplicateOf, Value: op.DuplicateOf, Href: operationHref(op.DuplicateOf), Mono: true, TestID: "duplicate-of"})
	}
	same, err := h.d.Store.SameBusinessEvent(c.Request().Context(), op, 20)
	if err != nil {
		return nil, err
	}
	for _, o := range same {
		summary = append(summary, views.Field{Label: l.SameEvent, Value: o.Key + " (" + l.StatusLabel(string(o.Status)) + ")", Href: operationHref(o.Key), Mono: true, TestID: "same-event"})
	}
	return summary, nil
}

// operationApproval adds to v op's approval, if it has one: its state and
// who decided, and, while it waits, the form to decide it.
func (h *Handler) operationApproval(c echo.Context, op store.Operation, v *views.OperationView) error {
	l, lg := labels(c), lang(c)
	a, err := h.d.Store.ApprovalByKey(c.Request().Context(), op.Key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("operation %q: %w", op.Key, err)
	}
	a.Operation = op
	if a.Status == store.ApprovalPending && a.ExpiresAt.After(h.now()) {
		row := h.approvalRow(c, a)
		v.Pending, v.CanDecide = &row, canDecide(c)
	}
	v.Approval = []views.Field{
		{Label: l.ApprovalStatus, Value: l.ApprovalStateLabel(string(a.Status), string(op.Status)), TestID: "approval-status"},
		{Label: l.Expires, Value: formatTime(a.ExpiresAt, h.d.Location, lg)},
		{Label: l.DecidedBy, Value: orDash(a.DecidedBy), TestID: "approval-decided-by"},
		{Label: l.DecidedAt, Value: formatSeconds(a.DecidedAt, h.d.Location, lg)},
		{Label: l.Comment, Value: orDash(a.Comment)},
	}
	return nil
}

// operationReconciliation is how op's outcome is being established: the
// failed look-ups, whether a person reviews it, the next check and the
// lease.
func (h *Handler) operationReconciliation(c echo.Context, op store.Operation) []views.Field {
	l, lg := labels(c), lang(c)
	review := l.No
	if op.NeedsReview {
		review = l.Yes
	}
	lease := l.None
	if op.LeaseOwner != "" {
		lease = op.LeaseOwner + " → " + formatSeconds(op.LeaseUntil, h.d.Location, lg)
	}
	return []views.Field{
		{Label: l.LookupFailures, Value: strconv.Itoa(op.LookupFailures)},
		{Label: l.NeedsReview, Value: review, TestID: "needs-review"},
		{Label: l.NextCheckTitle, Value: formatSeconds(op.NextCheckAt, h.d.Location, lg)},
		{Label: l.Lease, Value: lease, Mono: true},
	}
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
