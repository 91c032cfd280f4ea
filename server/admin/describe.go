package admin

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/server/intent"
)

// describeTimeout bounds one look-up of who an id names; describeTTL is
// how long an answer (or its absence) is reused, so the queue's refresh
// does not ask the target again for every card.
const (
	describeTimeout = 3 * time.Second
	describeTTL     = time.Minute
	describeMax     = 2000 // answers kept
)

// partyKinds are the reference kinds a customer id is looked up as when
// the definition names none for it.
var partyKinds = []string{"customer", "counterparty"}

// parties are the answers of the targets that describe ids, reused for
// a minute (a failed look-up for describeRetry, so a passing fault does
// not stick to the card).
type parties struct {
	mu   sync.Mutex
	seen map[string]partyAnswer
}

// describeRetry is how long a look-up that failed somewhere is reused.
const describeRetry = 10 * time.Second

// partyAnswer is who an id names, as the targets told.
type partyAnswer struct {
	party adapters.Party
	ok    bool
	// from is the target whose answer is shown; failed are the targets
	// that could not be asked (down, timed out), by name.
	from   string
	failed []string
	at     time.Time
}

// party is who the customer id names, as a target that can tell knows
// them: the definition's reference kind for the field if it declares one,
// else a customer or counterparty; an answer with an ИНН is preferred,
// whichever target answered first. The answer says which target it is
// from and which targets could not be asked, so the card can say a
// look-up failed rather than show the raw id as if no one knew it.
func (h *Handler) party(ctx context.Context, def *intent.Intent, field, id string) partyAnswer {
	if id == "" || len(h.d.Describers) == 0 {
		return partyAnswer{}
	}
	kinds := partyKinds
	if def != nil && def.References[field] != "" {
		kinds = []string{def.References[field]}
	}
	ck := field + "\x00" + id
	now := time.Now()
	h.parties.mu.Lock()
	if a, hit := h.parties.seen[ck]; hit && (now.Sub(a.at) < describeTTL && len(a.failed) == 0 || now.Sub(a.at) < describeRetry) {
		h.parties.mu.Unlock()
		return a
	}
	h.parties.mu.Unlock()

	// The first answer with an ИНН, by target name, else the first with a
	// name alone: a CRM may know the customer only as a contact person,
	// while the accounting system knows the legal entity that pays.
	got := partyAnswer{at: now}
targets:
	for _, name := range slices.Sorted(maps.Keys(h.d.Describers)) {
		for _, kind := range kinds {
			cctx, cancel := context.WithTimeout(ctx, describeTimeout)
			p, err := h.d.Describers[name].Describe(cctx, kind, id)
			cancel()
			if err != nil && !errors.Is(err, adapters.ErrNotFound) && !errors.Is(err, adapters.ErrCannotDescribe) {
				if !slices.Contains(got.failed, name) {
					got.failed = append(got.failed, name)
				}
				continue
			}
			if err != nil || p.Name == "" {
				continue
			}
			if !got.ok || got.party.INN == "" && p.INN != "" {
				got.party, got.ok, got.from = p, true, name
			}
			if got.party.INN != "" {
				break targets
			}
			break
		}
	}
	h.parties.mu.Lock()
	if h.parties.seen == nil || len(h.parties.seen) >= describeMax {
		h.parties.seen = map[string]partyAnswer{}
	}
	h.parties.seen[ck] = got
	h.parties.mu.Unlock()
	return got
}
