package server

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/server/contract"
	"github.com/oncegate/oncegate/server/engine"
	"github.com/oncegate/oncegate/store"
)

// statusOf returns the HTTP status of an answer carrying code.
func statusOf(code string) int { return codes.Status(code) }

// journalRetryAfter is the Retry-After, in seconds, of JOURNAL_UNAVAILABLE.
const journalRetryAfter = 5

// titles are the RFC 9457 titles of problem answers.
var titles = map[int]string{
	400: "Bad request", 401: "Unauthenticated", 403: "Permission denied", 404: "Not found",
	405: "Method not allowed", 409: "Conflict", 413: "Payload too large", 415: "Unsupported media type",
	422: "Unprocessable request", 429: "Too many requests", 500: "Internal error", 503: "Service unavailable",
}

// ErrorItem is one error of an answer.
type ErrorItem struct {
	Code      string `json:"code"`
	Field     string `json:"field"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

// apiError is a refusal before anything was journaled. Handlers return it;
// the error handler renders it.
type apiError struct {
	ErrorItem
	RetryAfter int
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func refuse(code, field, message string) *apiError {
	return &apiError{ErrorItem: ErrorItem{Code: code, Field: field, Message: message, Retryable: codes.Retryable(code)}}
}

// handleError is Echo's HTTPErrorHandler: every error becomes a
// problem+json answer with a stable code (an HTML page under /admin);
// only 5xx are logged, and no internal detail ever reaches the client.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	if p := c.Request().URL.Path; p == "/admin" || strings.HasPrefix(p, "/admin/") {
		admin.HandleError(err, c, s.log) // people get an HTML page
		return
	}
	var ae *apiError
	var ce *contract.Error
	var re *engine.Refusal
	var he *echo.HTTPError
	var tr *engine.TargetRefusal
	if errors.As(err, &tr) {
		status, retryAfter, a := targetRefusalAnswer(tr)
		if retryAfter > 0 {
			c.Response().Header().Set("Retry-After", itoa(retryAfter))
		}
		s.writeAnswer(c, status, a)
		return
	}
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &ce):
		ae = refuse(ce.Code, ce.Field, ce.Message)
	case errors.As(err, &re):
		ae = refuse(re.Code, re.Field, re.Message)
	case errors.As(err, &he):
		switch he.Code {
		case http.StatusNotFound:
			ae = refuse(codes.NotFound, "", "no such endpoint")
		case http.StatusMethodNotAllowed:
			ae = refuse(codes.MethodNotAllowed, "", "this method is not allowed on this endpoint")
		case http.StatusRequestEntityTooLarge:
			ae = refuse(codes.PayloadTooLarge, "", "the body is larger than 64 KiB")
		case http.StatusUnauthorized:
			ae = refuse(codes.Unauthenticated, "", "a valid bearer token is required")
		default:
			s.log.Error("request failed", "method", c.Request().Method, "path", c.Path(), "err", err)
			ae = refuse(codes.Internal, "", "internal error; the request may be retried with the same key")
		}
	case errors.Is(err, store.ErrUnavailable):
		s.log.Error("the journal could not make a write durable", "method", c.Request().Method, "path", c.Path(), "err", err)
		ae = refuse(codes.JournalUnavailable, "", "the gateway could not record the request durably; nothing was sent; send the same request again later")
		ae.RetryAfter = journalRetryAfter
	default:
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Path(), "err", err)
		ae = refuse(codes.Internal, "", "internal error; the request may be retried with the same key")
	}
	a := answer{State: "rejected", Errors: []ErrorItem{ae.ErrorItem}}
	if key, ok := c.Get(ctxKey).(string); ok {
		a.OperationKey, a.RequestID = key, key
	}
	if fp, ok := c.Get(ctxFingerprint).(string); ok {
		a.Fingerprint = nullable(fp)
	}
	if name, ok := c.Get(ctxIntent).(string); ok {
		a.Operation = name
		if in, ok := s.catalog.Lookup(name); ok {
			a.TargetSystem = nullable(in.Target)
		}
	}
	if ae.RetryAfter > 0 {
		c.Response().Header().Set("Retry-After", itoa(ae.RetryAfter))
	}
	s.writeAnswer(c, statusOf(ae.Code), a)
}

// writeAnswer writes a: application/json for 2xx, RFC 9457
// application/problem+json (with type, title, detail and the numeric
// status) otherwise.
func (s *Server) writeAnswer(c echo.Context, status int, a answer) error {
	a.finish(status)
	if status == http.StatusUnauthorized && c.Response().Header().Get(echo.HeaderWWWAuthenticate) == "" && len(a.Errors) > 0 {
		c.Response().Header().Set(echo.HeaderWWWAuthenticate, bearerChallenge("invalid_token", a.Errors[0].Message))
	}
	ct := echo.MIMEApplicationJSON
	if status >= 400 {
		ct = "application/problem+json"
	}
	c.Response().Header().Set(echo.HeaderContentType, ct)
	c.Response().WriteHeader(status)
	return s.encodeJSON(c, a)
}

// finish completes a as the answer of HTTP status: its status member (the
// state in a 200 or 202, the HTTP status in a problem) and, for a
// problem, RFC 9457's type, title and detail.
func (a *answer) finish(status int) {
	if a.Errors == nil {
		a.Errors = []ErrorItem{}
	}
	if status < 400 {
		a.Status = a.State
		return
	}
	a.Status = status
	code := codes.Internal
	if len(a.Errors) > 0 {
		code = a.Errors[0].Code
		a.Detail = a.Errors[0].Message
	}
	a.Type = "urn:oncegate:error:" + strings.ToLower(strings.ReplaceAll(code, "_", "-"))
	a.Title = titles[status]
	if a.Title == "" {
		a.Title = http.StatusText(status)
	}
}
