package engine

import (
	"crypto/sha256"
	"sync"

	"github.com/oncegate/oncegate/server/intent"
	"github.com/oncegate/oncegate/store"
)

// replayCache keeps final journal rows for replays. A final row never
// changes, so a replay answered from here is the one the journal would
// give; only a retention purge removes final rows, and it removes only
// rows past their target's retention. Such a row (stale) is never
// answered from memory, whichever gateway's purge may have removed it.
// Rows are kept without their payload (an answer does not carry it),
// bounded in number and in bytes.
//
// A row also remembers the digest of the last request replayed from it:
// the agent, the Idempotency-Key header and the body's bytes. Checking a
// request against the contract is a function of exactly those (and of
// the token's scopes, which are checked again), so a request with the
// same digest would pass every check and reach this row again; it is
// answered without decoding, validating or canonicalizing its body.
type replayCache struct {
	stale func(store.Operation) bool // nil: no row is

	mu    sync.Mutex
	rows  map[string]replayEntry
	seen  map[digest]string // request digest → key of its row
	bytes int
}

// replayEntry is a kept row and the request last replayed from it.
type replayEntry struct {
	op  store.Operation
	req *seenRequest
}

// seenRequest is what a replay needs of a request that passed the
// contract: its intent (for the scope and the logs) and its request id
// (echoed in the answer).
type seenRequest struct {
	digest    digest
	intent    *intent.Intent
	requestID string
}

// digest identifies a request by everything the contract checks read.
type digest [sha256.Size]byte

// requestDigest is the digest of a body sent by agent with the
// Idempotency-Key header as the request carries it (hasKey: it carries
// one, keyHeader its first value).
func requestDigest(agent, keyHeader string, hasKey bool, body []byte) digest {
	d := sha256.New()
	d.Write([]byte(agent))
	if hasKey {
		d.Write([]byte{0, 1})
		d.Write([]byte(keyHeader))
	}
	d.Write([]byte{0})
	d.Write(body)
	var out digest
	d.Sum(out[:0])
	return out
}

const (
	finalCacheRows  = 16384
	finalCacheBytes = 32 << 20
)

func finalSize(op store.Operation) int {
	return len(op.Key) + len(op.Result) + len(op.ErrorMessage) + len(op.TargetObjectID) + 256
}

// get returns the final row of key, if kept.
func (f *replayCache) get(key string) (store.Operation, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.rows[key]
	if ok && f.stale != nil && f.stale(e.op) {
		f.drop(key, e)
		return store.Operation{}, false
	}
	return e.op, ok
}

// byRequest returns the row a request with digest d was last replayed
// from, and that request.
func (f *replayCache) byRequest(d digest) (store.Operation, *seenRequest, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key, ok := f.seen[d]
	if !ok {
		return store.Operation{}, nil, false
	}
	e := f.rows[key]
	if f.stale != nil && f.stale(e.op) {
		f.drop(key, e)
		return store.Operation{}, nil, false
	}
	return e.op, e.req, true
}

// put keeps op, a final row, evicting arbitrary rows to stay in bounds.
func (f *replayCache) put(op store.Operation) {
	if !op.Status.Terminal() {
		return
	}
	op.Payload = nil
	size := finalSize(op)
	if size > finalCacheBytes/64 {
		return // a large result is read from the journal each time
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rows == nil {
		f.rows, f.seen = map[string]replayEntry{}, map[digest]string{}
	}
	if _, ok := f.rows[op.Key]; ok {
		return
	}
	for k, old := range f.rows { // map order: an arbitrary victim
		if len(f.rows) < finalCacheRows && f.bytes+size <= finalCacheBytes {
			break
		}
		f.drop(k, old)
	}
	f.rows[op.Key] = replayEntry{op: op}
	f.bytes += size
}

// remember notes that req was replayed from the kept row of key, so the
// next request with its digest is answered from the row directly. Only
// the last request of a row is remembered: an agent's retries repeat
// their bytes.
func (f *replayCache) remember(key string, req *seenRequest) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.rows[key]
	if !ok {
		return
	}
	if e.req != nil {
		delete(f.seen, e.req.digest)
	}
	e.req = req
	f.rows[key] = e
	f.seen[req.digest] = key
}

// drop forgets the row of key. f.mu is held.
func (f *replayCache) drop(key string, e replayEntry) {
	delete(f.rows, key)
	if e.req != nil {
		delete(f.seen, e.req.digest)
	}
	f.bytes -= finalSize(e.op)
}
