package sim

// The Bitrix24 portal's outbound webhooks
// (https://apidocs.bitrix24.com/local-integrations/local-webhooks.html):
// a person makes one in Developer resources with a handler URL and the
// events it reacts to, and the portal shows its token. When such an event
// happens (a lead, deal, contact or company added or updated, through
// REST or by a person) the portal POSTs to the handler, Content-Type
// application/x-www-form-urlencoded, as PHP's http_build_query encodes it:
//
//	event=ONCRMDEALUPDATE&event_handler_id=3&data%5BFIELDS%5D%5BID%5D=5&ts=1700000000
//	&auth%5Bdomain%5D=…&auth%5Bclient_endpoint%5D=…&auth%5Bserver_endpoint%5D=…
//	&auth%5Bmember_id%5D=…&auth%5Bapplication_token%5D=…
//
// Bitrix24 calls a handler once: an error or no answer is logged at the
// portal and the event is gone ("no second chances"). The domain and
// client_endpoint are the simulator's address as the call that caused the
// event reached it; the token is Bitrix24ApplicationToken.
//
// event.bind, event.get and event.unbind need an application's OAuth
// context; through an inbound webhook (the only way into this simulator,
// as into a firm's portal without an installed application) the portal
// answers them 403 WRONG_AUTH_TYPE "Current authorization type is denied
// for this method", as the REST module throws AuthTypeException for any
// authorization but OAuth. Outbound webhooks are made with
// (*Server).AddBitrix24OutboundWebhook or POST
// /_sim/bitrix24/outbound_webhooks, or, for `oncegate sim` and serve's
// built-in simulators, BITRIX24_SIM_EVENT_HANDLER (one webhook for every
// event below). They outlive /_sim/reset, as the portal's settings do.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Environment variables the Bitrix24 simulator reads in New: the token of
// its outbound webhooks, and a handler that gets every event.
const (
	Bitrix24ApplicationTokenEnv = "BITRIX24_APPLICATION_TOKEN"
	Bitrix24EventHandlerEnv     = "BITRIX24_SIM_EVENT_HANDLER"
)

// DefaultBitrix24ApplicationToken is the outbound webhooks' token when
// BITRIX24_APPLICATION_TOKEN is not set.
const DefaultBitrix24ApplicationToken = "sim-application-token"

// Bitrix24MemberID is the simulated portal's member_id, which every event
// carries.
const Bitrix24MemberID = "6f1d2c8e4b7a4e0f9c3d5a1b2e8f7c60"

// Bitrix24Events are the events the simulated portal sends.
var Bitrix24Events = []string{
	"ONCRMLEADADD", "ONCRMLEADUPDATE", "ONCRMDEALADD", "ONCRMDEALUPDATE",
	"ONCRMCONTACTADD", "ONCRMCONTACTUPDATE", "ONCRMCOMPANYADD", "ONCRMCOMPANYUPDATE",
}

// Bitrix24ApplicationToken returns the token the simulated portal's
// outbound webhooks carry: BITRIX24_APPLICATION_TOKEN when set,
// DefaultBitrix24ApplicationToken otherwise. A simulator reads it once, in
// New.
func Bitrix24ApplicationToken() string {
	if t := os.Getenv(Bitrix24ApplicationTokenEnv); t != "" {
		return t
	}
	return DefaultBitrix24ApplicationToken
}

// Bitrix24OutboundWebhook is one outbound webhook of the portal.
type Bitrix24OutboundWebhook struct {
	ID      int      `json:"id"`
	Handler string   `json:"handler"`
	Events  []string `json:"events"`
	// HandlerIDs are the event_handler_id each of its events carries.
	HandlerIDs       map[string]int `json:"event_handler_ids"`
	ApplicationToken string         `json:"application_token"`
}

// b24Events are the portal's outbound webhooks and the events sent.
type b24Events struct {
	token   string
	notices *notifier

	mu          sync.Mutex
	hooks       []Bitrix24OutboundWebhook
	nextHook    int
	nextHandler int
	origin      string // scheme://host of the latest call, for events no call caused
}

// registerEvents gives the portal its outbound webhooks; called by
// registerBitrix24.
func (b *bitrix24Sim) registerEvents() {
	ev := &b24Events{token: Bitrix24ApplicationToken(), notices: newNotifier(), nextHook: 1, nextHandler: 1}
	b.events = ev
	b.s.OnReset(ev.notices.reset)
	b.s.OnClose(ev.notices.close)
	if h := os.Getenv(Bitrix24EventHandlerEnv); h != "" {
		ev.add(h, Bitrix24Events) // a bad URL adds nothing; events then go nowhere
	}
	b.s.Handle("POST /_sim/bitrix24/outbound_webhooks", b.handleAddHook)
	b.s.Handle("GET /_sim/bitrix24/outbound_webhooks", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]any{"outbound_webhooks": ev.list()})
	})
	b.s.Handle("DELETE /_sim/bitrix24/outbound_webhooks/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.Atoi(r.PathValue("id"))
		if !ev.remove(id) {
			WriteJSON(w, http.StatusNotFound, map[string]string{"error": "no such outbound webhook"})
			return
		}
		WriteJSON(w, http.StatusOK, map[string]any{"ok": true})
	})
	b.s.Handle("GET /_sim/bitrix24/events", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]any{"events": ev.notices.notices()})
	})
	b.s.Handle("POST /_sim/bitrix24/change", b.handleChange)
}

// AddBitrix24OutboundWebhook makes an outbound webhook, as a person does
// in the portal: handler gets the events named (of Bitrix24Events).
func (s *Server) AddBitrix24OutboundWebhook(handler string, events ...string) (Bitrix24OutboundWebhook, error) {
	return s.b24.events.add(handler, events)
}

// Bitrix24OutboundWebhooks lists the portal's outbound webhooks.
func (s *Server) Bitrix24OutboundWebhooks() []Bitrix24OutboundWebhook { return s.b24.events.list() }

// RemoveBitrix24OutboundWebhook deletes an outbound webhook; it reports
// whether there was one with that id.
func (s *Server) RemoveBitrix24OutboundWebhook(id int) bool { return s.b24.events.remove(id) }

// Bitrix24EventNotices returns the events sent since the last reset,
// oldest first, each with its one attempt once made.
func (s *Server) Bitrix24EventNotices() []Notice { return s.b24.events.notices.notices() }

func (ev *b24Events) add(handler string, events []string) (Bitrix24OutboundWebhook, error) {
	if handler == "" {
		return Bitrix24OutboundWebhook{}, errors.New("give a handler URL")
	}
	if err := checkNoticeURL(handler); err != nil {
		return Bitrix24OutboundWebhook{}, err
	}
	if len(events) == 0 {
		return Bitrix24OutboundWebhook{}, errors.New("give one or more events")
	}
	hook := Bitrix24OutboundWebhook{Handler: handler, HandlerIDs: map[string]int{}, ApplicationToken: ev.token}
	for _, e := range events {
		e = strings.ToUpper(e)
		if !slices.Contains(Bitrix24Events, e) {
			return Bitrix24OutboundWebhook{}, fmt.Errorf("event %q is not one the simulator sends (%s)", e, strings.Join(Bitrix24Events, ", "))
		}
		if !slices.Contains(hook.Events, e) {
			hook.Events = append(hook.Events, e)
		}
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	hook.ID = ev.nextHook
	ev.nextHook++
	for _, e := range hook.Events {
		hook.HandlerIDs[e] = ev.nextHandler
		ev.nextHandler++
	}
	ev.hooks = append(ev.hooks, hook)
	return hook, nil
}

func (ev *b24Events) list() []Bitrix24OutboundWebhook {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return append([]Bitrix24OutboundWebhook{}, ev.hooks...)
}

func (ev *b24Events) remove(id int) bool {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	n := len(ev.hooks)
	ev.hooks = slices.DeleteFunc(ev.hooks, func(h Bitrix24OutboundWebhook) bool { return h.ID == id })
	return len(ev.hooks) < n
}

// fire sends event about the record id to each outbound webhook that
// reacts to it. origin is scheme://host of the call that caused it, ""
// for none.
func (ev *b24Events) fire(event, id, origin string) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	switch {
	case origin != "":
		ev.origin = origin
	case ev.origin != "":
		origin = ev.origin
	default:
		origin = "http://bitrix24.sim"
	}
	domain := strings.TrimPrefix(strings.TrimPrefix(origin, "http://"), "https://")
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	for _, h := range ev.hooks {
		handlerID, ok := h.HandlerIDs[event]
		if !ok {
			continue
		}
		body := b24Form([][2]string{
			{"event", event}, {"event_handler_id", strconv.Itoa(handlerID)}, {"data[FIELDS][ID]", id}, {"ts", ts},
			{"auth[domain]", domain}, {"auth[client_endpoint]", origin + "/bitrix24/rest/"},
			{"auth[server_endpoint]", "https://oauth.bitrix.info/rest/"},
			{"auth[member_id]", Bitrix24MemberID}, {"auth[application_token]", h.ApplicationToken},
		})
		ev.notices.post(h.Handler, event, "application/x-www-form-urlencoded", []byte(body), []time.Duration{}, 1)
	}
}

// b24Form encodes pairs in their order, brackets escaped, as PHP's
// http_build_query does.
func b24Form(pairs [][2]string) string {
	parts := make([]string, len(pairs))
	for i, p := range pairs {
		parts[i] = url.QueryEscape(p[0]) + "=" + url.QueryEscape(p[1])
	}
	return strings.Join(parts, "&")
}

// b24Origin is scheme://host of a request as it reached the simulator.
func b24Origin(r *http.Request) string {
	if r.TLS != nil {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}

// changed fires the ADD or UPDATE event of an entity's record.
func (b *bitrix24Sim) changed(e *b24Entity, op, id, origin string) {
	if e != nil {
		b.events.fire("ONCRM"+strings.ToUpper(e.name)+op, id, origin)
	}
}

// eventMethod answers event.bind, event.get and event.unbind through the
// webhook: they need an application's OAuth context.
func (b *bitrix24Sim) eventMethod(w http.ResponseWriter, _ map[string]json.RawMessage, _ b24Req) {
	b24Error(w, http.StatusForbidden, "WRONG_AUTH_TYPE", "Current authorization type is denied for this method")
}

// handleAddHook serves POST /_sim/bitrix24/outbound_webhooks: {"handler":
// …, "events": ["ONCRMDEALUPDATE", …]}; it answers the webhook made.
func (b *bitrix24Sim) handleAddHook(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Handler string   `json:"handler"`
		Events  []string `json:"events"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "bad outbound webhook: " + err.Error()})
		return
	}
	hook, err := b.events.add(req.Handler, req.Events)
	if err != nil {
		WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	WriteJSON(w, http.StatusOK, hook)
}

// Bitrix24Change changes a lead, deal, contact or company as a person in
// the portal does (its responsible, in the card), firing its UPDATE event:
// Bitrix24Change("deal", 5, map[string]any{"STAGE_ID": "WON"}). It is not
// counted under "bitrix24_changes", which counts what integrations change.
func (s *Server) Bitrix24Change(entity string, id int, fields map[string]any) error {
	return s.b24.change(entity, id, fields, "")
}

func (b *bitrix24Sim) change(entity string, id int, fields map[string]any, origin string) error {
	e, ok := b24Entities[entity]
	if !ok {
		return fmt.Errorf("unknown entity %q (want lead, deal, contact or company)", entity)
	}
	key := strconv.Itoa(id)
	b.mu.Lock()
	var rec b24Record
	for _, r := range b.rowsOf(e.name) {
		if r["ID"] == key {
			rec = r
			break
		}
	}
	if rec != nil {
		b.apply(rec, fields, e.multiple, false)
		rec["DATE_MODIFY"] = time.Now().In(b24Zone).Format(b24DateTime)
		rec["MODIFY_BY_ID"] = b24Default(rec["ASSIGNED_BY_ID"], "1")
	}
	b.mu.Unlock()
	if rec == nil {
		return fmt.Errorf("no %s with ID %d", entity, id)
	}
	b.changed(e, "UPDATE", key, origin)
	return nil
}

// handleChange serves POST /_sim/bitrix24/change: {"entity": "deal",
// "id": 5, "fields": {"STAGE_ID": "WON"}}.
func (b *bitrix24Sim) handleChange(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Entity string         `json:"entity"`
		ID     int            `json:"id"`
		Fields map[string]any `json:"fields"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "bad change: " + err.Error()})
		return
	}
	if err := b.change(req.Entity, req.ID, req.Fields, b24Origin(r)); err != nil {
		WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"ok": true})
}
