package onecodata

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/mapping"
)

// resolve finds the Ref_Key of an external id: one GET of the kind's
// catalog filtered by its identifying properties, never by Description.
// None → REFERENCE_NOT_FOUND, several → REFERENCE_AMBIGUOUS, marked for
// deletion → REFERENCE_INACTIVE, each naming the payload field. Only an
// active, unique match is cached, briefly: a reference is resolved again
// on execute whatever validate found, unless it was found a moment ago.
func (c *Client) resolve(ctx context.Context, ref mapping.Ref) (any, error) {
	r, ok := c.refs[ref.Kind]
	if !ok {
		return nil, adapters.Misconfigured(codes.TargetRejected,
			fmt.Sprintf("the target has no references setting for kind %q (field %s)", ref.Kind, ref.Field),
			fmt.Errorf("references.%s is not configured", ref.Kind))
	}
	ck := ref.Kind + "\x00" + ref.ID
	if key, ok := c.cache.get(ck); ok {
		return key, nil
	}
	values := []string{ref.ID}
	if len(r.By) > 1 {
		values = strings.Split(ref.ID, ":")
		if len(values) != len(r.By) {
			return nil, &adapters.Error{Class: adapters.Final, Code: codes.Validation, Field: ref.Field,
				Message: fmt.Sprintf("the id must be %s joined by ':'", strings.Join(r.By, ", "))}
		}
	}
	var conds []string
	for i, p := range r.By {
		conds = append(conds, p+" eq '"+strings.ReplaceAll(values[i], "'", "''")+"'")
	}
	q := url.Values{
		"$filter": {strings.Join(conds, " and ")},
		"$select": {"Ref_Key,DeletionMark"},
		"$top":    {"2"},
		"$format": {"json"},
	}
	status, h, body, err := c.readCall(ctx, c.entityURL(r.Catalog, "", "", q))
	if err != nil {
		return nil, adapters.ReadFailure(err)
	}
	if status != http.StatusOK {
		return nil, adapters.ReadFailure(c.classify(parseError(status, body), h))
	}
	var list struct {
		Value []struct {
			RefKey       string `json:"Ref_Key"`
			DeletionMark bool   `json:"DeletionMark"`
		} `json:"value"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, adapters.ReadFailure(&adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown,
			Message: "1C answered a catalog query with a body the gateway could not read", Err: errors.New(c.clean(err.Error()))})
	}
	where := fmt.Sprintf("in %s by %s", r.Catalog, strings.Join(r.By, "+"))
	switch {
	case len(list.Value) == 0:
		return nil, &adapters.Error{Class: adapters.Final, Code: codes.ReferenceNotFound, Field: ref.Field,
			Message: "no object " + where + " has this id in 1C"}
	case len(list.Value) > 1:
		return nil, &adapters.Error{Class: adapters.Final, Code: codes.ReferenceAmbiguous, Field: ref.Field,
			Message: "more than one object " + where + " has this id in 1C; make the id unique there or identify it by more properties"}
	case list.Value[0].DeletionMark:
		return nil, &adapters.Error{Class: adapters.Final, Code: codes.ReferenceInactive, Field: ref.Field,
			Message: "the object " + where + " with this id is marked for deletion in 1C"}
	}
	key := strings.ToLower(list.Value[0].RefKey)
	c.cache.put(ck, key)
	return key, nil
}

// refCache is a short, bounded cache of resolved references.
type refCache struct {
	ttl  time.Duration
	size int

	mu      sync.Mutex
	entries map[string]refEntry
}

type refEntry struct {
	key     string
	expires time.Time
}

func newRefCache(ttl time.Duration, size int) *refCache {
	if ttl == 0 {
		ttl = 30 * time.Second
	}
	if size <= 0 {
		size = 1000
	}
	return &refCache{ttl: ttl, size: size, entries: map[string]refEntry{}}
}

func (rc *refCache) get(k string) (string, bool) {
	if rc.ttl < 0 {
		return "", false
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	e, ok := rc.entries[k]
	if !ok || time.Now().After(e.expires) {
		delete(rc.entries, k)
		return "", false
	}
	return e.key, true
}

// put keeps k; a full cache first drops what has expired, then, if still
// full, everything (simple, and bounded).
func (rc *refCache) put(k, key string) {
	if rc.ttl < 0 {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	now := time.Now()
	if len(rc.entries) >= rc.size {
		for ek, e := range rc.entries {
			if now.After(e.expires) {
				delete(rc.entries, ek)
			}
		}
		if len(rc.entries) >= rc.size {
			clear(rc.entries)
		}
	}
	rc.entries[k] = refEntry{key: key, expires: now.Add(rc.ttl)}
}
