package adapters

import (
	"errors"

	"github.com/oncegate/oncegate/adapters/codes"
)

// Refusals gathers the Final refusals of one check that goes on past the
// first, so a validate names every reference it could not resolve, each
// by its field, instead of one per round trip. The zero value is ready.
type Refusals struct {
	list []*Error
}

// Add records err when it is a Final *Error and reports true: the check
// goes on. Any other error (a target that could not be asked) is not
// recorded and Add reports false: nothing more can be told, and the
// caller stops with it.
func (g *Refusals) Add(err error) bool {
	var e *Error
	if !errors.As(err, &e) || e.Class != Final {
		return false
	}
	if len(g.list) < codes.MaxProblems {
		g.list = append(g.list, e)
	}
	return true
}

// Err is nil when nothing was recorded, else All.
func (g *Refusals) Err() error {
	if e := g.All(); e != nil {
		return e
	}
	return nil
}

// All is the first refusal recorded with the rest as its Also, in the
// order they were added; nil when none was.
func (g *Refusals) All() *Error {
	if len(g.list) == 0 {
		return nil
	}
	first := *g.list[0]
	first.Also = append(first.Also[:len(first.Also):len(first.Also)], g.list[1:]...)
	return &first
}
