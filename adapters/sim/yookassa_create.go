package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The YooKassa simulator's POSTs: a payment or a refund made once per
// Idempotence-Key, its body checked as the provider checks it.

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
			e := ykInvalid("Idempotence-Key", "Duplicate idempotence key") // as YooKassa words it to shops
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

// processing is the 202 of a request still being handled, as YooKassa's
// PHP SDK has it in its tests ({"type":"error","code":"request_accepted",
// "retry_after":1800}); y.mu is held.
func (y *ykSim) processing() (int, any) {
	return http.StatusAccepted, map[string]any{"type": "error", "code": "request_accepted", "retry_after": y.retryAfterMS()}
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
	if p.status == "pending" {
		y.settleOnTime(p.settleAt, p, nil)
	}
	y.paymentNotice(p)
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
	p.refunded += minor
	y.refunds[ref.id] = ref
	y.rOrder = append(y.rOrder, ref)
	if y.mode.PendingMS > 0 || y.mode.CancelRefunds {
		ref.status, ref.settleAt = "pending", ref.created.Add(time.Duration(y.mode.PendingMS)*time.Millisecond)
		y.settleOnTime(ref.settleAt, nil, ref)
		y.settleRefund(ref)
	} else {
		y.refundNotice(ref)
	}
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
