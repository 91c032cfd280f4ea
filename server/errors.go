package server

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/store"
)

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

// This file is the one way from a refusal to an answer. Every part of the
// gateway refuses a request with a *codes.Refusal (the contract, the
// catalog, the engine, a target's check before anything was journaled,
// the handlers); Echo's own errors, a journal that cannot write and
// anything unforeseen become one in refusalOf; refusalAnswer renders it,
// for HTTP (handleError) and for MCP (mcpHandler) alike. An operation the
// journal holds is answered from its row instead (operationAnswer).

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
	r := s.refusalOf(err, c)
	status, a := s.refusalAnswer(r, c)
	if r.RetryAfter > 0 {
		c.Response().Header().Set("Retry-After", itoa(r.RetryAfter))
	}
	s.writeAnswer(c, status, a)
}

// refusalOf is the refusal err stands for: a *codes.Refusal as it is;
// Echo's own errors (no route, a wrong method, a body too large, no
// token) and a journal that could not write by their codes; anything
// else, logged, as INTERNAL.
func (s *Server) refusalOf(err error, c echo.Context) *codes.Refusal {
	var r *codes.Refusal
	var he *echo.HTTPError
	switch {
	case errors.As(err, &r):
		return r
	case errors.As(err, &he):
		switch he.Code {
		case http.StatusNotFound:
			return codes.New(codes.NotFound, "", "no such endpoint")
		case http.StatusMethodNotAllowed:
			return codes.New(codes.MethodNotAllowed, "", "this method is not allowed on this endpoint")
		case http.StatusRequestEntityTooLarge:
			return codes.New(codes.PayloadTooLarge, "", "the body is larger than 64 KiB")
		case http.StatusUnauthorized:
			return codes.New(codes.Unauthenticated, "", "a valid bearer token is required")
		}
	case store.Unavailable(err):
		s.log.Error("the journal could not be read or written", "method", c.Request().Method, "path", c.Path(), "err", err)
		store.AnswerReadsNothing(c.Request().Context())
		r = codes.New(codes.JournalUnavailable, "", "the gateway could not read or write its journal; this request sent nothing; send the same request again later")
		r.RetryAfter = journalRetryAfter
		return r
	}
	s.log.Error("request failed", "method", c.Request().Method, "path", c.Path(), "err", err)
	return codes.New(codes.Internal, "", "internal error; the request may be retried with the same key")
}

// refusalAnswer renders r as the API's answer and its HTTP status. The
// request it names is the refusal's own when it knows it (a target's
// check); otherwise what the handler read of the request before the
// refusal (noteRequest), when c is a request's context.
func (s *Server) refusalAnswer(r *codes.Refusal, c echo.Context) (int, answer) {
	a := answer{State: r.AnswerState(), Errors: make([]ErrorItem, 0, 1+len(r.Also))}
	for _, e := range append([]*codes.Refusal{r}, r.Also...) {
		a.Errors = append(a.Errors, ErrorItem{Code: e.Code, Field: e.Field, Message: e.Message, Retryable: e.Retryable()})
	}
	switch {
	case r.Intent != "":
		a.OperationKey, a.RequestID, a.Operation = r.Key, r.Key, r.Intent
		a.TargetSystem, a.Fingerprint = nullable(r.Target), nullable(r.Fingerprint)
	case c != nil:
		if key, ok := c.Get(ctxKey).(string); ok {
			a.OperationKey, a.RequestID = key, key
		}
		if fp, ok := c.Get(ctxFingerprint).(string); ok {
			a.Fingerprint = nullable(fp)
		}
		if name, ok := c.Get(ctxIntent).(string); ok {
			a.Operation = name
			if def, ok := s.catalog.Lookup(name); ok {
				a.TargetSystem = nullable(def.Target)
			}
		}
	}
	a.KeyOperation = r.KeyOperation
	status := r.HTTPStatus()
	a.finish(status)
	return status, a
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
