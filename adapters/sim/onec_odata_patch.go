package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// handlePatch changes an object (17.4.13.1.3): only the properties sent,
// those the type lacks ignored, a tabular section sent replaced whole;
// answered 200 with the object, as a live client reads it
// (hacker-cb/1c-odata, its live CRUD test). It is how a document is
// marked for deletion (DeletionMark: true) instead of deleted. It takes
// execute faults, applied around the write as a create's are, so a lost
// answer after the change is applied can be played (onec_odata_change.go
// for the refusals and how changes are counted).
func (o *odata) handlePatch(w http.ResponseWriter, r *http.Request) {
	if !o.authorized(w, r) || !literalSyntax(w, r) {
		return
	}
	set, key, action, ok := route(r.PathValue("rest"))
	o.mu.Lock()
	published := ok && o.published(set)
	o.mu.Unlock()
	switch {
	case !ok || action != "":
		odataFail(w, r, http.StatusNotFound, odataCodeBadURL, "Неправильный адрес ресурса")
		return
	case !published:
		odataFail(w, r, http.StatusNotFound, odataCodeBadURL, fmt.Sprintf("Сегмент URL '%s' не найден", set))
		return
	case key == "":
		odataFail(w, r, http.StatusMethodNotAllowed, odataCodeMethod, "Использованный HTTP-метод запрещен в данном контексте")
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	var in map[string]any
	if err == nil {
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.UseNumber()
		err = dec.Decode(&in)
	}
	if err != nil || in == nil {
		odataFail(w, r, http.StatusBadRequest, "1", "Не удалось разобрать строку")
		return
	}
	t := odataTypeOf(set)
	if !numbered(t, in) {
		odataFail(w, r, http.StatusInternalServerError, odataCodeBusiness, odataInternalError)
		return
	}
	o.s.Call(OneCOData, key)
	f := o.s.TakeFault(OneCOData, OnExecute)
	if f != nil && f.Fault == FaultLateCommit {
		f = nil
	}
	if f.Before(w) {
		return
	}
	o.mu.Lock()
	e, found := o.data[t.Set][key]
	var body map[string]any
	refusal := ""
	if found {
		refusal = o.patchRefusal(t, e, in)
	}
	if found && refusal == "" {
		before := snapshot(e)
		for k, v := range in {
			p, ok := t.prop(k)
			if !ok || k == "Ref_Key" || k == "DataVersion" || k == "Posted" {
				continue // a PATCH's Ref_Key is ignored, as a live base was seen doing
			}
			e[k] = o.fit(p, odataScalar(p.Type, v))
		}
		for _, sec := range t.Sections {
			if rows, ok := in[sec.Name].([]any); ok {
				e[sec.Name] = odataRows(sec, rows)
			}
		}
		e["DataVersion"] = odataVersion()
		if changedSince(before, e) {
			o.s.Effect(OneCODataChanges, key)
		}
		body = odataJSON(t, e, nil)
	}
	o.mu.Unlock()
	if f.After(w) {
		return
	}
	switch {
	case !found:
		odataFail(w, r, http.StatusNotFound, odataCodeNotFound, fmt.Sprintf("Экземпляр сущности \"%s\" не найден по переданному ключу.", t.Set))
		return
	case refusal != "":
		odataFail(w, r, http.StatusInternalServerError, odataCodeBusiness, refusal)
		return
	}
	o.answerEntity(w, r, http.StatusOK, t, body)
}

// post posts (or unposts) a document: a refusal is 500 with code -1 and
// the configuration's Russian message; a document without a counterparty
// is refused the way БП 3.0's check of filling refuses it, and any in the
// closed period (ODataSettings.ClosedUntil). An unposting of a posted
// document counts as a change.
func (o *odata) post(w http.ResponseWriter, r *http.Request, t *odataType, key string, post bool) {
	o.s.Call(OneCOData, key)
	f := o.s.TakeFault(OneCOData, OnExecute)
	if f != nil && f.Fault == FaultLateCommit {
		f = nil
	}
	if f.Before(w) {
		return
	}
	o.mu.Lock()
	e, found := o.data[t.Set][key]
	refusal := ""
	switch {
	case !found:
	case o.closedRefusal(t, e) != "":
		refusal = o.closedRefusal(t, e)
	case post && o.settings.RefusePosting != "":
		refusal = o.settings.RefusePosting
	case post && e["Контрагент_Key"] == odataEmptyRef:
		refusal = "Не удалось провести \"" + t.Set + "\"!\nПоле \"Контрагент\" не заполнено"
	default:
		if !post && e["Posted"] == true {
			o.s.Effect(OneCODataChanges, key) // an unposting is a change; a repeat changes nothing
		}
		e["Posted"] = post
		e["DataVersion"] = odataVersion()
	}
	o.mu.Unlock()
	if f.After(w) {
		return
	}
	switch {
	case !found:
		odataFail(w, r, http.StatusNotFound, odataCodeNotFound, fmt.Sprintf("Экземпляр сущности \"%s\" не найден по переданному ключу.", t.Set))
	case refusal != "":
		odataFail(w, r, http.StatusInternalServerError, odataCodeBusiness, refusal)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

// odataInternalError is 1C's message when the OData service itself fails
// (seen for tabular rows sent without LineNumber: testdata/wire).
const odataInternalError = "Произошла внутренняя ошибка OData сервиса. Дополнительные сведения можно найти в технологическом журнале."

// numbered reports whether every tabular row in carries a LineNumber: a
// live base answers rows without one with its internal error (500, -1).
func numbered(t *odataType, in map[string]any) bool {
	for _, sec := range t.Sections {
		rows, _ := in[sec.Name].([]any)
		for _, rv := range rows {
			rm, _ := rv.(map[string]any)
			if _, ok := rm["LineNumber"]; !ok {
				return false
			}
		}
	}
	return true
}

// odataRows are a tabular section's rows as sent.
func odataRows(sec odataSection, rows []any) []map[string]any {
	list := make([]map[string]any, 0, len(rows))
	for _, rv := range rows {
		rm, _ := rv.(map[string]any)
		row := map[string]any{}
		for _, p := range sec.Props {
			row[p.Name] = odataScalar(p.Type, rm[p.Name])
		}
		list = append(list, row)
	}
	return list
}

// fit is a value as the base stores it in p: with the truncate setting,
// a string longer than its attribute's length is cut to that length.
// The caller holds o.mu.
func (o *odata) fit(p odataProp, v any) any {
	s, ok := v.(string)
	if !ok || !o.settings.Truncate || p.Len == 0 {
		return v
	}
	if r := []rune(s); len(r) > p.Len {
		return string(r[:p.Len])
	}
	return s
}
