// Package onec is the adapter for 1C:Enterprise: it calls the oncegate HTTP
// service that the firm's 1C configuration publishes at
// {base_url}/hs/oncegate/v1 (the reference module is in bsl/). 1C registers
// every operation key in an information register unique by (intent, key), in
// the same transaction as the document, so a repeat of a key never makes a
// second document and an earlier attempt can be found by its key.
package onec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

// DefaultTimeout bounds one call to 1C when the configuration names none.
const DefaultTimeout = 5 * time.Second

// servicePath is the HTTP service's root under the 1C publication.
const servicePath = "/hs/oncegate/v1"

// maxBody bounds how much of a 1C answer is read.
const maxBody = 1 << 20

// messages are the safe texts given with each code; 1C's own text goes to
// the log only.
var messages = map[string]string{
	codes.KeyMismatch:            "1C already holds this operation key with a different payload",
	codes.KeyMissing:             "the operation key did not reach 1C",
	codes.IntentNotAllowed:       "the 1C service does not publish this intent",
	codes.Validation:             "1C rejected the payload as invalid",
	codes.ReferenceNotFound:      "a referenced object was not found in 1C",
	codes.ReferenceInactive:      "a referenced object is blocked or marked for deletion in 1C",
	codes.InvalidState:           "the document is not in a state that allows this operation",
	codes.NotFound:               "the object was not found in 1C",
	codes.TargetPermissionDenied: "the gateway's 1C user lacks the rights for this operation",
	codes.TargetRejected:         "1C refused the operation",
	codes.TargetNotPublished:     "the 1C HTTP service does not answer at the configured address; check base_url and the service's publication",
}

// Config is how the gateway reaches one 1C publication.
type Config struct {
	// BaseURL is the 1C publication, e.g. "http://host/accounting"; the
	// service is at BaseURL + "/hs/oncegate/v1".
	BaseURL string
	// Username and Password are the technical 1C user (HTTP Basic); empty
	// Username sends no credentials.
	Username, Password string
	// Timeout bounds each call; DefaultTimeout when zero.
	Timeout time.Duration
}

// Client calls the oncegate HTTP service of one 1C publication. It is safe
// for concurrent use.
type Client struct {
	root     string // base URL + servicePath, never printed
	user     string
	password string
	http     *http.Client
	scrub    *strings.Replacer // removes the host and password from error texts

	mu     sync.RWMutex
	routes map[bindKey]route // the declared intents, set by Bind
}

// New checks cfg and returns a client. BaseURL must be an absolute http or
// https URL without credentials, query or fragment.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(cfg.BaseURL))
	// Errors here never quote the URL: it may hold credentials.
	switch {
	case err != nil:
		return nil, errors.New("onec: base_url is not a valid URL")
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "", u.Opaque != "":
		return nil, errors.New("onec: base_url must be an absolute http or https URL")
	case u.User != nil:
		return nil, errors.New("onec: base_url must not carry credentials; set username and password")
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return nil, errors.New("onec: base_url must not have a query or fragment")
	case cfg.Timeout < 0:
		return nil, errors.New("onec: timeout must not be negative")
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	pairs := []string{u.Host, "<1c>"}
	if h := u.Hostname(); h != "" && h != u.Host {
		pairs = append(pairs, h, "<1c>")
	}
	if cfg.Password != "" {
		pairs = append(pairs, cfg.Password, "<secret>")
	}
	return &Client{
		root:     strings.TrimRight(u.String(), "/") + servicePath,
		user:     cfg.Username,
		password: cfg.Password,
		http: &http.Client{
			Transport: adapters.NewTransport(),
			Timeout:   timeout,
			// A redirect from 1C (a login page, another publication) is
			// answered as a status, never followed with the credentials.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		scrub: strings.NewReplacer(pairs...),
	}, nil
}

// Name implements adapters.Target.
func (c *Client) Name() string { return "onec" }

// DedupesByKey implements adapters.Deduper: the 1C service's key register
// answers a key it has seen with the document it made.
func (c *Client) DedupesByKey() bool { return true }

// ChecksOnExecute implements adapters.Rechecker: the module's execute
// runs the checks of validate under the key's lock, in the transaction
// that writes the document.
func (c *Client) ChecksOnExecute() bool { return true }

// String names the client without its URL or credentials.
func (c *Client) String() string { return "onec client" }

// request is the body of execute and validate.
type request struct {
	Intent      string          `json:"intent"`
	Fingerprint string          `json:"fingerprint,omitempty"`
	Payload     json.RawMessage `json:"payload"`
}

// record is the 1C register entry of an operation.
type record struct {
	Key      string `json:"key"`
	Intent   string `json:"intent"`
	ObjectID string `json:"object_id"`
	Number   string `json:"number"`
	State    string `json:"state"`
	Replayed bool   `json:"replayed"`
}

// Execute implements adapters.Target: POST /operations with the operation
// key in Idempotency-Key. 201 is a new document, 200 the document an earlier
// attempt made; both are a Result.
func (c *Client) Execute(ctx context.Context, op adapters.Op) (adapters.Result, error) {
	if op.Key == "" {
		return adapters.Result{}, c.final(codes.KeyMissing, "", errors.New("empty operation key"))
	}
	r := c.route(op)
	req, err := c.post(ctx, "/operations", op, r, true)
	if err != nil {
		return adapters.Result{}, err
	}
	resp, err := c.send(req)
	if err != nil {
		return adapters.Result{}, err
	}
	defer adapters.Drain(resp)
	switch resp.StatusCode {
	case http.StatusOK, http.StatusCreated:
		return c.result(resp, op, r)
	}
	return adapters.Result{}, c.refusal(resp, r)
}

// Lookup implements adapters.Target: GET /operations?intent=&key= finds
// what an earlier attempt of op made. It returns adapters.ErrNotFound only
// when 1C answers 404 NOT_FOUND; any other failure is a classified error.
func (c *Client) Lookup(ctx context.Context, op adapters.Op) (adapters.Result, error) {
	if op.Key == "" {
		return adapters.Result{}, c.final(codes.KeyMissing, "", errors.New("empty operation key"))
	}
	return c.lookup(ctx, op, c.route(op))
}

// lookup asks the key register for op's key under route r.
func (c *Client) lookup(ctx context.Context, op adapters.Op, r route) (adapters.Result, error) {
	q := url.Values{"intent": {r.name}, "key": {op.Key}}
	resp, err := c.read(ctx, "/operations?"+q.Encode())
	if err != nil {
		return adapters.Result{}, err
	}
	defer adapters.Drain(resp)
	switch resp.StatusCode {
	case http.StatusOK:
		return c.result(resp, op, r)
	case http.StatusNotFound:
		e := c.statusError(resp)
		if e.Code == codes.NotFound {
			return adapters.Result{}, adapters.ErrNotFound
		}
		return adapters.Result{}, e
	}
	return adapters.Result{}, adapters.ReadFailure(c.refusal(resp, r))
}

// Validate runs every check of op at 1C (POST /validate) and returns 1C's
// plan; 1C writes nothing. The operation key is sent when op has one, so
// 1C can say the operation would be a replay or a key mismatch.
func (c *Client) Validate(ctx context.Context, op adapters.Op) (adapters.Plan, error) {
	r := c.route(op)
	req, err := c.post(ctx, "/validate", op, r, op.Key != "")
	if err != nil {
		return adapters.Plan{}, err
	}
	resp, err := c.send(req)
	if err != nil {
		return adapters.Plan{}, err
	}
	defer adapters.Drain(resp)
	if resp.StatusCode != http.StatusOK {
		return adapters.Plan{}, c.refusal(resp, r)
	}
	var body struct {
		Valid bool           `json:"valid"`
		Plan  map[string]any `json:"plan"`
	}
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxBody))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil || !body.Valid || body.Plan == nil {
		return adapters.Plan{}, c.badAnswer(fmt.Errorf("validate answer: valid=%v, %v", body.Valid, err))
	}
	return adapters.Plan{Data: body.Plan}, nil
}

// Read implements adapters.Reader: the service's one read, the built-in
// sales_order.get_status, answered by GET /sales-orders/{order_id}. A
// declared read-only intent has no such route in the service: refused.
func (c *Client) Read(ctx context.Context, op adapters.Op) (adapters.Result, error) {
	if r := c.route(op); r.name != orderStatusIntent {
		return adapters.Result{}, &adapters.Error{Class: adapters.Final, Code: codes.IntentNotAllowed,
			Message: "the 1C HTTP service reads only sales orders (" + orderStatusIntent + "); " + op.Intent + " is no read it serves"}
	}
	var p struct {
		OrderID string `json:"order_id"`
	}
	if err := json.Unmarshal(op.Payload, &p); err != nil {
		return adapters.Result{}, c.final(codes.Validation, "order_id", err)
	}
	return c.OrderStatus(ctx, p.OrderID)
}

// OrderStatus reads a sales order (GET /sales-orders/{id}). An unknown
// order is a Final REFERENCE_NOT_FOUND on order_id that also matches
// errors.Is(err, adapters.ErrNotFound).
func (c *Client) OrderStatus(ctx context.Context, orderID string) (adapters.Result, error) {
	if strings.TrimSpace(orderID) == "" {
		return adapters.Result{}, c.final(codes.Validation, "order_id", errors.New("empty order id"))
	}
	req, err := c.get(ctx, "/sales-orders/"+url.PathEscape(orderID))
	if err != nil {
		return adapters.Result{}, err
	}
	resp, err := c.send(req)
	if err != nil {
		return adapters.Result{}, err
	}
	defer adapters.Drain(resp)
	switch resp.StatusCode {
	case http.StatusOK:
		var o struct {
			ObjectID string `json:"object_id"`
			Number   string `json:"number"`
			State    string `json:"state"`
		}
		if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(&o); err != nil || o.ObjectID == "" || o.State == "" {
			return adapters.Result{}, c.badAnswer(fmt.Errorf("sales order answer: %v", err))
		}
		return adapters.Result{ObjectID: o.ObjectID, Data: map[string]any{"number": o.Number, "state": o.State}}, nil
	case http.StatusNotFound:
		e := c.statusError(resp)
		if e.Code == codes.NotFound {
			e = c.final(codes.ReferenceNotFound, "order_id", fmt.Errorf("sales order: %w", adapters.ErrNotFound))
		}
		return adapters.Result{}, e
	}
	return adapters.Result{}, c.statusError(resp)
}

// post builds a POST of op's route, fingerprint and payload to path.
func (c *Client) post(ctx context.Context, path string, op adapters.Op, r route, withKey bool) (*http.Request, error) {
	payload := op.Payload
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	body, err := json.Marshal(request{Intent: r.name, Fingerprint: op.Fingerprint, Payload: payload})
	if err != nil {
		return nil, c.final(codes.Validation, "payload", fmt.Errorf("encode request: %v", err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.root+path, bytes.NewReader(body))
	if err != nil {
		return nil, c.final(codes.TargetRejected, "", errors.New("build request"))
	}
	// Without GetBody net/http never resends the POST by itself on a reused
	// connection (it would, because of Idempotency-Key): every attempt is
	// the caller's, counted and classified.
	req.GetBody = nil
	req.Header.Set("Content-Type", "application/json")
	if withKey {
		req.Header.Set("Idempotency-Key", op.Key)
	}
	if withKey && path == "/operations" {
		c.bound(ctx, req)
	}
	c.auth(req)
	return req, nil
}

// The headers that bound an execute call at 1C: the instant the gateway
// stops waiting, Unix time in milliseconds, and its wait in milliseconds
// (free of any clock difference between the two machines). The module
// checks both right before it commits and refuses a commit past either
// (503 DEADLINE_EXCEEDED, nothing done), so once the gateway has stopped
// waiting no document can appear later than the commit in progress, which
// a look-up waits for behind the key's lock.
const (
	deadlineHeader = "Oncegate-Deadline"
	timeoutHeader  = "Oncegate-Timeout-Ms"
)

// bound sets the deadline headers of req: the earlier of the client's
// timeout and ctx's deadline.
func (c *Client) bound(ctx context.Context, req *http.Request) {
	now := time.Now()
	deadline := now.Add(c.http.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	req.Header.Set(deadlineHeader, strconv.FormatInt(deadline.UnixMilli(), 10))
	req.Header.Set(timeoutHeader, strconv.FormatInt(max(deadline.Sub(now).Milliseconds(), 1), 10))
}

// read sends a GET of one of the service's reads (a look-up by key, who an
// id names, a document by its id): a call that failed on the way is a
// read's failure, which changes nothing at 1C.
func (c *Client) read(ctx context.Context, pathAndQuery string) (*http.Response, error) {
	req, err := c.get(ctx, pathAndQuery)
	if err != nil {
		return nil, err
	}
	resp, err := c.send(req)
	if err != nil {
		return nil, adapters.ReadFailure(err)
	}
	return resp, nil
}

func (c *Client) get(ctx context.Context, pathAndQuery string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.root+pathAndQuery, nil)
	if err != nil {
		return nil, c.final(codes.TargetRejected, "", errors.New("build request"))
	}
	c.auth(req)
	return req, nil
}

func (c *Client) auth(req *http.Request) {
	req.Header.Set("Accept", "application/json")
	if c.user != "" {
		req.SetBasicAuth(c.user, c.password)
	}
}

// send performs req; 1C dedupes by key, so a reset after sending is Retry.
func (c *Client) send(req *http.Request) (*http.Response, error) {
	resp, err := adapters.Send(c.http, req, true)
	if err != nil {
		var e *adapters.Error
		if errors.As(err, &e) && e.Err != nil {
			e.Err = errors.New(c.clean(e.Err.Error()))
		}
		return nil, err
	}
	return resp, nil
}

// result reads a register entry answered for op, sent by route r.
func (c *Client) result(resp *http.Response, op adapters.Op, r route) (adapters.Result, error) {
	var rec record
	err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(&rec)
	switch {
	case err != nil:
		return adapters.Result{}, c.badAnswer(fmt.Errorf("operation answer: %v", err))
	case rec.ObjectID == "":
		return adapters.Result{}, c.badAnswer(errors.New("operation answer without object_id"))
	case rec.Key != op.Key || rec.Intent != r.name:
		return adapters.Result{}, c.badAnswer(errors.New("operation answer for another key or intent"))
	}
	return adapters.Result{ObjectID: rec.ObjectID, Data: map[string]any{"number": rec.Number, "state": rec.State}}, nil
}

// refusal classifies a non-success answer to a call sent by route r: as
// statusError, except that a declared route the service answers
// INTENT_NOT_ALLOWED is not published there (notPublished).
func (c *Client) refusal(resp *http.Response, r route) *adapters.Error {
	e := c.statusError(resp)
	if r.declared && e.Class == adapters.Final && e.Code == codes.IntentNotAllowed {
		return c.notPublished(r, e.Err)
	}
	return e
}

// statusError classifies a non-success answer. 400, 404, 409 and 422 are
// 1C's refusals: Final with 1C's first error and the others as its Also
// (each code and field when they look like a code and a payload path, 1C's
// text only in Err). A 404 from
// something other than the service (a wrong publication or base_url) has
// no such body: the service never ran, so it is Retry TARGET_NOT_PUBLISHED
// (adapters.Misconfigured), and the key survives until the configuration
// is fixed. A 400, 409 or 422 without a body is Final TARGET_REJECTED.
// 401/403 refuse the gateway's own user (adapters.Misconfigured); anything
// else is adapters.StatusError.
func (c *Client) statusError(resp *http.Response) *adapters.Error {
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return adapters.Misconfigured(codes.TargetPermissionDenied, messages[codes.TargetPermissionDenied], errors.New(resp.Status))
	case http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity:
	default:
		e := adapters.StatusError(resp)
		e.Err = errors.New(c.clean(e.Err.Error()))
		return e
	}
	var body struct {
		Errors []struct {
			Code    string `json:"code"`
			Field   string `json:"field"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(&body)
	if (err != nil || len(body.Errors) == 0) && resp.StatusCode == http.StatusNotFound {
		// Not the service answering: it never ran. Retry, so the key
		// survives until the publication or base_url is fixed.
		return adapters.Misconfigured(codes.TargetNotPublished, messages[codes.TargetNotPublished], fmt.Errorf("%s without an error body", resp.Status))
	}
	if err != nil || len(body.Errors) == 0 {
		return c.final(codes.TargetRejected, "", fmt.Errorf("%s without an error body", resp.Status))
	}
	// 1C names every problem it found (each reference it lacks, say): the
	// first is the refusal, the rest its Also, each with the safe text of
	// its code.
	var refused adapters.Refusals
	for _, e := range body.Errors {
		code, field := e.Code, e.Field
		if !codePattern.MatchString(code) {
			code = codes.TargetRejected
		}
		if !fieldPattern.MatchString(field) {
			field = ""
		}
		cause := resp.Status + ": " + e.Code
		if e.Field != "" {
			cause += " (" + e.Field + ")"
		}
		if e.Message != "" {
			cause += ": " + e.Message
		}
		refused.Add(c.final(code, field, errors.New(c.clean(cause))))
	}
	return refused.All()
}

var (
	codePattern  = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)
	fieldPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}(\[[0-9]{1,4}\])?(\.[a-z][a-z0-9_]{0,63}(\[[0-9]{1,4}\])?){0,3}$`)
	// addrPattern finds IP addresses (and ports) that net errors quote.
	addrPattern = regexp.MustCompile(`\[[0-9A-Fa-f:.%]+\](:[0-9]+)?|\b[0-9]{1,3}(\.[0-9]{1,3}){3}(:[0-9]+)?\b`)
)

// final is a business refusal with the fixed safe message of code.
func (c *Client) final(code, field string, cause error) *adapters.Error {
	msg, ok := messages[code]
	if !ok {
		msg = messages[codes.TargetRejected]
	}
	return &adapters.Error{Class: adapters.Final, Code: code, Field: field, Message: msg, Err: cause}
}

// badAnswer is a success status with a body this adapter cannot read: the
// document may exist, so the outcome is unknown until a lookup.
func (c *Client) badAnswer(cause error) *adapters.Error {
	return &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown,
		Message: "1C answered with a body the gateway could not read", Err: errors.New(c.clean(cause.Error()))}
}

// clean keeps a log text short and free of the publication's host, the
// password and IP addresses (net errors quote the address they dialled).
func (c *Client) clean(s string) string {
	s = c.scrub.Replace(s)
	s = addrPattern.ReplaceAllString(s, "<addr>")
	if len(s) > 512 {
		s = strings.ToValidUTF8(s[:512], "") + "…"
	}
	return s
}
