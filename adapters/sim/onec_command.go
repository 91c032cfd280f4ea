package sim

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// A command of the 1C service: the body of execute and validate decoded
// strictly, checked against the database, and committed with its key, as
// the module does.

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
		case !ok || doc.intent != onecOrderDraft:
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
// register entry. As in the module, a document's object id is its
// prefix and the UUID of its reference, never its number: a typical
// number carries a Cyrillic prefix and restarts each year. The number
// travels in the result only, in the typical shape.
func (o *onec) commit(cmd *onecCommand, key string) onecRecord {
	rec := onecRecord{Key: key, Intent: cmd.intent, fingerprint: cmd.fingerprint}
	add := func(prefix string, n int, state string, payload json.RawMessage) {
		rec.ObjectID, rec.Number, rec.State = prefix+onecUUID(), fmt.Sprintf("ОГ00-%06d", n), state
		o.docs[rec.ObjectID] = &onecDoc{objectID: rec.ObjectID, number: rec.Number, state: rec.State, intent: cmd.intent, payload: payload}
		o.saveNumbers() // a failure shows at the next KeepOneCNumbers
	}
	switch {
	case cmd.invoice != nil:
		o.invoices++
		add(OneCInvoicePrefix, o.invoices, onecCreated, nil)
	case cmd.order != nil:
		o.orders++
		add(OneCOrderPrefix, o.orders, onecDraft, nil)
	case cmd.generic != nil:
		o.generic++
		add(OneCDocumentPrefix, o.generic, onecCreated, cmd.generic.payload)
	default:
		doc := o.docs[cmd.post.OrderID]
		doc.state = onecPosted
		rec.ObjectID, rec.Number, rec.State = doc.objectID, doc.number, doc.state
	}
	return rec
}

// The prefixes of the object ids the service gives: the kind of document,
// then the UUID of its reference.
const (
	OneCInvoicePrefix  = "INV-"
	OneCOrderPrefix    = "SO-"
	OneCDocumentPrefix = "DOC-"
)

// onecUUID is a new reference's UUID as 1C prints it: lower-case hex in
// the 8-4-4-4-12 form.
func onecUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
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
