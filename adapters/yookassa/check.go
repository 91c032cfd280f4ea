package yookassa

import (
	"context"
	"errors"
	"fmt"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

var _ adapters.ObjectChecker = (*Client)(nil)

// CheckObject implements adapters.ObjectChecker: it reads the payment (a
// charge) or the refund (a refund) a person typed the id of, and says
// whether it can be op's effect. It answers the Result Lookup would give
// for it, or a Final *adapters.Error saying why it cannot be op's effect:
// made by another operation of the gateway, for another amount, currency
// or payment, canceled, or still pending — a pending object is settled by
// the gateway's own look-ups, never by a person as a success.
//
// An object without the gateway's keys in its metadata (a payment made in
// the shop's dashboard) is taken when everything else matches: the person
// says it is the effect, and the id cannot have been borrowed from
// another operation of the gateway.
func (c *Client) CheckObject(ctx context.Context, op adapters.Op, id string) (adapters.Result, error) {
	switch op.Intent {
	case IntentCharge:
		if !validProviderID(id) {
			return adapters.Result{}, final(codes.Validation, "", "this is not a payment id of the payment provider (letters, digits, '-' and '_', at most 64)", nil)
		}
		p, err := decodeCharge(op)
		if err != nil {
			return adapters.Result{}, err
		}
		pay, err := c.getPayment(ctx, id)
		if err != nil {
			return adapters.Result{}, readFailure(err)
		}
		if err := otherOperation("payment", pay.Metadata, op.Key); err != nil {
			return adapters.Result{}, err
		}
		if err := sameAmount("payment", "charges", pay.Amount, p.AmountMinor, p.Currency); err != nil {
			return adapters.Result{}, err
		}
		switch pay.Status {
		case "canceled":
			reason := ""
			if pay.CancellationDetails != nil {
				reason = pay.CancellationDetails.Reason
			}
			code, _ := cancelCode(reason)
			return adapters.Result{}, final(code, "", canceled("payment", reason), fmt.Errorf("payment canceled: reason %q", reason))
		case "pending", "waiting_for_capture":
			return adapters.Result{}, stillPending("payment", pay.Status)
		}
		return paymentOutcome(pay)
	case IntentRefund:
		if !validProviderID(id) {
			return adapters.Result{}, final(codes.Validation, "", "this is not a refund id of the payment provider (letters, digits, '-' and '_', at most 64)", nil)
		}
		p, err := decodeRefund(op)
		if err != nil {
			return adapters.Result{}, err
		}
		ref, err := c.getRefund(ctx, id)
		if err != nil {
			return adapters.Result{}, readFailure(err)
		}
		if err := otherOperation("refund", ref.Metadata, op.Key); err != nil {
			return adapters.Result{}, err
		}
		if ref.PaymentID != p.PaymentID {
			msg := "the refund is of another payment than the one this operation refunds (" + p.PaymentID + ")"
			if validProviderID(ref.PaymentID) {
				msg = "the refund is of payment " + ref.PaymentID + ", but this operation refunds payment " + p.PaymentID
			}
			return adapters.Result{}, final(codes.InvalidState, "", msg, nil)
		}
		if err := sameAmount("refund", "refunds", ref.Amount, p.AmountMinor, p.Currency); err != nil {
			return adapters.Result{}, err
		}
		switch ref.Status {
		case "canceled":
			reason := ""
			if ref.CancellationDetails != nil {
				reason = ref.CancellationDetails.Reason
			}
			return adapters.Result{}, final(codes.RefundCanceled, "", canceled("refund", reason), fmt.Errorf("refund canceled: reason %q", reason))
		case "pending":
			return adapters.Result{}, stillPending("refund", ref.Status)
		}
		return refundOutcome(ref)
	}
	return adapters.Result{}, unknownIntent(op.Intent)
}

// readFailure classifies a failed read of the object: a 404 is the
// provider's "no such object"; anything else means it could not tell, and
// is never Final, which would say the object cannot be the effect.
func readFailure(err error) error {
	if errors.Is(err, adapters.ErrNotFound) {
		return err
	}
	return adapters.LookupFailure(err)
}

// otherOperation refuses an object whose metadata carries the gateway's
// keys of another operation: the id was borrowed from it. The operation
// key is named when the object carries it (it is the agent's own id, never
// a secret); the derived key alone names nothing a person could look for.
func otherOperation(noun string, meta map[string]any, key string) error {
	derived, hasDerived := meta[MetaIdempotenceKey].(string)
	opKey, hasKey := meta[MetaOperationKey].(string)
	switch {
	case hasKey && opKey != key:
		return final(codes.InvalidState, "", fmt.Sprintf("the %s was made by another operation (key %q), not by this one", noun, opKey), nil)
	case hasDerived && derived != IdempotenceKey(key):
		return final(codes.InvalidState, "", "the "+noun+" was made by another operation of the gateway, not by this one", nil)
	}
	return nil
}

// sameAmount refuses an object whose amount or currency is not the one op
// names, saying both in plain words.
func sameAmount(noun, verb string, got amount, minor int64, currency string) error {
	want := fmt.Sprintf("%d (minor units) %s", minor, currency)
	if exp, ok := exponent(currency); ok {
		if v, err := formatAmount(minor, exp); err == nil {
			want = v + " " + currency
		}
	}
	gotMinor, err := amountOf(got)
	if err != nil {
		if got.Currency != currency {
			return final(codes.InvalidState, "", fmt.Sprintf("the %s is in another currency than the %s this operation %s", noun, want, verb), nil)
		}
		return &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown,
			Message: "the " + noun + "'s amount could not be read", Err: err}
	}
	if gotMinor == minor && got.Currency == currency {
		return nil
	}
	return final(codes.InvalidState, "", fmt.Sprintf("the %s is for %s %s, but this operation %s %s", noun, got.Value, got.Currency, verb, want), nil)
}

// canceled says that the object was canceled, and the provider's reason
// when it is a plain token.
func canceled(noun, reason string) string {
	msg := "the " + noun + " was canceled at the payment provider"
	if safeToken(reason) {
		msg += " (reason: " + reason + ")"
	}
	return msg + "; a canceled " + noun + " is not this operation's effect"
}

// stillPending refuses an object that is not final yet: only the provider
// can still decide it, and the gateway's look-ups will see how.
func stillPending(noun, status string) error {
	return final(codes.InvalidState, "", "the "+noun+" is still pending at the payment provider; the gateway's look-ups will settle it",
		fmt.Errorf("%s status %q", noun, status))
}
