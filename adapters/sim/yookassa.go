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
//     (or on the other endpoint) answers 400 invalid_request "Duplicate
//     idempotence key". Only requests that made an object bind their key.
//   - Payments charge a saved payment method: an active seeded account
//     (sim.Accounts), which is a method saved by a binding and which
//     GET /payment_methods/{id} shows as a saved card, active or inactive;
//     or a card saved during an earlier payment (YooKassaSavedCard), whose
//     id is that payment's id and which GET /payment_methods/{id} does not
//     know (404), as YooKassa documents that endpoint for bindings only. capture:true succeeds at once,
//     capture:false waits for capture (POST /payments/{id}/capture or
//     /cancel, yookassa_capture.go); an amount of at least
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
// refund made (a payment canceled for insufficient funds is a payment made)
// and once per capture or cancel (yookassa_capture.go).

import (
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"
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
	y.registerNotifications()
	y.registerCapture() // yookassa_capture.go
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
	notify   YooKassaNotify // where notifications go (yookassa_notify.go)
	notices  *notifier
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
	cancelParty  string // "" is payment_network
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
	if p.refunded > 0 || p.status == "succeeded" {
		// A succeeded payment carries what was refunded of it, 0.00 before
		// any refund, as YooKassa's Python SDK's recorded payment has it.
		v.RefundedAmount = &ykAmount{Value: ykFormatValue(p.refunded), Currency: p.currency}
	}
	if p.status == "canceled" {
		party := p.cancelParty
		if party == "" {
			party = "payment_network"
		}
		v.CancellationDetails = &ykCancellation{Party: party, Reason: p.cancelReason}
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

// ykNewID makes an id shaped like YooKassa's, e.g.
// 2f3b588d-000f-5000-8000-1d6e87c7fbde.
func ykNewID(kind string) string {
	var b [10]byte
	rand.Read(b[:])
	return fmt.Sprintf("%x-%s-5000-8000-%x", b[:4], kind, b[4:])
}
