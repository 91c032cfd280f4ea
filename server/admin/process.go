package admin

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/server/engine"
	"github.com/oncegate/oncegate/server/intent"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// processStates are the states the processes page filters by, in order.
var processStates = []store.ProcessState{
	store.ProcessNeedsReview, store.ProcessAwaitingApproval, store.ProcessUnknown, store.ProcessStarted,
	store.ProcessCompensating, store.ProcessCompensated, store.ProcessSucceeded, store.ProcessRejected,
}

// processAges are the ages the processes page filters by: not moved for
// at least so long.
var processAges = []struct {
	value string
	d     time.Duration
}{{"1h", time.Hour}, {"1d", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour}}

// processHref is the page of the process key.
func processHref(key string) string { return "/admin/processes/" + url.PathEscape(key) }

// ProcessHref is the admin UI's page of the process key, for links sent
// to people.
func ProcessHref(key string) string { return processHref(key) }

// handleProcessList serves GET /admin/processes: the processes, the most
// recently moved first, filtered by state (?state=).
func (h *Handler) handleProcessList(c echo.Context) error {
	l := labels(c)
	f := store.ProcessFilter{Limit: h.d.PageSize}
	state := store.ProcessState(c.QueryParam("state"))
	v := views.ProcessListView{Page: h.page(c, "processes", l.ProcessesTitle)}
	for _, s := range processStates {
		v.States = append(v.States, views.Option{Value: string(s), Label: l.ProcessStateLabel(string(s)), Selected: s == state})
		if s == state {
			f.State = s
		}
	}
	name := c.QueryParam("intent")
	for _, def := range h.d.Catalog.Processes() {
		if !slices.ContainsFunc(v.Intents, func(o views.Option) bool { return o.Value == def.Name }) {
			v.Intents = append(v.Intents, views.Option{Value: def.Name, Label: def.Title.In(lang(c)), Selected: def.Name == name})
		}
		if def.Name == name {
			f.Intent = name
		}
	}
	// Age: not moved for so long (stuck ones first to a person's eye).
	age := c.QueryParam("idle")
	for _, a := range processAges {
		v.Ages = append(v.Ages, views.Option{Value: a.value, Label: formatDuration(a.d, l), Selected: a.value == age})
		if a.value == age {
			f.Before = h.now().Add(-a.d)
		}
	}
	list, err := h.d.Store.ListProcesses(c.Request().Context(), f)
	if err != nil {
		return fmt.Errorf("processes: %w", err)
	}
	for _, p := range list {
		v.Rows = append(v.Rows, views.ProcessRow{
			Key: p.Key, Href: processHref(p.Key), Intent: h.processTitle(c, p.Intent),
			State: string(p.State), StateLabel: l.ProcessStateLabel(string(p.State)), Step: p.Step,
			Updated: formatTime(p.UpdatedAt, h.d.Location, lang(c)),
		})
	}
	return Render(c, http.StatusOK, views.ProcessList(v))
}

// processTitle is the people's name of a process.
func (h *Handler) processTitle(c echo.Context, name string) string {
	if def, ok := h.d.Catalog.Process(name); ok {
		return def.Title.In(lang(c))
	}
	return name
}

// handleProcessShow serves GET /admin/processes/{key}: the process, its
// steps with their objects and their undoing, and its audit trail.
func (h *Handler) handleProcessShow(c echo.Context) error {
	key, err := keyParam(c)
	if err != nil {
		return err
	}
	return h.renderProcess(c, http.StatusOK, key, "", "")
}

// renderProcess renders the page of the process key, with a refused
// resolve form's note and message.
func (h *Handler) renderProcess(c echo.Context, status int, key, note, msg string) error {
	if h.d.Process == nil {
		return echo.NewHTTPError(http.StatusNotFound, "no such process")
	}
	ctx := c.Request().Context()
	p, steps, err := h.d.Process(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return echo.NewHTTPError(http.StatusNotFound, "no such process")
	}
	if err != nil {
		return fmt.Errorf("process %q: %w", key, err)
	}
	l, lg := labels(c), lang(c)
	v := views.ProcessView{
		Page: h.page(c, "processes", key), Key: p.Key, State: string(p.State), StateLabel: l.ProcessStateLabel(string(p.State)),
		Review: p.State == store.ProcessNeedsReview && can(c, store.RoleAdmin, store.RoleOperator), ReviewStep: p.Step,
		ResolveURL: processHref(p.Key) + "/resolve", FormNote: note, FormError: msg,
	}
	v.Facts = []views.Field{
		{Label: l.Intent, Value: h.processTitle(c, p.Intent)},
		{Label: l.Agent, Value: p.Agent},
		{Label: l.Created, Value: formatTime(p.CreatedAt, h.d.Location, lg)},
		{Label: l.Updated, Value: formatTime(p.UpdatedAt, h.d.Location, lg)},
	}
	if p.ErrorCode != "" {
		v.Facts = append(v.Facts, views.Field{Label: l.FailedStep, Value: l.ErrorText(p.ErrorCode, p.ErrorMessage) + " (" + p.ErrorCode + ")", TestID: "process-error"})
	}
	v.StartedBy = h.eventOrigins(c, p.Key)
	def, _ := h.d.Catalog.Version(p.Intent, p.IntentVersion)
	for i, s := range steps {
		v.Steps = append(v.Steps, h.stepRow(c, def, i, s))
	}
	if v.History, err = h.history(ctx, c, key, traceEvents, ""); err != nil {
		return err
	}
	return Render(c, status, views.Process(v))
}

// stepRow is step i of a process (of definition def) for people.
func (h *Handler) stepRow(c echo.Context, def *intent.Intent, i int, s engine.StepView) views.ProcessStepRow {
	l := labels(c)
	r := views.ProcessStepRow{Name: s.Name, Intent: h.intentTitle(c, s.Intent), State: "pending", StateLabel: l.StepPending, Key: s.Key}
	switch {
	case s.Op != nil:
		r.State, r.StateLabel, r.Href, r.Object = string(s.Op.Status), l.OutcomeLabel(string(s.Op.Status), s.Op.ErrorCode), "/admin/operations/"+url.PathEscape(s.Key), s.Op.TargetObjectID
		if s.Op.ErrorCode != "" {
			r.Error = l.ErrorText(s.Op.ErrorCode, s.Op.ErrorMessage)
		}
	case s.Refusal != nil:
		r.State, r.StateLabel, r.Error = "rejected", l.ProcessStateLabel("rejected"), l.ErrorText(s.Refusal.Code, s.Refusal.Message)
	}
	if def != nil && i < len(def.Steps) {
		switch undo := def.Steps[i].Compensate; undo.Kind {
		case intent.CompensateNone:
			r.Undo = l.UndoNone
		case intent.CompensateManual:
			r.Undo = l.UndoManual
		default:
			r.Undo = h.intentTitle(c, undo.Intent)
		}
	}
	if u := s.Compensation; u != nil && u.Op != nil {
		r.UndoState, r.UndoHref = l.OutcomeLabel(string(u.Op.Status), u.Op.ErrorCode), "/admin/operations/"+url.PathEscape(u.Key)
	}
	return r
}

// handleProcessResolve serves POST /admin/processes/{key}/resolve: a
// person undoes the step the process waits at again (action retry), or
// records it undone by hand (action undone), saying what and why.
func (h *Handler) handleProcessResolve(c echo.Context) error {
	key, err := keyParam(c)
	if err != nil {
		return err
	}
	l := labels(c)
	note := strings.TrimSpace(c.FormValue("note"))
	action := c.FormValue("action")
	switch {
	case action != store.ResolveRetry && action != store.ResolveUndone:
		return echo.NewHTTPError(http.StatusBadRequest, "no such action")
	case note == "":
		return h.renderProcess(c, http.StatusUnprocessableEntity, key, note, l.ErrNoteRequired)
	case utf8.RuneCountInString(note) > maxReason:
		return h.renderProcess(c, http.StatusUnprocessableEntity, key, note, fmt.Sprintf(l.ErrCommentTooLong, maxReason))
	}
	_, err = h.d.Store.ResolveProcess(actorCtx(c), key, action, session(c).User.Name, note)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return echo.NewHTTPError(http.StatusNotFound, "no such process")
	case errors.Is(err, store.ErrNotInReview):
		return h.renderProcess(c, http.StatusUnprocessableEntity, key, note, l.ErrNotInReview)
	case err != nil:
		return fmt.Errorf("resolve process %q: %w", key, err)
	}
	return c.Redirect(http.StatusSeeOther, processHref(key))
}

// approvalProcess is the process the operation key is a step of (or
// undoes a step of), for its approval card: what the steps before it
// made, and what a denial undoes; nil for an operation of no process.
func (h *Handler) approvalProcess(c echo.Context, key string) *views.ApprovalProcess {
	if h.d.ProcessOfStep == nil {
		return nil
	}
	p, steps, err := h.d.ProcessOfStep(c.Request().Context(), key)
	if err != nil {
		return nil // no process's, or the journal could not say: the card stands without it
	}
	l, lg := labels(c), lang(c)
	def, _ := h.d.Catalog.Version(p.Intent, p.IntentVersion)
	ap := &views.ApprovalProcess{Title: h.processTitle(c, p.Intent), Href: processHref(p.Key)}
	at := -1
	for i, s := range steps {
		if s.Key == key {
			at = i
			break
		}
	}
	if at < 0 {
		return ap // a compensation: its process is enough to say
	}
	ap.Step = fmt.Sprintf(l.StepOfFmt, steps[at].Name)
	var undo []string
	for i := at - 1; i >= 0; i-- {
		s := steps[i]
		if s.Op == nil || s.Op.Status != store.StatusSucceeded {
			continue
		}
		object := s.Op.TargetObjectID
		if n := parsePayload(s.Op.Result).str("number"); n != "" {
			object = n
		}
		ap.Made = append([]string{fmt.Sprintf(l.MadeFmt, h.intentTitle(c, s.Intent), object, l.TargetLabel(s.Op.TargetSystem),
			formatTime(s.Op.CompletedAt, h.d.Location, lg))}, ap.Made...)
		if def == nil || i >= len(def.Steps) {
			continue
		}
		switch u := def.Steps[i].Compensate; u.Kind {
		case intent.CompensateIntent:
			undo = append(undo, fmt.Sprintf(l.UndoOfFmt, h.intentTitle(c, s.Intent), h.intentTitle(c, u.Intent)))
		case intent.CompensateManual:
			undo = append(undo, fmt.Sprintf(l.UndoOfFmt, h.intentTitle(c, s.Intent), l.UndoManual))
		}
	}
	ap.OnDeny = l.OnDenyNothing
	if len(undo) > 0 {
		ap.OnDeny = fmt.Sprintf(l.OnDenyFmt, strings.Join(undo, "; "))
	}
	return ap
}
