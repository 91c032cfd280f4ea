package sim

// The YooKassa API v3 simulator: payments of saved payment methods, refunds,
// their lists and YooKassa's own idempotency, on the real wire format under
// /yookassa/v3/…
//
// What it models, and where it is simpler than the provider:
//   - HTTP Basic auth: any shop id (or only YooKassaMode.ShopID when set),
//     the secret from YOOKASSA_SECRET_KEY (or DefaultYooKassaSecret);
//     otherwise 401 invalid_credentials.
//   - Idempotence-Key on every POST (missing or longer than 64 characters:
//     400 invalid_request, parameter Idempotence-Key). A repeat with the same
//     key and the same body within 24 hours answers the object already made,
//     in its current state, and makes nothing; the same key with another body
//     (or on the other endpoint) answers 400 invalid_request "Idempotence key
//     duplicated". Only requests that made an object bind their key.
//   - Payments charge a saved payment method: an active seeded account
//     (sim.Accounts), which is a method saved by a binding and which
//     GET /payment_methods/{id} shows as a saved card, active or inactive;
//     or a card saved during an earlier payment (YooKassaSavedCard), whose
//     id is that payment's id and which GET /payment_methods/{id} does not
//     know (404), as YooKassa documents that endpoint for bindings only. capture:true succeeds at once,
//     capture:false waits for capture; an amount of at least
//     YooKassaInsufficientFundsMinor minor units is canceled by the payment
//     network with reason insufficient_funds. Redirect confirmations are not
//     modelled: a payment without payment_method_id is refused.
//   - Refunds of a succeeded payment in its currency, up to what is left to
//     refund; they succeed at once.
//   - YooKassaMode adds what the real API also does: receipts required
//     (54-FZ), slow answers, 202 processing with retry_after, a 500 after
//     the object was made, 429 with retry_after in the body, payments and
//     refunds pending for a while, canceled refunds, one shop id only.
//   - Lists newest first, limit 1–100 (default 10), keyset cursors, filters
//     created_at.gte/gt/lte/lt, status, and payment_id for refunds.
//
// Effects are counted by the Idempotence-Key received, once per payment or
// refund made (a payment canceled for insufficient funds is a payment made).

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// DefaultYooKassaSecret is the secret key the YooKassa simulator accepts when
// YOOKASSA_SECRET_KEY is not set.
const DefaultYooKassaSecret = "sim-secret-key"

// YooKassaInsufficientFundsMinor is the amount, in minor units, from which
// the simulator cancels a payment for insufficient funds (1 000 000.00).
const YooKassaInsufficientFundsMinor = 100_000_000

// YooKassaSecret returns the secret key the YooKassa simulator accepts:
// YOOKASSA_SECRET_KEY when set, DefaultYooKassaSecret otherwise. A simulator
// reads it once, when New registers it.
func YooKassaSecret() string {
	if s := os.Getenv("YOOKASSA_SECRET_KEY"); s != "" {
		return s
	}
	return DefaultYooKassaSecret
}

const (
	ykRoot        = "/yookassa/v3"
	ykMaxKey      = 64
	ykKeyWindow   = 24 * time.Hour
	ykTimeLayout  = "2006-01-02T15:04:05.000Z"
	ykMaxBody     = 1 << 20
	ykPaymentDesc = 128
	ykRefundDesc  = 250
)

// ykCurrencies are the currencies the simulated shop accepts: those YooKassa's
// API reference lists for amount.currency.
var ykCurrencies = map[string]bool{"RUB": true, "USD": true, "EUR": true, "KZT": true, "BYN": true}

func init() {
	registrations = append(registrations, registerYooKassa)
}

// ykSims finds the YooKassa simulator of a Server.
var ykSims = struct {
	sync.Mutex
	m map[*Server]*ykSim
}{m: map[*Server]*ykSim{}}

func registerYooKassa(s *Server) {
	y := &ykSim{s: s, secret: YooKassaSecret()}
	y.reset()
	ykSims.Lock()
	ykSims.m[s] = y
	ykSims.Unlock()
	s.OnReset(y.reset)
	s.Handle("POST /_sim/yookassa", y.handleMode)
	s.Handle("POST /_sim/yookassa/saved_cards", y.handleSavedCard)
	s.Handle("POST "+ykRoot+"/payments", y.handleCreatePayment)
	s.Handle("GET "+ykRoot+"/payments", y.handleListPayments)
	s.Handle("GET "+ykRoot+"/payments/{id}", y.handleGetPayment)
	s.Handle("POST "+ykRoot+"/refunds", y.handleCreateRefund)
	s.Handle("GET "+ykRoot+"/refunds", y.handleListRefunds)
	s.Handle("GET "+ykRoot+"/refunds/{id}", y.handleGetRefund)
	s.Handle("GET "+ykRoot+"/payment_methods/{id}", y.handleGetPaymentMethod)
}

// ykSim is the simulated shop.
type ykSim struct {
	s      *Server
	secret string

	mu       sync.Mutex
	seq      int64
	payments map[string]*ykPayment
	refunds  map[string]*ykRefund
	pOrder   []*ykPayment // in creation order
	rOrder   []*ykRefund
	keys     map[string]ykKeyRecord // Idempotence-Key → what it made
	mode     YooKassaMode
}

// ykKeyRecord is what one Idempotence-Key bound.
type ykKeyRecord struct {
	path string // endpoint
	hash string // canonical body
	at   time.Time
	id   string // payment or refund made
	// busyUntil: the request is "processing" until then (202).
	busyUntil time.Time
}

type ykPayment struct {
	seq          int64
	id           string
	status       string
	paid         bool
	minor        int64
	refunded     int64
	currency     string
	description  string
	methodID     string
	metadata     map[string]string
	created      time.Time
	captured     time.Time
	cancelReason string
	shopID       string
	savedCard    bool      // it saved the payer's card; its id is the method's
	settleAt     time.Time // a pending payment succeeds then
}

type ykRefund struct {
	seq         int64
	id          string
	paymentID   string
	minor       int64
	currency    string
	description string
	metadata    map[string]string
	created     time.Time
	status      string
	settleAt    time.Time // a pending refund ends then
	cancel      bool      // and ends canceled
}

// Wire shapes.

type ykAmount struct {
	Value    string `json:"value"`
	Currency string `json:"currency"`
}

type ykRecipient struct {
	AccountID string `json:"account_id"`
	GatewayID string `json:"gateway_id"`
}

type ykMethod struct {
	Type  string `json:"type"`
	ID    string `json:"id"`
	Saved bool   `json:"saved"`
	Title string `json:"title,omitempty"`
}

type ykCancellation struct {
	Party  string `json:"party"`
	Reason string `json:"reason"`
}

type ykPaymentView struct {
	ID                  string            `json:"id"`
	Status              string            `json:"status"`
	Paid                bool              `json:"paid"`
	Amount              ykAmount          `json:"amount"`
	Description         string            `json:"description,omitempty"`
	Recipient           ykRecipient       `json:"recipient"`
	PaymentMethod       ykMethod          `json:"payment_method"`
	CapturedAt          string            `json:"captured_at,omitempty"`
	CreatedAt           string            `json:"created_at"`
	Test                bool              `json:"test"`
	RefundedAmount      *ykAmount         `json:"refunded_amount,omitempty"`
	Refundable          bool              `json:"refundable"`
	Metadata            map[string]string `json:"metadata"`
	CancellationDetails *ykCancellation   `json:"cancellation_details,omitempty"`
}

type ykRefundView struct {
	ID                  string            `json:"id"`
	PaymentID           string            `json:"payment_id"`
	Status              string            `json:"status"`
	Amount              ykAmount          `json:"amount"`
	CreatedAt           string            `json:"created_at"`
	Description         string            `json:"description,omitempty"`
	Metadata            map[string]string `json:"metadata,omitempty"`
	CancellationDetails *ykCancellation   `json:"cancellation_details,omitempty"`
}

type ykList struct {
	Type       string `json:"type"`
	Items      []any  `json:"items"`
	NextCursor string `json:"next_cursor,omitempty"`
}

type ykError struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	Code        string `json:"code"`
	Description string `json:"description,omitempty"`
	Parameter   string `json:"parameter,omitempty"`
	RetryAfter  int    `json:"retry_after,omitempty"` // ms, with 429 and 500
}

// ykFailure is an error answer not yet written.
type ykFailure struct {
	status int
	body   ykError
}

func ykFail(status int, code, param, desc string) *ykFailure {
	return &ykFailure{status: status, body: ykError{Type: "error", ID: ykNewID("000e"), Code: code, Description: desc, Parameter: param}}
}

func ykInvalid(param, desc string) *ykFailure {
	return ykFail(http.StatusBadRequest, "invalid_request", param, desc)
}

func (y *ykSim) reset() {
	y.mu.Lock()
	defer y.mu.Unlock()
	y.seq = 0
	y.payments = map[string]*ykPayment{}
	y.refunds = map[string]*ykRefund{}
	y.pOrder = nil
	y.rOrder = nil
	y.keys = map[string]ykKeyRecord{}
	y.mode = YooKassaMode{}
}

// authorized checks Basic auth: any shop id (or the mode's), the
// configured secret.
func (y *ykSim) authorized(r *http.Request) (string, bool) {
	user, pass, ok := r.BasicAuth()
	if !ok || user == "" || subtle.ConstantTimeCompare([]byte(pass), []byte(y.secret)) != 1 {
		return "", false
	}
	y.mu.Lock()
	shop := y.mode.ShopID
	y.mu.Unlock()
	if shop != "" && user != shop {
		return "", false
	}
	return user, true
}

// throttled answers 429 with retry_after in the body when the mode asks
// for it; it reports whether it did.
func (y *ykSim) throttled(w http.ResponseWriter) bool {
	y.mu.Lock()
	hit := take(&y.mode.TooManyRequests)
	ms := y.retryAfterMS()
	y.mu.Unlock()
	if !hit {
		return false
	}
	e := ykFail(http.StatusTooManyRequests, "too_many_requests", "", "Too many requests. Repeat the request later")
	e.body.RetryAfter = ms
	WriteJSON(w, e.status, e.body)
	return true
}

func ykUnauthorized() *ykFailure {
	return ykFail(http.StatusUnauthorized, "invalid_credentials", "Authorization", "Authentication by given credentials failed")
}

// handleCreatePayment serves POST /yookassa/v3/payments.
func (y *ykSim) handleCreatePayment(w http.ResponseWriter, r *http.Request) {
	y.create(w, r, "payments", y.createPayment)
}

// handleCreateRefund serves POST /yookassa/v3/refunds.
func (y *ykSim) handleCreateRefund(w http.ResponseWriter, r *http.Request) {
	y.create(w, r, "refunds", y.createRefund)
}

// create is the common path of a POST: fault, auth, key, body, the key's
// earlier use, the commit (made under the lock, so concurrent repeats of one
// key make one object), the post-commit fault and the answer.
func (y *ykSim) create(w http.ResponseWriter, r *http.Request, path string, commit ykCommit) {
	f := y.s.TakeFault(YooKassa, OnExecute)
	if f.Before(w) {
		return
	}
	key := r.Header.Get("Idempotence-Key")
	if key != "" {
		y.s.Call(YooKassa, key)
	}
	if y.throttled(w) {
		return
	}
	y.mu.Lock()
	latency := time.Duration(y.mode.LatencyMS) * time.Millisecond
	y.mu.Unlock()
	time.Sleep(latency) // the caller may go; the request is handled anyway
	status, v := y.createAnswer(w, r, path, key, commit)
	if f.After(w) {
		return
	}
	WriteJSON(w, status, v)
}

// ykCommit makes one object from a request body, under y.mu; it returns the
// object's id and view, or the provider's refusal.
type ykCommit func(shop string, body []byte) (string, any, *ykFailure)

func (y *ykSim) createAnswer(w http.ResponseWriter, r *http.Request, path, key string, commit ykCommit) (int, any) {
	shop, ok := y.authorized(r)
	if !ok {
		e := ykUnauthorized()
		return e.status, e.body
	}
	if key == "" {
		e := ykInvalid("Idempotence-Key", "Idempotence-Key header is missing")
		return e.status, e.body
	}
	if len(key) > ykMaxKey {
		e := ykInvalid("Idempotence-Key", "Idempotence key is too long. Send the value in accordance with the documentation")
		return e.status, e.body
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		e := ykFail(http.StatusUnsupportedMediaType, "invalid_request", "Content-Type", "Content-Type must be application/json")
		return e.status, e.body
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, ykMaxBody))
	if err != nil {
		e := ykInvalid("", "Request body could not be read")
		return e.status, e.body
	}
	hash, ok := ykCanonicalHash(raw)
	if !ok {
		e := ykInvalid("", "Request body is not a valid JSON object")
		return e.status, e.body
	}

	y.mu.Lock()
	defer y.mu.Unlock()
	if rec, seen := y.keys[key]; seen && time.Since(rec.at) < ykKeyWindow {
		if rec.path != path || rec.hash != hash {
			e := ykInvalid("Idempotence-Key", "Idempotence key duplicated")
			return e.status, e.body
		}
		if time.Now().Before(rec.busyUntil) {
			return y.processing()
		}
		if p, ok := y.payments[rec.id]; ok {
			return http.StatusOK, y.paymentView(p)
		}
		return http.StatusOK, y.refundView(y.refunds[rec.id])
	}
	id, view, fail := commit(shop, raw)
	if fail != nil {
		return fail.status, fail.body
	}
	rec := ykKeyRecord{path: path, hash: hash, at: time.Now(), id: id}
	y.s.Effect(YooKassa, key)
	switch {
	case take(&y.mode.Processing):
		rec.busyUntil = rec.at.Add(time.Duration(y.retryAfterMS()) * time.Millisecond)
		y.keys[key] = rec
		return y.processing()
	case take(&y.mode.FailAfterCommit):
		y.keys[key] = rec
		e := ykFail(http.StatusInternalServerError, "internal_server_error", "", "Internal server error. The result of processing is unknown")
		e.body.RetryAfter = y.retryAfterMS()
		return e.status, e.body
	}
	y.keys[key] = rec
	return http.StatusOK, view
}

// processing is the 202 of a request still being handled; y.mu is held.
func (y *ykSim) processing() (int, any) {
	return http.StatusAccepted, map[string]any{"type": "processing", "description": "Request accepted, but is still in process", "retry_after": y.retryAfterMS()}
}

// ykCanonicalHash hashes a JSON object with its keys sorted, so that two
// bodies meaning the same compare equal.
func ykCanonicalHash(raw []byte) (string, bool) {
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil || v == nil {
		return "", false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", false
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), true
}

type ykPaymentRequest struct {
	Amount          *ykAmount       `json:"amount"`
	Capture         bool            `json:"capture"`
	PaymentMethodID string          `json:"payment_method_id"`
	Description     string          `json:"description"`
	Metadata        json.RawMessage `json:"metadata"`
	Receipt         *ykReceipt      `json:"receipt"`
}

type ykRefundRequest struct {
	PaymentID   string          `json:"payment_id"`
	Amount      *ykAmount       `json:"amount"`
	Description string          `json:"description"`
	Metadata    json.RawMessage `json:"metadata"`
	Receipt     *ykReceipt      `json:"receipt"`
}

// createPayment makes a payment; y.mu is held.
func (y *ykSim) createPayment(shop string, raw []byte) (string, any, *ykFailure) {
	var req ykPaymentRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return "", nil, ykInvalid("", "Request body has a wrong structure")
	}
	minor, currency, fail := ykCheckAmount(req.Amount)
	if fail != nil {
		return "", nil, fail
	}
	if req.PaymentMethodID == "" {
		return "", nil, ykInvalid("payment_method_id", "Specify payment_method_id: this simulator charges saved payment methods only")
	}
	if saver, ok := y.payments[req.PaymentMethodID]; Accounts[req.PaymentMethodID] != Active && !(ok && saver.savedCard) {
		return "", nil, ykInvalid("payment_method_id", "Payment method is not available for this shop")
	}
	if fail := y.checkReceipt(req.Receipt, minor); fail != nil {
		return "", nil, fail
	}
	if utf8.RuneCountInString(req.Description) > ykPaymentDesc {
		return "", nil, ykInvalid("description", "Description is longer than 128 characters")
	}
	meta, fail := ykCheckMetadata(req.Metadata)
	if fail != nil {
		return "", nil, fail
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	y.seq++
	p := &ykPayment{
		seq: y.seq, id: ykNewID("000f"), minor: minor, currency: currency,
		description: req.Description, methodID: req.PaymentMethodID, metadata: meta,
		created: now, shopID: shop,
	}
	switch {
	case minor >= YooKassaInsufficientFundsMinor:
		p.status, p.cancelReason = "canceled", "insufficient_funds"
	case y.mode.PendingMS > 0 && req.Capture:
		p.status, p.settleAt = "pending", now.Add(time.Duration(y.mode.PendingMS)*time.Millisecond)
	case req.Capture:
		p.status, p.paid, p.captured = "succeeded", true, now
	default:
		p.status, p.paid = "waiting_for_capture", true
	}
	y.payments[p.id] = p
	y.pOrder = append(y.pOrder, p)
	return p.id, y.paymentView(p), nil
}

// createRefund makes a refund; y.mu is held.
func (y *ykSim) createRefund(shop string, raw []byte) (string, any, *ykFailure) {
	var req ykRefundRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return "", nil, ykInvalid("", "Request body has a wrong structure")
	}
	if req.PaymentID == "" {
		return "", nil, ykInvalid("payment_id", "Specify payment_id")
	}
	minor, currency, fail := ykCheckAmount(req.Amount)
	if fail != nil {
		return "", nil, fail
	}
	if utf8.RuneCountInString(req.Description) > ykRefundDesc {
		return "", nil, ykInvalid("description", "Description is longer than 250 characters")
	}
	meta, fail := ykCheckMetadata(req.Metadata)
	if fail != nil {
		return "", nil, fail
	}
	p, ok := y.payments[req.PaymentID]
	if !ok {
		return "", nil, ykFail(http.StatusNotFound, "not_found", "payment_id", "Payment not found")
	}
	y.settlePayment(p)
	if fail := y.checkReceipt(req.Receipt, minor); fail != nil {
		return "", nil, fail
	}
	if p.status != "succeeded" {
		return "", nil, ykInvalid("payment_id", "Payment has not succeeded, it cannot be refunded")
	}
	if currency != p.currency {
		return "", nil, ykInvalid("amount.currency", "Refund currency differs from the payment currency")
	}
	if minor > p.minor-p.refunded {
		return "", nil, ykInvalid("amount.value", "Refund amount exceeds the amount available for refund")
	}
	y.seq++
	ref := &ykRefund{
		seq: y.seq, id: ykNewID("0015"), paymentID: p.id, minor: minor, currency: currency,
		description: req.Description, metadata: meta, created: time.Now().UTC().Truncate(time.Millisecond),
		status: "succeeded", cancel: y.mode.CancelRefunds,
	}
	if y.mode.PendingMS > 0 || y.mode.CancelRefunds {
		ref.status, ref.settleAt = "pending", ref.created.Add(time.Duration(y.mode.PendingMS)*time.Millisecond)
		y.settleRefund(ref)
	}
	p.refunded += minor
	y.refunds[ref.id] = ref
	y.rOrder = append(y.rOrder, ref)
	return ref.id, y.refundView(ref), nil
}

// ykCheckAmount reads amount{value,currency}: a supported currency and a
// positive decimal with at most two digits after the point.
func ykCheckAmount(a *ykAmount) (int64, string, *ykFailure) {
	if a == nil {
		return 0, "", ykInvalid("amount", "Specify amount")
	}
	if !ykCurrencies[a.Currency] {
		return 0, "", ykInvalid("amount.currency", "Currency is not supported")
	}
	minor, ok := ykParseValue(a.Value)
	if !ok || minor <= 0 {
		return 0, "", ykInvalid("amount.value", "Amount value is invalid")
	}
	return minor, a.Currency, nil
}

// ykParseValue reads "1250", "1250.5" or "1250.50" as minor units (cents).
func ykParseValue(v string) (int64, bool) {
	whole, frac, dot := strings.Cut(v, ".")
	if whole == "" || len(whole) > 13 || (dot && frac == "") || len(frac) > 2 {
		return 0, false
	}
	for _, part := range []string{whole, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return 0, false
			}
		}
	}
	n, err := strconv.ParseInt(whole+frac+strings.Repeat("0", 2-len(frac)), 10, 64)
	return n, err == nil
}

// ykFormatValue renders minor units (cents) as "1250.00".
func ykFormatValue(minor int64) string {
	return fmt.Sprintf("%d.%02d", minor/100, minor%100)
}

// ykCheckMetadata applies YooKassa's limits: at most 16 keys, names up to
// 32 characters, string values up to 512 characters.
func ykCheckMetadata(raw json.RawMessage) (map[string]string, *ykFailure) {
	meta := map[string]string{}
	if len(raw) == 0 || string(raw) == "null" {
		return meta, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, ykInvalid("metadata", "Metadata must be an object")
	}
	if len(m) > 16 {
		return nil, ykInvalid("metadata", "Metadata holds more than 16 keys")
	}
	for k, v := range m {
		s, ok := v.(string)
		if !ok || utf8.RuneCountInString(k) > 32 || utf8.RuneCountInString(s) > 512 {
			return nil, ykInvalid("metadata."+k, "Metadata values are strings up to 512 characters under keys up to 32 characters")
		}
		meta[k] = s
	}
	return meta, nil
}

func (y *ykSim) paymentView(p *ykPayment) ykPaymentView {
	y.settlePayment(p)
	v := ykPaymentView{
		ID: p.id, Status: p.status, Paid: p.paid,
		Amount:        ykAmount{Value: ykFormatValue(p.minor), Currency: p.currency},
		Description:   p.description,
		Recipient:     ykRecipient{AccountID: p.shopID, GatewayID: "sim-gateway"},
		PaymentMethod: ykMethod{Type: "bank_card", ID: p.methodID, Saved: true, Title: "Bank card *4444"},
		CreatedAt:     p.created.Format(ykTimeLayout),
		Test:          true,
		Refundable:    p.status == "succeeded" && p.refunded < p.minor,
		Metadata:      p.metadata,
	}
	if !p.captured.IsZero() {
		v.CapturedAt = p.captured.Format(ykTimeLayout)
	}
	if p.refunded > 0 {
		v.RefundedAmount = &ykAmount{Value: ykFormatValue(p.refunded), Currency: p.currency}
	}
	if p.status == "canceled" {
		v.CancellationDetails = &ykCancellation{Party: "payment_network", Reason: p.cancelReason}
	}
	return v
}

func (y *ykSim) refundView(r *ykRefund) ykRefundView {
	y.settleRefund(r)
	v := ykRefundView{
		ID: r.id, PaymentID: r.paymentID, Status: r.status,
		Amount:      ykAmount{Value: ykFormatValue(r.minor), Currency: r.currency},
		CreatedAt:   r.created.Format(ykTimeLayout),
		Description: r.description,
		Metadata:    r.metadata,
	}
	if r.status == "canceled" {
		v.CancellationDetails = &ykCancellation{Party: "yoo_money", Reason: "rejected_by_payee"}
	}
	return v
}

// read is the common path of a GET: fault, auth, the read, the answer.
func (y *ykSim) read(w http.ResponseWriter, r *http.Request, get func() (any, *ykFailure)) {
	f := y.s.TakeFault(YooKassa, OnLookup)
	if f.Before(w) || y.throttled(w) {
		return
	}
	var (
		status = http.StatusOK
		v      any
	)
	if _, ok := y.authorized(r); !ok {
		e := ykUnauthorized()
		status, v = e.status, e.body
	} else {
		y.mu.Lock()
		got, fail := get()
		y.mu.Unlock()
		if fail != nil {
			status, v = fail.status, fail.body
		} else {
			v = got
		}
	}
	if f.After(w) {
		return
	}
	WriteJSON(w, status, v)
}

// handleGetPayment serves GET /yookassa/v3/payments/{id}.
func (y *ykSim) handleGetPayment(w http.ResponseWriter, r *http.Request) {
	y.read(w, r, func() (any, *ykFailure) {
		p, ok := y.payments[r.PathValue("id")]
		if !ok {
			return nil, ykFail(http.StatusNotFound, "not_found", "payment_id", "Payment not found")
		}
		return y.paymentView(p), nil
	})
}

// handleGetPaymentMethod serves GET /yookassa/v3/payment_methods/{id}: a
// seeded account is a saved bank card, active or (blocked, deleted)
// inactive.
func (y *ykSim) handleGetPaymentMethod(w http.ResponseWriter, r *http.Request) {
	y.read(w, r, func() (any, *ykFailure) {
		id := r.PathValue("id")
		state, ok := Accounts[id]
		if !ok {
			return nil, ykFail(http.StatusNotFound, "not_found", "payment_method_id", "Payment method not found")
		}
		status := "active"
		if state != Active {
			status = "inactive"
		}
		return map[string]any{
			"type": "bank_card", "id": id, "saved": true, "status": status, "title": "Bank card *4477",
			"card": map[string]any{"first6": "555555", "last4": "4477", "expiry_year": "2030", "expiry_month": "07", "card_type": "MasterCard"},
		}, nil
	})
}

// handleGetRefund serves GET /yookassa/v3/refunds/{id}.
func (y *ykSim) handleGetRefund(w http.ResponseWriter, r *http.Request) {
	y.read(w, r, func() (any, *ykFailure) {
		ref, ok := y.refunds[r.PathValue("id")]
		if !ok {
			return nil, ykFail(http.StatusNotFound, "not_found", "refund_id", "Refund not found")
		}
		return y.refundView(ref), nil
	})
}

// handleListPayments serves GET /yookassa/v3/payments.
func (y *ykSim) handleListPayments(w http.ResponseWriter, r *http.Request) {
	y.read(w, r, func() (any, *ykFailure) {
		q, fail := ykParseListQuery(r)
		if fail != nil {
			return nil, fail
		}
		var page ykList
		page.Type = "list"
		page.Items = []any{}
		last := int64(0)
		for i := len(y.pOrder) - 1; i >= 0; i-- {
			p := y.pOrder[i]
			y.settlePayment(p)
			if !q.admits(p.seq, p.created, p.status, "") {
				continue
			}
			if len(page.Items) == q.limit {
				page.NextCursor = ykCursor(last)
				break
			}
			page.Items = append(page.Items, y.paymentView(p))
			last = p.seq
		}
		return page, nil
	})
}

// handleListRefunds serves GET /yookassa/v3/refunds.
func (y *ykSim) handleListRefunds(w http.ResponseWriter, r *http.Request) {
	y.read(w, r, func() (any, *ykFailure) {
		q, fail := ykParseListQuery(r)
		if fail != nil {
			return nil, fail
		}
		var page ykList
		page.Type = "list"
		page.Items = []any{}
		last := int64(0)
		for i := len(y.rOrder) - 1; i >= 0; i-- {
			ref := y.rOrder[i]
			y.settleRefund(ref)
			if !q.admits(ref.seq, ref.created, ref.status, ref.paymentID) {
				continue
			}
			if len(page.Items) == q.limit {
				page.NextCursor = ykCursor(last)
				break
			}
			page.Items = append(page.Items, y.refundView(ref))
			last = ref.seq
		}
		return page, nil
	})
}

// ykListQuery is a list request's filters and paging.
type ykListQuery struct {
	limit     int
	before    int64 // cursor: only objects made before this sequence number
	gte, gt   time.Time
	lte, lt   time.Time
	status    string
	paymentID string
}

func ykParseListQuery(r *http.Request) (ykListQuery, *ykFailure) {
	v := r.URL.Query()
	q := ykListQuery{limit: 10, status: v.Get("status"), paymentID: v.Get("payment_id")}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			return q, ykInvalid("limit", "limit must be from 1 to 100")
		}
		q.limit = n
	}
	if s := v.Get("cursor"); s != "" {
		b, err := base64.RawURLEncoding.DecodeString(s)
		n, err2 := strconv.ParseInt(strings.TrimPrefix(string(b), "yk:"), 10, 64)
		if err != nil || err2 != nil || !strings.HasPrefix(string(b), "yk:") || n <= 0 {
			return q, ykInvalid("cursor", "cursor is invalid")
		}
		q.before = n
	}
	for name, dst := range map[string]*time.Time{"created_at.gte": &q.gte, "created_at.gt": &q.gt, "created_at.lte": &q.lte, "created_at.lt": &q.lt} {
		if s := v.Get(name); s != "" {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return q, ykInvalid(name, "Date and time must be in ISO 8601 format")
			}
			*dst = t
		}
	}
	return q, nil
}

// admits reports whether an object passes the filters and the cursor.
func (q ykListQuery) admits(seq int64, created time.Time, status, paymentID string) bool {
	switch {
	case q.before > 0 && seq >= q.before,
		!q.gte.IsZero() && created.Before(q.gte),
		!q.gt.IsZero() && !created.After(q.gt),
		!q.lte.IsZero() && created.After(q.lte),
		!q.lt.IsZero() && !created.Before(q.lt),
		q.status != "" && status != q.status,
		q.paymentID != "" && paymentID != q.paymentID:
		return false
	}
	return true
}

// ykCursor is the cursor of the page that follows the object with seq.
func ykCursor(seq int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("yk:" + strconv.FormatInt(seq, 10)))
}

// ykNewID makes an id shaped like YooKassa's, e.g.
// 2f3b588d-000f-5000-8000-1d6e87c7fbde.
func ykNewID(kind string) string {
	var b [10]byte
	rand.Read(b[:])
	return fmt.Sprintf("%x-%s-5000-8000-%x", b[:4], kind, b[4:])
}
