package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// maxReason bounds a resolution's reason, in characters.
const maxReason = 1000

// reconcileTimeout bounds a look-up a person asked for.
const reconcileTimeout = time.Minute

// reviewForm is a refused resolve form, re-rendered on its row.
type reviewForm struct {
	key, msg              string
	outcome, object, text string
	rerun                 bool
	// unchecked: the person vouches for an object the target could not
	// confirm; ask: the form asks them to.
	unchecked, ask bool
}

// handleReviewList serves GET /admin/review: operations whose outcome is
// unknown, flagged for a person or not (?flagged=1: flagged only), each
// with its history.
func (h *Handler) handleReviewList(c echo.Context) error {
	return h.renderReview(c, http.StatusOK, c.QueryParam("flagged") == "1", reviewForm{})
}

// handleReviewReconcile serves POST /admin/review/{key}/reconcile: looks
// the operation up at its target now, as the signed-in user.
func (h *Handler) handleReviewReconcile(c echo.Context) error {
	key, err := keyParam(c)
	if err != nil {
		return err
	}
	l := labels(c)
	if h.d.ReconcileNow == nil {
		return h.renderReview(c, http.StatusUnprocessableEntity, false, reviewForm{key: key, msg: l.ErrReconcileFailed})
	}
	// The look-up settles the row whatever the browser does meanwhile: a
	// cancelled request must not leave its lease taken.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(actorCtx(c)), reconcileTimeout)
	defer cancel()
	before, err := h.d.Store.Get(c.Request().Context(), key)
	if errors.Is(err, store.ErrNotFound) {
		return echo.NewHTTPError(http.StatusNotFound, "no such operation")
	}
	op, err := h.d.ReconcileNow(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return echo.NewHTTPError(http.StatusNotFound, "no such operation")
	case errors.Is(err, store.ErrConflict):
		return h.renderReview(c, http.StatusUnprocessableEntity, false, reviewForm{key: key, msg: l.ErrNotUnknown})
	case err != nil:
		return fmt.Errorf("reconcile %q: %w", key, err)
	}
	if op.Status == store.StatusUnknown && op.LookupFailures > before.LookupFailures {
		// The target could not tell: not a success, and not shown as one.
		return h.redirectKind(c, "error", "/admin/review", "lookup_failed",
			fmt.Sprintf("%s (%d)", l.TargetLabel(op.TargetSystem), op.LookupFailures))
	}
	return h.redirectWith(c, "/admin/review", "reconciled", l.StatusLabel(string(op.Status)))
}

// handleReviewResolve serves POST /admin/review/{key}/resolve: settles an
// unknown operation on the signed-in user's word — found at the target
// (with its object id) or not there — with a mandatory reason.
func (h *Handler) handleReviewResolve(c echo.Context) error {
	key, err := keyParam(c)
	if err != nil {
		return err
	}
	l := labels(c)
	f := reviewForm{
		key:       key,
		outcome:   c.FormValue("outcome"),
		object:    strings.TrimSpace(c.FormValue("object_id")),
		text:      strings.TrimSpace(c.FormValue("reason")),
		rerun:     c.FormValue("confirm_rerun") == "yes",
		unchecked: c.FormValue("confirm_unchecked") == "yes",
	}
	money, target, unknown := false, "", false
	if op, err := h.d.Store.Get(c.Request().Context(), key); err == nil {
		target, unknown = op.TargetSystem, op.Status == store.StatusUnknown
		if def := h.definition(op); def != nil {
			money = def.Money
		}
	}
	switch {
	case !unknown:
		// Settled meanwhile (or never there): nothing to ask the target.
		f.msg = l.ErrNotUnknown
	case f.outcome != "found" && f.outcome != "not_found":
		f.msg = l.ErrOutcomeRequired
	case f.text == "":
		f.msg = l.ErrReasonRequired
	case f.outcome == "found" && f.object == "":
		f.msg = l.ErrObjectRequired
	case f.outcome == "found" && !h.objectFormatOK(target, f.object):
		// An id that cannot be the target's would hand the agent an
		// object that is not there.
		f.msg = fmt.Sprintf(l.ErrObjectFormat, l.ObjectFormats[h.targetKind(target)])
	case f.outcome == "not_found" && money && !f.rerun:
		// Not found lets the next retry send the payment again: only on
		// a deliberate word that the provider has none.
		f.msg = l.ErrRerunConfirm
	}
	if utf8.RuneCountInString(f.text) > maxReason {
		f.text = string([]rune(f.text)[:maxReason])
	}
	if len(f.object) > 255 {
		f.object = f.object[:255]
	}
	if f.msg != "" {
		return h.renderReview(c, http.StatusUnprocessableEntity, false, f)
	}
	res := store.Resolution{Found: f.outcome == "found", Reason: f.text}
	if res.Found {
		if !h.checkObject(c, key, target, &f, &res) {
			return h.renderReview(c, http.StatusUnprocessableEntity, false, f)
		}
	}
	err = h.d.Store.ResolveByHand(actorCtx(c), key, res)
	switch {
	case errors.Is(err, store.ErrConflict):
		f.msg = l.ErrNotUnknown
		return h.renderReview(c, http.StatusUnprocessableEntity, false, f)
	case errors.Is(err, store.ErrInvalid):
		f.msg = l.ErrReasonRequired
		return h.renderReview(c, http.StatusUnprocessableEntity, false, f)
	case err != nil:
		return fmt.Errorf("resolve %q: %w", key, err)
	}
	st := store.StatusSucceeded
	if !res.Found {
		st = store.StatusFailedRetryable
	}
	return h.redirectWith(c, "/admin/review", "resolved", l.StatusLabel(string(st)))
}

// checkObject vets the object id of a "found" resolution before it is
// recorded: no other operation of the target may have it, and the target
// must confirm it can be this operation's effect. It fills res with the
// id as the target spells it and the result the target confirmed, and
// answers true; or refuses, with f.msg saying why, and answers false. A
// target that cannot tell (down, or no read of an object by its id) is
// no refusal once the person says they checked the object themselves;
// the trail then says it stands on their word.
func (h *Handler) checkObject(c echo.Context, key, target string, f *reviewForm, res *store.Resolution) bool {
	ctx := c.Request().Context()
	l := labels(c)
	who := l.TargetLabel(target)
	res.ObjectID = f.object
	if taken, ok := h.objectTaken(ctx, key, target, f.object); ok {
		f.msg = fmt.Sprintf(l.ErrObjectTaken, f.object, taken)
		return false
	}
	var why string
	if h.d.CheckObject == nil {
		why = l.CannotCheck
	} else {
		got, err := h.d.CheckObject(ctx, key, f.object)
		var ae *adapters.Error
		switch {
		case err == nil:
			if got.ObjectID != "" && got.ObjectID != f.object {
				// The target spells the id its own way (a Ref_Key in
				// lower case): the one it spells is the one recorded.
				if taken, ok := h.objectTaken(ctx, key, target, got.ObjectID); ok {
					f.msg = fmt.Sprintf(l.ErrObjectTaken, got.ObjectID, taken)
					return false
				}
				res.ObjectID = got.ObjectID
			}
			if got.Data != nil {
				if b, err := json.Marshal(got.Data); err == nil {
					res.Result = b
				}
			}
			res.Checked = true
			return true
		case errors.Is(err, adapters.ErrNotFound):
			f.msg = fmt.Sprintf(l.ErrObjectAbsent, who, f.object)
			return false
		case errors.As(err, &ae) && ae.Class == adapters.Final:
			f.msg = fmt.Sprintf(l.ErrObjectNotEffect, who, f.object, h.d.Redactor.Foreign(ae.Message))
			return false
		case errors.Is(err, adapters.ErrCannotCheck):
			why = l.CannotCheck
		case errors.As(err, &ae):
			why = h.d.Redactor.Foreign(ae.Message)
		default:
			h.d.Log.Warn("review: the target could not check an object", "key", key, "err", err)
			why = l.NoAnswer
		}
	}
	if !f.unchecked {
		f.ask = true
		f.msg = fmt.Sprintf(l.ErrObjectUnchecked, who, f.object, why, l.UncheckedConfirm)
		return false
	}
	res.Unchecked = why
	return true
}

// objectTaken is the key of another operation of target whose effect is
// the object id, if the journal holds one: an id already given to one
// agent cannot be another operation's answer.
func (h *Handler) objectTaken(ctx context.Context, key, target, id string) (string, bool) {
	ops, err := h.d.Store.ListOperations(ctx, store.OperationFilter{Target: target, Search: id, Limit: 10})
	if err != nil {
		return "", false
	}
	for _, op := range ops {
		if op.Key != key && op.TargetObjectID == id {
			return op.Key, true
		}
	}
	return "", false
}

// renderReview renders the review list; f is a refused form to show on
// its row (or above the list when the row is gone).
func (h *Handler) renderReview(c echo.Context, status int, flagged bool, f reviewForm) error {
	ctx := c.Request().Context()
	ops, err := h.d.Store.ListOperations(ctx, store.OperationFilter{Status: store.StatusUnknown, NeedsReview: flagged, Limit: 500})
	if err != nil {
		return fmt.Errorf("review: %w", err)
	}
	l, lg := labels(c), lang(c)
	v := views.ReviewListView{
		Page:        h.page(c, "review", l.ReviewTitle),
		CanAct:      canReview(c),
		FlaggedOnly: flagged,
		AllHref:     "/admin/review",
		FlaggedHref: "/admin/review?flagged=1",
	}
	v.Page.Refresh = 30
	placed := false
	for _, op := range ops {
		evs, err := h.d.Store.AuditEvents(ctx, store.AuditFilter{OperationKey: op.Key, Limit: 30})
		if err != nil {
			return fmt.Errorf("history of %q: %w", op.Key, err)
		}
		answer, answerAt := h.lastAnswer(evs)
		slices.Reverse(evs)
		hist := collapseRepeats(h.eventRows(c, evs, op.TargetSystem))
		r := views.ReviewRow{
			Key: op.Key, KeyHref: operationHref(op.Key), Intent: op.Intent, Target: op.TargetSystem,
			Agent: op.Agent, Flagged: op.NeedsReview, Attempts: op.AttemptCount, LookupFailures: op.LookupFailures,
			LastAttempt:  formatTime(op.LastAttemptAt, h.d.Location, lg),
			NextCheck:    formatTime(op.NextCheckAt, h.d.Location, lg),
			Created:      formatTime(op.CreatedAt, h.d.Location, lg),
			Age:          fmt.Sprintf(l.Ago, formatDuration(h.now().Sub(op.CreatedAt), l)),
			ReasonCode:   op.ErrorCode,
			Reason:       l.ErrorText(op.ErrorCode, op.ErrorMessage),
			ObjectID:     op.TargetObjectID,
			ObjectFormat: l.ObjectFormats[h.targetKind(op.TargetSystem)],
			History:      hist,
			LastAnswer:   answer,
			LastAnswerAt: formatSeconds(answerAt, h.d.Location, lg),
			ReconcileURL: "/admin/review/" + keyPath(op.Key) + "/reconcile",
			ResolveURL:   "/admin/review/" + keyPath(op.Key) + "/resolve",
		}
		// What to look for at the target: the request as the agent sent
		// it (to whoever may read it) and the exact search to run there;
		// what the target last said, in words first.
		p := parsePayload(op.Payload)
		r.Request, r.Lines = newRequestView(h.definition(op), p, lg, canSeeRequest(c)).show(p)
		r.SearchHint = h.searchHint(l, op)
		r.LastAnswerRaw = r.LastAnswer
		r.LastAnswer = targetErrorText(l, l.TargetLabel(op.TargetSystem), r.LastAnswerRaw)
		h.reviewMoney(c, op, &r)
		if f.key == op.Key {
			r.Error, r.FormFound, r.FormObject, r.FormReason, r.FormRerun = f.msg, f.outcome, f.object, f.text, f.rerun
			r.AskUnchecked, r.FormUnchecked = f.ask || f.unchecked, f.unchecked
			placed = true
		}
		v.Rows = append(v.Rows, r)
	}
	if !placed {
		v.Error = f.msg
	}
	return Render(c, status, views.ReviewList(v))
}

// reviewMoney fills a payment's review card with its amount, its
// customer (masked for the auditor) and who approved it.
func (h *Handler) reviewMoney(c echo.Context, op store.Operation, r *views.ReviewRow) {
	def := h.definition(op)
	if def == nil || !def.Money {
		return
	}
	lg := lang(c)
	p := parsePayload(op.Payload)
	r.Money, r.Amount = true, p.amount(lg)
	r.Customer = p.str("customer_id")
	if !canSeeRequest(c) {
		r.Customer = mask(r.Customer)
	}
	if a, err := h.d.Store.ApprovalByKey(c.Request().Context(), op.Key); err == nil && a.DecidedBy != "" {
		r.Approver = a.DecidedBy + ", " + formatSeconds(a.DecidedAt, h.d.Location, lg)
	}
}

// lastAnswer is what the target said on the operation's last failed
// look-up, as the audit trail keeps it (redacted again, for events
// written before a secret was known), and when; evs are newest first.
func (h *Handler) lastAnswer(evs []store.AuditEvent) (string, time.Time) {
	for _, e := range evs {
		if e.Event != "operation.lookup_failed" && e.Event != "operation.flagged_for_review" {
			continue
		}
		var d struct {
			Answer string `json:"answer"`
		}
		if json.Unmarshal(e.Detail, &d) == nil && d.Answer != "" {
			return h.d.Redactor.Foreign(d.Answer), e.At
		}
		return "", time.Time{} // the last failure said nothing: an older answer would mislead
	}
	return "", time.Time{}
}

// history is the last n audit events of an operation, oldest first, a
// run of the same failed look-ups as one line.
func (h *Handler) history(ctx context.Context, c echo.Context, key string, n int, target string) ([]views.EventRow, error) {
	evs, err := h.d.Store.AuditEvents(ctx, store.AuditFilter{OperationKey: key, Limit: n})
	if err != nil {
		return nil, fmt.Errorf("history of %q: %w", key, err)
	}
	slices.Reverse(evs)
	return collapseRepeats(h.eventRows(c, evs, target)), nil
}

// eventRows are audit events as the pages show them; target is the
// target instance their operation went to ("" when not one, or unknown),
// which names who answered what they quote.
func (h *Handler) eventRows(c echo.Context, evs []store.AuditEvent, target string) []views.EventRow {
	l, lg := labels(c), lang(c)
	out := make([]views.EventRow, 0, len(evs))
	for _, e := range evs {
		r := views.EventRow{
			ID: e.ID, At: formatSeconds(e.At, h.d.Location, lg), Actor: actorText(e.Actor.Kind, e.Actor.Name),
			Event: e.Event, Label: l.EventLabel(e.Event), Key: e.OperationKey, Detail: h.shownDetail(e.Detail),
			Fields: h.detailFields(e.Detail, target, l, lg),
		}
		if e.OperationKey != "" {
			r.KeyHref = operationHref(e.OperationKey)
		}
		if len(e.Hash) >= 12 {
			r.HashTail = e.Hash[len(e.Hash)-12:]
		}
		out = append(out, r)
	}
	return out
}
