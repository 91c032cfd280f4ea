package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// How the Bitrix24 simulator's list methods answer: filter, order, page
// and select, as the portal does.

// b24ListSpec is what differs between the list methods.
type b24ListSpec struct {
	multiple      map[string]bool // fields "*" leaves out
	defaultSelect []string
	defaultOrder  [][2]string
}

// b24List filters, orders, pages and projects rows as a list method does.
func b24List(w http.ResponseWriter, params map[string]json.RawMessage, c b24Req, rows []b24Record, spec b24ListSpec) {
	filter := map[string]any{}
	if raw, ok := params["filter"]; ok && !b24EmptyArray(raw) {
		if b24Decode(raw, &filter) != nil || filter == nil {
			b24Error(w, http.StatusBadRequest, "", "Parameter 'filter' must be array.")
			return
		}
	}
	order := spec.defaultOrder
	if raw, ok := params["order"]; ok && !b24EmptyArray(raw) {
		var err error
		if order, err = b24OrderPairs(raw); err != nil {
			b24Error(w, http.StatusBadRequest, "", "Parameter 'order' must be array.")
			return
		}
	}
	sel := spec.defaultSelect
	if raw, ok := params["select"]; ok && !b24EmptyArray(raw) {
		if err := json.Unmarshal(raw, &sel); err != nil {
			b24Error(w, http.StatusBadRequest, "", "Parameter 'select' must be array.")
			return
		}
	}
	start := 0
	if raw, ok := params["start"]; ok {
		if n, ok := b24PositiveInt(b24Raw(raw)); ok {
			start = n
		}
	}

	var matched []b24Record
	for _, row := range rows {
		ok, unsupported := b24Match(row, filter)
		if unsupported != "" {
			b24Error(w, http.StatusBadRequest, "", "The filter operation of '"+unsupported+"' is not supported by the simulator.")
			return
		}
		if ok {
			matched = append(matched, row)
		}
	}
	sort.SliceStable(matched, func(i, j int) bool {
		for _, o := range order {
			c := b24Compare(matched[i][strings.ToUpper(o[0])], matched[j][strings.ToUpper(o[0])])
			if strings.EqualFold(o[1], "DESC") {
				c = -c
			}
			if c != 0 {
				return c < 0
			}
		}
		return b24Compare(matched[i]["ID"], matched[j]["ID"]) < 0
	})
	page := []b24Record{}
	for i := start; i < len(matched) && i < start+b24PageSize; i++ {
		page = append(page, b24Project(matched[i], sel, spec.multiple))
	}
	answer := map[string]any{"result": page, "total": len(matched), "time": c.time()}
	if start+b24PageSize < len(matched) {
		answer["next"] = start + b24PageSize
	}
	WriteJSON(w, http.StatusOK, answer)
}

// b24Match applies a filter: "=" (the default), "!"/"!=" and "@"/"!@" (IN).
// A key naming no field of the row is ignored, as Bitrix24 ignores it. A
// key with another operation (<, >, LIKE) is returned as unsupported.
func b24Match(row b24Record, filter map[string]any) (ok bool, unsupported string) {
	for key, want := range filter {
		op, field := "=", key
		for _, p := range []string{"!@", "!=", "@", "!", "="} {
			if strings.HasPrefix(key, p) {
				op, field = p, key[len(p):]
				break
			}
		}
		if strings.ContainsAny(field[:min(1, len(field))], "<>%") {
			return false, key
		}
		got, known := row[field]
		if !known {
			continue
		}
		var hit bool
		switch op {
		case "=":
			hit = b24Equal(got, want)
		case "!", "!=":
			hit = !b24Equal(got, want)
		case "@", "!@":
			list, isList := want.([]any)
			if !isList {
				list = []any{want}
			}
			hit = slices.ContainsFunc(list, func(v any) bool { return b24Equal(got, v) })
			if op == "!@" {
				hit = !hit
			}
		}
		if !hit {
			return false, ""
		}
	}
	return true, ""
}

// b24Equal compares as MySQL's default collation does: case-insensitive,
// trailing spaces ignored; NULL equals nothing.
func b24Equal(got, want any) bool {
	if got == nil {
		return false
	}
	return strings.EqualFold(strings.TrimRight(b24Scalar(got), " "), strings.TrimRight(b24Scalar(want), " "))
}

// b24Compare orders numbers numerically, other values as strings, null first.
func b24Compare(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	sa, sb := b24Scalar(a), b24Scalar(b)
	na, errA := strconv.ParseFloat(sa, 64)
	nb, errB := strconv.ParseFloat(sb, 64)
	if errA == nil && errB == nil {
		switch {
		case na < nb:
			return -1
		case na > nb:
			return 1
		}
		return 0
	}
	return strings.Compare(sa, sb)
}

// b24Project keeps the selected fields: "*" is every field but the multiple
// and user fields, "UF_*" every user field, a name that field. ID always.
func b24Project(row b24Record, sel []string, multiple map[string]bool) b24Record {
	all, uf := slices.Contains(sel, "*"), slices.Contains(sel, "UF_*")
	out := b24Record{"ID": row["ID"]}
	for k, v := range row {
		isUF := strings.HasPrefix(k, "UF_")
		if slices.Contains(sel, k) || (all && !isUF && !multiple[k]) || (uf && isUF) {
			out[k] = v
		}
	}
	return out
}

// b24OrderPairs reads an order object keeping its keys in order.
func b24OrderPairs(raw json.RawMessage) ([][2]string, error) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("order is not an object")
	}
	var pairs [][2]string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var dir string
		if err := dec.Decode(&dir); err != nil {
			return nil, err
		}
		pairs = append(pairs, [2]string{k.(string), dir})
	}
	return pairs, nil
}
