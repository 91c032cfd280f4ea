package yookassa

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

// errReadForbidden is the cause of a read the provider refused for the
// shop's rights (403).
var errReadForbidden = errors.New("read forbidden")

// maxBody bounds how much of one answer is read.
const maxBody = 4 << 20

// amount is YooKassa's money: a decimal string and an ISO 4217 code.
type amount struct {
	Value    string `json:"value"`
	Currency string `json:"currency"`
}

// paymentRequest is the body of POST /v3/payments for a charge of a saved
// payment method.
type paymentRequest struct {
	Amount          amount            `json:"amount"`
	Capture         bool              `json:"capture"`
	PaymentMethodID string            `json:"payment_method_id"`
	Description     string            `json:"description,omitempty"`
	Metadata        map[string]string `json:"metadata,omitempty"`
	Receipt         *receiptRequest   `json:"receipt,omitempty"`
}

// refundRequestBody is the body of POST /v3/refunds.
type refundRequestBody struct {
	PaymentID   string            `json:"payment_id"`
	Amount      amount            `json:"amount"`
	Description string            `json:"description,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	Receipt     *receiptRequest   `json:"receipt,omitempty"`
}

// cancellation is cancellation_details of a canceled payment or refund.
type cancellation struct {
	Party  string `json:"party"`
	Reason string `json:"reason"`
}

// payment is the part of YooKassa's payment object the adapter reads.
// Metadata is decoded loosely: a list holds every payment of the shop,
// including ones other integrations made.
type payment struct {
	ID                  string         `json:"id"`
	Status              string         `json:"status"`
	Paid                bool           `json:"paid"`
	Amount              amount         `json:"amount"`
	RefundedAmount      *amount        `json:"refunded_amount,omitempty"`
	CreatedAt           string         `json:"created_at"`
	Description         string         `json:"description,omitempty"`
	Metadata            map[string]any `json:"metadata,omitempty"`
	CancellationDetails *cancellation  `json:"cancellation_details,omitempty"`
	Refundable          bool           `json:"refundable"`
	Test                bool           `json:"test"`
	PaymentMethod       *methodRef     `json:"payment_method,omitempty"`
}

// methodRef is a payment's payment_method: for a payment that saved the
// payer's method (save_payment_method), its id is the payment's and saved
// is true while the method can be charged again.
type methodRef struct {
	ID    string `json:"id"`
	Type  string `json:"type"`
	Saved bool   `json:"saved"`
}

// refund is the part of YooKassa's refund object the adapter reads.
type refund struct {
	ID                  string         `json:"id"`
	PaymentID           string         `json:"payment_id"`
	Status              string         `json:"status"`
	Amount              amount         `json:"amount"`
	CreatedAt           string         `json:"created_at"`
	Description         string         `json:"description,omitempty"`
	Metadata            map[string]any `json:"metadata,omitempty"`
	CancellationDetails *cancellation  `json:"cancellation_details,omitempty"`
}

// objectList is the answer of GET /v3/payments and GET /v3/refunds.
type objectList[T any] struct {
	Type       string `json:"type"`
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// apiError is YooKassa's error body. retry_after, in milliseconds, may
// come with 429 and 500: when to send the same request again.
type apiError struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	Code        string `json:"code"`
	Description string `json:"description"`
	Parameter   string `json:"parameter"`
	RetryAfter  int64  `json:"retry_after"`
}

// processing is the body of HTTP 202 ({"type":"error","code":
// "request_accepted","retry_after":1800} in YooKassa's PHP SDK tests):
// the request is still being handled; repeat it with the same
// Idempotence-Key after retry_after milliseconds. Only retry_after is read.
// The unit is the SDKs' reading of it: YooKassa's PHP SDK sleeps
// retry_after*1000 microseconds before repeating a request answered 202
// (BaseClient::delay, default 1800 ms).
type processing struct {
	Type       string `json:"type"`
	RetryAfter int64  `json:"retry_after"`
}

// retryAfterSeconds turns a retry_after in milliseconds into the whole
// seconds of adapters.Error.RetryAfter, rounded up; 0 when there is none.
func retryAfterSeconds(ms int64) int {
	if ms <= 0 {
		return 0
	}
	return int(min((ms+999)/1000, 3600))
}

// bodyRetryAfter reads retry_after (ms) from an error body, as seconds.
func bodyRetryAfter(data []byte) int {
	var ae apiError
	if json.Unmarshal(data, &ae) != nil {
		return 0
	}
	return retryAfterSeconds(ae.RetryAfter)
}

// do sends one request and reads its answer. A transport failure comes back
// classified by adapters.Send (the provider dedupes by Idempotence-Key, so a
// connection reset before any answer is Retry). The secret never appears in
// the error.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, idemKey string, body []byte) (*http.Response, []byte, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	// A POST may take YooKassa up to 30 s (it answers 500 then); a read
	// is answered at once, so it has a shorter bound of its own.
	limit := c.readTimeout
	if method == http.MethodPost {
		limit = c.timeout
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, nil, &adapters.Error{Class: adapters.Retry, Code: codes.TargetUnavailable, Message: "the request to the payment provider could not be built", Err: errors.New("build request")}
	}
	req.SetBasicAuth(c.shopID, c.secret)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idemKey != "" {
		req.Header.Set("Idempotence-Key", idemKey)
	}
	resp, err := adapters.Send(c.http, req, true)
	if err != nil {
		return nil, nil, c.mask(err)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	resp.Body.Close()
	if err == nil && len(data) > maxBody {
		err = errors.New("answer larger than 4 MiB")
	}
	if err != nil {
		return nil, nil, c.mask(&adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown, Message: "the answer of the payment provider was cut off", Err: fmt.Errorf("read answer: %w", err)})
	}
	return resp, data, nil
}

// errInvalidRead is the cause of a read YooKassa refused as invalid
// (400 invalid_request).
var errInvalidRead = errors.New("read refused as invalid")

// getJSON reads one object or list into v. A 404 is adapters.ErrNotFound;
// a 400 is a Final refusal of the read (errInvalidRead: of a read by id,
// the id, see getByID); other failures are classified as for any read.
func (c *Client) getJSON(ctx context.Context, path string, q url.Values, v any) error {
	resp, data, err := c.do(ctx, http.MethodGet, path, q, "", nil)
	if err != nil {
		return err
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		if err := json.Unmarshal(data, v); err != nil {
			return unreadable(err)
		}
		return nil
	case resp.StatusCode == http.StatusNotFound:
		return adapters.ErrNotFound
	case resp.StatusCode == http.StatusBadRequest:
		return &adapters.Error{Class: adapters.Final, Code: codes.TargetRejected, Message: "the payment provider refused the read as invalid",
			Err: fmt.Errorf("%w: %w", errInvalidRead, c.cause(resp, data))}
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		e := adapters.StatusError(resp)
		e.Err = c.cause(resp, data)
		if ra := bodyRetryAfter(data); ra > e.RetryAfter {
			e.RetryAfter = ra
		}
		return e
	case resp.StatusCode == http.StatusUnauthorized:
		return adapters.Misconfigured(codes.TargetPermissionDenied, "the payment provider refused the shop credentials", c.cause(resp, data))
	case resp.StatusCode == http.StatusForbidden:
		return adapters.Misconfigured(codes.TargetPermissionDenied, "the payment provider refused the shop the rights to read this", fmt.Errorf("%w: %w", errReadForbidden, c.cause(resp, data)))
	}
	return &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown, Message: "the payment provider answered a read in an unexpected way", Err: c.cause(resp, data)}
}

// getByID reads the object at path, which ends in its id, into v. YooKassa
// answers a read of an id the shop does not have 404 not_found or 400
// invalid_request, the parameter naming the id (a GET by id has nothing
// else to refuse): either is adapters.ErrNotFound.
func (c *Client) getByID(ctx context.Context, path string, v any) error {
	err := c.getJSON(ctx, path, nil, v)
	if errors.Is(err, errInvalidRead) {
		return adapters.ErrNotFound
	}
	return err
}

func (c *Client) getPayment(ctx context.Context, id string) (payment, error) {
	var p payment
	if !validProviderID(id) {
		return p, adapters.ErrNotFound
	}
	if err := c.getByID(ctx, "/payments/"+url.PathEscape(id), &p); err != nil {
		return p, err
	}
	if p.ID == "" {
		return p, unreadable(nil)
	}
	return p, nil
}

// paymentMethod is a saved payment method (GET /v3/payment_methods/{id}).
type paymentMethod struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Saved  bool   `json:"saved"`
	Status string `json:"status"` // pending, active, inactive
}

func (c *Client) getPaymentMethod(ctx context.Context, id string) (paymentMethod, error) {
	var m paymentMethod
	if !validProviderID(id) {
		return m, adapters.ErrNotFound
	}
	if err := c.getByID(ctx, "/payment_methods/"+url.PathEscape(id), &m); err != nil {
		return m, err
	}
	if m.ID == "" {
		return m, unreadable(nil)
	}
	return m, nil
}

func (c *Client) getRefund(ctx context.Context, id string) (refund, error) {
	var r refund
	if !validProviderID(id) {
		return r, adapters.ErrNotFound
	}
	if err := c.getByID(ctx, "/refunds/"+url.PathEscape(id), &r); err != nil {
		return r, err
	}
	if r.ID == "" {
		return r, unreadable(nil)
	}
	return r, nil
}

// findPayment finds the payment of op by id, or by its key in metadata.
func (c *Client) findPayment(ctx context.Context, op adapters.Op) (payment, error) {
	if op.ObjectID != "" {
		p, err := c.getPayment(ctx, op.ObjectID)
		if err != nil && !errors.Is(err, adapters.ErrNotFound) {
			return p, adapters.LookupFailure(err)
		}
		return p, err
	}
	return scan(ctx, c, "/payments", scanQuery(op), op.Key, func(p payment) map[string]any { return p.Metadata })
}

// findRefund finds the refund of op by id, or by its key in metadata among
// the refunds of the payment the payload names.
func (c *Client) findRefund(ctx context.Context, op adapters.Op) (refund, error) {
	if op.ObjectID != "" {
		r, err := c.getRefund(ctx, op.ObjectID)
		if err != nil && !errors.Is(err, adapters.ErrNotFound) {
			return r, adapters.LookupFailure(err)
		}
		return r, err
	}
	q := scanQuery(op)
	if p, err := decodeRefund(op); err == nil && validProviderID(p.PaymentID) {
		q.Set("payment_id", p.PaymentID)
	}
	return scan(ctx, c, "/refunds", q, op.Key, func(r refund) map[string]any { return r.Metadata })
}

// scanQuery bounds a list to the operation's time window: from its
// creation, less a margin, to when its last send could have landed
// (op.SentBy), plus a margin. The list has no metadata filter and walks
// back from its upper bound, so without one an old operation in a busy
// shop is behind every payment made since, past the pages a look-up reads.
func scanQuery(op adapters.Op) url.Values {
	q := url.Values{"limit": {strconv.Itoa(lookupPageSize)}}
	if !op.CreatedAt.IsZero() {
		q.Set("created_at.gte", op.CreatedAt.Add(-lookupMargin).UTC().Format("2006-01-02T15:04:05.000Z"))
	}
	if !op.SentBy.IsZero() {
		q.Set("created_at.lte", op.SentBy.Add(lookupMargin).UTC().Format("2006-01-02T15:04:05.000Z"))
	}
	return q
}

// scan pages through a list (newest first) for the object whose metadata
// carries key or its derived key. Reaching the page bound without reaching
// the end of the list is not "not found": the effect may be further back.
func scan[T any](ctx context.Context, c *Client, path string, q url.Values, key string, meta func(T) map[string]any) (T, error) {
	var zero T
	derived := IdempotenceKey(key)
	for range lookupPages {
		var l objectList[T]
		if err := c.getJSON(ctx, path, q, &l); err != nil {
			if errors.Is(err, adapters.ErrNotFound) {
				err = &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown, Message: "the payment provider did not list its objects", Err: errors.New("list answered 404")}
			}
			return zero, adapters.LookupFailure(err)
		}
		for _, it := range l.Items {
			if matches(meta(it), key, derived) {
				return it, nil
			}
		}
		if l.NextCursor == "" {
			return zero, adapters.ErrNotFound
		}
		q.Set("cursor", l.NextCursor)
	}
	return zero, &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown,
		Message: "the lookup at the payment provider stopped before the start of the operation's time window",
		Err:     fmt.Errorf("scanned %d pages of %s", lookupPages, path)}
}

func matches(meta map[string]any, key, derived string) bool {
	if v, ok := meta[MetaIdempotenceKey].(string); ok && v == derived {
		return true
	}
	v, ok := meta[MetaOperationKey].(string)
	return ok && v == key
}

// paymentOutcome maps a payment's status onto the gateway's outcome.
func paymentOutcome(p payment) (adapters.Result, error) {
	switch p.Status {
	case "succeeded":
		minor, err := amountOf(p.Amount)
		if err != nil {
			return adapters.Result{}, &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown, ObjectID: p.ID,
				Message: "the payment succeeded but its amount could not be read", Err: err}
		}
		return adapters.Result{ObjectID: p.ID, Data: map[string]any{
			"status":       "succeeded",
			"amount_minor": minor,
			"currency":     p.Amount.Currency,
			"paid":         p.Paid,
		}}, nil
	case "canceled":
		reason := ""
		if p.CancellationDetails != nil {
			reason = p.CancellationDetails.Reason
		}
		code, msg := cancelCode(reason)
		return adapters.Result{}, &adapters.Error{Class: adapters.Final, Code: code, Message: msg, ObjectID: p.ID,
			Err: fmt.Errorf("payment canceled: reason %q", reason)}
	case "pending", "waiting_for_capture":
		return adapters.Result{}, &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown, ObjectID: p.ID, Pending: true,
			Message: "the payment exists at the payment provider but is not final yet", Err: fmt.Errorf("payment status %q", p.Status)}
	}
	return adapters.Result{}, &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown, ObjectID: p.ID,
		Message: "the payment provider reported a payment status this gateway does not know", Err: fmt.Errorf("payment status %q", p.Status)}
}

// refundOutcome maps a refund's status onto the gateway's outcome.
func refundOutcome(r refund) (adapters.Result, error) {
	switch r.Status {
	case "succeeded":
		minor, err := amountOf(r.Amount)
		if err != nil {
			return adapters.Result{}, &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown, ObjectID: r.ID,
				Message: "the refund succeeded but its amount could not be read", Err: err}
		}
		return adapters.Result{ObjectID: r.ID, Data: map[string]any{
			"status":       "succeeded",
			"payment_id":   r.PaymentID,
			"amount_minor": minor,
			"currency":     r.Amount.Currency,
		}}, nil
	case "canceled":
		reason := ""
		if r.CancellationDetails != nil {
			reason = r.CancellationDetails.Reason
		}
		msg := "the payment provider canceled the refund"
		if safeToken(reason) {
			msg += " (reason: " + reason + ")"
		}
		return adapters.Result{}, &adapters.Error{Class: adapters.Final, Code: codes.RefundCanceled, Message: msg, ObjectID: r.ID,
			Err: fmt.Errorf("refund canceled: reason %q", reason)}
	case "pending":
		return adapters.Result{}, &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown, ObjectID: r.ID, Pending: true,
			Message: "the refund exists at the payment provider but is not final yet", Err: errors.New(`refund status "pending"`)}
	}
	return adapters.Result{}, &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown, ObjectID: r.ID,
		Message: "the payment provider reported a refund status this gateway does not know", Err: fmt.Errorf("refund status %q", r.Status)}
}

func amountOf(a amount) (int64, error) {
	exp, ok := exponent(a.Currency)
	if !ok {
		return 0, fmt.Errorf("currency %q not in the adapter's table", a.Currency)
	}
	return parseAmount(a.Value, exp)
}

// declineReasons are cancellation_details.reason values by which the payer's
// bank, the payment network or YooKassa's antifraud refused the payment.
var declineReasons = map[string]bool{
	"3d_secure_failed":              true,
	"call_issuer":                   true,
	"card_expired":                  true,
	"country_forbidden":             true,
	"fraud_suspected":               true,
	"general_decline":               true,
	"identification_required":       true,
	"invalid_card_number":           true,
	"invalid_csc":                   true,
	"issuer_unavailable":            true,
	"payment_method_limit_exceeded": true,
	"payment_method_restricted":     true,
	"permission_revoked":            true,
	"unsupported_mobile_operator":   true,
}

// cancelCode maps a canceled payment's reason onto a stable code and a fixed
// message; the reason itself, a provider enum, is quoted only when it is a
// plain token.
func cancelCode(reason string) (code, msg string) {
	switch {
	case reason == "insufficient_funds":
		return codes.InsufficientFunds, "the payer's account has insufficient funds for this payment"
	case declineReasons[reason]:
		msg = "the payment was declined"
		code = codes.PaymentDeclined
	default:
		msg = "the payment was canceled at the payment provider"
		code = codes.PaymentCanceled
	}
	if safeToken(reason) {
		msg += " (reason: " + reason + ")"
	}
	return code, msg
}

// safeToken reports whether s looks like a provider enum value.
func safeToken(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '_') {
			return false
		}
	}
	return true
}

// executeError classifies a non-200 answer to a POST.
func (c *Client) executeError(intent string, resp *http.Response, data []byte) error {
	if resp.StatusCode == http.StatusAccepted {
		// 202 (request_accepted): the request is being handled; the same request
		// with the same key after retry_after answers its outcome. The key
		// dedupes, so sending it again is a retry, never a second payment.
		var p processing
		_ = json.Unmarshal(data, &p)
		return &adapters.Error{Class: adapters.Retry, Code: codes.OutcomeUnknown, InProgress: true,
			Message:    "the payment provider is still processing the request",
			RetryAfter: max(retryAfterSeconds(p.RetryAfter), 1),
			Err:        fmt.Errorf("yookassa answered 202 (processing, retry_after %d ms)", p.RetryAfter)}
	}
	cause := c.cause(resp, data)
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		// 429, 502, 503: Retry; 500 and the rest: Reconcile — YooKassa
		// documents 500 as "the result of processing is unknown" and asks
		// for the same request with the same key again
		// (https://yookassa.ru/developers/using-api/response-handling/recommendations),
		// which the reconciler does, after the body's retry_after if any.
		e := adapters.StatusError(resp)
		e.Err = cause
		if ra := bodyRetryAfter(data); ra > e.RetryAfter {
			e.RetryAfter = ra
		}
		return e
	}
	var ae apiError
	_ = json.Unmarshal(data, &ae)
	switch resp.StatusCode {
	case http.StatusBadRequest:
		return badRequest(intent, ae.Parameter, cause)
	case http.StatusUnauthorized:
		return adapters.Misconfigured(codes.TargetPermissionDenied, "the payment provider refused the shop credentials", cause)
	case http.StatusForbidden:
		return adapters.Misconfigured(codes.TargetPermissionDenied, "the shop is not allowed to perform this operation at the payment provider", cause)
	case http.StatusNotFound:
		if intent == IntentRefund {
			return final(codes.ReferenceNotFound, "payment_id", "the payment to refund does not exist at the payment provider", cause)
		}
		// No resource of POST /payments can be missing: the base URL is
		// wrong. Nothing was created; the call may be made again once fixed.
		return &adapters.Error{Class: adapters.Retry, Code: codes.TargetUnavailable, Message: "the payment provider endpoint was not found", Err: cause}
	}
	if resp.StatusCode >= 400 {
		return final(codes.Validation, "", "the payment provider refused the request", cause)
	}
	return &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown, Message: "the payment provider answered in an unexpected way", Err: cause}
}

// badRequest maps 400 invalid_request by the parameter YooKassa names.
func badRequest(intent, parameter string, cause error) error {
	if parameter == "Idempotence-Key" {
		// The provider holds another request under this key (or refused the
		// key). The effect of that request may exist: look it up by key
		// rather than give up on an operation that may have been applied.
		return &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown,
			Message: "the payment provider already holds a request under this operation key", Err: cause}
	}
	field := func(name string) bool { return parameter == name || strings.HasPrefix(parameter, name+".") }
	switch {
	case intent == IntentCharge && field("payment_method_id"):
		return final(codes.ReferenceNotFound, "account_id", "the saved payment method (account) is not known to the payment provider or cannot be charged", cause)
	case intent == IntentRefund && field("payment_id"):
		return final(codes.Validation, "payment_id", "the payment cannot be refunded (it does not exist, has not succeeded or is not refundable)", cause)
	case field("receipt"):
		// The shop issues receipts and this one is missing or refused.
		return final(codes.Validation, "receipt", "the payment provider refused the fiscal receipt (54-FZ): this shop needs one, with the customer's email or phone and lines adding up to the amount", cause)
	case parameter == "amount.currency":
		return final(codes.Validation, "currency", "the payment provider refused the currency", cause)
	case field("amount"):
		if intent == IntentRefund {
			return final(codes.Validation, "amount_minor", "the refund amount exceeds what is left to refund on the payment, or is invalid", cause)
		}
		return final(codes.Validation, "amount_minor", "the payment provider refused the amount", cause)
	case field("description"):
		if intent == IntentRefund {
			return final(codes.Validation, "reason", "the payment provider refused the refund reason", cause)
		}
		return final(codes.Validation, "description", "the payment provider refused the description", cause)
	}
	return final(codes.Validation, "", "the payment provider refused the request as invalid", cause)
}

// cause is the provider's own account of a failure, for logs only.
func (c *Client) cause(resp *http.Response, data []byte) error {
	var ae apiError
	if json.Unmarshal(data, &ae) != nil || ae.Type != "error" {
		return errors.New("yookassa answered " + resp.Status)
	}
	s := fmt.Sprintf("yookassa answered %s: %s", resp.Status, ae.Code)
	if ae.Parameter != "" {
		s += " (parameter " + ae.Parameter + ")"
	}
	if ae.Description != "" {
		s += ": " + ae.Description
	}
	if ae.ID != "" {
		s += " [error id " + ae.ID + "]"
	}
	return errors.New(c.scrub(s))
}

// mask rewrites a classified error so that its cause cannot carry the secret.
func (c *Client) mask(err error) error {
	var e *adapters.Error
	if !errors.As(err, &e) {
		return errors.New(c.scrub(err.Error()))
	}
	m := *e
	if m.Err != nil {
		m.Err = errors.New(c.scrub(m.Err.Error()))
	}
	return &m
}

// scrub removes the secret and the Basic credentials from a text.
func (c *Client) scrub(s string) string {
	if c.secret != "" {
		s = strings.ReplaceAll(s, c.secret, "***")
	}
	basic := base64.StdEncoding.EncodeToString([]byte(c.shopID + ":" + c.secret))
	return strings.ReplaceAll(s, basic, "***")
}

// unreadable is the failure of an answer that came but could not be read.
func unreadable(err error) *adapters.Error {
	if err == nil {
		err = errors.New("answer without an object id")
	}
	return &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown,
		Message: "the payment provider sent an answer that could not be read", Err: err}
}
