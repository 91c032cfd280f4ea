package admin

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/server/intent"
	"github.com/oncegate/oncegate/views"
)

// handleIntentList serves GET /admin/intents: the loaded whitelist, read
// only: each served definition in the catalog's order, followed by its
// older versions still loaded (keys accepted under them still run and
// replay under them).
func (h *Handler) handleIntentList(c echo.Context) error {
	l, lg := labels(c), lang(c)
	v := views.IntentListView{Page: h.page(c, "intents", l.IntentsTitle)}
	defs := h.d.Catalog.Definitions()
	for _, served := range h.d.Catalog.All() {
		v.Rows = append(v.Rows, h.intentRow(served, true, l, lg))
		var older []*intent.Intent
		for _, def := range defs {
			if def.Name == served.Name && def != served {
				older = append(older, def)
			}
		}
		slices.SortFunc(older, func(a, b *intent.Intent) int { return b.Version - a.Version })
		for _, def := range older {
			v.Rows = append(v.Rows, h.intentRow(def, false, l, lg))
		}
	}
	return Render(c, http.StatusOK, views.IntentList(v))
}

// intentRow is one definition as the page shows it.
func (h *Handler) intentRow(def *intent.Intent, served bool, l *views.Labels, lg string) views.IntentRow {
	kind := h.d.TargetKinds[def.Target]
	r := views.IntentRow{
		Name: def.Name, Version: def.Version, Served: served,
		Anchor:      "intent-" + strings.ReplaceAll(def.Name, ".", "-") + "-v" + strconv.Itoa(def.Version),
		Title:       def.Title.In(lg),
		Description: def.Description,
		Target:      def.Target, TargetLabel: l.TargetLabel(def.Target),
		Kind: kind, KindLabel: orRawLabel(l.TargetKinds, kind),
		Scope: def.Scope, ScopeLabel: orRawLabel(l.ScopeFor, def.Scope),
		Money: def.Money, Journaled: def.Journaled,
		Source: def.Source, Digest: def.Digest,
		Schema: indentJSON(def.Schema),
		Map:    indentJSON(def.Map),
	}
	for _, lb := range def.Labels {
		r.Fields = append(r.Fields, views.Field{Label: lb.Field, Value: lb.In(lg), Mono: false})
	}
	for _, path := range slices.Sorted(maps.Keys(def.References)) {
		r.References = append(r.References, views.Field{Label: path, Value: def.References[path]})
	}
	r.Limits = limitFields(def, l, lg)
	return r
}

// limitFields are a definition's business limits for people, each with
// the field it applies to.
func limitFields(def *intent.Intent, l *views.Labels, lg string) []views.Field {
	lim := def.Limits
	var out []views.Field
	on := func(field string) string {
		if field == "" {
			return ""
		}
		return " (" + def.Label(field, lg) + ", " + field + ")"
	}
	if len(lim.Currencies) > 0 {
		out = append(out, views.Field{Label: l.LimitCurrencies, Value: strings.Join(lim.Currencies, ", ") + on(lim.CurrencyField), TestID: "limit-currencies"})
	}
	if len(lim.AmountCeiling) > 0 {
		var parts []string
		for _, cur := range slices.Sorted(maps.Keys(lim.AmountCeiling)) {
			parts = append(parts, formatMoney(lim.AmountCeiling[cur], cur, lg))
		}
		field := lim.AmountField
		if field == "" && lim.PriceField != "" {
			field = lim.ItemsField
		}
		out = append(out, views.Field{Label: l.LimitAmountCeiling, Value: strings.Join(parts, "; ") + on(field), TestID: "limit-ceiling"})
	}
	if lim.MaxItems > 0 {
		out = append(out, views.Field{Label: l.LimitMaxItems, Value: strconv.Itoa(lim.MaxItems) + on(lim.ItemsField)})
	}
	if lim.MaxQuantity > 0 {
		field := lim.QuantityField
		if lim.ItemsField != "" && field != "" {
			field = lim.ItemsField + "." + field
		}
		out = append(out, views.Field{Label: l.LimitMaxQuantity, Value: strconv.FormatFloat(lim.MaxQuantity, 'f', -1, 64) + on(field)})
	}
	if len(lim.Units) > 0 {
		field := lim.UnitField
		if lim.ItemsField != "" && field != "" {
			field = lim.ItemsField + "." + field
		}
		out = append(out, views.Field{Label: l.LimitUnits, Value: strings.Join(lim.Units, ", ") + on(field)})
	}
	return out
}

// indentJSON is raw JSON indented for reading, "" for none.
func indentJSON(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// orRawLabel is m's text for k, or k itself.
func orRawLabel(m map[string]string, k string) string {
	if v, ok := m[k]; ok {
		return v
	}
	return k
}
