package sim

import (
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The 1C simulator plays the firm's 1C configuration with the oncegate HTTP
// service published at {base}/hs/oncegate/v1 (adapters/onec/bsl is the real
// module). Its state is what the 1C database would hold: documents and the
// information register of operation keys, unique by (intent, key), written in
// the same transaction as the document.

// onecRoot is the service root under the simulators' base URL.
const onecRoot = "/onec/hs/oncegate/v1"

// OneCIntentsEnv names the environment variable listing (comma-separated)
// the extra intents the simulated 1C service publishes from the start, as
// a firm's module with their handlers added would: `oncegate sim` and
// serve's built-in simulators read it. POST /_sim/onec/intents and
// Server.PublishOneC change the list later.
const OneCIntentsEnv = "ONEC_SIM_INTENTS"

// onecIntentName is an intent name; onecMaxIntent is the length of the
// register's ТипОперации dimension, which holds it.
var onecIntentName = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$`)

const onecMaxIntent = 50

// Intents the 1C service publishes.
const (
	onecInvoiceCreate = "invoice.create"
	onecOrderDraft    = "sales_order.create_draft"
	onecOrderPost     = "sales_order.post"
)

// Codes of the 1C service.
const (
	onecKeyMissing       = "IDEMPOTENCY_KEY_MISSING"
	onecKeyMismatch      = "IDEMPOTENCY_KEY_PAYLOAD_MISMATCH"
	onecIntentNotAllowed = "INTENT_NOT_ALLOWED"
	onecValidation       = "VALIDATION_ERROR"
	onecRefNotFound      = "REFERENCE_NOT_FOUND"
	onecRefInactive      = "REFERENCE_INACTIVE"
	onecInvalidState     = "INVALID_STATE"
	onecNotFound         = "NOT_FOUND"
	// 503, nothing done: the key's managed lock was not granted in time,
	// or the call's deadline passed before 1C could commit.
	onecLockConflict     = "LOCK_CONFLICT"
	onecDeadlineExceeded = "DEADLINE_EXCEEDED"
	// 500: an unexpected exception, rolled back; its text goes to 1C's
	// event log only.
	onecInternal = "INTERNAL_ERROR"
)

// The headers with which the gateway bounds a call (adapters/onec): the
// instant it stops waiting, Unix time in milliseconds, and its wait in
// milliseconds. The module refuses to commit once either has passed.
const (
	OneCDeadlineHeader = "Oncegate-Deadline"
	OneCTimeoutHeader  = "Oncegate-Timeout-Ms"
)

// OneCLockTimeout is how long a call waits for another call's managed
// lock on the same key before the service answers 503 LOCK_CONFLICT: 1C's
// default data lock timeout (20 s). SetOneCLockTimeout changes it.
const OneCLockTimeout = 20 * time.Second

// Document states.
const (
	onecCreated = "created"
	onecDraft   = "draft"
	onecPosted  = "posted"
)

// onecMaxKey is the length of the register's key dimension.
const onecMaxKey = 255

func init() {
	registrations = append(registrations, registerOneC)
}

func registerOneC(s *Server) {
	o := &onec{s: s, extra: map[string]bool{}, lockWait: OneCLockTimeout}
	o.reset()
	for _, name := range strings.Split(os.Getenv(OneCIntentsEnv), ",") {
		// A name the service could not route by is left out; the
		// gateway's check then reports the intent unpublished.
		if name = strings.TrimSpace(name); onecPublishable(name) == nil {
			o.extra[name] = true
		}
	}
	s.onec = o
	s.Handle("POST /_sim/onec/intents", o.handlePublish)
	s.Handle("GET /_sim/onec/intents", o.handlePublished)
	s.Handle("POST "+onecRoot+"/operations", o.handleExecute)
	s.Handle("GET "+onecRoot+"/operations", o.handleLookup)
	s.Handle("POST "+onecRoot+"/validate", o.handleValidate)
	s.Handle("GET "+onecRoot+"/sales-orders/{object_id}", o.handleOrderStatus)
	s.Handle("GET "+onecRoot+"/references/{kind}/{external_id}", o.handleReference)
	s.Handle("GET "+onecRoot+"/documents/{object_id}", o.handleDocument)
	s.OnReset(o.reset)
}

// onec is the state of the simulated 1C database.
type onec struct {
	s *Server

	// keyLocks are the managed locks on (intent, key) of calls in their
	// transaction; lockWait bounds a wait for one.
	keyLocks sync.Map // onecRegKey → chan struct{} (capacity 1)
	lockWait time.Duration

	mu       sync.Mutex
	invoices int                       // last invoice number
	orders   int                       // last sales order number
	generic  int                       // last number of a document of an extra intent
	docs     map[string]*onecDoc       // object id → document
	register map[onecRegKey]onecRecord // the operation-key register
	// numbersAt is the file the last numbers are kept in across runs
	// (KeepOneCNumbers); "" keeps them in memory only.
	numbersAt string
	// extra are the intents the firm's module publishes beyond the
	// built-ins; they are the module's code, not the database's data, so
	// a reset keeps them.
	extra map[string]bool
}

type onecDoc struct {
	objectID, number, state string
	intent                  string          // the intent that made it; empty for one a person made (MakeOneCDocument)
	payload                 json.RawMessage // an extra intent's document: its payload as received
}

type onecRegKey struct{ intent, key string }

// onecRecord is a register entry and, as JSON, the service's answer.
type onecRecord struct {
	Key         string `json:"key"`
	Intent      string `json:"intent"`
	ObjectID    string `json:"object_id"`
	Number      string `json:"number"`
	State       string `json:"state"`
	Replayed    bool   `json:"replayed"`
	fingerprint string
}

type onecError struct {
	Code    string `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message,omitempty"`
}

type onecErrors struct {
	Errors []onecError `json:"errors"`
}

func onecFail(code, field, msg string) onecErrors {
	return onecErrors{Errors: []onecError{{Code: code, Field: field, Message: msg}}}
}

func (o *onec) reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.invoices, o.orders, o.generic = 0, 0, 0
	o.docs = map[string]*onecDoc{}
	o.register = map[onecRegKey]onecRecord{}
	o.saveNumbers() // a failure shows at the next KeepOneCNumbers
}

// handleExecute serves POST /onec/hs/oncegate/v1/operations as the
// module's ОперацииPOST does: parse, take the key's managed lock (503
// LOCK_CONFLICT when another call holds it past the lock timeout), read the
// key register, check, and — unless the call's deadline has passed (503
// DEADLINE_EXCEEDED, rolled back) — create the document and register the key
// in one transaction. A call without a key is refused before it is counted
// or takes a fault. A delay fault is time spent inside the transaction (a
// lock wait, a slow posting), so the deadline is checked after it;
// late_commit is the same delay with a commit that lands anyway (1C's clock
// behind the gateway's, or a module without the check). A status 500 fault
// answers as the module's exception handler does. drop_response_after_commit
// drops whatever answer follows, a replay or a refusal as well as a new
// document.
func (o *onec) handleExecute(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	key := strings.TrimSpace(r.Header.Get("Idempotency-Key"))
	if key == "" {
		WriteJSON(w, http.StatusBadRequest, onecFail(onecKeyMissing, "", "the Idempotency-Key header is required"))
		return
	}
	o.s.Call(OneC, key)
	f := o.s.TakeFault(OneC, OnExecute)
	var slow time.Duration
	late := false
	switch {
	case onecInternalFault(w, f):
		return
	case f != nil && (f.Fault == FaultDelay || f.Fault == FaultLateCommit):
		slow, late = time.Duration(f.DelayMS)*time.Millisecond, f.Fault == FaultLateCommit
	case f.Before(w):
		return
	}
	status, body := o.execute(w, r, key, onecBudget(r, arrived), slow, late)
	if f.After(w) {
		return
	}
	WriteJSON(w, status, body)
}

// onecInternalFault answers a status 500 fault with the module's body.
func onecInternalFault(w http.ResponseWriter, f *Fault) bool {
	if f == nil || f.Fault != FaultStatus || f.Status != http.StatusInternalServerError {
		return false
	}
	WriteJSON(w, http.StatusInternalServerError, onecFail(onecInternal, "", "internal error of the service"))
	return true
}

// onecBudget is the instant after which the module refuses to commit: the
// earlier of the gateway's deadline and the call's arrival plus the
// gateway's wait; zero when the call carries neither (a call by hand).
func onecBudget(r *http.Request, arrived time.Time) time.Time {
	var at time.Time
	if ms, err := strconv.ParseInt(strings.TrimSpace(r.Header.Get(OneCDeadlineHeader)), 10, 64); err == nil && ms > 0 {
		at = time.UnixMilli(ms)
	}
	if ms, err := strconv.ParseInt(strings.TrimSpace(r.Header.Get(OneCTimeoutHeader)), 10, 64); err == nil && ms > 0 {
		if own := arrived.Add(time.Duration(ms) * time.Millisecond); at.IsZero() || own.Before(at) {
			at = own
		}
	}
	return at
}

// lockKey takes the managed lock on rk, waiting at most the lock timeout;
// it returns the release, or nil when the lock was not granted.
func (o *onec) lockKey(rk onecRegKey) func() {
	v, _ := o.keyLocks.LoadOrStore(rk, make(chan struct{}, 1))
	ch := v.(chan struct{})
	o.mu.Lock()
	wait := o.lockWait
	o.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }
	case <-t.C:
		return nil
	}
}

func onecUnavailable(w http.ResponseWriter, code, msg string) (int, any) {
	w.Header().Set("Retry-After", "1")
	return http.StatusServiceUnavailable, onecFail(code, "", msg)
}

func (o *onec) execute(w http.ResponseWriter, r *http.Request, key string, budget time.Time, slow time.Duration, late bool) (int, any) {
	if len(key) > onecMaxKey {
		return http.StatusBadRequest, onecFail(onecValidation, "", "the Idempotency-Key is longer than 255 characters")
	}
	cmd, status, fail := o.decode(w, r, true)
	if fail != nil {
		return status, fail
	}

	rk := onecRegKey{cmd.intent, key}
	release := o.lockKey(rk)
	if release == nil {
		return onecUnavailable(w, onecLockConflict, "the operation key is locked by another call; nothing was done")
	}
	defer release()
	// The transaction's slow part (a lock wait, posting), detached from
	// the caller as 1C is.
	time.Sleep(slow)

	o.mu.Lock()
	defer o.mu.Unlock()
	if rec, ok := o.register[rk]; ok {
		if rec.fingerprint != cmd.fingerprint {
			return http.StatusConflict, onecFail(onecKeyMismatch, "", "the key is registered for another payload")
		}
		rec.Replayed = true
		return http.StatusOK, rec
	}
	if errs, _ := o.check(cmd); len(errs) > 0 {
		return http.StatusUnprocessableEntity, onecErrors{Errors: errs}
	}
	if !late && !budget.IsZero() && !time.Now().Before(budget) {
		return onecUnavailable(w, onecDeadlineExceeded, "the gateway's deadline passed before commit; nothing was done")
	}
	rec := o.commit(cmd, key)
	o.register[rk] = rec
	o.s.Effect(OneC, key)
	return http.StatusCreated, rec
}

// handleLookup serves GET /onec/hs/oncegate/v1/operations?intent=&key=.
// Like the module, it takes a shared lock on the key before reading, so a
// look-up waits behind a call still in its transaction (503 LOCK_CONFLICT
// past the lock timeout) instead of answering 404 for a commit on its way.
func (o *onec) handleLookup(w http.ResponseWriter, r *http.Request) {
	f := o.s.TakeFault(OneC, OnLookup)
	if onecInternalFault(w, f) || f.Before(w) {
		return
	}
	status, body := o.lookup(w, r)
	if f.After(w) {
		return
	}
	WriteJSON(w, status, body)
}

func (o *onec) lookup(w http.ResponseWriter, r *http.Request) (int, any) {
	q := r.URL.Query()
	intent, key := q.Get("intent"), q.Get("key")
	if key == "" {
		return http.StatusBadRequest, onecFail(onecKeyMissing, "key", "the key parameter is required")
	}
	o.mu.Lock()
	published := o.published(intent)
	o.mu.Unlock()
	if !published {
		return http.StatusBadRequest, onecFail(onecIntentNotAllowed, "intent", "the intent is not published")
	}
	rk := onecRegKey{intent, key}
	release := o.lockKey(rk)
	if release == nil {
		return onecUnavailable(w, onecLockConflict, "the operation key is locked by a call in progress")
	}
	defer release()
	o.mu.Lock()
	defer o.mu.Unlock()
	rec, ok := o.register[rk]
	if !ok {
		return http.StatusNotFound, onecFail(onecNotFound, "", "no operation with this key")
	}
	rec.Replayed = true
	return http.StatusOK, rec
}

// handleValidate serves POST /onec/hs/oncegate/v1/validate: every check of
// execute, nothing written, nothing counted.
func (o *onec) handleValidate(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimSpace(r.Header.Get("Idempotency-Key"))
	cmd, status, fail := o.decode(w, r, false)
	if fail != nil {
		WriteJSON(w, status, fail)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if key != "" {
		if rec, ok := o.register[onecRegKey{cmd.intent, key}]; ok {
			if cmd.fingerprint != "" && rec.fingerprint != cmd.fingerprint {
				WriteJSON(w, http.StatusConflict, onecFail(onecKeyMismatch, "", "the key is registered for another payload"))
				return
			}
			// Execute would replay; the plan says so instead of re-checking
			// a state the operation itself has changed.
			WriteJSON(w, http.StatusOK, map[string]any{"valid": true, "plan": map[string]any{
				"replay": true, "object_id": rec.ObjectID, "number": rec.Number, "state": rec.State,
			}})
			return
		}
	}
	errs, plan := o.check(cmd)
	if len(errs) > 0 {
		WriteJSON(w, http.StatusUnprocessableEntity, onecErrors{Errors: errs})
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"valid": true, "plan": plan})
}

// handleOrderStatus serves GET /onec/hs/oncegate/v1/sales-orders/{object_id}.
func (o *onec) handleOrderStatus(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("object_id")
	o.mu.Lock()
	doc, ok := o.docs[id]
	var body map[string]string
	if ok && doc.intent == onecOrderDraft {
		body = map[string]string{"object_id": doc.objectID, "number": doc.number, "state": doc.state}
	}
	o.mu.Unlock()
	if body == nil {
		WriteJSON(w, http.StatusNotFound, onecFail(onecNotFound, "", "no sales order with this id"))
		return
	}
	WriteJSON(w, http.StatusOK, body)
}
