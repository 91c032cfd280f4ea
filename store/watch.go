package store

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Waiting for an operation to change, without polling. Every change of an
// operation is audited in the batch that makes it; once that batch
// committed, whoever watches one of its keys is woken (Watch) and reads
// the operation again. On PostgreSQL the batch also sends the keys it
// changed with NOTIFY, delivered at its COMMIT to every gateway on the
// journal, each of which listens while someone there watches.

// watchers are the keys someone waits on, each with the channels to wake.
type watchers struct {
	mu   sync.Mutex
	by   map[string]map[chan struct{}]struct{}
	n    int
	ears bool // on PostgreSQL: the listener runs (listen)
	// hearing: the listener's LISTEN is in effect.
	hearing atomic.Bool
}

// Watch returns a channel that receives when key's operation may have
// changed — a batch that audited an event of it committed, here or on
// another gateway on the journal — and a function to stop watching. A
// wake is a reason to read the operation again, never a change itself:
// there are spurious ones (an event that changed no state, a listener
// that reconnected). Watch before the read the change is to be judged
// against, so none falls between.
func (s *Store) Watch(key string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w := &s.watch
	w.mu.Lock()
	if w.by == nil {
		w.by = map[string]map[chan struct{}]struct{}{}
	}
	if w.by[key] == nil {
		w.by[key] = map[chan struct{}]struct{}{}
	}
	w.by[key][ch] = struct{}{}
	w.n++
	if s.be.shared() && !w.ears {
		w.ears = true
		go s.listen()
	}
	w.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			w.mu.Lock()
			delete(w.by[key], ch)
			if len(w.by[key]) == 0 {
				delete(w.by, key)
			}
			w.n--
			w.mu.Unlock()
		})
	}
}

// Watching reports how many watches are open.
func (s *Store) Watching() int {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	return s.watch.n
}

// active reports whether anyone watches (a batch skips naming its keys
// otherwise).
func (w *watchers) active() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n > 0
}

// Hears reports whether changes made by other gateways on the journal
// wake this one's watchers now: on PostgreSQL, once its listener's
// LISTEN took effect (the first Watch starts it); on SQLite, where no
// other gateway writes, always.
func (s *Store) Hears() bool {
	return !s.be.shared() || s.watch.hearing.Load()
}

// wake wakes the watchers of keys; with all, every watcher.
func (w *watchers) wake(keys []string, all bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == 0 {
		return
	}
	send := func(chs map[chan struct{}]struct{}) {
		for ch := range chs {
			select {
			case ch <- struct{}{}:
			default: // a wake is already waiting to be read
			}
		}
	}
	if all {
		for _, chs := range w.by {
			send(chs)
		}
		return
	}
	for _, k := range keys {
		send(w.by[k])
	}
}

// changedKeys are the operations a batch's audit events name, each once.
func changedKeys(events []AuditEvent) []string {
	keys := make([]string, 0, len(events))
	seen := make(map[string]bool, len(events))
	for _, e := range events {
		if e.OperationKey != "" && !seen[e.OperationKey] {
			seen[e.OperationKey] = true
			keys = append(keys, e.OperationKey)
		}
	}
	return keys
}

// listen has the backend hear other gateways' changes and wake the
// watchers of each key notified, until the store closes. A connection
// that breaks is replaced after a second; every watcher is woken then,
// for a change may have been missed.
func (s *Store) listen() {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-s.quit
		cancel()
	}()
	hearing := func(on bool) {
		s.watch.hearing.Store(on)
		if on {
			// Changes made before the backend listened were not heard.
			s.watch.wake(nil, true)
		}
	}
	for ctx.Err() == nil {
		// An error here is the journal server's outage, which every other
		// call shows too; here it only delays wakes.
		_ = s.be.listen(ctx, hearing, func(keys []string) { s.watch.wake(keys, false) })
		hearing(false)
		if ctx.Err() != nil {
			return
		}
		s.watch.wake(nil, true)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return
		}
	}
}
