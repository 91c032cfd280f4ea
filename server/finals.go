package server

import (
	"sync"

	"github.com/oncegate/oncegate/store"
)

// finalCache keeps final journal rows for replays. A final row never
// changes, so a replay answered from here is the one the journal would
// give; only a retention purge removes final rows, and each purge clears
// the cache. Rows are kept without their payload (an answer does not
// carry it), bounded in number and in bytes.
type finalCache struct {
	mu    sync.Mutex
	rows  map[string]store.Operation
	bytes int
}

const (
	finalCacheRows  = 16384
	finalCacheBytes = 32 << 20
)

func finalSize(op store.Operation) int {
	return len(op.Key) + len(op.Result) + len(op.ErrorMessage) + len(op.TargetObjectID) + 256
}

// get returns the final row of key, if kept.
func (f *finalCache) get(key string) (store.Operation, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	op, ok := f.rows[key]
	return op, ok
}

// put keeps op, a final row, evicting arbitrary rows to stay in bounds.
func (f *finalCache) put(op store.Operation) {
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
		f.rows = map[string]store.Operation{}
	}
	if _, ok := f.rows[op.Key]; ok {
		return
	}
	for k, old := range f.rows { // map order: an arbitrary victim
		if len(f.rows) < finalCacheRows && f.bytes+size <= finalCacheBytes {
			break
		}
		delete(f.rows, k)
		f.bytes -= finalSize(old)
	}
	f.rows[op.Key] = op
	f.bytes += size
}

// clear drops every row: a purge removed some from the journal.
func (f *finalCache) clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rows, f.bytes = nil, 0
}
