package admin

import (
	"encoding/json"
	"math/big"
	"slices"
	"sort"
	"strings"

	"github.com/oncegate/oncegate/server/intent"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// definition is the definition op was accepted under, the served one when
// that version is no longer loaded, or nil.
func (h *Handler) definition(op store.Operation) *intent.Intent {
	v := op.IntentVersion
	if v == 0 {
		v = 1
	}
	if def, ok := h.d.Catalog.Version(op.Intent, v); ok {
		return def
	}
	if def, ok := h.d.Catalog.Lookup(op.Intent); ok {
		return def
	}
	return nil
}

// fieldLabel is the title of the payload field at path in lang as the
// definition gives it, or path itself.
func fieldLabel(def *intent.Intent, path, lang string) string {
	if def == nil {
		return path
	}
	return def.Label(path, lang)
}

// requestView shows a payload as people read it: each field under its
// title in the page's language, amounts in minor units as money, lines
// (an array of objects) as a table with their total. full shows it as the
// agent sent it, to whoever acts on it; otherwise sensitive fields are
// masked. Secrets and card data are masked for everyone.
type requestView struct {
	def      *intent.Intent
	lang     string
	l        *views.Labels
	full     bool
	currency string
}

func newRequestView(def *intent.Intent, p payload, lang string, full bool) requestView {
	cur := p.str("currency")
	if def != nil && def.Limits.CurrencyField != "" {
		cur = p.str(def.Limits.CurrencyField)
	}
	return requestView{def: def, lang: lang, l: views.LabelsFor(lang), full: full, currency: cur}
}

// show lays p out: its fields and its tables of lines.
func (r requestView) show(p payload) ([]views.Field, []views.LinesTable) {
	var fields []views.Field
	var tables []views.LinesTable
	r.walk(map[string]any(p), "", &fields, &tables)
	return fields, tables
}

func (r requestView) walk(m map[string]any, prefix string, fields *[]views.Field, tables *[]views.LinesTable) {
	for _, k := range r.order(m, prefix) {
		path := prefix + k
		switch v := m[k].(type) {
		case map[string]any:
			r.walk(v, path+".", fields, tables)
		case []any:
			if t, ok := r.table(path, v); ok {
				*tables = append(*tables, t)
				continue
			}
			parts := make([]string, len(v))
			for i, x := range v {
				parts[i] = r.value(k, x)
			}
			*fields = append(*fields, r.field(path, strings.Join(parts, ", ")))
		default:
			*fields = append(*fields, r.field(path, r.value(k, v)))
		}
	}
}

func (r requestView) field(path, value string) views.Field {
	return views.Field{Label: fieldLabel(r.def, path, r.lang), Value: value, TestID: "field-" + path}
}

// order is m's keys: those the definition titles, in its order, then the
// rest by name.
func (r requestView) order(m map[string]any, prefix string) []string {
	var out []string
	if r.def != nil {
		for _, lb := range r.def.Labels {
			k, ok := strings.CutPrefix(lb.Field, prefix)
			if !ok || strings.Contains(k, ".") {
				continue
			}
			if _, has := m[k]; has && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	var rest []string
	for k := range m {
		if !slices.Contains(out, k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// value is one scalar (or a nested value, as JSON) for people; name is
// its field's own name, which says whether it is masked or money.
func (r requestView) value(name string, v any) string {
	switch v := v.(type) {
	case string:
		if secretField(name) || !r.full && sensitiveFields[name] {
			return mask(v)
		}
		return v
	case json.Number:
		if strings.HasSuffix(name, "_minor") {
			if n, err := v.Int64(); err == nil {
				return formatMoney(n, r.currency, r.lang)
			}
		}
		return v.String()
	case bool:
		if v {
			return r.l.Yes
		}
		return r.l.No
	case nil:
		return "—"
	default:
		if r.full {
			return marshalPlain(maskSecrets(name, v))
		}
		return marshalPlain(maskValue(name, maskSecrets(name, v)))
	}
}

// table lays out an array of objects as lines: a column per member, and
// when the lines have a quantity and a price in minor units, each line's
// sum and the total.
func (r requestView) table(path string, list []any) (views.LinesTable, bool) {
	if len(list) == 0 {
		return views.LinesTable{}, false
	}
	rows := make([]map[string]any, len(list))
	union := map[string]any{}
	for i, x := range list {
		m, ok := x.(map[string]any)
		if !ok {
			return views.LinesTable{}, false
		}
		rows[i] = m
		for k, v := range m {
			union[k] = v
		}
	}
	cols := r.order(union, path+".")
	t := views.LinesTable{Title: fieldLabel(r.def, path, r.lang), TestID: "lines-" + path}
	for _, k := range cols {
		t.Columns = append(t.Columns, fieldLabel(r.def, path+"."+k, r.lang))
	}
	price := ""
	for _, k := range cols {
		if strings.HasPrefix(k, "price") && strings.HasSuffix(k, "_minor") {
			price = k
		}
	}
	_, hasQty := union["quantity"]
	sums := price != "" && hasQty
	if sums {
		t.Columns = append(t.Columns, r.l.LineSum)
	}
	total := new(big.Rat)
	for _, m := range rows {
		var cells []string
		for _, k := range cols {
			v, ok := m[k]
			if !ok {
				cells = append(cells, "")
				continue
			}
			cells = append(cells, r.value(k, v))
		}
		if sums {
			q, okQ := rat(m["quantity"])
			p, okP := rat(m[price])
			if okQ && okP {
				s := new(big.Rat).Mul(q, p)
				total.Add(total, s)
				cells = append(cells, formatMoney(roundRat(s), r.currency, r.lang))
			} else {
				cells = append(cells, "")
			}
		}
		t.Rows = append(t.Rows, cells)
	}
	if sums {
		t.Total = formatMoney(roundRat(total), r.currency, r.lang)
	}
	return t, true
}

// rat is a JSON number exactly.
func rat(v any) (*big.Rat, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, false
	}
	return new(big.Rat).SetString(n.String())
}

// roundRat is x rounded half away from zero to an integer.
func roundRat(x *big.Rat) int64 {
	f, _ := x.Float64()
	if f < 0 {
		return -int64(-f + 0.5)
	}
	return int64(f + 0.5)
}
