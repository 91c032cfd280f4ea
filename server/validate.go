package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/server/contract"
)

// Validator is a target that can check an operation without writing.
type Validator interface {
	Validate(ctx context.Context, op adapters.Op) (adapters.Plan, error)
}

// OrderReader is a target that can read a sales order's status.
type OrderReader interface {
	OrderStatus(ctx context.Context, orderID string) (adapters.Result, error)
}

// plan runs the target's own checks for a normalized request and returns
// the plan and its hash. Nothing is written anywhere.
func (s *Server) plan(ctx context.Context, in *contract.Intent, norm contract.Normalized, key string) (json.RawMessage, string, error) {
	data := map[string]any{}
	if v, ok := s.targets[in.Target].(Validator); ok {
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
	a := answer{OperationKey: key, RequestID: requestID, Operation: in.Name, TargetSystem: in.Target, Fingerprint: norm.Fingerprint, Result: json.RawMessage("null")}
	plan, hash, err := s.plan(c.Request().Context(), in, norm, key)
	if err != nil {
		return s.targetRefusal(c, a, err)
	}
	a.Status, a.Plan, a.PlanHash = "valid", plan, hash
	return s.writeAnswer(c, http.StatusOK, a)
}

// checkPlan refuses an execute whose plan no longer hashes as the agent's
// validate answer did.
func (s *Server) checkPlan(c echo.Context, in *contract.Intent, norm contract.Normalized, key, want string) error {
	_, hash, err := s.plan(c.Request().Context(), in, norm, key)
	if err != nil {
		a := answer{OperationKey: key, Operation: in.Name, TargetSystem: in.Target, Fingerprint: norm.Fingerprint, Result: json.RawMessage("null")}
		return s.targetRefusal(c, a, err)
	}
	if hash != want {
		return refuse(CodePlanChanged, "plan_hash", "the plan changed since it was validated; validate again and review the new plan")
	}
	return nil
}

// read answers a read-only intent (sales_order.get_status): no key, not
// journaled.
func (s *Server) read(c echo.Context, in *contract.Intent, norm contract.Normalized, target adapters.Target) error {
	r, ok := target.(OrderReader)
	if !ok {
		return errors.New("target cannot read orders")
	}
	var p struct {
		OrderID string `json:"order_id"`
	}
	if err := json.Unmarshal(norm.Payload, &p); err != nil {
		return err
	}
	a := answer{Operation: in.Name, TargetSystem: in.Target, Result: json.RawMessage("null")}
	ctx, cancel := context.WithTimeout(c.Request().Context(), s.timeout(in.Target))
	defer cancel()
	res, err := r.OrderStatus(ctx, p.OrderID)
	if err != nil {
		if errors.Is(err, adapters.ErrNotFound) {
			err = &adapters.Error{Class: adapters.Final, Code: "REFERENCE_NOT_FOUND", Field: "order_id", Message: "no sales order with this id"}
		}
		return s.targetRefusal(c, a, err)
	}
	id := res.ObjectID
	a.Status, a.TargetObjectID = "succeeded", &id
	if a.Result, err = json.Marshal(res.Data); err != nil {
		return err
	}
	return s.writeAnswer(c, http.StatusOK, a)
}

// targetRefusal answers a failed target check that journaled nothing:
// a business refusal is 422 rejected with the target's code; anything
// else is 503 TARGET_UNAVAILABLE.
func (s *Server) targetRefusal(c echo.Context, a answer, err error) error {
	var ae *adapters.Error
	if errors.As(err, &ae) && ae.Class == adapters.Final {
		a.Status = "rejected"
		a.Errors = []ErrorItem{{Code: ae.Code, Field: ae.Field, Message: ae.Message}}
		return s.writeAnswer(c, http.StatusUnprocessableEntity, a)
	}
	s.log.Warn("target check failed", "intent", a.Operation, "err", err)
	a.Status = "rejected"
	a.Errors = []ErrorItem{{Code: CodeTargetUnavailable, Message: "the target could not be asked; try again later", Retryable: true}}
	c.Response().Header().Set("Retry-After", "5")
	return s.writeAnswer(c, http.StatusServiceUnavailable, a)
}
