package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// canReviewDuplicates: who may decide whether a held operation duplicates
// an earlier one. Operators review, as they settle unclear operations;
// accountants and admins may too. A money operation found not to be a
// duplicate still waits for an accountant.
func canReviewDuplicates(c echo.Context) bool {
	return can(c, store.RoleAdmin, store.RoleOperator, store.RoleAccountant)
}

// handleDuplicateNo serves POST /admin/approvals/{id}/not-duplicate: the
// held operation goes on.
func (h *Handler) handleDuplicateNo(c echo.Context) error { return h.decideReview(c, true) }

// handleDuplicateYes serves POST /admin/approvals/{id}/duplicate: the held
// operation is refused as a duplicate (DUPLICATE_CONFIRMED).
func (h *Handler) handleDuplicateYes(c echo.Context) error { return h.decideReview(c, false) }

// decideReview records the signed-in user's decision on a suspected
// duplicate. Only an approval of kind duplicate is decided here, bound in
// the store's conditional update: a money approval never is.
func (h *Handler) decideReview(c echo.Context, notDuplicate bool) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return echo.NewHTTPError(http.StatusNotFound, "bad approval id")
	}
	comment := strings.TrimSpace(c.FormValue("comment"))
	a, err := h.d.Store.ApprovalByID(c.Request().Context(), id)
	if errors.Is(err, store.ErrNotFound) || err == nil && a.Kind != store.ApprovalDuplicate {
		return echo.NewHTTPError(http.StatusNotFound, "no such review")
	}
	if err != nil {
		return fmt.Errorf("decide review: %w", err)
	}
	l := labels(c)
	if utf8.RuneCountInString(comment) > maxComment {
		return h.renderApprovals(c, http.StatusUnprocessableEntity, id, fmt.Sprintf(l.ErrCommentTooLong, maxComment), comment)
	}
	err = h.d.Store.DecideReview(actorCtx(c), id, notDuplicate, session(c).User.Name, comment)
	switch {
	case errors.Is(err, store.ErrApprovalExpired):
		return h.renderApprovals(c, http.StatusUnprocessableEntity, id, l.ErrApprovalExpired, comment)
	case errors.Is(err, store.ErrApprovalDecided):
		return h.renderApprovals(c, http.StatusUnprocessableEntity, id, l.ErrApprovalDecided, comment)
	case err != nil:
		return fmt.Errorf("decide review: %w", err)
	}
	if notDuplicate {
		h.d.Wake()
		return h.redirectWith(c, "/admin/approvals", "not_duplicate", a.OperationKey)
	}
	return h.redirectWith(c, "/admin/approvals", "duplicate", a.OperationKey)
}

// duplicateReview is a held operation beside the earlier operation of
// its business event: every top-level payload field of either, in the
// definition's order, those that differ marked.
func (h *Handler) duplicateReview(c echo.Context, a store.Approval) *views.DuplicateReview {
	l, lg := labels(c), lang(c)
	op := a.Operation
	d := &views.DuplicateReview{
		EarlierKey: op.DuplicateOf, EarlierHref: operationHref(op.DuplicateOf),
		EarlierAt:       formatTime(op.DuplicateAt, h.d.Location, lg),
		NotDuplicateURL: fmt.Sprintf("/admin/approvals/%d/not-duplicate", a.ID),
		DuplicateURL:    fmt.Sprintf("/admin/approvals/%d/duplicate", a.ID),
	}
	var earlier payload
	if e, err := h.d.Store.Get(c.Request().Context(), op.DuplicateOf); err == nil {
		earlier = parsePayload(e.Payload)
		d.EarlierStatus = l.StatusLabel(string(e.Status))
	}
	this := parsePayload(op.Payload)
	var fields []string
	def, known := h.d.Catalog.Lookup(op.Intent)
	if known {
		for _, lb := range def.Labels {
			if !strings.Contains(lb.Field, ".") {
				fields = append(fields, lb.Field)
			}
		}
	}
	for _, p := range []payload{this, earlier} {
		for k := range p {
			if !slices.Contains(fields, k) {
				fields = append(fields, k)
			}
		}
	}
	show := func(k string, v any) string {
		if v == nil {
			return "—"
		}
		if !canReviewDuplicates(c) {
			v = maskValue(k, v)
		}
		switch v := v.(type) {
		case string:
			return v
		case json.Number:
			return v.String()
		}
		return marshalPlain(v)
	}
	// Lines (an array of objects, an invoice's items) read as a table
	// with their total on either side, not as JSON.
	rv := newRequestView(def, this, lg, canReviewDuplicates(c))
	lines := func(k string, v any) *views.LinesTable {
		list, ok := v.([]any)
		if !ok {
			return nil
		}
		if t, ok := rv.table(k, list); ok {
			return &t
		}
		return nil
	}
	for _, k := range fields {
		tv, ev := this[k], earlier[k]
		if tv == nil && ev == nil {
			continue
		}
		label := k
		if known {
			label = def.Label(k, lg)
		}
		d.Rows = append(d.Rows, views.DiffRow{Field: k, Label: label, This: show(k, tv), Earlier: show(k, ev),
			ThisLines: lines(k, tv), EarlierLines: lines(k, ev),
			Differs: marshalPlain(tv) != marshalPlain(ev)})
	}
	return d
}
