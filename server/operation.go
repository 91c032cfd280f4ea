package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/contract"
	"github.com/oncegate/oncegate/server/engine"
	"github.com/oncegate/oncegate/store"
)

// maxBody is the largest request body accepted (docs/api.md, A request).
const maxBody = 64 << 10

// handleOperationCreate serves POST /v1/operations: reads the body, hands
// the request to the engine — which checks it against the contract, binds
// its key to its fingerprint in the journal and drives the operation to
// the target exactly once — and renders what the engine made of it.
func (s *Server) handleOperationCreate(c echo.Context) error {
	body, err := readJSON(c)
	if err != nil {
		return err
	}
	hv, hasKey := c.Request().Header[http.CanonicalHeaderKey("Idempotency-Key")]
	if len(hv) > 1 {
		// Which line did the client mean? Proxies and clients disagree on
		// which of two wins; the request is ambiguous and binds nothing.
		return codes.New(codes.KeyInvalid, contract.KeyField, "the request carries the Idempotency-Key header more than once; send the operation key in one Idempotency-Key line")
	}
	sub := engine.Submission{Token: token(c), HasKeyHeader: hasKey, Body: body}
	if hasKey {
		sub.KeyHeader = hv[0]
	}
	out, err := s.engine.Submit(c.Request().Context(), sub)
	noteRequest(c, out)
	if err != nil {
		return err
	}
	switch out.Kind {
	case engine.KindValidated:
		return s.writeAnswer(c, http.StatusOK, validatedAnswer(out))
	case engine.KindRead:
		a, err := readAnswer(out)
		if err != nil {
			return err
		}
		return s.writeAnswer(c, http.StatusOK, a)
	case engine.KindProcess:
		return s.writeProcess(c, out.Process, out.Steps, out.RequestID, out.Replayed)
	}
	return s.writeOperation(c, out.Op, out.RequestID, out.Replayed)
}

// noteRequest keeps what the engine learned of a request for the error
// handler, which names the intent, key and fingerprint in a refusal.
func noteRequest(c echo.Context, out engine.Outcome) {
	if out.Intent != nil {
		c.Set(ctxIntent, out.Intent.Name)
	}
	if out.Key != "" {
		c.Set(ctxKey, out.Key)
	}
	if out.Fingerprint != "" {
		c.Set(ctxFingerprint, out.Fingerprint)
	}
}

// handleOperationGet serves GET /v1/operations/{key}: the operation's
// current state, to the agent that owns the key.
func (s *Server) handleOperationGet(c echo.Context) error {
	key, err := url.PathUnescape(c.Param("key"))
	if err != nil {
		return codes.New(codes.OperationNotFound, "", "no operation with this key")
	}
	wait, err := waitParam(c.QueryParam("wait"))
	if err != nil {
		return err
	}
	ctx, agent := c.Request().Context(), token(c).Agent
	var changed <-chan struct{}
	if wait > 0 {
		// Watched before the first read, so no change falls between.
		var stop func()
		changed, stop = s.store.Watch(key)
		defer stop()
	}
	op, err := s.engine.Operation(ctx, agent, key)
	if errors.Is(err, store.ErrNotFound) {
		if p, steps, perr := s.engine.Process(ctx, agent, key); perr == nil {
			if wait > 0 && !p.State.Final() {
				p, steps = s.awaitProcess(ctx, changed, agent, p, steps, wait)
			}
			_, retry, a := processAnswer(p, steps, "")
			a.Event = s.startedBy(ctx, p.Agent, key)
			if retry > 0 {
				c.Response().Header().Set("Retry-After", itoa(retry))
			}
			// Read with 200 whatever its state, as an operation is.
			return s.writeAnswer(c, http.StatusOK, a)
		}
		// Another agent's key is not found either: keys are not shared.
		return codes.New(codes.OperationNotFound, "", "no operation with this key")
	}
	if err != nil {
		return err
	}
	if wait > 0 && !op.Status.Terminal() {
		if op, err = s.awaitChange(ctx, changed, agent, op, wait); err != nil {
			return err
		}
	}
	_, retry, a := operationAnswer(op, "")
	s.warn(c, &a, op)
	s.approvalDue(c, &a, op)
	a.Event = s.startedBy(ctx, op.Agent, key)
	if retry > 0 {
		c.Response().Header().Set("Retry-After", itoa(retry))
	}
	return s.writeAnswer(c, http.StatusOK, a)
}

// maxWait bounds a long-poll: a longer wait is held this long.
const maxWait = 60 * time.Second

// waitParam reads ?wait=: a duration ("30s", "1m") or whole seconds
// ("30"); none is 0, an answer at once.
func waitParam(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		n, nerr := strconv.Atoi(v)
		d, err = time.Duration(n)*time.Second, nerr
	}
	if err != nil || d < 0 {
		return 0, codes.New(codes.Validation, "wait", "wait is how long to hold the answer for a change, such as 30s (at most 60s)")
	}
	return min(d, maxWait), nil
}

// awaitChange holds the answer until op's state is no longer what it was,
// nor started (changed wakes it to read again), the wait is over, the client left,
// or the gateway stops; it returns the operation as last read.
func (s *Server) awaitChange(ctx context.Context, changed <-chan struct{}, agent string, op store.Operation, wait time.Duration) (store.Operation, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	from := op.Status
	for {
		select {
		case <-changed:
		case <-timer.C:
			return op, nil
		case <-s.stopping:
			return op, nil
		case <-ctx.Done():
			return op, nil // nobody reads the answer
		}
		now, err := s.engine.Operation(ctx, agent, op.Key)
		if err != nil {
			return op, err
		}
		// Started is no state to act on: an approved charge on its way to
		// the provider is awaited on to its outcome.
		if op = now; op.Status != from && op.Status != store.StatusStarted {
			return op, nil
		}
	}
}

// awaitProcess holds the answer about a process until its state changes
// to one other than started, the wait is over, the client left, or the
// gateway stops; it returns the process as last read.
func (s *Server) awaitProcess(ctx context.Context, changed <-chan struct{}, agent string, p store.Process, steps []engine.StepView, wait time.Duration) (store.Process, []engine.StepView) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	from := p.State
	for {
		select {
		case <-changed:
		case <-timer.C:
			return p, steps
		case <-s.stopping:
			return p, steps
		case <-ctx.Done():
			return p, steps
		}
		now, nowSteps, err := s.engine.Process(ctx, agent, p.Key)
		if err != nil {
			return p, steps
		}
		// Started is no state to act on, as for an operation.
		if p, steps = now, nowSteps; p.State != from && p.State != store.ProcessStarted {
			return p, steps
		}
	}
}

// readJSON reads the request body, refusing a wrong or ambiguous media
// type (415) or a body over the limit (413).
func readJSON(c echo.Context) ([]byte, error) {
	if !isJSON(c.Request().Header.Values(echo.HeaderContentType)) {
		return nil, codes.New(codes.UnsupportedMedia, "", "send the request with one Content-Type: application/json (UTF-8)")
	}
	if c.Request().ContentLength > maxBody {
		return nil, codes.New(codes.PayloadTooLarge, "", "the body is larger than 64 KiB")
	}
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxBody+1))
	if err != nil {
		return nil, codes.New(codes.Validation, "", "the body could not be read")
	}
	if len(body) > maxBody {
		return nil, codes.New(codes.PayloadTooLarge, "", "the body is larger than 64 KiB")
	}
	return body, nil
}

// validatedAnswer is the answer of mode validate: the plan and its hash.
func validatedAnswer(out engine.Outcome) answer {
	def := out.Intent
	a := answer{OperationKey: out.Key, RequestID: out.RequestID, Operation: def.Name, TargetSystem: nullable(def.Target),
		Fingerprint: nullable(out.Fingerprint), Result: json.RawMessage("null"), State: "valid", Plan: out.Plan, PlanHash: out.PlanHash, Warnings: warnings(out.Warnings)}
	if a.RequestID == "" {
		a.RequestID = out.Key
	}
	return a
}

// readAnswer is the answer of a read-only intent: what the target read.
func readAnswer(out engine.Outcome) (answer, error) {
	id := out.Read.ObjectID
	a := answer{Operation: out.Intent.Name, TargetSystem: nullable(out.Intent.Target), Fingerprint: nullable(out.Fingerprint), State: "succeeded", TargetObjectID: &id}
	var err error
	a.Result, err = json.Marshal(out.Read.Data)
	return a, err
}

// isJSON reports whether a request's Content-Type lines name JSON in
// UTF-8, unambiguously: exactly one line, application/json, and no
// charset but UTF-8 (the body is read as UTF-8, so a body declared in
// another charset would be read as something its sender did not mean).
func isJSON(lines []string) bool {
	if len(lines) != 1 {
		return false
	}
	mt, params, err := mime.ParseMediaType(lines[0])
	if err != nil || mt != echo.MIMEApplicationJSON {
		return false
	}
	cs, ok := params["charset"]
	return !ok || strings.EqualFold(cs, "utf-8") || strings.EqualFold(cs, "utf8")
}
