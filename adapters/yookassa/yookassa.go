// Package yookassa is the payment target: YooKassa API v3 over HTTPS with
// HTTP Basic auth (shop id : secret key).
//
// One operation key makes at most one payment or refund because every POST
// carries the same Idempotence-Key, derived from the operation key (see
// IdempotenceKey), and YooKassa answers a repeat of the same request under
// the same key with the object it already made, for 24 hours after the first
// request. The operation key and the derived key also travel in the object's
// metadata, so Lookup can find the effect by listing recent objects when the
// payment id is not known, which keeps working after the 24 hours.
package yookassa

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

// Intents this target serves.
const (
	IntentCharge = "payment.charge"
	IntentRefund = "payment.refund"
)

// Metadata keys the adapter writes on payments and refunds. YooKassa allows
// at most 16 keys, key names up to 32 characters and string values up to
// 512 characters.
const (
	MetaOperationKey   = "operation_key"
	MetaIdempotenceKey = "idempotence_key"
	MetaOrderID        = "order_id"
	MetaCustomerID     = "customer_id"
)

// Provider limits the adapter checks before sending.
const (
	maxMetaValue          = 512 // characters in one metadata value
	maxPaymentDescription = 128 // characters in a payment description
	maxRefundDescription  = 250 // characters in a refund description
	maxProviderID         = 64  // generous bound on YooKassa object ids (36 today)
)

// Lookup scans at most lookupPages pages of lookupPageSize objects, starting
// lookupMargin before the operation was accepted (clock skew between the
// gateway and the provider).
const (
	lookupPageSize = 100
	lookupPages    = 20
	lookupMargin   = 10 * time.Minute
)

// DefaultTimeout bounds one request that makes a payment or refund when
// the configuration names none. YooKassa may take up to 30 s before it
// answers 500 to such a request (and then tries to cancel it), so the
// gateway waits longer than that: a slow but normal charge is answered,
// not left unknown.
const DefaultTimeout = 35 * time.Second

// DefaultReadTimeout bounds one read (a payment, a list page) when the
// configuration names none; never more than the timeout.
const DefaultReadTimeout = 10 * time.Second

// KeyWindow is how long YooKassa keeps an Idempotence-Key: a repeat of the
// same request under the same key within it answers the object first made
// (https://yookassa.ru/developers/using-api/interaction-format, "Идемпотентность").
const KeyWindow = 24 * time.Hour

// Config is the adapter's configuration. SecretKey comes from the
// environment variable the configuration names, never from a file or request.
type Config struct {
	// BaseURL is the API root including /v3, e.g. https://api.yookassa.ru/v3
	// or, for the simulator, http://127.0.0.1:PORT/yookassa/v3.
	BaseURL string
	// ShopID is the shop identifier (the Basic auth user name).
	ShopID string
	// SecretKey is the shop's secret key (the Basic auth password).
	SecretKey string
	// Timeout bounds one request that makes a payment or refund; zero
	// means DefaultTimeout.
	Timeout time.Duration
	// ReadTimeout bounds one read; zero means DefaultReadTimeout, and it
	// is never more than Timeout.
	ReadTimeout time.Duration
	// Receipts says how the shop sends 54-FZ receipts, if it must.
	Receipts Receipts
}

// Client is the YooKassa target. It is safe for concurrent use.
type Client struct {
	base        string
	shopID      string
	secret      string
	timeout     time.Duration // of a POST
	readTimeout time.Duration // of a GET
	receipts    Receipts
	http        *http.Client
}

var _ adapters.Target = (*Client)(nil)

// New checks cfg and returns a client. Its errors never contain the secret.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errors.New("yookassa: base_url must be an absolute http(s) URL such as https://api.yookassa.ru/v3")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("yookassa: base_url must not carry credentials, a query or a fragment")
	}
	if strings.TrimSpace(cfg.ShopID) == "" {
		return nil, errors.New("yookassa: shop_id is required")
	}
	if cfg.SecretKey == "" {
		return nil, errors.New("yookassa: secret key is empty (set the environment variable named by secret_key_env)")
	}
	if cfg.Timeout < 0 || cfg.ReadTimeout < 0 {
		return nil, errors.New("yookassa: timeout must not be negative")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	if r := cfg.Receipts; r.TaxSystemCode < 0 || r.TaxSystemCode > 6 || r.VatCode < 0 || r.VatCode > 12 {
		return nil, errors.New("yookassa: receipts: tax_system_code must be 1-6 and vat_code 1-12")
	}
	return &Client{
		base:        strings.TrimRight(cfg.BaseURL, "/"),
		shopID:      cfg.ShopID,
		secret:      cfg.SecretKey,
		timeout:     cfg.Timeout,
		readTimeout: min(cfg.ReadTimeout, cfg.Timeout),
		receipts:    cfg.Receipts,
		http:        &http.Client{Transport: adapters.NewTransport()},
	}, nil
}

// Name implements adapters.Target.
func (c *Client) Name() string { return "yookassa" }

// DedupesByKey implements adapters.Deduper: YooKassa answers a repeated
// Idempotence-Key with the payment or refund it made.
func (c *Client) DedupesByKey() bool { return true }

// KeyWindow implements adapters.Resender: within 24 hours of the first
// request, the same request under the same key answers the payment or
// refund it made, which is YooKassa's own way to learn the outcome of a
// request whose answer was lost.
func (c *Client) KeyWindow() time.Duration { return KeyWindow }

// ReadTimeout implements adapters.ReadTimer.
func (c *Client) ReadTimeout() time.Duration { return c.readTimeout }

// LookupCalls implements adapters.PagedLookup: a look-up by key scans up to
// lookupPages pages of the provider's list.
func (c *Client) LookupCalls() int { return lookupPages }

// IdempotenceKey derives the Idempotence-Key header value from an operation
// key: the lowercase hex SHA-256 of the key, 64 characters, which is
// YooKassa's limit ("не больше 64 символов"). It is the same on every attempt
// of the operation and is what the simulator counts effects by.
func IdempotenceKey(operationKey string) string {
	sum := sha256.Sum256([]byte(operationKey))
	return hex.EncodeToString(sum[:])
}

// chargePayload is the normalized payment.charge payload.
type chargePayload struct {
	AccountID   string          `json:"account_id"`
	OrderID     string          `json:"order_id"`
	AmountMinor int64           `json:"amount_minor"`
	Currency    string          `json:"currency"`
	CustomerID  string          `json:"customer_id"`
	Description string          `json:"description"`
	Receipt     *receiptPayload `json:"receipt"`
}

// refundPayload is the normalized payment.refund payload.
type refundPayload struct {
	PaymentID   string          `json:"payment_id"`
	AmountMinor int64           `json:"amount_minor"`
	Currency    string          `json:"currency"`
	Reason      string          `json:"reason"`
	Receipt     *receiptPayload `json:"receipt"`
}

// Execute creates the payment or refund of op at YooKassa.
func (c *Client) Execute(ctx context.Context, op adapters.Op) (adapters.Result, error) {
	switch op.Intent {
	case IntentCharge:
		p, err := decodeCharge(op)
		if err != nil {
			return adapters.Result{}, err
		}
		body, err := chargeRequest(op.Key, p, c.receipts)
		if err != nil {
			return adapters.Result{}, err
		}
		resp, data, err := c.do(ctx, http.MethodPost, "/payments", nil, IdempotenceKey(op.Key), body)
		if err != nil {
			return adapters.Result{}, err
		}
		if resp.StatusCode != http.StatusOK {
			return adapters.Result{}, c.executeError(IntentCharge, resp, data)
		}
		var pay payment
		if err := json.Unmarshal(data, &pay); err != nil || pay.ID == "" {
			return adapters.Result{}, unreadable(err)
		}
		return paymentOutcome(pay)
	case IntentRefund:
		p, err := decodeRefund(op)
		if err != nil {
			return adapters.Result{}, err
		}
		body, err := refundRequest(op.Key, p, c.receipts)
		if err != nil {
			return adapters.Result{}, err
		}
		resp, data, err := c.do(ctx, http.MethodPost, "/refunds", nil, IdempotenceKey(op.Key), body)
		if err != nil {
			return adapters.Result{}, err
		}
		if resp.StatusCode != http.StatusOK {
			return adapters.Result{}, c.executeError(IntentRefund, resp, data)
		}
		var ref refund
		if err := json.Unmarshal(data, &ref); err != nil || ref.ID == "" {
			return adapters.Result{}, unreadable(err)
		}
		return refundOutcome(ref)
	}
	return adapters.Result{}, unknownIntent(op.Intent)
}

// Lookup finds the payment or refund an earlier attempt of op made. It only
// reads: GET by id when op.ObjectID is known, otherwise a bounded scan of the
// objects created since op.CreatedAt (less a margin) for one whose metadata
// carries the operation key or its derived key.
//
// It answers the Result of a succeeded object; adapters.ErrNotFound when the
// provider has no such object; a Final *adapters.Error when the object is
// there but canceled; a Reconcile one when it is there but still pending, or
// when the lookup itself failed or could not scan far enough — the outcome
// then stays unknown.
func (c *Client) Lookup(ctx context.Context, op adapters.Op) (adapters.Result, error) {
	switch op.Intent {
	case IntentCharge:
		pay, err := c.findPayment(ctx, op)
		if err != nil {
			return adapters.Result{}, err
		}
		return paymentOutcome(pay)
	case IntentRefund:
		ref, err := c.findRefund(ctx, op)
		if err != nil {
			return adapters.Result{}, err
		}
		return refundOutcome(ref)
	}
	return adapters.Result{}, unknownIntent(op.Intent)
}

// Validate checks op without writing anything: the payload against the
// provider's limits; for a charge the saved payment method (account_id:
// it exists, is saved and active), so that a person is never asked to
// approve a charge that cannot be made; for a refund the payment itself
// (it exists, has succeeded, is in the same currency and still has enough
// left to refund).
func (c *Client) Validate(ctx context.Context, op adapters.Op) (adapters.Plan, error) {
	switch op.Intent {
	case IntentCharge:
		p, err := decodeCharge(op)
		if err != nil {
			return adapters.Plan{}, err
		}
		// The provider's limits and the account are both checked, so one
		// answer names each problem.
		var refused adapters.Refusals
		req, err := buildCharge(op.Key, p, c.receipts)
		if err != nil && !refused.Add(err) {
			return adapters.Plan{}, err
		}
		checked, err := c.checkSavedMethod(ctx, p.AccountID)
		if err != nil && !refused.Add(err) {
			return adapters.Plan{}, err
		}
		if err := refused.Err(); err != nil {
			return adapters.Plan{}, err
		}
		return adapters.Plan{Data: map[string]any{
			"account_check": checked,
			"account_id":    p.AccountID,
			"order_id":      p.OrderID,
			"amount_minor":  p.AmountMinor,
			"currency":      p.Currency,
			"amount_value":  req.Amount.Value,
			"description":   req.Description,
		}}, nil
	case IntentRefund:
		p, err := decodeRefund(op)
		if err != nil {
			return adapters.Plan{}, err
		}
		var refused adapters.Refusals
		if _, err := buildRefund(op.Key, p, c.receipts); err != nil && !refused.Add(err) {
			return adapters.Plan{}, err
		}
		pay, err := c.getPayment(ctx, p.PaymentID)
		switch {
		case errors.Is(err, adapters.ErrNotFound):
			refused.Add(final(codes.ReferenceNotFound, "payment_id", "the payment to refund does not exist at the payment provider", nil))
		case err != nil:
			return adapters.Plan{}, adapters.ReadFailure(err)
		}
		if err := refused.Err(); err != nil {
			return adapters.Plan{}, err
		}
		left, err := refundable(pay, p)
		if err != nil {
			return adapters.Plan{}, err
		}
		return adapters.Plan{Data: map[string]any{
			"payment_id":       p.PaymentID,
			"amount_minor":     p.AmountMinor,
			"currency":         p.Currency,
			"refundable_minor": left,
		}}, nil
	}
	return adapters.Plan{}, unknownIntent(op.Intent)
}

// checkSavedMethod checks the saved payment method a charge names and says
// how: "payment_method" (GET /payment_methods/{id}), "saving_payment" (the
// payment that saved it) or "left_to_charge".
//
// YooKassa documents GET /payment_methods/{id} for methods saved by a
// binding (a zero-amount save) only. The usual saved card is saved during
// a payment (save_payment_method), and its id is that payment's id
// (https://yookassa.ru/developers/payment-acceptance/scenario-extensions/recurring-payments/save-payment-method/save-during-payment):
// the endpoint does not know it. Such a method is checked through the
// payment that saved it, whose payment_method is that method with saved
// true. An id neither knows is refused; a check the provider will not
// answer (no right to read, say) is left to the charge itself, which
// refuses an unknown method with 400 payment_method_id.
func (c *Client) checkSavedMethod(ctx context.Context, id string) (string, error) {
	pm, err := c.getPaymentMethod(ctx, id)
	switch {
	case err == nil && pm.Saved && pm.Status == "active":
		return "payment_method", nil
	case err == nil:
		return "", final(codes.ReferenceInactive, "account_id", "the saved payment method (account) is not active at the payment provider", nil)
	case !errors.Is(err, adapters.ErrNotFound) && !refusedRead(err):
		return "", adapters.ReadFailure(err)
	}
	pay, err := c.getPayment(ctx, id)
	switch {
	case errors.Is(err, adapters.ErrNotFound):
		return "", final(codes.ReferenceNotFound, "account_id", "the saved payment method (account) is not known to the payment provider", nil)
	case refusedRead(err):
		return "left_to_charge", nil
	case err != nil:
		return "", adapters.ReadFailure(err)
	case pay.PaymentMethod == nil || pay.PaymentMethod.ID != id:
		// A payment made with a saved method names that method, not
		// itself: its id is no saved method.
		return "", final(codes.ReferenceNotFound, "account_id", "the saved payment method (account) is not known to the payment provider", nil)
	case !pay.PaymentMethod.Saved:
		return "", final(codes.ReferenceInactive, "account_id", "the payment named by account_id did not save its payment method, or the payer withdrew it", nil)
	}
	return "saving_payment", nil
}

// refusedRead reports whether a read was refused for the shop's rights
// (403) rather than failed.
func refusedRead(err error) bool { return errors.Is(err, errReadForbidden) }

// refundable checks that p can be refunded from pay and returns what is
// left to refund before this refund.
func refundable(pay payment, p refundPayload) (int64, error) {
	if pay.Status != "succeeded" || !pay.Paid {
		return 0, final(codes.Validation, "payment_id", "only a succeeded payment can be refunded", nil)
	}
	if pay.Amount.Currency != p.Currency {
		return 0, final(codes.Validation, "currency", "the refund currency differs from the payment currency", nil)
	}
	exp, _ := exponent(p.Currency)
	total, err := parseAmount(pay.Amount.Value, exp)
	if err != nil {
		return 0, &adapters.Error{Class: adapters.Retry, Code: codes.TargetUnavailable, Message: "the payment provider sent an answer that could not be read", Err: err}
	}
	var done int64
	if pay.RefundedAmount != nil && pay.RefundedAmount.Value != "" {
		if done, err = parseAmount(pay.RefundedAmount.Value, exp); err != nil {
			return 0, &adapters.Error{Class: adapters.Retry, Code: codes.TargetUnavailable, Message: "the payment provider sent an answer that could not be read", Err: err}
		}
	}
	left := total - done
	if p.AmountMinor > left {
		return left, final(codes.Validation, "amount_minor", "the refund amount exceeds what is left to refund on the payment", nil)
	}
	return left, nil
}

func decodeCharge(op adapters.Op) (chargePayload, error) {
	var p chargePayload
	if err := json.Unmarshal(op.Payload, &p); err != nil {
		return p, final(codes.Validation, "", "the payment payload could not be read", err)
	}
	return p, nil
}

func decodeRefund(op adapters.Op) (refundPayload, error) {
	var p refundPayload
	if err := json.Unmarshal(op.Payload, &p); err != nil {
		return p, final(codes.Validation, "", "the refund payload could not be read", err)
	}
	return p, nil
}

// buildCharge turns a charge payload into YooKassa's payment request: the
// saved payment method (account_id) charged at once (capture: true), with
// the keys in metadata. The result depends on the key and payload only, so
// every attempt sends the same body under the same Idempotence-Key.
func buildCharge(key string, p chargePayload, rc Receipts) (paymentRequest, error) {
	amt, err := money(p.AmountMinor, p.Currency)
	if err != nil {
		return paymentRequest{}, err
	}
	if p.AccountID == "" {
		return paymentRequest{}, final(codes.Validation, "account_id", "account_id is required", nil)
	}
	if p.OrderID == "" {
		return paymentRequest{}, final(codes.Validation, "order_id", "order_id is required", nil)
	}
	if utf8.RuneCountInString(p.OrderID) > maxMetaValue {
		return paymentRequest{}, final(codes.Validation, "order_id", "order_id is longer than the payment provider keeps (512 characters)", nil)
	}
	if utf8.RuneCountInString(p.CustomerID) > maxMetaValue {
		return paymentRequest{}, final(codes.Validation, "customer_id", "customer_id is longer than the payment provider keeps (512 characters)", nil)
	}
	desc := p.Description
	if desc == "" {
		desc = truncate("Order "+p.OrderID, maxPaymentDescription)
	}
	if utf8.RuneCountInString(desc) > maxPaymentDescription {
		return paymentRequest{}, final(codes.Validation, "description", "description is longer than 128 characters", nil)
	}
	receipt, err := buildReceipt(p.Receipt, rc, p.AmountMinor, p.Currency)
	if err != nil {
		return paymentRequest{}, err
	}
	meta := keyMetadata(key)
	meta[MetaOrderID] = p.OrderID
	if p.CustomerID != "" {
		meta[MetaCustomerID] = p.CustomerID
	}
	return paymentRequest{
		Amount:          amt,
		Capture:         true,
		PaymentMethodID: p.AccountID,
		Description:     desc,
		Metadata:        meta,
		Receipt:         receipt,
	}, nil
}

// buildRefund turns a refund payload into YooKassa's refund request; the
// reason becomes the refund's description.
func buildRefund(key string, p refundPayload, rc Receipts) (refundRequestBody, error) {
	amt, err := money(p.AmountMinor, p.Currency)
	if err != nil {
		return refundRequestBody{}, err
	}
	if !validProviderID(p.PaymentID) {
		return refundRequestBody{}, final(codes.Validation, "payment_id", "payment_id is not a payment id of the payment provider", nil)
	}
	if utf8.RuneCountInString(p.Reason) > maxRefundDescription {
		return refundRequestBody{}, final(codes.Validation, "reason", "reason is longer than 250 characters", nil)
	}
	receipt, err := buildReceipt(p.Receipt, rc, p.AmountMinor, p.Currency)
	if err != nil {
		return refundRequestBody{}, err
	}
	return refundRequestBody{
		PaymentID:   p.PaymentID,
		Amount:      amt,
		Description: p.Reason,
		Metadata:    keyMetadata(key),
		Receipt:     receipt,
	}, nil
}

func chargeRequest(key string, p chargePayload, rc Receipts) ([]byte, error) {
	req, err := buildCharge(key, p, rc)
	if err != nil {
		return nil, err
	}
	return json.Marshal(req)
}

func refundRequest(key string, p refundPayload, rc Receipts) ([]byte, error) {
	req, err := buildRefund(key, p, rc)
	if err != nil {
		return nil, err
	}
	return json.Marshal(req)
}

// keyMetadata carries the operation key (when it fits a metadata value) and
// always the derived key, which Lookup matches on.
func keyMetadata(key string) map[string]string {
	meta := map[string]string{MetaIdempotenceKey: IdempotenceKey(key)}
	if utf8.RuneCountInString(key) <= maxMetaValue {
		meta[MetaOperationKey] = key
	}
	return meta
}

// money checks an amount and renders it in YooKassa's form.
func money(minor int64, currency string) (amount, error) {
	exp, ok := exponent(currency)
	if !ok {
		return amount{}, final(codes.Validation, "currency", "the currency is not supported for payments (RUB, USD, EUR, KZT, BYN)", nil)
	}
	if minor <= 0 {
		return amount{}, final(codes.Validation, "amount_minor", "amount_minor must be greater than zero", nil)
	}
	v, err := formatAmount(minor, exp)
	if err != nil {
		return amount{}, final(codes.Validation, "amount_minor", "amount_minor is out of range", err)
	}
	return amount{Value: v, Currency: currency}, nil
}

// validProviderID accepts ids shaped like YooKassa's (letters, digits, '-'
// and '_'), so that an id is always one safe path segment.
func validProviderID(id string) bool {
	if id == "" || len(id) > maxProviderID {
		return false
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '-' || b == '_') {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}

func unknownIntent(intent string) error {
	return final(codes.Validation, "", "the payment target does not serve this intent", fmt.Errorf("intent %q", intent))
}

func final(code, field, msg string, err error) *adapters.Error {
	return &adapters.Error{Class: adapters.Final, Code: code, Field: field, Message: msg, Err: err}
}
