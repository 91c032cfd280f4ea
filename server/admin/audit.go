package admin

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// csvBatch is how many events the CSV export reads at a time.
const csvBatch = 1000

// utf8BOM opens the CSV export.
const utf8BOM = "\ufeff"

// handleAuditList serves GET /admin/audit: the audit trail newest first,
// filtered by operation key, event (one of the named events, or all of a
// kind: a prefix ending in "."), actor and dates, a page at a time by
// keyset (?before=<id>). With ?format=csv it downloads every matching
// event as CSV for machines, with ?format=excel as CSV for people in
// Excel; with ?verify=1 it also checks the whole hash chain and shows its
// head as oncegate audit verify does.
func (h *Handler) handleAuditList(c echo.Context) error {
	l := labels(c)
	q := c.QueryParams()
	form := views.AuditFilterForm{
		Key: strings.TrimSpace(q.Get("key")), Event: strings.TrimSpace(q.Get("event")),
		Actor: strings.TrimSpace(q.Get("actor")), From: q.Get("from"), To: q.Get("to"), Limit: q.Get("limit"),
	}
	base := url.Values{}
	for k, val := range map[string]string{"key": form.Key, "event": form.Event, "actor": form.Actor,
		"from": form.From, "to": form.To, "limit": form.Limit} {
		if val != "" {
			base.Set(k, val)
		}
	}
	csvQ := cloneValues(base)
	csvQ.Del("limit")
	csvQ.Set("format", "csv")
	excelQ := cloneValues(csvQ)
	excelQ.Set("format", "excel")
	verifyQ := cloneValues(base)
	verifyQ.Set("verify", "1")
	v := views.AuditListView{
		Page: h.page(c, "audit", l.AuditTitle), Filter: form,
		CSVHref: "/admin/audit?" + csvQ.Encode(), ExcelHref: "/admin/audit?" + excelQ.Encode(),
		VerifyHref: "/admin/audit?" + verifyQ.Encode(),
	}
	events, known := eventChoices(l, form.Event)
	v.Events = events

	f := store.AuditFilter{OperationKey: form.Key, Event: form.Event, Actor: form.Actor}
	var err error
	if form.Event != "" && !known {
		v.Error = l.ErrBadEvent
		return Render(c, http.StatusUnprocessableEntity, views.AuditList(v))
	}
	if f.From, f.To, err = h.dateRange(form.From, form.To); err != nil {
		v.Error = l.ErrBadDate
		return Render(c, http.StatusUnprocessableEntity, views.AuditList(v))
	}
	switch q.Get("format") {
	case "csv":
		return h.auditCSV(c, f)
	case "excel":
		return h.auditExcel(c, f)
	}
	limit, ok := h.limit(form.Limit)
	if !ok {
		v.Error = l.ErrBadLimit
		return Render(c, http.StatusUnprocessableEntity, views.AuditList(v))
	}
	if b := q.Get("before"); b != "" {
		if f.BeforeID, err = strconv.ParseInt(b, 10, 64); err != nil || f.BeforeID <= 0 {
			v.Error = l.ErrBadBefore
			return Render(c, http.StatusUnprocessableEntity, views.AuditList(v))
		}
	}
	f.Limit = limit + 1
	evs, err := h.d.Store.AuditEvents(c.Request().Context(), f)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if len(evs) > limit {
		evs = evs[:limit]
		next := cloneValues(base)
		next.Set("before", strconv.FormatInt(evs[len(evs)-1].ID, 10))
		v.OlderHref = "/admin/audit?" + next.Encode()
	}
	if f.BeforeID > 0 {
		v.FirstHref = "/admin/audit"
		if len(base) > 0 {
			v.FirstHref += "?" + base.Encode()
		}
	}
	v.Rows = h.eventRows(c, evs, "")

	if q.Get("verify") == "1" {
		rep, err := h.d.Store.VerifyAudit(c.Request().Context())
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		v.Verified, v.ChainOK = true, rep.BrokenAt == 0
		if v.ChainOK {
			v.ChainText = fmt.Sprintf(l.ChainOKFmt, rep.Events)
			if rep.LastID != 0 {
				// As oncegate audit verify prints it, to be noted and
				// checked later with --head.
				v.ChainHead = strconv.FormatInt(rep.LastID, 10) + ":" + rep.LastHash
				v.HeadAt = formatSeconds(rep.LastAt, h.d.Location, lang(c))
				v.HeadCheck = "oncegate audit verify --head " + v.ChainHead
			}
		} else {
			v.ChainText = fmt.Sprintf(l.ChainBrokenFmt, rep.BrokenAt, rep.Reason)
		}
	}
	return Render(c, http.StatusOK, views.AuditList(v))
}

// auditCSV streams every event matching f as CSV, newest first, with a
// header row. encoding/csv quotes fields holding commas, quotes or line
// breaks; a field a spreadsheet would take for a formula is prefixed
// with an apostrophe. The file starts with a UTF-8 byte order mark: Excel
// on Windows reads a CSV without one in the local code page and garbles
// Cyrillic. Details are JSON with <, > and & as themselves (a CSV is no
// HTML); the chain hash covers the same JSON either way, as it hashes
// details in their escaped form.
func (h *Handler) auditCSV(c echo.Context, f store.AuditFilter) error {
	ctx := c.Request().Context()
	name := "oncegate-audit-" + h.now().In(h.d.Location).Format("20060102-150405") + ".csv"
	hd := c.Response().Header()
	hd.Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	hd.Set(echo.HeaderContentDisposition, `attachment; filename="`+name+`"`)
	c.Response().WriteHeader(http.StatusOK)

	if _, err := c.Response().Write([]byte(utf8BOM)); err != nil {
		return fmt.Errorf("audit csv: %w", err)
	}
	w := csv.NewWriter(c.Response())
	if err := w.Write([]string{"id", "at", "actor_kind", "actor", "event", "operation_key", "detail", "prev_hash", "hash"}); err != nil {
		return fmt.Errorf("audit csv: %w", err)
	}
	f.Limit = csvBatch
	for {
		evs, err := h.d.Store.AuditEvents(ctx, f)
		if err != nil {
			// The header is out: all that is left is to stop short.
			h.d.Log.Error("audit csv: read events", "err", err)
			w.Flush()
			return nil
		}
		for _, e := range evs {
			rec := []string{
				strconv.FormatInt(e.ID, 10), e.At.UTC().Format(time.RFC3339Nano), e.Actor.Kind, e.Actor.Name,
				e.Event, e.OperationKey, h.shownDetail(e.Detail), e.PrevHash, e.Hash,
			}
			for i := range rec {
				rec[i] = noFormula(rec[i])
			}
			if err := w.Write(rec); err != nil {
				return fmt.Errorf("audit csv: %w", err)
			}
		}
		w.Flush()
		if err := w.Error(); err != nil {
			return fmt.Errorf("audit csv: %w", err)
		}
		if len(evs) < csvBatch {
			return nil
		}
		f.BeforeID = evs[len(evs)-1].ID
	}
}

// noFormula keeps a spreadsheet from running a cell as a formula.
func noFormula(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
