package adapters

import (
	"context"
	"errors"
)

// ObjectChecker is a target that can say whether an object id a person
// typed names an object there that can be op's effect: of the kind op's
// intent makes, and finished as its effect would be (a payment that
// succeeded, a document posted where op posts). It only reads. The review
// asks it before it settles an unknown operation as found at the target,
// so that a mistyped or borrowed id never becomes an agent's answer.
//
// It answers, when the object is there and can be op's effect, the Result
// a look-up by key would have answered (ObjectID as the target spells it;
// Data the small normalized result the agent gets); ErrNotFound when the
// target certainly has no such object; a Final *Error whose Message says
// why when the object is there but cannot be op's effect (of another kind,
// canceled, carrying another operation's key, a draft where op posts);
// ErrCannotCheck when the target's interface has no such read (an older
// 1C module); any other error when the target could not tell.
type ObjectChecker interface {
	CheckObject(ctx context.Context, op Op, id string) (Result, error)
}

// ErrCannotCheck is a target that cannot read an object by its id at all.
// It is no answer: a person may still settle the operation, saying so.
var ErrCannotCheck = errors.New("the target has no read of an object by its id")

// NotEffect is the answer of an ObjectChecker for an object that is there
// but cannot be the operation's effect, or an id that cannot name one:
// Final, with message saying why in words safe for a person and a model.
func NotEffect(code, message string) *Error {
	return &Error{Class: Final, Code: code, Message: message}
}
