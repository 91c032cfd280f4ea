package sim

// The YooKassa simulator's capture and cancel of a payment waiting for
// capture (a payment made with capture: false):
//
//	POST /yookassa/v3/payments/{id}/capture  {"amount": {…}} optional: less captures part
//	POST /yookassa/v3/payments/{id}/cancel   {}
//
// each with an Idempotence-Key bound to that endpoint and body as a
// create's is, answering the payment: succeeded (captured_at set), or
// canceled with cancellation_details {party: merchant, reason:
// canceled_by_merchant}. Either notifies its event. A payment of another
// status is refused 400 invalid_request, parameter payment_id (the
// description is the simulator's), an unknown id 404 not_found. Each
// counts one effect under its key, as a create does.

import (
	"encoding/json"
	"net/http"
	"time"
)

// registerCapture adds the endpoints; called by registerYooKassa.
func (y *ykSim) registerCapture() {
	y.s.Handle("POST "+ykRoot+"/payments/{id}/capture", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		y.create(w, r, "payments/"+id+"/capture", y.capturePayment(id))
	})
	y.s.Handle("POST "+ykRoot+"/payments/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		y.create(w, r, "payments/"+id+"/cancel", y.cancelPayment(id))
	})
}

// waiting finds a payment that waits for capture; y.mu is held.
func (y *ykSim) waiting(id string) (*ykPayment, *ykFailure) {
	p, ok := y.payments[id]
	if !ok {
		return nil, ykFail(http.StatusNotFound, "not_found", "payment_id", "Incorrect payment_id. Payment doesn't exist or access denied. Specify the payment ID created in your store.")
	}
	y.settlePayment(p)
	if p.status != "waiting_for_capture" {
		return nil, ykInvalid("payment_id", "Payment is in status "+p.status+", not waiting_for_capture")
	}
	return p, nil
}

// capturePayment captures the payment id, all of it or the amount sent;
// y.mu is held when it runs.
func (y *ykSim) capturePayment(id string) ykCommit {
	return func(_ string, raw []byte) (string, any, *ykFailure) {
		var req struct {
			Amount *ykAmount `json:"amount"`
		}
		if err := json.Unmarshal(raw, &req); err != nil {
			return "", nil, ykInvalid("", "Request body has a wrong structure")
		}
		p, fail := y.waiting(id)
		if fail != nil {
			return "", nil, fail
		}
		minor := p.minor
		if req.Amount != nil {
			m, currency, fail := ykCheckAmount(req.Amount)
			switch {
			case fail != nil:
				return "", nil, fail
			case currency != p.currency:
				return "", nil, ykInvalid("amount.currency", "Capture currency differs from the payment currency")
			case m > p.minor:
				return "", nil, ykInvalid("amount.value", "Capture amount exceeds the payment amount")
			}
			minor = m // the rest goes back to the payer
		}
		p.minor, p.status, p.captured = minor, "succeeded", time.Now().UTC().Truncate(time.Millisecond)
		y.paymentNotice(p)
		return p.id, y.paymentView(p), nil
	}
}

// cancelPayment cancels the payment id; y.mu is held when it runs.
func (y *ykSim) cancelPayment(id string) ykCommit {
	return func(_ string, _ []byte) (string, any, *ykFailure) {
		p, fail := y.waiting(id)
		if fail != nil {
			return "", nil, fail
		}
		p.status, p.paid, p.cancelParty, p.cancelReason = "canceled", false, "merchant", "canceled_by_merchant"
		y.paymentNotice(p)
		return p.id, y.paymentView(p), nil
	}
}
