package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/contract"
	"github.com/oncegate/oncegate/server/intent"
)

// Validator is a target that can check an operation without writing:
// references resolved by external id, business rules applied.
type Validator interface {
	Validate(ctx context.Context, op adapters.Op) (adapters.Plan, error)
}

// plan runs the target's own checks for a normalized request and returns
// the plan and its hash. Nothing is written anywhere. The hash covers the
// intent, the normalized payload and what the target resolved, so any
// change in the data the target sees changes it.
func (e *Engine) plan(ctx context.Context, def *intent.Intent, norm contract.Normalized, key string) (json.RawMessage, string, error) {
	data := map[string]any{}
	if !def.Journaled {
		// A read has no check of its own at the target: reading is the
		// check, and it changes nothing.
		res, err := e.readAt(ctx, def, norm)
		if err != nil {
			return nil, "", err
		}
		data = map[string]any{"object_id": res.ObjectID}
	} else if v, ok := e.targets[def.Target].(Validator); ok {
		ctx, cancel := context.WithTimeout(ctx, e.timeout(def.Target))
		defer cancel()
		p, err := v.Validate(ctx, adapters.Op{Key: key, Intent: def.Name, Version: def.Version, Fingerprint: norm.Fingerprint, Payload: norm.Payload})
		if err != nil {
			return nil, "", err
		}
		data = p.Data
	}
	plan, err := json.Marshal(map[string]any{"operation": def.Name, "payload": json.RawMessage(norm.Payload), "target": data})
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

// validate is mode "validate": every check, nothing journaled, no
// effect, the key (if any) stays free. It returns the plan and its hash.
func (e *Engine) validate(ctx context.Context, def *intent.Intent, norm contract.Normalized, key string) (json.RawMessage, string, error) {
	cacheKey := def.Name + "\x00" + norm.Fingerprint + "\x00" + key
	cached, ok := e.plans.get(cacheKey, time.Now())
	plan, hash := cached.plan, cached.hash
	if !ok {
		var err error
		if plan, hash, err = e.plan(ctx, def, norm, key); err != nil {
			return nil, "", e.refusalByTarget(def, norm, key, err)
		}
		e.plans.put(cacheKey, cachedPlan{plan: plan, hash: hash, expires: time.Now().Add(planCacheTTL)})
	}
	return plan, hash, nil
}

// precheck runs the target's checks before a new key is journaled — data
// may have changed since any validate — and refuses an execute whose plan
// no longer hashes as the agent's validate answer did. A business refusal
// by the target comes back as refused, to be journaled failed_final like
// any refusal at the target; any other failure is an error to answer.
func (e *Engine) precheck(ctx context.Context, def *intent.Intent, norm contract.Normalized, key, planHash string) (refused *adapters.Error, err error) {
	_, hash, err := e.plan(ctx, def, norm, key)
	var ae *adapters.Error
	switch {
	case errors.As(err, &ae) && ae.Class == adapters.Final:
		e.log.Info("target refused the checks", "intent", def.Name, "key", key, "code", ae.Code, "field", ae.Field, "detail", e.detail(ae.Err))
		return ae, nil
	case err != nil:
		return nil, e.refusalByTarget(def, norm, key, err)
	case planHash != "" && hash != planHash:
		return nil, codes.New(codes.PlanChanged, "plan_hash", "the plan changed since it was validated; validate again and review the new plan")
	}
	return nil, nil
}

// checksBeforeClaim says whether a new key's request is checked at the
// target before it is claimed: yes, but where the target's execute makes
// the same checks in the transaction that makes the effect
// (adapters.Rechecker) and nothing stands between the claim and that
// call — no plan the agent pinned to compare, no person to decide first
// (an accountant is not asked to approve what the target would refuse).
// The skipped round trip is one of the two calls a new operation made to 1C.
func (e *Engine) checksBeforeClaim(def *intent.Intent, planHash string) bool {
	r, ok := e.targets[def.Target].(adapters.Rechecker)
	return !ok || !r.ChecksOnExecute() || planHash != "" || def.Money
}

// read is a read-only intent (sales_order.get_status): no key, not
// journaled.
func (e *Engine) read(ctx context.Context, def *intent.Intent, norm contract.Normalized) (adapters.Result, error) {
	res, err := e.readAt(ctx, def, norm)
	if err != nil {
		return adapters.Result{}, e.refusalByTarget(def, norm, "", err)
	}
	return res, nil
}

// readAt asks the target to read what a read-only intent names.
func (e *Engine) readAt(ctx context.Context, def *intent.Intent, norm contract.Normalized) (adapters.Result, error) {
	r, ok := e.targets[def.Target].(adapters.Reader)
	if !ok {
		return adapters.Result{}, errors.New("the target serves no read-only intents")
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout(def.Target))
	defer cancel()
	return r.Read(ctx, adapters.Op{Intent: def.Name, Version: def.Version, Fingerprint: norm.Fingerprint, Payload: norm.Payload})
}

// refusalByTarget turns a failed check at the target, before anything was
// journaled, into a target refusal: a business refusal keeps the target's
// code and the adapter's safe message; anything else is a target that
// could not be asked. The target's own text goes to the log only.
func (e *Engine) refusalByTarget(def *intent.Intent, norm contract.Normalized, key string, err error) error {
	var ae *adapters.Error
	if errors.As(err, &ae) && ae.Class == adapters.Final {
		e.log.Info("target refused a check", "intent", def.Name, "key", key, "code", ae.Code, "field", ae.Field, "detail", e.detail(ae.Err))
		r := targetRefusal(def, key, norm.Fingerprint, false, ae.Code, ae.Field, ae.Message)
		// Every problem the check found (each reference the target
		// lacks), the first answered as the refusal.
		for _, also := range ae.Also {
			e.log.Info("target refused a check", "intent", def.Name, "key", key, "code", also.Code, "field", also.Field, "detail", e.detail(also.Err))
			r.Also = append(r.Also, &codes.Refusal{Code: also.Code, Field: also.Field, Message: also.Message})
		}
		return r
	}
	e.log.Warn("target check failed", "intent", def.Name, "key", key, "err", e.detail(err))
	return targetRefusal(def, key, norm.Fingerprint, true, "", "", "")
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
