package admin

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// eventStates are the states the events page filters by, in order, and
// the operations' status each looks like on the page.
var eventStates = []struct {
	state store.EventState
	tone  store.Status
}{
	{store.EventPending, store.StatusFailedRetryable},
	{store.EventDropped, store.StatusFailedFinal},
	{store.EventFailed, store.StatusFailedFinal},
	{store.EventRun, store.StatusSucceeded},
}

// The dashboard warns of notices dropped within eventsDroppedWithin and
// of notices still pending eventsStaleAfter after they came, counting
// up to eventsConcernLimit of each.
const (
	eventsDroppedWithin = 24 * time.Hour
	eventsStaleAfter    = 10 * time.Minute
	eventsConcernLimit  = 100
)

// eventsHref is the events page of source ("" for every source).
func eventsHref(source string) string {
	if source == "" {
		return "/admin/events"
	}
	return "/admin/events?" + url.Values{"source": {source}}.Encode()
}

// handleEventList serves GET /admin/events: the notices the sources sent,
// the newest first, filtered by source (?source=) and state (?state=),
// older pages by ?before= (the time the last row shown was received).
func (h *Handler) handleEventList(c echo.Context) error {
	ctx := c.Request().Context()
	l, lg := labels(c), lang(c)
	v := views.EventListView{Page: h.page(c, "events", l.EventsTitle)}
	f := store.EventFilter{Limit: h.d.PageSize + 1}
	q := c.QueryParams()
	base := url.Values{}

	state := store.EventState(q.Get("state"))
	for _, s := range eventStates {
		v.States = append(v.States, views.Option{Value: string(s.state), Label: l.EventStateLabel(string(s.state)), Selected: s.state == state})
		if s.state == state {
			f.State = state
			base.Set("state", string(state))
		}
	}
	// The sources configured, and one asked for that is no longer (its
	// notices stay in the journal until they are purged).
	source := q.Get("source")
	sources := slices.Clone(h.d.EventSources)
	if source != "" && !slices.Contains(sources, source) {
		sources = append(sources, source)
	}
	slices.Sort(sources)
	for _, s := range sources {
		v.Sources = append(v.Sources, views.Option{Value: s, Label: s, Selected: s == source})
	}
	if source != "" {
		f.Source = source
		base.Set("source", source)
	}
	if b := q.Get("before"); b != "" {
		t, err := time.Parse(time.RFC3339Nano, b)
		if err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, "bad before")
		}
		f.Before = t
		v.FirstHref = "/admin/events"
		if len(base) > 0 {
			v.FirstHref += "?" + base.Encode()
		}
	}

	list, err := h.d.Store.ListEvents(ctx, f)
	if err != nil {
		return fmt.Errorf("events: %w", err)
	}
	list, before := eventPage(list, h.d.PageSize)
	if !before.IsZero() {
		next := cloneValues(base)
		next.Set("before", before.UTC().Format(time.RFC3339Nano))
		v.OlderHref = "/admin/events?" + next.Encode()
	}
	for _, e := range list {
		v.Rows = append(v.Rows, h.eventRow(ctx, c, l, lg, e))
	}
	return Render(c, http.StatusOK, views.EventList(v))
}

// eventPage cuts list, read one over a page of limit newest first, to the
// page, and says where the next one starts: before the time the page's
// last row was received, zero when this is the last page. The rows one
// notice makes for several rules share their time, so a page does not end
// inside such a group: it would start the next page past the rest of it.
func eventPage(list []store.Event, limit int) ([]store.Event, time.Time) {
	if len(list) <= limit {
		return list, time.Time{}
	}
	page := list[:limit]
	cut := list[limit].ReceivedAt
	n := len(page)
	for n > 0 && page[n-1].ReceivedAt.Equal(cut) {
		n--
	}
	if n > 0 { // else one instant fills the page: show it, and go on past it
		page = page[:n]
	}
	return page, page[len(page)-1].ReceivedAt
}

// eventRow is one notice as the events page shows it.
func (h *Handler) eventRow(ctx context.Context, c echo.Context, l *views.Labels, lg string, e store.Event) views.EventListRow {
	r := views.EventListRow{
		ID: strconv.FormatInt(e.ID, 10), Received: formatSeconds(e.ReceivedAt, h.d.Location, lg),
		Source: e.Source, Event: e.Event, ObjectID: e.ObjectID,
		State: string(e.State), StateLabel: l.EventStateLabel(string(e.State)), Tone: string(store.StatusStarted),
		// The reason may quote what the source answered a read-back.
		Reason: h.d.Redactor.Foreign(e.Reason), Deliveries: e.Deliveries, Attempts: e.Attempts,
		Run: h.runTitle(c, e.Run), Key: e.OpKey, KeyHref: h.runHref(ctx, e.Run, e.OpKey),
	}
	for _, s := range eventStates {
		if s.state == e.State {
			r.Tone = string(s.tone)
		}
	}
	if e.State == store.EventPending && !e.NextAt.IsZero() {
		r.Next = formatSeconds(e.NextAt, h.d.Location, lg)
	}
	return r
}

// runTitle is the people's name of what a rule runs: a process or an
// intent.
func (h *Handler) runTitle(c echo.Context, name string) string {
	if _, ok := h.d.Catalog.Process(name); ok {
		return h.processTitle(c, name)
	}
	return h.intentTitle(c, name)
}

// runHref is the page of what a rule running run made under key: the
// catalog says whether run is a process or an intent, so a page of rows
// asks the journal only of a run the catalog no longer serves.
func (h *Handler) runHref(ctx context.Context, run, key string) string {
	if _, ok := h.d.Catalog.Process(run); ok {
		return processHref(key)
	}
	if _, ok := h.d.Catalog.Lookup(run); ok {
		return operationHref(key)
	}
	return h.keyHref(ctx, key)
}

// eventOrigins are the notices whose rule runs the operation or process
// of key, for its page; none for one an agent asked for, or when the
// journal cannot say (the page stands without them).
func (h *Handler) eventOrigins(c echo.Context, key string) []views.EventOrigin {
	if !strings.Contains(key, ":evt-") {
		return nil // only the gateway makes these keys; spare the others the read
	}
	evs, err := h.d.Store.EventsOfKey(c.Request().Context(), key)
	if err != nil {
		return nil
	}
	l, lg := labels(c), lang(c)
	var out []views.EventOrigin
	for _, e := range evs {
		out = append(out, views.EventOrigin{Href: eventsHref(e.Source), Facts: []views.Field{
			{Label: l.EventSource, Value: e.Source, TestID: "started-by-source"},
			{Label: l.EventName, Value: e.Event, Mono: true, TestID: "started-by-event"},
			{Label: l.EventObject, Value: e.ObjectID, Mono: true, TestID: "started-by-object"},
			{Label: l.EventReceived, Value: formatSeconds(e.ReceivedAt, h.d.Location, lg), TestID: "started-by-received"},
			{Label: l.EventDeliveries, Value: strconv.Itoa(e.Deliveries), TestID: "started-by-deliveries"},
			{Label: l.ColStatus, Value: l.EventStateLabel(string(e.State)), TestID: "started-by-state"},
		}})
	}
	return out
}

// eventAlert is the dashboard's warning of notices dropped lately or
// pending long, nil when there are none (or the journal cannot say).
func (h *Handler) eventAlert(c echo.Context) *views.Link {
	now := h.now()
	dropped, waiting, err := h.d.Store.EventConcerns(c.Request().Context(), now.Add(-eventsDroppedWithin), now.Add(-eventsStaleAfter), eventsConcernLimit)
	if err != nil || dropped == 0 && waiting == 0 {
		return nil
	}
	l := labels(c)
	var parts []string
	href := eventsHref("")
	if dropped > 0 {
		parts = append(parts, fmt.Sprintf(l.EventsDroppedFmt, dropped))
		href += "?state=" + string(store.EventDropped)
	}
	if waiting > 0 {
		parts = append(parts, fmt.Sprintf(l.EventsStaleFmt, waiting))
		if dropped == 0 {
			href += "?state=" + string(store.EventPending)
		} else {
			href = eventsHref("") // both: the whole list
		}
	}
	return &views.Link{Href: href, Label: fmt.Sprintf(l.EventsBannerOpen, strings.Join(parts, "; "))}
}
