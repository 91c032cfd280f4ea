package adapters

import (
	"context"
	"errors"
)

// Party is who an external id names, as the target knows it: what the
// person deciding on an operation reads instead of the agent's id.
type Party struct {
	Name string // the name the system holds, e.g. «ООО «Вектор»»
	INN  string // the tax id (ИНН), when the system holds one
	KPP  string // the registration code (КПП) of an organization, when held
}

// Describer is a target that can say who an external id of a reference
// kind (counterparty, customer, organization, …) names, by reading, never
// writing. The admin UI asks it at approval time, so what an accountant
// reads comes from the target, never from the agent's text. It returns
// ErrNotFound when the target has no such object.
type Describer interface {
	Describe(ctx context.Context, kind, id string) (Party, error)
}

// ErrCannotDescribe is a target that cannot tell who an id names at all:
// its interface has no such read (an older 1C module without the route).
// It is no answer, not a failure: the card then shows the id alone.
var ErrCannotDescribe = errors.New("the target has no read that says who an id names")
