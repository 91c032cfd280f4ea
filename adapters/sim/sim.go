// Package sim holds faithful simulators of the systems oncegate acts in:
// a 1C HTTP service, Bitrix24 REST and YooKassa v3, each on its real wire
// protocol, all served by one http.Handler under /onec/, /bitrix24/ and
// /yookassa/, plus a control API under /_sim/ that injects faults and
// reports how many effects each key produced.
//
// Tests and the out-of-the-box demo use them; production points the same
// adapters at real URLs.
package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Target names used by the control API.
const (
	OneC     = "onec"
	Bitrix24 = "bitrix24"
	YooKassa = "yookassa"
	// OneCOData is 1C's standard OData interface (onec_odata.go).
	OneCOData = "onec_odata"
)

// Fault kinds accepted by POST /_sim/faults.
const (
	FaultDropResponse = "drop_response_after_commit"
	FaultDelay        = "delay"
	FaultStatus       = "status"
	FaultReset        = "reset_before_read"
	// FaultTargetError answers with the target's own error shape (422 from
	// 1C, 400 from Bitrix24 and YooKassa) whose text holds a stack trace,
	// SQL, a host name and credentials, and commits nothing: what a badly
	// behaved target may send, which must never reach an agent.
	FaultTargetError = "target_error"
	// FaultLateCommit (onec_odata and onec, with "delay_ms"): the create
	// is held without an answer past the client's timeout and commits once
	// delay_ms has passed, after the client has gone. At onec, whose module
	// refuses to commit past the gateway's deadline (a plain delay is then
	// refused), it is a commit that lands anyway: 1C's clock behind the
	// gateway's, or a module without the check.
	FaultLateCommit = "late_commit"
)

// LeakyErrorText is the text FaultTargetError puts in the error body.
const LeakyErrorText = `{ОбщийМодуль.ИнтеграцияOncegate.Модуль(1187)}: Ошибка при вызове метода контекста (Записать)
	at ОбработкаЗаказов.СоздатьДокумент(82)
SELECT Ссылка FROM Документ.СчетНаОплату WHERE Номер = &Номер
Srvr="srv-1c-prod.corp.local:1541";Ref="accounting";Usr="integration";Pwd="S3cr3t-pass";
Authorization: Basic aW50ZWdyYXRpb246UzNjcjN0LXBhc3M=`

// Which calls a fault applies to.
const (
	OnExecute = "execute" // calls that create an effect (the default)
	OnLookup  = "lookup"  // calls that look an effect up
	OnAny     = "any"
)

// Fault is one injected failure, as posted to /_sim/faults.
type Fault struct {
	Target  string `json:"target"`
	Fault   string `json:"fault"`
	Times   int    `json:"times"`
	DelayMS int    `json:"delay_ms,omitempty"`
	Status  int    `json:"status,omitempty"`
	// On selects the calls the fault applies to: "execute" (default),
	// "lookup" or "any".
	On string `json:"on,omitempty"`
}

// Seeded reference data (external ids). Everything else is not found.
var (
	Organizations = map[string]RefState{"org-main": Active}
	Customers     = map[string]RefState{"customer-1042": Active, "customer-2001": Active, "customer-blocked-1": Blocked}
	Products      = map[string]RefState{"product-778": Active, "product-779": Active, "product-deleted-1": Deleted}
	Warehouses    = map[string]RefState{"warehouse-01": Active}
	Units         = map[string]RefState{"pcs": Active, "kg": Active}
	Accounts      = map[string]RefState{"merchant-account-17": Active, "merchant-account-blocked-1": Blocked}
)

// RefState is the state of a seeded reference.
type RefState int

// Reference states.
const (
	Active RefState = iota + 1
	Blocked
	Deleted
)

// Server is the simulators and their control API. The zero value is not
// usable; call New.
type Server struct {
	mux *http.ServeMux

	mu      sync.Mutex
	faults  []*Fault
	effects map[string]map[string]int // target → key → effects created
	calls   map[string]map[string]int // target → key → execute calls received
	resets  []func()                  // per-target state reset
	b24     *bitrix24Sim              // the Bitrix24 simulator, for its portal settings
	odata   *odata                    // the OData simulator, for its settings
	onec    *onec                     // the 1C simulator, for the intents it publishes
	closers []func()                  // stop background work (notice.go)

	flight sync.Mutex
	busy   map[string]int // first path segment → requests being served
	peak   map[string]int // … and the most served at once
}

// New returns simulators with seeded reference data and no faults.
func New() *Server {
	s := &Server{mux: http.NewServeMux()}
	s.clear()
	s.mux.HandleFunc("POST /_sim/faults", s.handleFaults)
	s.mux.HandleFunc("GET /_sim/effects", s.handleEffects)
	s.mux.HandleFunc("GET /_sim/calls", s.handleCalls)
	s.mux.HandleFunc("POST /_sim/reset", s.handleReset)
	for _, register := range registrations {
		register(s)
	}
	return s
}

// registrations are the per-target simulators; each file adds itself in init.
var registrations []func(*Server)

// ServeHTTP implements http.Handler, counting the requests of each
// simulator being served at once.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seg, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	s.flight.Lock()
	if s.busy == nil {
		s.busy, s.peak = map[string]int{}, map[string]int{}
	}
	s.busy[seg]++
	s.peak[seg] = max(s.peak[seg], s.busy[seg])
	s.flight.Unlock()
	defer func() {
		s.flight.Lock()
		s.busy[seg]--
		s.flight.Unlock()
	}()
	s.mux.ServeHTTP(w, r)
}

// PeakInFlight is the most requests under /segment/ (yookassa, odata, …)
// served at once so far.
func (s *Server) PeakInFlight(segment string) int {
	s.flight.Lock()
	defer s.flight.Unlock()
	return s.peak[segment]
}

// Handle registers a handler of a target simulator.
func (s *Server) Handle(pattern string, h http.HandlerFunc) { s.mux.HandleFunc(pattern, h) }

// OnReset registers a function that forgets a target simulator's state.
func (s *Server) OnReset(f func()) { s.resets = append(s.resets, f) }

// Start serves the simulators on addr ("127.0.0.1:0" picks a free port) and
// returns the server and its base URL, e.g. "http://127.0.0.1:9001".
func Start(addr string) (*Server, *http.Server, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, "", fmt.Errorf("listen for simulators: %w", err)
	}
	s := New()
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	hs.RegisterOnShutdown(s.Close) // the notices still being sent stop with it
	go hs.Serve(ln)
	return s, hs, "http://" + ln.Addr().String(), nil
}

// Effect counts one effect created for key at target.
func (s *Server) Effect(target, key string) {
	s.mu.Lock()
	s.effects[target][key]++
	s.mu.Unlock()
}

// Effects returns the number of effects key produced at target.
func (s *Server) Effects(target, key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.effects[target][key]
}

// EffectsAt returns the number of effects made at target, of every key.
func (s *Server) EffectsAt(target string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.effects[target] {
		n += c
	}
	return n
}

// Call counts one execute call received for key at target.
func (s *Server) Call(target, key string) {
	s.mu.Lock()
	s.calls[target][key]++
	s.mu.Unlock()
}

// Calls returns the number of execute calls received for key at target.
func (s *Server) Calls(target, key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[target][key]
}

// Inject adds a fault, as POST /_sim/faults does.
func (s *Server) Inject(f Fault) error {
	switch f.Target {
	case OneC, Bitrix24, YooKassa, OneCOData:
	default:
		return fmt.Errorf("unknown target %q (want onec, bitrix24, yookassa or onec_odata)", f.Target)
	}
	switch f.Fault {
	case FaultDropResponse, FaultReset, FaultTargetError:
	case FaultDelay:
		if f.DelayMS <= 0 {
			return errors.New("delay needs delay_ms > 0")
		}
	case FaultLateCommit:
		if f.Target != OneCOData && f.Target != OneC || f.DelayMS <= 0 {
			return errors.New("late_commit is for onec_odata or onec and needs delay_ms > 0")
		}
	case FaultStatus:
		if f.Status != 429 && f.Status != 500 && f.Status != 502 && f.Status != 503 {
			return errors.New("status must be 429, 500, 502 or 503")
		}
	default:
		return fmt.Errorf("unknown fault %q", f.Fault)
	}
	switch f.On {
	case "":
		f.On = OnExecute
	case OnExecute, OnLookup, OnAny:
	default:
		return fmt.Errorf("unknown on %q (want execute, lookup or any)", f.On)
	}
	if f.Times <= 0 {
		f.Times = 1
	}
	s.mu.Lock()
	s.faults = append(s.faults, &f)
	s.mu.Unlock()
	return nil
}

// ClearFaults forgets the faults not yet taken; what was made stays.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	s.faults = nil
	s.mu.Unlock()
}

// Reset forgets all faults, effects, calls and created objects.
func (s *Server) Reset() {
	s.mu.Lock()
	s.clear()
	s.mu.Unlock()
	for _, f := range s.resets {
		f()
	}
}

func (s *Server) clear() {
	s.faults = nil
	s.effects = map[string]map[string]int{OneC: {}, Bitrix24: {}, YooKassa: {}, OneCOData: {}, OneCODataChanges: {}, Bitrix24Changes: {}}
	s.calls = map[string]map[string]int{OneC: {}, Bitrix24: {}, YooKassa: {}, OneCOData: {}}
}

// TakeFault consumes one pending fault for a call of kind (OnExecute or
// OnLookup) at target. It returns nil when none applies.
func (s *Server) TakeFault(target, kind string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.Target != target || (f.On != OnAny && f.On != kind) {
			continue
		}
		f.Times--
		if f.Times <= 0 {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
		}
		c := *f
		return &c
	}
	return nil
}

// Before applies the part of a fault that happens before the simulator
// does anything: reset_before_read closes the connection with a reset,
// status answers 429/500/502/503, delay waits (ignoring the caller having
// gone, so the commit that follows still happens). It reports whether the
// call is over.
func (f *Fault) Before(w http.ResponseWriter) bool {
	if f == nil {
		return false
	}
	switch f.Fault {
	case FaultReset:
		abort(w, true)
		return true
	case FaultStatus:
		if f.Status == http.StatusTooManyRequests || f.Status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.Status)
		fmt.Fprintf(w, `{"error":"injected","status":%d}`, f.Status)
		return true
	case FaultDelay:
		time.Sleep(time.Duration(f.DelayMS) * time.Millisecond)
	case FaultTargetError:
		switch f.Target {
		case OneC:
			WriteJSON(w, http.StatusUnprocessableEntity, map[string]any{"errors": []any{map[string]any{"code": "TARGET_INTERNAL_ERROR", "message": LeakyErrorText}}})
		case Bitrix24:
			WriteJSON(w, http.StatusBadRequest, map[string]any{"error": "", "error_description": LeakyErrorText})
		case OneCOData:
			WriteJSON(w, http.StatusInternalServerError, odataErrorBody("-1", LeakyErrorText))
		default:
			WriteJSON(w, http.StatusBadRequest, map[string]any{"type": "error", "id": "sim-error", "code": "invalid_request", "description": LeakyErrorText})
		}
		return true
	}
	return false
}

// After applies the part of a fault that happens once the effect is
// committed: drop_response_after_commit closes the connection without
// answering. It reports whether the call is over.
func (f *Fault) After(w http.ResponseWriter) bool {
	if f == nil || f.Fault != FaultDropResponse {
		return false
	}
	abort(w, false)
	return true
}

// abort closes the client connection without an answer; with reset, the
// close sends a TCP reset instead of an orderly shutdown.
func abort(w http.ResponseWriter, reset bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		tc.SetLinger(0)
	}
	conn.Close()
}

// WriteJSON answers with v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// Detached returns a context that outlives the caller's request: a
// simulated commit finishes even when the client has gone.
func Detached(r *http.Request) context.Context { return context.WithoutCancel(r.Context()) }

func (s *Server) handleFaults(w http.ResponseWriter, r *http.Request) {
	var f Fault
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "bad fault: " + err.Error()})
		return
	}
	if err := s.Inject(f); err != nil {
		WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"ok": true})
}

func (s *Server) handleEffects(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	WriteJSON(w, http.StatusOK, s.effects)
}

func (s *Server) handleCalls(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	WriteJSON(w, http.StatusOK, s.calls)
}

func (s *Server) handleReset(w http.ResponseWriter, r *http.Request) {
	s.Reset()
	WriteJSON(w, http.StatusOK, map[string]any{"ok": true})
}
