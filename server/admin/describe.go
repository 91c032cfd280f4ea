package admin

import (
	"context"
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
// a minute.
type parties struct {
	mu   sync.Mutex
	seen map[string]partyAnswer
}

type partyAnswer struct {
	party adapters.Party
	ok    bool
	at    time.Time
}

// party is who the customer id names, as a target that can tell knows
// them: the definition's reference kind for the field if it declares one,
// else a customer or counterparty; an answer with an ИНН is preferred. ok
// is false when no target could tell.
func (h *Handler) party(ctx context.Context, def *intent.Intent, field, id string) (adapters.Party, bool) {
	if id == "" || len(h.d.Describers) == 0 {
		return adapters.Party{}, false
	}
	kinds := partyKinds
	if def != nil && def.References[field] != "" {
		kinds = []string{def.References[field]}
	}
	ck := field + "\x00" + id
	now := time.Now()
	h.parties.mu.Lock()
	if a, hit := h.parties.seen[ck]; hit && now.Sub(a.at) < describeTTL {
		h.parties.mu.Unlock()
		return a.party, a.ok
	}
	h.parties.mu.Unlock()

	// The first answer with an ИНН, by target name, else the first with a
	// name alone: a CRM may know the customer only as a contact person,
	// while the accounting system knows the legal entity that pays.
	var got adapters.Party
	ok := false
targets:
	for _, name := range slices.Sorted(maps.Keys(h.d.Describers)) {
		for _, kind := range kinds {
			cctx, cancel := context.WithTimeout(ctx, describeTimeout)
			p, err := h.d.Describers[name].Describe(cctx, kind, id)
			cancel()
			if err != nil || p.Name == "" {
				continue
			}
			if !ok || got.INN == "" && p.INN != "" {
				got, ok = p, true
			}
			if got.INN != "" {
				break targets
			}
			break
		}
	}
	h.parties.mu.Lock()
	if h.parties.seen == nil || len(h.parties.seen) >= describeMax {
		h.parties.seen = map[string]partyAnswer{}
	}
	h.parties.seen[ck] = partyAnswer{party: got, ok: ok, at: now}
	h.parties.mu.Unlock()
	return got, ok
}
