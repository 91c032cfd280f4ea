package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
)

// Waiting for an operation to change, without polling. Every change of an
// operation is audited in the batch that makes it; once that batch
// committed, whoever watches one of its keys is woken (Watch) and reads
// the operation again. On PostgreSQL the batch also sends the keys it
// changed with NOTIFY, delivered at its COMMIT to every gateway on the
// journal, each of which listens while someone there watches.

// changesChannel is the PostgreSQL channel the journal's changes are
// notified on.
const changesChannel = "oncegate_operation_changes"

// notifyLimit bounds one NOTIFY's payload (the server's limit is 8,000
// bytes): a batch's keys go in as many as they need.
const notifyLimit = 7000

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
	if pg, ok := s.be.(*postgresBackend); ok && !w.ears {
		w.ears = true
		go s.listen(pg)
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
	if _, ok := s.be.(*postgresBackend); !ok {
		return true
	}
	return s.watch.hearing.Load()
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

// notifyPayloads splits keys into NOTIFY payloads of at most
// notifyLimit bytes, one key a line. (Keys are at most a few hundred
// bytes and hold no line break.)
func notifyPayloads(keys []string) []string {
	var out []string
	var b strings.Builder
	for _, k := range keys {
		if b.Len() > 0 && b.Len()+1+len(k) > notifyLimit {
			out = append(out, b.String())
			b.Reset()
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(k)
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// listen holds a connection to the journal's server listening on
// changesChannel and wakes the watchers of each key notified, until the
// store closes. A connection that breaks is replaced after a second;
// every watcher is woken then, for a change may have been missed.
func (s *Store) listen(pg *postgresBackend) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-s.quit
		cancel()
	}()
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, pg)
		if ctx.Err() != nil {
			return
		}
		_ = err // the server's outage shows in every other call; here it only delays wakes
		s.watch.wake(nil, true)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return
		}
	}
}

func (s *Store) listenOnce(ctx context.Context, pg *postgresBackend) error {
	conn, err := pg.pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `LISTEN `+changesChannel); err != nil {
		conn.Raw(func(any) error { return driver.ErrBadConn })
		return err
	}
	s.watch.hearing.Store(true)
	defer s.watch.hearing.Store(false)
	// Changes made before LISTEN took effect are not heard: wake all.
	s.watch.wake(nil, true)
	// The connection goes back to the pool never: it listens (ErrBadConn
	// has the pool close it).
	return conn.Raw(func(dc any) error {
		c := dc.(*stdlib.Conn).Conn()
		for {
			n, err := c.WaitForNotification(ctx)
			if err != nil {
				return errors.Join(err, driver.ErrBadConn)
			}
			s.watch.wake(strings.Split(n.Payload, "\n"), false)
		}
	})
}
