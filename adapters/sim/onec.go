package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
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
)

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
	o := &onec{s: s, extra: map[string]bool{}}
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
	s.OnReset(o.reset)
}

// onec is the state of the simulated 1C database.
type onec struct {
	s *Server

	mu       sync.Mutex
	invoices int                       // last invoice number
	orders   int                       // last sales order number
	generic  int                       // last number of a document of an extra intent
	docs     map[string]*onecDoc       // object id → document
	register map[onecRegKey]onecRecord // the operation-key register
	// extra are the intents the firm's module publishes beyond the
	// built-ins; they are the module's code, not the database's data, so
	// a reset keeps them.
	extra map[string]bool
}

type onecDoc struct {
	objectID, number, state string
	intent                  string          // the intent that made it
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

// onecRequest is the body of execute and validate.
type onecRequest struct {
	Intent      string          `json:"intent"`
	Fingerprint string          `json:"fingerprint"`
	Payload     json.RawMessage `json:"payload"`
}

type onecInvoice struct {
	OrderID        string            `json:"order_id"`
	OrganizationID string            `json:"organization_id"`
	CustomerID     string            `json:"customer_id"`
	Currency       string            `json:"currency"`
	Items          []onecInvoiceItem `json:"items"`
	DueDate        string            `json:"due_date"`
}

type onecInvoiceItem struct {
	ProductID  string  `json:"product_id"`
	Quantity   float64 `json:"quantity"`
	Unit       string  `json:"unit"`
	PriceMinor *int64  `json:"price_minor"`
}

type onecOrder struct {
	OrganizationID string          `json:"organization_id"`
	CustomerID     string          `json:"customer_id"`
	WarehouseID    string          `json:"warehouse_id"`
	Currency       string          `json:"currency"`
	Items          []onecOrderItem `json:"items"`
	Comment        string          `json:"comment"`
}

type onecOrderItem struct {
	ProductID string  `json:"product_id"`
	Quantity  float64 `json:"quantity"`
	Unit      string  `json:"unit"`
}

type onecPost struct {
	OrderID string `json:"order_id"`
}

// onecGeneric is the command of an extra intent: the firm's handler would
// read the payload; the simulator keeps it as the document's content.
type onecGeneric struct {
	payload json.RawMessage
}

// onecCommand is a decoded request whose references are checked and whose
// effect can be committed.
type onecCommand struct {
	intent      string
	fingerprint string
	invoice     *onecInvoice
	order       *onecOrder
	post        *onecPost
	generic     *onecGeneric
}

func (o *onec) reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.invoices, o.orders, o.generic = 0, 0, 0
	o.docs = map[string]*onecDoc{}
	o.register = map[onecRegKey]onecRecord{}
}

// handleExecute serves POST /onec/hs/oncegate/v1/operations: check the key
// register, check the command, create the document and register the key in
// one step, as the 1C transaction with a managed lock on the key does. A
// call without a key is refused before it is counted or takes a fault; a
// drop_response_after_commit fault drops whatever answer follows, a replay
// or a refusal as well as a new document.
func (o *onec) handleExecute(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimSpace(r.Header.Get("Idempotency-Key"))
	if key == "" {
		WriteJSON(w, http.StatusBadRequest, onecFail(onecKeyMissing, "", "the Idempotency-Key header is required"))
		return
	}
	o.s.Call(OneC, key)
	f := o.s.TakeFault(OneC, OnExecute)
	if f.Before(w) {
		return
	}
	status, body := o.execute(w, r, key)
	if f.After(w) {
		return
	}
	WriteJSON(w, status, body)
}

func (o *onec) execute(w http.ResponseWriter, r *http.Request, key string) (int, any) {
	if len(key) > onecMaxKey {
		return http.StatusBadRequest, onecFail(onecValidation, "", "the Idempotency-Key is longer than 255 characters")
	}
	cmd, status, fail := o.decode(w, r, true)
	if fail != nil {
		return status, fail
	}

	o.mu.Lock()
	defer o.mu.Unlock()
	rk := onecRegKey{cmd.intent, key}
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
	rec := o.commit(cmd, key)
	o.register[rk] = rec
	o.s.Effect(OneC, key)
	return http.StatusCreated, rec
}

// handleLookup serves GET /onec/hs/oncegate/v1/operations?intent=&key=.
func (o *onec) handleLookup(w http.ResponseWriter, r *http.Request) {
	f := o.s.TakeFault(OneC, OnLookup)
	if f.Before(w) {
		return
	}
	status, body := o.lookup(r)
	if f.After(w) {
		return
	}
	WriteJSON(w, status, body)
}

func (o *onec) lookup(r *http.Request) (int, any) {
	q := r.URL.Query()
	intent, key := q.Get("intent"), q.Get("key")
	if key == "" {
		return http.StatusBadRequest, onecFail(onecKeyMissing, "key", "the key parameter is required")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.published(intent) {
		return http.StatusBadRequest, onecFail(onecIntentNotAllowed, "intent", "the intent is not published")
	}
	rec, ok := o.register[onecRegKey{intent, key}]
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
	if ok && strings.HasPrefix(id, "SO-") {
		body = map[string]string{"object_id": doc.objectID, "number": doc.number, "state": doc.state}
	}
	o.mu.Unlock()
	if body == nil {
		WriteJSON(w, http.StatusNotFound, onecFail(onecNotFound, "", "no sales order with this id"))
		return
	}
	WriteJSON(w, http.StatusOK, body)
}

// published reports whether the service routes intent (o.mu held): a
// built-in, or an extra intent the firm's module publishes.
func (o *onec) published(intent string) bool {
	switch intent {
	case onecInvoiceCreate, onecOrderDraft, onecOrderPost:
		return true
	}
	return o.extra[intent]
}

// decode reads the body strictly: unknown fields, wrong types or
// trailing data are 400 VALIDATION_ERROR, an unpublished intent 400
// INTENT_NOT_ALLOWED. needPrint makes the fingerprint required. An extra
// intent's payload must be a JSON object; its fields are its handler's.
func (o *onec) decode(w http.ResponseWriter, r *http.Request, needPrint bool) (*onecCommand, int, *onecErrors) {
	bad := func(code, field, msg string) (*onecCommand, int, *onecErrors) {
		e := onecFail(code, field, msg)
		return nil, http.StatusBadRequest, &e
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<16))
	if err != nil {
		return bad(onecValidation, "", "the body could not be read")
	}
	var req onecRequest
	if err := onecStrictJSON(body, &req); err != nil {
		return bad(onecValidation, "", "bad request body: "+err.Error())
	}
	o.mu.Lock()
	published := o.published(req.Intent)
	o.mu.Unlock()
	if !published {
		return bad(onecIntentNotAllowed, "intent", "the intent is not published by this service")
	}
	if (needPrint || req.Fingerprint != "") && !onecIsHex64(req.Fingerprint) {
		return bad(onecValidation, "fingerprint", "the fingerprint must be 64 lowercase hex digits")
	}
	cmd := &onecCommand{intent: req.Intent, fingerprint: req.Fingerprint}
	switch req.Intent {
	case onecInvoiceCreate:
		cmd.invoice = new(onecInvoice)
		err = onecStrictJSON(req.Payload, cmd.invoice)
	case onecOrderDraft:
		cmd.order = new(onecOrder)
		err = onecStrictJSON(req.Payload, cmd.order)
	case onecOrderPost:
		cmd.post = new(onecPost)
		err = onecStrictJSON(req.Payload, cmd.post)
	default:
		var fields map[string]json.RawMessage
		if err = onecStrictJSON(req.Payload, &fields); err == nil {
			cmd.generic = &onecGeneric{payload: bytes.Clone(req.Payload)}
		}
	}
	if err != nil {
		return bad(onecValidation, "payload", "bad payload: "+err.Error())
	}
	return cmd, 0, nil
}

func onecStrictJSON(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 || string(bytes.TrimSpace(data)) == "null" {
		return errors.New("missing object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the object")
	}
	return nil
}

func onecIsHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// check runs the business checks of cmd against the database (o.mu held)
// and returns every error, in payload order, and the plan.
func (o *onec) check(cmd *onecCommand) ([]onecError, map[string]any) {
	var c onecChecker
	switch {
	case cmd.invoice != nil:
		p := cmd.invoice
		c.required("order_id", p.OrderID)
		c.ref("organization_id", p.OrganizationID, Organizations)
		c.ref("customer_id", p.CustomerID, Customers)
		c.currency(p.Currency)
		var lines []map[string]any
		var total int64
		if c.items(len(p.Items)) {
			for i, it := range p.Items {
				at := fmt.Sprintf("items[%d].", i)
				c.ref(at+"product_id", it.ProductID, Products)
				c.quantity(at+"quantity", it.Quantity)
				c.ref(at+"unit", it.Unit, Units)
				var amount int64
				switch {
				case it.PriceMinor == nil:
					c.add(onecValidation, at+"price_minor", "required")
				case *it.PriceMinor < 0:
					c.add(onecValidation, at+"price_minor", "must not be negative")
				default:
					amount = int64(math.Round(it.Quantity * float64(*it.PriceMinor)))
					total += amount
				}
				lines = append(lines, map[string]any{"line": i + 1, "product_id": it.ProductID, "quantity": it.Quantity,
					"unit": it.Unit, "price_minor": it.PriceMinor, "amount_minor": amount})
			}
		}
		if p.DueDate != "" && !onecIsDate(p.DueDate) {
			c.add(onecValidation, "due_date", "must be a date (YYYY-MM-DD)")
		}
		plan := map[string]any{"document": "invoice", "order_id": p.OrderID, "organization_id": p.OrganizationID,
			"customer_id": p.CustomerID, "currency": p.Currency, "lines": lines, "total_minor": total, "state": onecCreated}
		if p.DueDate != "" {
			plan["due_date"] = p.DueDate
		}
		return c.errs, plan
	case cmd.order != nil:
		p := cmd.order
		c.ref("organization_id", p.OrganizationID, Organizations)
		c.ref("customer_id", p.CustomerID, Customers)
		c.ref("warehouse_id", p.WarehouseID, Warehouses)
		c.currency(p.Currency)
		var lines []map[string]any
		if c.items(len(p.Items)) {
			for i, it := range p.Items {
				at := fmt.Sprintf("items[%d].", i)
				c.ref(at+"product_id", it.ProductID, Products)
				c.quantity(at+"quantity", it.Quantity)
				c.ref(at+"unit", it.Unit, Units)
				lines = append(lines, map[string]any{"line": i + 1, "product_id": it.ProductID, "quantity": it.Quantity, "unit": it.Unit})
			}
		}
		if utf8.RuneCountInString(p.Comment) > 1024 { // СтрДлина counts characters
			c.add(onecValidation, "comment", "longer than 1024 characters")
		}
		return c.errs, map[string]any{"document": "sales_order", "organization_id": p.OrganizationID,
			"customer_id": p.CustomerID, "warehouse_id": p.WarehouseID, "currency": p.Currency,
			"lines": lines, "line_count": len(lines), "state": onecDraft}
	case cmd.generic != nil:
		// The firm's handler checks its own payload; the simulator has
		// nothing to check it against.
		return nil, map[string]any{"document": cmd.intent, "state": onecCreated}
	default:
		id := cmd.post.OrderID
		if !c.required("order_id", id) {
			return c.errs, nil
		}
		doc, ok := o.docs[id]
		switch {
		case !ok || !strings.HasPrefix(id, "SO-"):
			c.add(onecRefNotFound, "order_id", "no sales order with this id")
		case doc.state != onecDraft:
			c.add(onecInvalidState, "order_id", "the sales order is "+doc.state+", not a draft")
		default:
			return nil, map[string]any{"document": "sales_order", "order_id": id, "number": doc.number,
				"state": doc.state, "next_state": onecPosted}
		}
		return c.errs, nil
	}
}

// commit creates the effect of a checked cmd (o.mu held) and returns its
// register entry.
func (o *onec) commit(cmd *onecCommand, key string) onecRecord {
	rec := onecRecord{Key: key, Intent: cmd.intent, fingerprint: cmd.fingerprint}
	switch {
	case cmd.invoice != nil:
		o.invoices++
		rec.Number = fmt.Sprintf("%06d", o.invoices)
		rec.ObjectID, rec.State = "INV-"+rec.Number, onecCreated
		o.docs[rec.ObjectID] = &onecDoc{objectID: rec.ObjectID, number: rec.Number, state: rec.State, intent: cmd.intent}
	case cmd.order != nil:
		o.orders++
		rec.Number = fmt.Sprintf("%06d", o.orders)
		rec.ObjectID, rec.State = "SO-"+rec.Number, onecDraft
		o.docs[rec.ObjectID] = &onecDoc{objectID: rec.ObjectID, number: rec.Number, state: rec.State, intent: cmd.intent}
	case cmd.generic != nil:
		o.generic++
		rec.Number = fmt.Sprintf("%06d", o.generic)
		rec.ObjectID, rec.State = "DOC-"+rec.Number, onecCreated
		o.docs[rec.ObjectID] = &onecDoc{objectID: rec.ObjectID, number: rec.Number, state: rec.State, intent: cmd.intent, payload: cmd.generic.payload}
	default:
		doc := o.docs[cmd.post.OrderID]
		doc.state = onecPosted
		rec.ObjectID, rec.Number, rec.State = doc.objectID, doc.number, doc.state
	}
	return rec
}

// onecChecker collects errors in the order the checks run.
type onecChecker struct{ errs []onecError }

func (c *onecChecker) add(code, field, msg string) {
	c.errs = append(c.errs, onecError{Code: code, Field: field, Message: msg})
}

func (c *onecChecker) required(field, v string) bool {
	if strings.TrimSpace(v) == "" {
		c.add(onecValidation, field, "required")
		return false
	}
	return true
}

// ref resolves an external id in a seeded catalog.
func (c *onecChecker) ref(field, id string, catalog map[string]RefState) {
	if !c.required(field, id) {
		return
	}
	switch state, ok := catalog[id]; {
	case !ok:
		c.add(onecRefNotFound, field, "no object with this external id")
	case state == Blocked:
		c.add(onecRefInactive, field, "the object is blocked")
	case state == Deleted:
		c.add(onecRefInactive, field, "the object is marked for deletion")
	}
}

func (c *onecChecker) currency(v string) {
	if c.required("currency", v) && v != "RUB" {
		c.add(onecValidation, "currency", "only RUB is accepted")
	}
}

func (c *onecChecker) items(n int) bool {
	switch {
	case n == 0:
		c.add(onecValidation, "items", "at least one item is required")
	case n > 500:
		c.add(onecValidation, "items", "at most 500 items")
	default:
		return true
	}
	return false
}

func (c *onecChecker) quantity(field string, q float64) {
	if !(q > 0) || math.IsInf(q, 0) {
		c.add(onecValidation, field, "must be greater than zero")
	}
}

func onecIsDate(s string) bool {
	if _, err := time.Parse(time.DateOnly, s); err == nil {
		return true
	}
	_, err := time.Parse(time.RFC3339, s)
	return err == nil
}
