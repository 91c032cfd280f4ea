package sim

// What the YooKassa simulator does beyond a shop that answers everything at
// once: the behaviours of the real API that an integration must survive.
// Tests set them with (*Server).SetYooKassaMode, demos with
// POST /_sim/yookassa.

import (
	"encoding/json"
	"net/http"
	"time"
)

// YooKassaMode is how the simulated shop behaves. The zero value is the
// default shop: every request answered at once, payments and refunds final
// at once, no receipts required.
type YooKassaMode struct {
	// ShopID, when set, is the only shop id the simulator accepts; any
	// other is refused 401 invalid_credentials, as a wrong secret is.
	ShopID string `json:"shop_id,omitempty"`
	// RequireReceipts: the shop issues 54-FZ receipts («Чеки от ЮKassa» or
	// an online cash register), so a payment or refund without receipt is
	// refused 400 invalid_request, parameter receipt, and nothing is made.
	RequireReceipts bool `json:"require_receipts,omitempty"`
	// LatencyMS: every POST is handled this long after it arrives (the
	// object is made then even if the caller has gone). YooKassa may take
	// up to 30 s.
	LatencyMS int `json:"latency_ms,omitempty"`
	// Processing: the next n POSTs that make an object answer 202
	// {"type": "error", "code": "request_accepted", "retry_after":
	// RetryAfterMS} instead of the
	// object; a repeat of the same key before retry_after has passed is
	// answered 202 again, after it the object.
	Processing int `json:"processing,omitempty"`
	// FailAfterCommit: the next n POSTs make their object and then answer
	// 500 internal_server_error (with retry_after): the outcome the
	// provider documents as unknown.
	FailAfterCommit int `json:"fail_after_commit,omitempty"`
	// TooManyRequests: the next n requests (of any kind) answer 429
	// too_many_requests with retry_after in the body, making nothing.
	TooManyRequests int `json:"too_many_requests,omitempty"`
	// RetryAfterMS is retry_after, in milliseconds, of 202, 429 and 500
	// bodies; 0 means 1000.
	RetryAfterMS int `json:"retry_after_ms,omitempty"`
	// PendingMS: payments and refunds are made pending and settle this
	// long after (a payment succeeds; a refund succeeds, or is canceled
	// with CancelRefunds); 0 makes them final at once.
	PendingMS int `json:"pending_ms,omitempty"`
	// CancelRefunds: refunds end canceled (reason rejected_by_payee)
	// instead of succeeded.
	CancelRefunds bool `json:"cancel_refunds,omitempty"`
}

// SetYooKassaMode sets how the simulated shop behaves from now on; Reset
// restores the default shop.
func (s *Server) SetYooKassaMode(m YooKassaMode) {
	y := yooKassaOf(s)
	y.mu.Lock()
	y.mode = m
	y.mu.Unlock()
}

// YooKassaSavedCard makes a succeeded payment that saved the payer's card
// (save_payment_method, the usual way a card is saved) and returns its id,
// which is also the id of the saved payment method: a later payment may
// charge it with payment_method_id, while GET /payment_methods/{id}, which
// knows only methods saved by a binding, answers 404 for it.
func (s *Server) YooKassaSavedCard() string {
	y := yooKassaOf(s)
	y.mu.Lock()
	defer y.mu.Unlock()
	now := time.Now().UTC().Truncate(time.Millisecond)
	y.seq++
	p := &ykPayment{seq: y.seq, id: ykNewID("000f"), status: "succeeded", paid: true, minor: 100, currency: "RUB",
		description: "Card binding payment", metadata: map[string]string{}, created: now, captured: now, shopID: "sim", savedCard: true}
	p.methodID = p.id
	y.payments[p.id] = p
	y.pOrder = append(y.pOrder, p)
	y.paymentNotice(p)
	return p.id
}

// YooKassaBusy makes n payments of another integration of the shop, so
// that a list walked back from now meets them first.
func (s *Server) YooKassaBusy(n int) {
	y := yooKassaOf(s)
	y.mu.Lock()
	defer y.mu.Unlock()
	for range n {
		now := time.Now().UTC().Truncate(time.Millisecond)
		y.seq++
		p := &ykPayment{seq: y.seq, id: ykNewID("000f"), status: "succeeded", paid: true, minor: 1000, currency: "RUB",
			methodID: "merchant-account-17", metadata: map[string]string{"source": "web-shop"}, created: now, captured: now, shopID: "sim"}
		y.payments[p.id] = p
		y.pOrder = append(y.pOrder, p)
		y.paymentNotice(p)
	}
}

// yooKassaOf is the YooKassa simulator registered on s.
func yooKassaOf(s *Server) *ykSim {
	ykSims.Lock()
	defer ykSims.Unlock()
	return ykSims.m[s]
}

// handleMode serves POST /_sim/yookassa: the body is a YooKassaMode.
func (y *ykSim) handleMode(w http.ResponseWriter, r *http.Request) {
	var m YooKassaMode
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "bad mode: " + err.Error()})
		return
	}
	y.s.SetYooKassaMode(m)
	WriteJSON(w, http.StatusOK, map[string]any{"ok": true})
}

// handleSavedCard serves POST /_sim/yookassa/saved_cards: a payment that
// saved a card, whose id is the saved method's.
func (y *ykSim) handleSavedCard(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, map[string]any{"payment_method_id": y.s.YooKassaSavedCard()})
}

// retryAfterMS is the retry_after of the simulator's bodies; y.mu is held.
func (y *ykSim) retryAfterMS() int {
	if y.mode.RetryAfterMS > 0 {
		return y.mode.RetryAfterMS
	}
	return 1000
}

// take consumes one of a counted behaviour; y.mu is held.
func take(n *int) bool {
	if *n <= 0 {
		return false
	}
	*n--
	return true
}

// settle moves a pending payment or refund on once its time has come;
// y.mu is held.
func (y *ykSim) settlePayment(p *ykPayment) {
	if p.status == "pending" && !p.settleAt.IsZero() && !time.Now().Before(p.settleAt) {
		p.status, p.paid, p.captured = "succeeded", true, p.settleAt.UTC().Truncate(time.Millisecond)
		y.paymentNotice(p)
	}
}

func (y *ykSim) settleRefund(r *ykRefund) {
	if r.status == "pending" && !r.settleAt.IsZero() && !time.Now().Before(r.settleAt) {
		r.status = "succeeded"
		if r.cancel {
			r.status = "canceled"
			if p, ok := y.payments[r.paymentID]; ok {
				p.refunded -= r.minor
			}
		}
		y.refundNotice(r)
	}
}
