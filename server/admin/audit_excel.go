package admin

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// eventGroups are the kinds of audit events, in the order the filter
// offers them.
var eventGroups = []string{"operation", "approval", "user", "token", "retention"}

// eventChoices are the audit filter's named events, grouped by kind (each
// group first offering all its events), with selected chosen; known
// reports whether selected is one of them.
func eventChoices(l *views.Labels, selected string) ([]views.OptionGroup, bool) {
	known := false
	var out []views.OptionGroup
	for _, g := range eventGroups {
		grp := views.OptionGroup{Label: g}
		if name := l.EventGroups[g]; name != "" {
			grp.Label = name
		}
		grp.Options = append(grp.Options, views.Option{Value: g + ".", Label: grp.Label, Selected: selected == g+"."})
		known = known || selected == g+"."
		var names []string
		for e := range l.Events {
			if strings.HasPrefix(e, g+".") {
				names = append(names, e)
			}
		}
		slices.Sort(names)
		for _, e := range names {
			grp.Options = append(grp.Options, views.Option{Value: e, Label: l.Events[e], Selected: selected == e})
			known = known || selected == e
		}
		out = append(out, grp)
	}
	return out, known
}

// auditExcel streams every event matching f as a CSV that Excel with
// Russian settings opens in columns: ";" between fields, a UTF-8 byte
// order mark, headers and event names in the page's language, times in
// the firm's zone, a money operation's amount as the pages show it and
// details as "label: value" pairs. The CSV for machines (auditCSV) stays
// as it is.
func (h *Handler) auditExcel(c echo.Context, f store.AuditFilter) error {
	ctx := c.Request().Context()
	l, lg := labels(c), lang(c)
	name := "oncegate-audit-" + h.now().In(h.d.Location).Format("20060102-150405") + "-excel.csv"
	hd := c.Response().Header()
	hd.Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	hd.Set(echo.HeaderContentDisposition, `attachment; filename="`+name+`"`)
	c.Response().WriteHeader(http.StatusOK)

	if _, err := c.Response().Write([]byte(utf8BOM)); err != nil {
		return fmt.Errorf("audit excel: %w", err)
	}
	w := csv.NewWriter(c.Response())
	w.Comma = ';'
	w.UseCRLF = true
	if err := w.Write([]string{l.XNumber, l.XTime, l.XActor, l.XEvent, l.XEventName, l.XOperation, l.XAmount, l.XDetail}); err != nil {
		return fmt.Errorf("audit excel: %w", err)
	}
	amounts := map[string]string{} // operation key → its amount, "" for none
	f.Limit = csvBatch
	for {
		evs, err := h.d.Store.AuditEvents(ctx, f)
		if err != nil {
			h.d.Log.Error("audit excel: read events", "err", err)
			w.Flush()
			return nil
		}
		for _, e := range evs {
			var detail []string
			for _, fl := range h.detailFields(e.Detail, "", l, lg) {
				if fl.Raw != "" {
					fl.Value += " — " + fl.Raw
				}
				detail = append(detail, fl.Label+": "+fl.Value)
			}
			rec := []string{
				fmt.Sprint(e.ID), formatSeconds(e.At, h.d.Location, lg), actorText(e.Actor.Kind, e.Actor.Name),
				l.EventLabel(e.Event), e.Event, e.OperationKey, h.amountOf(ctx, amounts, e.OperationKey, lg),
				strings.Join(detail, "; "),
			}
			for i := range rec {
				rec[i] = noFormula(strings.ReplaceAll(rec[i], nbsp, " "))
			}
			if err := w.Write(rec); err != nil {
				return fmt.Errorf("audit excel: %w", err)
			}
		}
		w.Flush()
		if err := w.Error(); err != nil {
			return fmt.Errorf("audit excel: %w", err)
		}
		if len(evs) < csvBatch {
			return nil
		}
		f.BeforeID = evs[len(evs)-1].ID
	}
}

// amountOf is the amount of the money operation key, as the pages show
// it, "" for any other (or one no longer in the journal); seen keeps the
// answers of one export, so each operation is read once.
func (h *Handler) amountOf(ctx context.Context, seen map[string]string, key, lg string) string {
	if key == "" {
		return ""
	}
	if a, ok := seen[key]; ok {
		return a
	}
	amount := ""
	op, err := h.d.Store.Get(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		h.d.Log.Warn("audit excel: read operation", "err", err)
	default:
		if def := h.definition(op); def != nil && def.Money {
			amount = parsePayload(op.Payload).amount(lg)
		}
	}
	if len(seen) > 10000 {
		clear(seen)
	}
	seen[key] = amount
	return amount
}
