package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/server/contract"
	"github.com/oncegate/oncegate/store"
)

// Validator is a target that can check an operation without writing:
// references resolved by external id, business rules applied.
type Validator interface {
	Validate(ctx context.Context, op adapters.Op) (adapters.Plan, error)
}

// OrderReader is a target that can read a sales order's status.
type OrderReader interface {
	OrderStatus(ctx context.Context, orderID string) (adapters.Result, error)
}

// answerError is a refusal that carries a whole answer (a target's check
// failed before anything was journaled).
type answerError struct {
	status     int
	retryAfter int
	a          answer
}

func (e *answerError) Error() string {
	if len(e.a.Errors) > 0 {
		return e.a.Errors[0].Code + ": " + e.a.Errors[0].Message
	}
	return http.StatusText(e.status)
}

// plan runs the target's own checks for a normalized request and returns
// the plan and its hash. Nothing is written anywhere. The hash covers the
// intent, the normalized payload and what the target resolved, so any
// change in the data the target sees changes it.
func (s *Server) plan(ctx context.Context, in *contract.Intent, norm contract.Normalized, key string) (json.RawMessage, string, error) {
	data := map[string]any{}
	if !in.Journaled {
		// A read has no check of its own at the target: reading is the
		// check, and it changes nothing.
		res, err := s.readOrder(ctx, in, norm)
		if err != nil {
			return nil, "", err
		}
		data = map[string]any{"object_id": res.ObjectID}
	} else if v, ok := s.targets[in.Target].(Validator); ok {
		ctx, cancel := context.WithTimeout(ctx, s.timeout(in.Target))
		defer cancel()
		p, err := v.Validate(ctx, adapters.Op{Key: key, Intent: in.Name, Fingerprint: norm.Fingerprint, Payload: norm.Payload})
		if err != nil {
			return nil, "", err
		}
		data = p.Data
	}
	plan, err := json.Marshal(map[string]any{"operation": in.Name, "payload": json.RawMessage(norm.Payload), "target": data})
	if err != nil {
		return nil, "", err
	}
	var v any
	if err := json.Unmarshal(plan, &v); err != nil {
		return nil, "", err
	}
	canonical, err := contract.Canonicalize(v)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(canonical)
	return canonical, hex.EncodeToString(sum[:]), nil
}

// validate answers mode "validate": every check, nothing journaled, no
// effect, the key (if any) stays free.
func (s *Server) validate(c echo.Context, in *contract.Intent, norm contract.Normalized, key, requestID string) error {
	cacheKey := in.Name + "\x00" + norm.Fingerprint + "\x00" + key
	cached, ok := s.plans.get(cacheKey, time.Now())
	plan, hash := cached.plan, cached.hash
	if !ok {
		var err error
		if plan, hash, err = s.plan(c.Request().Context(), in, norm, key); err != nil {
			return s.refusalByTarget(in, norm, key, err)
		}
		s.plans.put(cacheKey, cachedPlan{plan: plan, hash: hash, expires: time.Now().Add(planCacheTTL)})
	}
	a := answer{OperationKey: key, RequestID: requestID, Operation: in.Name, TargetSystem: nullable(in.Target),
		Fingerprint: nullable(norm.Fingerprint), Result: json.RawMessage("null"), Status: "valid", Plan: plan, PlanHash: hash}
	if a.RequestID == "" {
		a.RequestID = key
	}
	return s.writeAnswer(c, http.StatusOK, a)
}

// precheck runs the target's checks before a new key is journaled — data
// may have changed since any validate — and refuses an execute whose plan
// no longer hashes as the agent's validate answer did. A business refusal
// by the target comes back as refused, to be journaled failed_final like
// any refusal at the target; any other failure is an error to answer.
func (s *Server) precheck(ctx context.Context, in *contract.Intent, norm contract.Normalized, key, planHash string) (refused *adapters.Error, err error) {
	_, hash, err := s.plan(ctx, in, norm, key)
	var ae *adapters.Error
	switch {
	case errors.As(err, &ae) && ae.Class == adapters.Final:
		s.log.Info("target refused the checks", "intent", in.Name, "key", key, "code", ae.Code, "field", ae.Field, "detail", maskSecrets(errText(ae.Err)))
		return ae, nil
	case err != nil:
		return nil, s.refusalByTarget(in, norm, key, err)
	case planHash != "" && hash != planHash:
		return nil, refuse(CodePlanChanged, "plan_hash", "the plan changed since it was validated; validate again and review the new plan")
	}
	return nil, nil
}

// read answers a read-only intent (sales_order.get_status): no key, not
// journaled.
func (s *Server) read(c echo.Context, in *contract.Intent, norm contract.Normalized) error {
	res, err := s.readOrder(c.Request().Context(), in, norm)
	if err != nil {
		return s.refusalByTarget(in, norm, "", err)
	}
	id := res.ObjectID
	a := answer{Operation: in.Name, TargetSystem: nullable(in.Target), Fingerprint: nullable(norm.Fingerprint), Status: "succeeded", TargetObjectID: &id}
	if a.Result, err = json.Marshal(res.Data); err != nil {
		return err
	}
	return s.writeAnswer(c, http.StatusOK, a)
}

// refusalByTarget turns a failed check at the target, before anything was
// journaled, into the agent's answer: a business refusal is 422 rejected
// with the target's code and the adapter's safe message; anything else is
// 503 TARGET_UNAVAILABLE. The target's own text goes to the log only.
func (s *Server) refusalByTarget(in *contract.Intent, norm contract.Normalized, key string, err error) error {
	a := answer{OperationKey: key, RequestID: key, Operation: in.Name, TargetSystem: nullable(in.Target),
		Fingerprint: nullable(norm.Fingerprint), Result: json.RawMessage("null"), Status: "rejected"}
	var ae *adapters.Error
	if errors.As(err, &ae) && ae.Class == adapters.Final {
		s.log.Info("target refused a check", "intent", in.Name, "key", key, "code", ae.Code, "field", ae.Field, "detail", maskSecrets(errText(ae.Err)))
		a.Errors = []ErrorItem{{Code: ae.Code, Field: ae.Field, Message: ae.Message}}
		return &answerError{status: http.StatusUnprocessableEntity, a: a}
	}
	s.log.Warn("target check failed", "intent", in.Name, "key", key, "err", maskSecrets(errText(err)))
	// API.md's row for a transient target failure: 503 failed_retryable.
	// Nothing was journaled, so the key stays free for the retry.
	a.Status = string(store.StatusFailedRetryable)
	a.Errors = []ErrorItem{{Code: CodeTargetUnavailable, Message: "the target could not be asked; send the same request again later", Retryable: true}}
	return &answerError{status: http.StatusServiceUnavailable, retryAfter: 5, a: a}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// readOrder reads the sales order a read-only intent names; an order the
// target does not know is REFERENCE_NOT_FOUND on order_id.
func (s *Server) readOrder(ctx context.Context, in *contract.Intent, norm contract.Normalized) (adapters.Result, error) {
	r, ok := s.targets[in.Target].(OrderReader)
	if !ok {
		return adapters.Result{}, errors.New("target cannot read orders")
	}
	var p struct {
		OrderID string `json:"order_id"`
	}
	if err := json.Unmarshal(norm.Payload, &p); err != nil {
		return adapters.Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout(in.Target))
	defer cancel()
	res, err := r.OrderStatus(ctx, p.OrderID)
	if errors.Is(err, adapters.ErrNotFound) {
		err = &adapters.Error{Class: adapters.Final, Code: "REFERENCE_NOT_FOUND", Field: "order_id", Message: "no sales order with this id"}
	}
	return res, err
}
