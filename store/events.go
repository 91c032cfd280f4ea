package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Events in. A notice a source sent is journaled, one row per rule it is
// for, in the batch that answers it: once the source is told 200 the
// notice is on disk, whatever happens to the read-back or the run after.
// The operation it runs is an ordinary one under the row's op_key, so the
// journal of operations keeps its effect exactly once however often the
// notice comes; the row says what the source's truth made of it.

// EventState is where a received notice stands.
type EventState string

// The states of a received notice (docs/events.md).
const (
	// EventPending: received, not yet read back (or the source could not
	// be read yet).
	EventPending EventState = "pending"
	// EventRun: read back as the notice said; its operation is op_key's.
	EventRun EventState = "run"
	// EventDropped: the source does not hold the object as the notice
	// says; nothing ran.
	EventDropped EventState = "dropped"
	// EventFailed: the rule could not make a request the contract takes
	// of what the source answered; nothing ran.
	EventFailed EventState = "failed"
)

// Event is one received notice, for one rule.
type Event struct {
	ID       int64
	Source   string
	Event    string
	ObjectID string
	Run      string
	OpKey    string
	State    EventState
	// Reason says why it was dropped or failed, or, while pending, what
	// the last read-back met.
	Reason     string
	Deliveries int
	Attempts   int
	ReceivedAt time.Time
	UpdatedAt  time.Time
	NextAt     time.Time
	// Opened reports, of a row ReceiveEvent returns, that this delivery
	// made it pending: a first delivery, or one of a notice that was
	// dropped or failed. Its reader reads it back now; a repeated delivery
	// of one pending already leaves it to the read-back under way.
	Opened bool
}

// EventRule is what a notice is journaled for: the rule's run and the key
// of the operation it runs.
type EventRule struct {
	Run, OpKey string
}

const eventColumns = `id, source, event, object_id, run, op_key, state, reason, deliveries, attempts, received_at, updated_at, next_at`

func scanEvent(sc scanner) (Event, error) {
	var (
		e                       Event
		received, updated, next string
	)
	if err := sc.Scan(&e.ID, &e.Source, &e.Event, &e.ObjectID, &e.Run, &e.OpKey, &e.State, &e.Reason, &e.Deliveries, &e.Attempts,
		&received, &updated, &next); err != nil {
		return Event{}, err
	}
	e.ReceivedAt = parseTime(sql.NullString{String: received, Valid: true})
	e.UpdatedAt = parseTime(sql.NullString{String: updated, Valid: true})
	e.NextAt = parseTime(sql.NullString{String: next, Valid: true})
	return e, nil
}

// ReceiveEvent journals one delivery of a notice of source about objectID,
// one row per rule: a first delivery as pending, a repeated one counted on
// the row it made. A repeated delivery of a notice that was dropped or
// failed is pending again, to be read back once more: the source's truth
// may have changed (a deal that reached the stage a rule waits for). It
// returns the rows as they are after this delivery. A row this delivery
// made pending is due at next: the background pass leaves it until then
// to the reader the caller starts.
func (s *Store) ReceiveEvent(ctx context.Context, source, event, objectID string, rules []EventRule, next time.Time) ([]Event, error) {
	var out []Event
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		out = out[:0]
		now, due := formatTime(s.now()), formatTime(next)
		for _, r := range rules {
			row := tx.QueryRowContext(ctx, `
				INSERT INTO events (source, event, object_id, run, op_key, state, received_at, updated_at, next_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (source, event, object_id, run) DO UPDATE SET
					deliveries = events.deliveries + 1,
					updated_at = excluded.updated_at,
					reason     = CASE WHEN events.state IN ('dropped', 'failed') THEN '' ELSE events.reason END,
					next_at    = CASE WHEN events.state IN ('dropped', 'failed') THEN excluded.next_at ELSE events.next_at END,
					state      = CASE WHEN events.state IN ('dropped', 'failed') THEN 'pending' ELSE events.state END
				RETURNING `+eventColumns,
				source, event, objectID, r.Run, r.OpKey, EventPending, now, now, due)
			e, err := scanEvent(row)
			if err != nil {
				return fmt.Errorf("receive event: %w", err)
			}
			e.Opened = e.State == EventPending && formatTime(e.NextAt) == due
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SettleEvent ends a pending event: run, dropped or failed for reason. An
// event no longer pending (settled meanwhile by another gateway reading
// the same notice back) is left as it is. Dropped and failed are audit
// events on the operation's key: a notice the source denies may be forged.
func (s *Store) SettleEvent(ctx context.Context, id int64, state EventState, reason string) error {
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		var e Event
		var err error
		if e, err = scanEvent(tx.QueryRowContext(ctx, `UPDATE events SET state = ?, reason = ?, updated_at = ? WHERE id = ? AND state = ? RETURNING `+eventColumns,
			state, reason, formatTime(s.now()), id, EventPending)); err == sql.ErrNoRows {
			return nil
		} else if err != nil {
			return fmt.Errorf("settle event: %w", err)
		}
		if state == EventRun {
			return nil
		}
		return s.auditTx(ctx, tx, "event."+string(state), e.OpKey, map[string]any{
			"source": e.Source, "event": e.Event, "object_id": e.ObjectID, "run": e.Run, "reason": reason})
	})
}

// PostponeEvent keeps a pending event pending until next: its source
// could not be read back (reason says how), and it is tried again then.
func (s *Store) PostponeEvent(ctx context.Context, id int64, reason string, next time.Time) error {
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		_, err := tx.ExecContext(ctx, `UPDATE events SET attempts = attempts + 1, reason = ?, next_at = ?, updated_at = ? WHERE id = ? AND state = ?`,
			reason, formatTime(next), formatTime(s.now()), id, EventPending)
		if err != nil {
			return fmt.Errorf("postpone event: %w", err)
		}
		return nil
	})
}

// DueEvents lists pending events whose time to be read back has come, the
// longest waiting first, at most limit.
func (s *Store) DueEvents(ctx context.Context, limit int) ([]Event, error) {
	return queryEvents(s.rdb.QueryContext(ctx, `SELECT `+eventColumns+` FROM events WHERE state = ? AND next_at <= ? ORDER BY next_at, id LIMIT ?`,
		EventPending, formatTime(s.now()), limit))
}

// EventFilter narrows ListEvents; zero fields do not narrow.
type EventFilter struct {
	Source string
	State  EventState
	// Before lists only events received before it (the next page).
	Before time.Time
	Limit  int
}

// ListEvents lists events, the newest received first.
func (s *Store) ListEvents(ctx context.Context, f EventFilter) ([]Event, error) {
	q, args := `SELECT `+eventColumns+` FROM events WHERE 1=1`, []any{}
	if f.Source != "" {
		q += ` AND source = ?`
		args = append(args, f.Source)
	}
	if f.State != "" {
		q += ` AND state = ?`
		args = append(args, f.State)
	}
	if !f.Before.IsZero() {
		q += ` AND received_at < ?`
		args = append(args, formatTime(f.Before))
	}
	if f.Limit <= 0 {
		f.Limit = 100
	}
	args = append(args, f.Limit)
	return queryEvents(s.rdb.QueryContext(ctx, q+` ORDER BY received_at DESC, id DESC LIMIT ?`, args...))
}

// EventsOfKey lists the events whose rule runs the operation of key: the
// notice that started it (more than one row only when several sources'
// rules derive one key, which the rules' check prevents).
func (s *Store) EventsOfKey(ctx context.Context, key string) ([]Event, error) {
	return queryEvents(s.rdb.QueryContext(ctx, `SELECT `+eventColumns+` FROM events WHERE op_key = ? ORDER BY id`, key))
}

// EventByID reads one event; ErrNotFound when there is none.
func (s *Store) EventByID(ctx context.Context, id int64) (Event, error) {
	e, err := scanEvent(s.rdb.QueryRowContext(ctx, `SELECT `+eventColumns+` FROM events WHERE id = ?`, id))
	if err == sql.ErrNoRows {
		return Event{}, ErrNotFound
	}
	return e, err
}

// PurgeEvents deletes up to batch events not pending that last changed
// before cutoff. A pending event never expires: it was received and has
// not been read back yet.
func (s *Store) PurgeEvents(ctx context.Context, cutoff time.Time, batch int) (int, error) {
	var n int64
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM events WHERE id IN (SELECT id FROM events WHERE state <> ? AND updated_at < ? ORDER BY updated_at LIMIT ?)`,
			EventPending, formatTime(cutoff), batch)
		if err != nil {
			return fmt.Errorf("purge events: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return int(n), err
}

func queryEvents(rows *sql.Rows, err error) ([]Event, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
