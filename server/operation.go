package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/server/contract"
	"github.com/oncegate/oncegate/store"
)

// maxBody is the largest request body accepted (API.md section 3).
const maxBody = 64 << 10

// request is an operation request that passed the contract.
type request struct {
	env  contract.Envelope
	in   *contract.Intent
	key  string // "" only for read-only intents and validate without a key
	norm contract.Normalized
}

// parseRequest checks a request's body against the contract — envelope,
// intent, scope, key, payload — before anything is journaled, so a
// refusal binds nothing.
func (s *Server) parseRequest(c echo.Context, body []byte) (request, error) {
	var (
		r   request
		err error
	)
	if r.env, err = contract.DecodeEnvelope(body); err != nil {
		return request{}, err
	}
	in, ok := contract.Lookup(r.env.Intent)
	if !ok {
		return request{}, contract.ErrIntentNotAllowed(r.env.Intent)
	}
	r.in = in
	c.Set(ctxIntent, in.Name)
	if !token(c).Has(in.Scope) {
		return request{}, refuse(CodePermissionDenied, "", fmt.Sprintf("this token lacks the %q scope that %s needs", in.Scope, in.Name))
	}
	hv, hasKey := c.Request().Header[http.CanonicalHeaderKey("Idempotency-Key")]
	header := ""
	if hasKey {
		header = hv[0]
	}
	if r.key, err = contract.KeyFromRequest(header, hasKey, r.env.RequestID); err != nil {
		return request{}, err
	}
	if r.key == "" && in.Journaled && r.env.Mode != contract.ModeValidate {
		return request{}, contract.ErrKeyMissing()
	}
	if r.key != "" {
		if err := contract.CheckKey(r.key, s.cfg.Contour, in.Name); err != nil {
			return request{}, err
		}
		c.Set(ctxKey, r.key)
	}
	if r.norm, err = in.Normalize(r.env.Payload); err != nil {
		return request{}, err
	}
	c.Set(ctxFingerprint, r.norm.Fingerprint)
	if _, ok := s.targets[in.Target]; !ok {
		return request{}, fmt.Errorf("no target configured for system %q", in.Target)
	}
	return r, nil
}

// handleOperationCreate serves POST /v1/operations: checks the request
// against the contract, binds its key to its fingerprint in the journal,
// and drives the operation to the target exactly once.
func (s *Server) handleOperationCreate(c echo.Context) error {
	ctx, tok := c.Request().Context(), token(c)
	body, err := readJSON(c)
	if err != nil {
		return err
	}
	seen := &seenRequest{digest: requestDigest(tok.Agent, c.Request().Header, body)}
	if final, req, ok := s.finals.byRequest(seen.digest); ok && tok.Has(req.intent.Scope) {
		// These very bytes were checked and replayed from this row before.
		c.Set(ctxIntent, req.intent.Name)
		c.Set(ctxKey, final.Key)
		c.Set(ctxFingerprint, final.Fingerprint)
		s.metrics.decisions.WithLabelValues(req.intent.Name, store.DecisionReplay.String()).Inc()
		return s.writeOperation(c, final, req.requestID, true)
	}
	r, err := s.parseRequest(c, body)
	if err != nil {
		return err
	}
	env, in, key, norm := r.env, r.in, r.key, r.norm
	seen.intent, seen.requestID = in, env.RequestID

	switch {
	case env.Mode == contract.ModeValidate:
		if err := s.checkLimits(in, norm); err != nil {
			return err
		}
		if err := s.keyStillFits(ctx, key, tok.Agent, norm.Fingerprint); err != nil {
			return err
		}
		return s.validate(c, in, norm, key, env.RequestID)
	case !in.Journaled:
		return s.read(c, in, norm)
	}

	var refused *adapters.Error
	if final, ok := s.finals.get(key); ok && final.Agent == tok.Agent && final.Fingerprint == norm.Fingerprint {
		s.finals.remember(key, seen)
		s.metrics.decisions.WithLabelValues(in.Name, store.DecisionReplay.String()).Inc()
		return s.writeOperation(c, final, env.RequestID, true)
	}
	existing, err := s.store.Get(ctx, key)
	switch {
	case err == nil && existing.Status.Terminal() && existing.Agent == tok.Agent && existing.Fingerprint == norm.Fingerprint:
		// Fast path: a final row of this agent with this fingerprint is
		// replayed from a read, without taking the journal's writer. Final
		// rows never change, so the read is as good as the claim's; the
		// row is kept for the next replay.
		s.finals.put(existing)
		s.finals.remember(key, seen)
		s.metrics.decisions.WithLabelValues(in.Name, store.DecisionReplay.String()).Inc()
		return s.writeOperation(c, existing, env.RequestID, true)
	case errors.Is(err, store.ErrNotFound):
		// A key never seen: the business limits, then every check at the
		// target (references, business rules), which writes nothing. The
		// target's refusal is journaled failed_final below, before anything
		// was sent to execute. (A key seen before was accepted then: its
		// retries and replays are not refused by limits changed since.)
		if err := s.checkLimits(in, norm); err != nil {
			return err
		}
		if refused, err = s.precheck(ctx, in, norm, key, env.PlanHash); err != nil {
			return err
		}
	case err != nil:
		return err
	}

	ctx = store.WithActor(ctx, store.Actor{Kind: store.ActorAgent, Name: tok.Agent})
	d, op, err := s.store.Claim(ctx, store.ClaimRequest{
		Key:           key,
		Intent:        in.Name,
		Fingerprint:   norm.Fingerprint,
		TargetSystem:  in.Target,
		Agent:         tok.Agent,
		ActorID:       env.ActorID,
		RequestID:     env.RequestID,
		Payload:       norm.Payload,
		AwaitApproval: in.Money,
		ApprovalTTL:   time.Duration(s.cfg.Approval.TTL),
		Refused:       failureOf(refused),
		Owner:         s.leaseOwner(),
		Lease:         s.lease(in.Target),
	})
	if err != nil {
		return err
	}
	s.log.Info("operation claimed", "key", key, "intent", in.Name, "agent", tok.Agent, "decision", d.String())
	s.metrics.decisions.WithLabelValues(in.Name, d.String()).Inc()

	switch d {
	case store.DecisionMismatch:
		return keyMismatch()
	case store.DecisionForeign:
		return keyForeign()
	case store.DecisionReplay:
		return s.writeOperation(c, op, env.RequestID, true)
	case store.DecisionInProgress, store.DecisionAwaitingApproval, store.DecisionRefused:
		return s.writeOperation(c, op, env.RequestID, false)
	}
	op, found, err := s.drive(ctx, d, op)
	if err != nil {
		return err
	}
	return s.writeOperation(c, op, env.RequestID, found)
}

// handleOperationGet serves GET /v1/operations/{key}: the operation's
// current state, to the agent that owns the key.
func (s *Server) handleOperationGet(c echo.Context) error {
	key, err := url.PathUnescape(c.Param("key"))
	if err != nil {
		return refuse(CodeOperationNotFound, "", "no operation with this key")
	}
	op, err := s.store.Get(c.Request().Context(), key)
	if errors.Is(err, store.ErrNotFound) || (err == nil && op.Agent != token(c).Agent) {
		// Another agent's key is not found either: keys are not shared.
		return refuse(CodeOperationNotFound, "", "no operation with this key")
	}
	if err != nil {
		return err
	}
	_, retry, a := operationAnswer(op, "")
	if retry > 0 {
		c.Response().Header().Set("Retry-After", itoa(retry))
	}
	return s.writeAnswer(c, http.StatusOK, a)
}

// readJSON reads the request body, refusing a wrong media type (415) or a
// body over the limit (413).
func readJSON(c echo.Context) ([]byte, error) {
	mt, _, err := mime.ParseMediaType(c.Request().Header.Get(echo.HeaderContentType))
	if err != nil || mt != echo.MIMEApplicationJSON {
		return nil, refuse(CodeUnsupportedMedia, "", "send the request as Content-Type: application/json")
	}
	if c.Request().ContentLength > maxBody {
		return nil, refuse(CodePayloadTooLarge, "", "the body is larger than 64 KiB")
	}
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxBody+1))
	if err != nil {
		return nil, refuse(contract.CodeValidation, "", "the body could not be read")
	}
	if len(body) > maxBody {
		return nil, refuse(CodePayloadTooLarge, "", "the body is larger than 64 KiB")
	}
	return body, nil
}

// failureOf is how a refusal by the target's checks is journaled.
func failureOf(ae *adapters.Error) *store.Failure {
	if ae == nil {
		return nil
	}
	return &store.Failure{Code: ae.Code, Field: ae.Field, Message: ae.Message, Detail: maskSecrets(errText(ae.Err))}
}

// keyStillFits refuses a validate whose key an execute would refuse: a
// key first used by another agent, or with another request. A key never
// seen, or seen with this very request, fits.
func (s *Server) keyStillFits(ctx context.Context, key, agent, fingerprint string) error {
	if key == "" {
		return nil
	}
	op, err := s.store.Get(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return err
	case op.Agent != agent:
		return keyForeign()
	case op.Fingerprint != fingerprint:
		return keyMismatch()
	}
	return nil
}

// keyMismatch and keyForeign are the refusals of a key that was first
// used with another request, or by another agent.
func keyMismatch() error {
	return refuse(CodeKeyMismatch, "", "this key was first used with a different request; a changed request needs a new key")
}

func keyForeign() error {
	return refuse(CodeKeyForeign, "", "this key was first used by another agent")
}
