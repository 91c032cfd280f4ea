package admin

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/server/intent"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// targetOrder lists the target systems as the filter offers them: the
// built-in instances, then any other the catalog's intents name.
func (h *Handler) targetOrder() []string {
	out := slices.Clone(intent.BuiltinTargets)
	for _, t := range h.d.Catalog.Targets() {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// targetAliases maps what people call a built-in target system — the
// product's name (1C typed with a Latin or a Cyrillic C) — to the
// gateway's name; every target is also known by its own name.
var targetAliases = map[string]string{
	"1c": "onec", "1с": "onec", "bitrix24": "crm", "yookassa": "payments",
}

// targetName is the gateway's name of the target system people typed.
func (h *Handler) targetName(typed string) (string, bool) {
	if t, ok := targetAliases[typed]; ok {
		return t, true
	}
	return typed, slices.Contains(h.targetOrder(), typed)
}

// journaledIntents are the intents that can be in the journal, in the
// whitelist's order (a read-only intent never is).
func (h *Handler) journaledIntents() []string {
	var out []string
	for _, def := range h.d.Catalog.All() {
		if def.Journaled {
			out = append(out, def.Name)
		}
	}
	return out
}

// intentTitle is the people's name of an intent: its definition's title,
// or the labels' for an intent the catalog no longer serves.
func (h *Handler) intentTitle(c echo.Context, name string) string {
	if def, ok := h.d.Catalog.Lookup(name); ok {
		return def.Title.In(lang(c))
	}
	return labels(c).IntentLabel(name)
}

// handleOperationList serves GET /admin/operations: the journal, newest
// first, found by an order, an object or a key (?q=), filtered by status,
// intent, target, agent, key prefix and dates,
// a page at a time by keyset (?before_at=…&before_key=…). Status, intent
// and target are chosen from lists; a value not on its list is refused
// with a message, like a bad date, rather than ignored.
func (h *Handler) handleOperationList(c echo.Context) error {
	v, f, limit := h.operationFilter(c)
	if v.Error != "" {
		return Render(c, http.StatusUnprocessableEntity, views.OperationList(v))
	}
	// One more than a page tells whether an older page exists.
	f.Limit = limit + 1
	ops, err := h.d.Store.ListOperations(c.Request().Context(), f)
	if err != nil {
		return fmt.Errorf("operations: %w", err)
	}
	ops = operationPages(&v, ops, limit, !f.BeforeCreated.IsZero())
	l, lg := labels(c), lang(c)
	show := mask
	if canDecide(c) {
		show = func(s string) string { return s }
	}
	for _, op := range ops {
		row := views.OperationRow{
			Key: op.Key, Href: operationHref(op.Key), Intent: op.Intent,
			Status: string(op.Status), StatusLabel: l.OutcomeLabel(string(op.Status), op.ErrorCode),
			Target: l.TargetLabel(op.TargetSystem), Agent: op.Agent, Attempts: op.AttemptCount,
			Created: formatTime(op.CreatedAt, h.d.Location, lg), Updated: formatTime(op.UpdatedAt, h.d.Location, lg),
			ObjectID: op.TargetObjectID, Flagged: op.NeedsReview,
		}
		// Money: how much and whose, as the approvals show them (the
		// customer masked for whoever does not decide).
		if def := h.definition(op); def != nil && def.Money {
			p := parsePayload(op.Payload)
			row.Amount, row.Customer = p.amount(lg), show(p.str("customer_id"))
		}
		v.Rows = append(v.Rows, row)
	}
	return Render(c, http.StatusOK, views.OperationList(v))
}

// operationFilter reads the list's filter from the query: the page with
// the filter's form and its lists, the journal's filter, and the page's
// size. A value the filter refuses is the page's Error.
func (h *Handler) operationFilter(c echo.Context) (views.OperationListView, store.OperationFilter, int) {
	l := labels(c)
	q := c.QueryParams()
	form := views.OperationFilterForm{
		Status: strings.TrimSpace(q.Get("status")), Intent: strings.TrimSpace(q.Get("intent")), Target: strings.TrimSpace(q.Get("target")),
		Agent: strings.TrimSpace(q.Get("agent")), KeyPrefix: strings.TrimSpace(q.Get("key")), Search: strings.TrimSpace(q.Get("q")),
		From: q.Get("from"), To: q.Get("to"), Limit: q.Get("limit"),
	}
	// A product's name for a target stands for the gateway's.
	badTarget := false
	if form.Target != "" {
		t, ok := h.targetName(strings.ToLower(form.Target))
		form.Target, badTarget = t, !ok
	}
	v := views.OperationListView{Page: h.page(c, "operations", l.OperationsTitle), Filter: form}
	f := store.OperationFilter{Intent: form.Intent, Target: form.Target, Agent: form.Agent, KeyPrefix: form.KeyPrefix, Search: form.Search}
	for _, st := range statusOrder {
		v.Statuses = append(v.Statuses, views.Option{Value: string(st), Label: l.StatusLabel(string(st)), Selected: string(st) == form.Status})
		if string(st) == form.Status {
			f.Status = st
		}
	}
	knownIntent := false
	for _, def := range h.journaledIntents() {
		v.Intents = append(v.Intents, views.Option{Value: def, Label: def + " — " + h.intentTitle(c, def), Selected: def == form.Intent})
		knownIntent = knownIntent || def == form.Intent
	}
	for _, t := range h.targetOrder() {
		v.Targets = append(v.Targets, views.Option{Value: t, Label: l.TargetLabel(t) + " (" + t + ")", Selected: t == form.Target})
	}

	switch {
	case form.Status != "" && f.Status == "":
		v.Error = l.ErrBadStatus
	case form.Intent != "" && !knownIntent:
		v.Error = l.ErrBadIntent
	case badTarget:
		v.Error = l.ErrBadTarget
	}
	if v.Error != "" {
		return v, f, 0
	}
	var err error
	if f.From, f.To, err = h.dateRange(form.From, form.To); err != nil {
		v.Error = l.ErrBadDate
		return v, f, 0
	}
	limit, ok := h.limit(form.Limit)
	if !ok {
		v.Error = l.ErrBadLimit
		return v, f, 0
	}
	if at := q.Get("before_at"); at != "" {
		t, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			v.Error = l.ErrBadBefore
			return v, f, 0
		}
		f.BeforeCreated, f.BeforeKey = t, q.Get("before_key")
	}
	return v, f, limit
}

// operationPages cuts ops, read one over a page of limit, to the page,
// and links v to the older page, if there is one, and back to the first
// when this one (older) is not it.
func operationPages(v *views.OperationListView, ops []store.Operation, limit int, older bool) []store.Operation {
	form := v.Filter
	base := url.Values{}
	for k, val := range map[string]string{"status": form.Status, "intent": form.Intent, "target": form.Target,
		"agent": form.Agent, "key": form.KeyPrefix, "q": form.Search, "from": form.From, "to": form.To, "limit": form.Limit} {
		if val != "" {
			base.Set(k, val)
		}
	}
	if len(ops) > limit {
		ops = ops[:limit]
		last := ops[len(ops)-1]
		next := cloneValues(base)
		next.Set("before_at", last.CreatedAt.UTC().Format(time.RFC3339Nano))
		next.Set("before_key", last.Key)
		v.OlderHref = "/admin/operations?" + next.Encode()
	}
	if older {
		v.FirstHref = "/admin/operations"
		if len(base) > 0 {
			v.FirstHref += "?" + base.Encode()
		}
	}
	return ops
}

// dateRange reads the From and To dates (YYYY-MM-DD, To inclusive) as
// moments in the UI's time zone; empty means no bound.
func (h *Handler) dateRange(from, to string) (time.Time, time.Time, error) {
	var f, t time.Time
	var err error
	if from != "" {
		if f, err = time.ParseInLocation("2006-01-02", from, h.d.Location); err != nil {
			return f, t, fmt.Errorf("date %q: %w", from, err)
		}
	}
	if to != "" {
		if t, err = time.ParseInLocation("2006-01-02", to, h.d.Location); err != nil {
			return f, t, fmt.Errorf("date %q: %w", to, err)
		}
		t = t.AddDate(0, 0, 1)
	}
	return f, t, nil
}

// limit reads a page size: the default when empty, 1 to 200 otherwise.
func (h *Handler) limit(s string) (int, bool) {
	if s == "" {
		return h.d.PageSize, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 200 {
		return 0, false
	}
	return n, true
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}
