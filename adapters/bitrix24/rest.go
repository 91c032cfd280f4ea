package bitrix24

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

const (
	maxAnswer = 1 << 20 // bytes of an answer read at most
	maxPages  = 20      // pages of 50 a list call follows at most
)

// reply is a Bitrix24 REST answer: {"result": …, "total": n, "next": n,
// "time": {…}} on success, {"error": "CODE", "error_description": "…"} on
// failure (the code may be empty, the text then names the reason).
type reply struct {
	Result      json.RawMessage `json:"result"`
	Total       *int            `json:"total"`
	Next        *int            `json:"next"`
	Error       *string         `json:"error"`
	Description string          `json:"error_description"`
	Time        replyTime       `json:"time"`
}

// replyTime is the answer's "time" block. Only OperatingResetAt is read:
// when part of the method's execution-time limit is released (Unix
// seconds), given in every answer of the cloud portal since REST 22.0.0;
// see https://apidocs.bitrix24.com/limits.html ("Resource Consumption
// Limits"): past 480 s of a method's execution time within 10 minutes the
// method is blocked, answering 429 OPERATION_TIME_LIMIT.
//
// The block is decoded leniently: it is bookkeeping, and an odd value in
// it (a number sent as a string, a field missing, a block that is no
// object) must not fail an answer that is otherwise a success, which for
// an add would leave a record made and the operation unknown. What cannot
// be read is 0, as if the portal had not said.
type replyTime struct {
	OperatingResetAt float64
}

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (t *replyTime) UnmarshalJSON(b []byte) error {
	*t = replyTime{}
	var block map[string]json.RawMessage
	if json.Unmarshal(b, &block) != nil {
		return nil
	}
	var v text
	if raw, ok := block["operating_reset_at"]; ok && json.Unmarshal(raw, &v) == nil {
		if f, err := strconv.ParseFloat(strings.TrimSpace(string(v)), 64); err == nil && f > 0 && f < 1e12 {
			t.OperatingResetAt = f
		}
	}
	return nil
}

// operationBlockFallback is how long a method is held back after a 429
// OPERATION_TIME_LIMIT when no answer has said when its limit is released.
const operationBlockFallback = time.Minute

// call posts params to <webhook>/<method>.json and returns the answer, or a
// classified *adapters.Error. write says whether the method creates an
// effect: a write that may have reached the target is Reconcile; a read
// never made an effect, so any failure of it is safe to repeat (Retry).
func (c *Client) call(ctx context.Context, method string, params any, write bool) (*reply, error) {
	body, err := json.Marshal(params)
	if err != nil {
		return nil, &adapters.Error{Class: adapters.Final, Code: codes.Validation,
			Message: "the request for the CRM could not be encoded", Err: err}
	}
	// Every call waits for its turn under the portal's request rate and
	// for any block of its method (OPERATION_TIME_LIMIT) to end, within
	// ctx's deadline; a write must still have its whole timeout then.
	need := time.Duration(0)
	if write {
		need = c.http.Timeout
	}
	if err := c.pace.Wait(ctx, method, need); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+method+".json", bytes.NewReader(body))
	if err != nil {
		// The error would quote the URL; keep only that it failed.
		return nil, adapters.Misconfigured(codes.TargetPermissionDenied, "the CRM webhook URL is not usable", errors.New(method+": cannot build request"))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	// No Idempotency-Key header: with one, net/http would resend a POST on
	// its own after a broken keep-alive connection, and Bitrix24 does not
	// dedupe.
	resp, err := adapters.Send(c.http, req, !write)
	if err != nil {
		if !write {
			err = adapters.ReadFailure(err)
		}
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		cause := fmt.Errorf("%s: read answer: %w", method, err)
		if write {
			return nil, &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown,
				Message: "the CRM's answer was cut off", Err: cause}
		}
		return nil, &adapters.Error{Class: adapters.Retry, Code: codes.TargetUnavailable,
			Message: "the CRM's answer was cut off", Err: cause}
	}
	var r reply
	decodeErr := json.Unmarshal(raw, &r)
	c.noteReset(method, r.Time.OperatingResetAt)
	if resp.StatusCode/100 == 2 && decodeErr == nil && r.Error == nil && r.Description == "" {
		return &r, nil
	}
	e := interpret(method, resp, &r, write)
	if r.Error != nil && strings.EqualFold(*r.Error, "OPERATION_TIME_LIMIT") {
		// The method is blocked for every caller of the portal: send none
		// of it before its limit is released.
		until := c.blockedUntil(method)
		c.pace.Hold(method, until)
		e.RetryAfter = max(e.RetryAfter, int(time.Until(until).Seconds()+1))
	}
	return nil, e
}

// noteReset remembers the latest operating_reset_at the portal gave for
// method (Unix seconds; 0 when the answer had none).
func (c *Client) noteReset(method string, unix float64) {
	if unix <= 0 {
		return
	}
	t := time.Unix(0, int64(unix*1e9))
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.resetAt[method]) {
		c.resetAt[method] = t
	}
}

// blockedUntil is when a method the portal just blocked may be called
// again: the release its answers announced, if still ahead, else
// operationBlockFallback from now.
func (c *Client) blockedUntil(method string) time.Time {
	c.mu.Lock()
	t := c.resetAt[method]
	c.mu.Unlock()
	if now := time.Now(); t.After(now) {
		return t
	}
	return time.Now().Add(operationBlockFallback)
}

// Error codes of the REST layer (not of a method) that mean the webhook
// cannot act: wrong or revoked secret, missing scope, REST not on the plan,
// portal closed, manual block.
var deniedCodes = map[string]bool{
	"NO_AUTH_FOUND":          true,
	"INVALID_CREDENTIALS":    true,
	"INVALID_REQUEST":        true, // https required
	"ACCESS_DENIED":          true,
	"INSUFFICIENT_SCOPE":     true,
	"EXPIRED_TOKEN":          true,
	"USER_ACCESS_ERROR":      true,
	"PORTAL_DELETED":         true,
	"OVERLOAD_LIMIT":         true,
	"ERROR_METHOD_NOT_FOUND": true, // also what a webhook without the crm scope gets
}

// interpret classifies a failed answer. Messages are fixed texts; the
// target's own code and text go only into Err.
func interpret(method string, resp *http.Response, r *reply, write bool) *adapters.Error {
	code := ""
	if r.Error != nil {
		code = *r.Error
	}
	cause := fmt.Errorf("%s: HTTP %d: %q: %q", method, resp.StatusCode, code, clip(r.Description, 200))
	upper := strings.ToUpper(code)
	switch {
	case upper == "PAYMENT_REQUIRED" || code == "" && strings.Contains(strings.ToLower(r.Description), "subscription has been ended"):
		// The portal's plan has ended ("Subscription has been ended"): its
		// REST API answers nothing, whatever the request, until the plan
		// is paid. An operator's matter, not a refusal of the request;
		// the portal refused before the method ran, so nothing was done.
		return &adapters.Error{Class: adapters.Retry, Code: codes.TargetUnavailable,
			Message: "the Bitrix24 portal's subscription has ended, so its REST API refuses every call; the portal's administrator must renew its plan (nothing was done in the CRM)", Err: cause}
	case upper == "QUERY_LIMIT_EXCEEDED" || upper == "OPERATION_TIME_LIMIT":
		// The portal's own limits refuse before the method runs (503
		// QUERY_LIMIT_EXCEEDED for the request rate, 429
		// OPERATION_TIME_LIMIT for a method's execution time; see
		// https://apidocs.bitrix24.com/limits.html): nothing was applied.
		e := adapters.StatusError(resp)
		e.Class, e.Code, e.Message, e.Err = adapters.Retry, codes.TargetUnavailable, "the CRM's request limit is exceeded", cause
		return e
	case write && code == "" && (resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusServiceUnavailable):
		// A bare 502/503 from a proxy in front of the portal can come after
		// PHP committed the write, and Bitrix24 does not dedupe by key:
		// look it up before anything is sent again.
		return &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown,
			Message: "the CRM's gateway failed; the request may have been applied", Err: cause}
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusBadGateway ||
		resp.StatusCode == http.StatusServiceUnavailable:
		e := adapters.StatusError(resp)
		e.Err = cause
		return e
	case upper == "NO_AUTH_FOUND":
		// 401 NO_AUTH_FOUND "Wrong authorization data": the portal has no
		// webhook with this user id and secret.
		return adapters.Misconfigured(codes.TargetPermissionDenied,
			"the Bitrix24 portal does not accept the webhook (wrong authorization data: its user id or secret is wrong, or the webhook was deleted); check the webhook URL", cause)
	case upper == "ACCESS_DENIED" && strings.Contains(strings.ToLower(r.Description), "only"):
		// "REST is available only on commercial plans" ("… only by
		// subscription" to a webhook): the portal's plan has no REST API.
		// The operator's matter, as an ended plan is, but told so.
		return adapters.Misconfigured(codes.TargetPermissionDenied,
			"the Bitrix24 portal's plan does not include the REST API, so it refuses the webhook; the portal's administrator must move it to a plan with REST (nothing was done in the CRM)", cause)
	case deniedCodes[upper] || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden ||
		resp.StatusCode == http.StatusNotFound || resp.StatusCode/100 == 3 ||
		strings.HasPrefix(strings.ToLower(r.Description), "access denied"):
		return adapters.Misconfigured(codes.TargetPermissionDenied, "the CRM webhook is not allowed to do this; check its URL, user and crm scope", cause)
	case resp.StatusCode >= 500 || resp.StatusCode/100 == 2:
		// A failure while handling, or a 200 that is not a REST answer:
		// the request may have been applied.
		if write {
			return &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown,
				Message: "the CRM failed while handling the request", Err: cause}
		}
		return &adapters.Error{Class: adapters.Retry, Code: codes.TargetUnavailable,
			Message: "the CRM failed while handling the request", Err: cause}
	default:
		if noRecord(r.Description) {
			cause = fmt.Errorf("%w (%w)", cause, errNoRecord)
		}
		return &adapters.Error{Class: adapters.Final, Code: codes.Validation,
			Message: "the CRM rejected the request's arguments", Err: cause}
	}
}

// errNoRecord is in the error of a get method the portal answered 400
// "Not found" with an empty code: no record has that ID. The text is all
// the portal gives
// (https://apidocs.bitrix24.com/api-reference/crm/contacts/crm-contact-get.html).
var errNoRecord = errors.New("no record with this ID")

// noRecord reports whether a get method's refusal says that no record has
// the ID: "Not found" from crm.deal.get, crm.lead.get, crm.contact.get and
// crm.company.get; "Activity is not found." from crm.activity.get, whose
// REST proxy words it so (CCrmActivityRestProxy::innerGet).
func noRecord(description string) bool {
	d := strings.TrimSuffix(strings.TrimSpace(description), ".")
	return strings.EqualFold(d, "Not found") || strings.EqualFold(d, "Activity is not found")
}

// list calls a list method page by page (start = 0, 50, …) and hands each
// page's result array to page, which reports whether to go on.
func (c *Client) list(ctx context.Context, method string, params map[string]any, page func(json.RawMessage) (bool, error)) error {
	start := 0
	for n := 0; n < maxPages; n++ {
		params["start"] = start
		r, err := c.call(ctx, method, params, false)
		if err != nil {
			return adapters.ReadFailure(err)
		}
		more, err := page(r.Result)
		if err != nil {
			return &adapters.Error{Class: adapters.Retry, Code: codes.TargetUnavailable,
				Message: "the CRM answered in an unexpected shape", Err: fmt.Errorf("%s: %w", method, err)}
		}
		if !more || r.Next == nil || *r.Next <= start {
			return nil
		}
		start = *r.Next
	}
	// Pages left unread: "not found" would not be known, and for a
	// look-up that answer must never be guessed.
	return &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown,
		Message: "the CRM's list was longer than the gateway reads", Err: fmt.Errorf("%s: more than %d pages", method, maxPages)}
}

// text is a scalar the REST API may send as a string, a number, a boolean
// or null (ids arrive as "17" from list methods and as 17 from add).
type text string

// UnmarshalJSON implements json.Unmarshaler.
func (t *text) UnmarshalJSON(b []byte) error {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return err
	}
	switch v := v.(type) {
	case nil:
		*t = ""
	case string:
		*t = text(v)
	case json.Number:
		*t = text(v.String())
	case bool:
		if v {
			*t = "1"
		} else {
			*t = "0"
		}
	default:
		return fmt.Errorf("not a scalar: %.20s", b)
	}
	return nil
}

// positiveID reads crm.activity.add's result, the new id, as a string.
func positiveID(raw json.RawMessage) (string, bool) {
	var t text
	if len(raw) == 0 || json.Unmarshal(raw, &t) != nil {
		return "", false
	}
	n, err := strconv.ParseInt(string(t), 10, 64)
	if err != nil || n <= 0 {
		return "", false
	}
	return strconv.FormatInt(n, 10), true
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
