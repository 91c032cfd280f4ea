package engine

import (
	"encoding/json"
	"sync"
	"time"
)

// planCacheTTL is how long a validated plan is reused for repeated
// validate calls of the same request.
const planCacheTTL = 15 * time.Second

// planCache keeps recent validate outcomes of the target's checks, so an
// agent that validates the same request again and again while it plans
// does not make the target resolve the same references each time. It only
// ever answers validate: execute always asks the target afresh, so a
// reference deleted or blocked since can never slip through from here.
type planCache struct {
	mu sync.Mutex
	m  map[string]cachedPlan
}

type cachedPlan struct {
	plan    json.RawMessage
	hash    string
	expires time.Time
}

func (c *planCache) get(key string, now time.Time) (cachedPlan, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.m[key]
	if !ok || now.After(p.expires) {
		return cachedPlan{}, false
	}
	return p, true
}

func (c *planCache) put(key string, p cachedPlan) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= 4096 {
		c.m = map[string]cachedPlan{} // small and short-lived: start over rather than track age
	}
	c.m[key] = p
}
