package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Processes. A process's row holds what its steps are made from and where
// it stands; each step is an ordinary operation under a key derived from
// the process's, so the journal of operations keeps every step's effect
// exactly once, and the process's own row only says which step the
// process is at. Every state change is an audit event on the process's
// key, which wakes those waiting on it.

// ProcessState is where a process stands.
type ProcessState string

// The states of a process (docs/processes.md, States).
const (
	ProcessStarted          ProcessState = "started"
	ProcessAwaitingApproval ProcessState = "awaiting_approval"
	ProcessUnknown          ProcessState = "unknown"
	ProcessSucceeded        ProcessState = "succeeded"
	ProcessCompensating     ProcessState = "compensating"
	ProcessCompensated      ProcessState = "compensated"
	ProcessNeedsReview      ProcessState = "needs_review"
	ProcessRejected         ProcessState = "rejected"
)

// Final reports whether nothing more happens to a process in state s.
func (s ProcessState) Final() bool {
	return s == ProcessSucceeded || s == ProcessCompensated || s == ProcessRejected
}

// Process is one process's row.
type Process struct {
	Key           string
	Intent        string // the process's name
	IntentVersion int
	IntentDigest  string
	Fingerprint   string
	Agent         string
	// Scopes are the rights of the token that started the process: its
	// steps run under them, after a restart too.
	Scopes    []string
	RequestID string
	Payload   json.RawMessage // normalized
	State     ProcessState
	// Step is the step the state is about: the one awaited, or the one
	// that failed for good.
	Step         string
	ErrorCode    string
	ErrorMessage string
	// UndoRounds counts, per step, how often a person had its undoing
	// tried again: each round undoes under a key of its own.
	UndoRounds map[string]int
	// Undone are the steps a person recorded as undone by hand.
	Undone      []string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	CompletedAt time.Time
}

const processColumns = `key, intent, intent_version, intent_digest, fingerprint, agent, scopes, request_id, payload,
	state, step, error_code, error_message, undo_rounds, undone, created_at, updated_at, completed_at`

func scanProcess(sc scanner) (Process, error) {
	var (
		p                Process
		scopes, payload  string
		rounds, undone   string
		created, updated string
		completed        sql.NullString
	)
	err := sc.Scan(&p.Key, &p.Intent, &p.IntentVersion, &p.IntentDigest, &p.Fingerprint, &p.Agent, &scopes, &p.RequestID,
		&payload, &p.State, &p.Step, &p.ErrorCode, &p.ErrorMessage, &rounds, &undone, &created, &updated, &completed)
	if err != nil {
		return Process{}, err
	}
	if err := json.Unmarshal([]byte(rounds), &p.UndoRounds); err != nil {
		return Process{}, fmt.Errorf("process %s: undo_rounds: %w", p.Key, err)
	}
	p.Undone = strings.Fields(undone)
	p.Scopes = strings.Fields(scopes)
	p.Payload = json.RawMessage(payload)
	p.CreatedAt = parseTime(sql.NullString{String: created, Valid: true})
	p.UpdatedAt = parseTime(sql.NullString{String: updated, Valid: true})
	p.CompletedAt = parseTime(completed)
	return p, nil
}

// BeginProcess journals p as started, leased to owner for ttl, with the
// keys of its steps and their compensations, unless its key already
// holds a process: it returns the row the key holds and
// whether this call wrote it (and so holds its lease). The caller
// compares fingerprints.
func (s *Store) BeginProcess(ctx context.Context, p Process, owner string, ttl time.Duration, stepKeys []string) (Process, bool, error) {
	var (
		got     Process
		created bool
	)
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		got, created = Process{}, false
		now := formatTime(s.now())
		res, err := tx.ExecContext(ctx, `
			INSERT INTO processes (key, intent, intent_version, intent_digest, fingerprint, agent, scopes, request_id, payload,
				state, created_at, updated_at, lease_owner, lease_until)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING`,
			p.Key, p.Intent, p.IntentVersion, p.IntentDigest, p.Fingerprint, p.Agent, strings.Join(p.Scopes, " "), p.RequestID,
			string(p.Payload), ProcessStarted, now, now, owner, formatTime(s.now().Add(ttl)))
		if err != nil {
			return fmt.Errorf("begin process: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			created = true
			if err := noteSteps(ctx, tx, p.Key, stepKeys); err != nil {
				return err
			}
			if err := s.appendAudit(ctx, tx, "process.started", p.Key, map[string]any{"intent": p.Intent, "version": p.IntentVersion}); err != nil {
				return err
			}
		}
		got, err = scanProcess(tx.QueryRowContext(ctx, `SELECT `+processColumns+` FROM processes WHERE key = ?`, p.Key))
		return interpretError(err)
	})
	return got, created, err
}

// LeaseProcess gives owner the lease of a process that is not final for
// ttl, unless another holds it unexpired: only the lease's holder sends
// the process's steps, so on several gateways no two passes race to send
// what the other has just decided against. It returns the row as it
// stands and whether owner holds the lease.
func (s *Store) LeaseProcess(ctx context.Context, key, owner string, ttl time.Duration) (Process, bool, error) {
	var (
		got    Process
		leased bool
	)
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		now := s.now()
		res, err := tx.ExecContext(ctx, `UPDATE processes SET lease_owner = ?, lease_until = ?
			WHERE key = ? AND state NOT IN (?, ?, ?) AND (lease_owner IS NULL OR lease_owner = ? OR lease_until < ?)`,
			owner, formatTime(now.Add(ttl)), key, ProcessSucceeded, ProcessCompensated, ProcessRejected, owner, formatTime(now))
		if err != nil {
			return fmt.Errorf("lease process: %w", err)
		}
		n, _ := res.RowsAffected()
		leased = n == 1
		got, err = scanProcess(tx.QueryRowContext(ctx, `SELECT `+processColumns+` FROM processes WHERE key = ?`, key))
		return interpretError(err)
	})
	return got, leased, err
}

// MoveProcess puts a process that is not final into state, about step,
// with the failed step's code and message (kept once set, so a final
// answer names what failed), and gives back owner's lease ("" for none
// held); a change of state is an audit event. It returns the row as it
// stands.
func (s *Store) MoveProcess(ctx context.Context, key, owner string, state ProcessState, step, code, msg string) (Process, error) {
	var got Process
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		if owner != "" {
			if _, err := tx.ExecContext(ctx, `UPDATE processes SET lease_owner = NULL, lease_until = NULL WHERE key = ? AND lease_owner = ?`, key, owner); err != nil {
				return fmt.Errorf("release process: %w", err)
			}
		}
		cur, err := scanProcess(tx.QueryRowContext(ctx, `SELECT `+processColumns+` FROM processes WHERE key = ?`, key))
		if err != nil {
			return interpretError(err)
		}
		got = cur
		if cur.State.Final() || cur.State == state && cur.Step == step && (code == "" || cur.ErrorCode == code) {
			return nil
		}
		if code == "" {
			code, msg = cur.ErrorCode, cur.ErrorMessage
		}
		now := s.now()
		if _, err := tx.ExecContext(ctx, `
			UPDATE processes SET state = ?, step = ?, error_code = ?, error_message = ?, updated_at = ?, completed_at = ?
			WHERE key = ?`, state, step, code, msg, formatTime(now), finalTime(state, now), key); err != nil {
			return fmt.Errorf("move process: %w", err)
		}
		got.State, got.Step, got.ErrorCode, got.ErrorMessage, got.UpdatedAt = state, step, code, msg, now
		if state.Final() {
			got.CompletedAt = now
		}
		detail := map[string]any{"from": string(cur.State), "step": step}
		if code != "" {
			detail["code"] = code
		}
		return s.appendAudit(ctx, tx, "process."+string(state), key, detail)
	})
	return got, err
}

// finalTime is completed_at for a process moving to state at now.
func finalTime(state ProcessState, now time.Time) any {
	if state.Final() {
		return formatTime(now)
	}
	return nil
}

// GetProcess reads one process; ErrNotFound when the key holds none.
func (s *Store) GetProcess(ctx context.Context, key string) (Process, error) {
	p, err := scanProcess(s.rdb.QueryRowContext(ctx, `SELECT `+processColumns+` FROM processes WHERE key = ?`, key))
	if errors.Is(err, sql.ErrNoRows) {
		return Process{}, ErrNotFound
	}
	return p, err
}

// ProcessFilter says which processes ListProcesses lists.
type ProcessFilter struct {
	State  ProcessState // "" for any
	Intent string       // the process's name; "" for any
	// Before: only processes not moved since; zero for any.
	Before time.Time
	Limit  int
}

// ListProcesses lists the processes f names, the most recently moved
// first, at most f.Limit.
func (s *Store) ListProcesses(ctx context.Context, f ProcessFilter) ([]Process, error) {
	q, args := `SELECT `+processColumns+` FROM processes WHERE 1=1`, []any{}
	if f.State != "" {
		q += ` AND state = ?`
		args = append(args, f.State)
	}
	if f.Intent != "" {
		q += ` AND intent = ?`
		args = append(args, f.Intent)
	}
	if !f.Before.IsZero() {
		q += ` AND updated_at < ?`
		args = append(args, formatTime(f.Before))
	}
	args = append(args, f.Limit)
	return queryProcesses(s.rdb.QueryContext(ctx, q+` ORDER BY updated_at DESC, key LIMIT ?`, args...))
}

// queryProcesses reads the processes a query found.
func queryProcesses(rows *sql.Rows, err error) ([]Process, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Process
	for rows.Next() {
		p, err := scanProcess(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// UnfinishedProcesses lists processes not final, the least recently
// moved first, at most limit.
func (s *Store) UnfinishedProcesses(ctx context.Context, limit int) ([]Process, error) {
	return queryProcesses(s.rdb.QueryContext(ctx, `SELECT `+processColumns+` FROM processes
		WHERE state NOT IN (?, ?, ?) ORDER BY updated_at, key LIMIT ?`,
		ProcessSucceeded, ProcessCompensated, ProcessRejected, limit))
}

// OrphanProcessLeases gives back the process leases of runs other than
// run, known dead (as OrphanLeases: never on a shared journal), so the
// processes they were driving go on at once.
func (s *Store) OrphanProcessLeases(ctx context.Context, run string) (int, error) {
	var n int64
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		res, err := tx.ExecContext(ctx, `UPDATE processes SET lease_owner = NULL, lease_until = NULL
			WHERE lease_owner IS NOT NULL AND lease_owner <> ?`, run)
		if err != nil {
			return fmt.Errorf("orphan process leases: %w", err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// What a person does with a process that needs review (ResolveProcess).
const (
	// ResolveRetry: undo the step again, under a new key, once what
	// refused it is put right.
	ResolveRetry = "retry"
	// ResolveUndone: the step was undone by hand.
	ResolveUndone = "undone"
)

// ErrNotInReview refuses a resolution of a process that does not need
// review.
var ErrNotInReview = errors.New("the process does not wait for a person")

// ResolveProcess records what a person did with a process in
// needs_review, at the step it waits at: retry undoes that step again
// under a new key, undone records that the person undid it by hand. The
// process goes back to undoing its steps; the audit names who and why.
func (s *Store) ResolveProcess(ctx context.Context, key, action, user, note string) (Process, error) {
	if action != ResolveRetry && action != ResolveUndone {
		return Process{}, fmt.Errorf("resolve process: %q is none of %s, %s", action, ResolveRetry, ResolveUndone)
	}
	var got Process
	ctx = WithActor(ctx, Actor{Kind: ActorUser, Name: user})
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		cur, err := scanProcess(tx.QueryRowContext(ctx, `SELECT `+processColumns+` FROM processes WHERE key = ?`, key))
		if err != nil {
			return interpretError(err)
		}
		if cur.State != ProcessNeedsReview {
			return ErrNotInReview
		}
		rounds := cur.UndoRounds
		if rounds == nil {
			rounds = map[string]int{}
		}
		undone := cur.Undone
		if action == ResolveRetry {
			rounds[cur.Step]++
		} else {
			undone = append(undone, cur.Step)
		}
		r, err := json.Marshal(rounds)
		if err != nil {
			return err
		}
		now := s.now()
		if _, err := tx.ExecContext(ctx, `UPDATE processes SET state = ?, undo_rounds = ?, undone = ?, updated_at = ? WHERE key = ?`,
			ProcessCompensating, string(r), strings.Join(undone, " "), formatTime(now), key); err != nil {
			return fmt.Errorf("resolve process: %w", err)
		}
		got = cur
		got.State, got.UndoRounds, got.Undone, got.UpdatedAt = ProcessCompensating, rounds, undone, now
		return s.appendAudit(ctx, tx, "process."+action, key, map[string]any{"step": cur.Step, "user": user, "note": note})
	})
	return got, err
}

// noteSteps records that keys are steps of the process key.
func noteSteps(ctx context.Context, tx *txn, key string, keys []string) error {
	for _, k := range keys {
		if _, err := tx.ExecContext(ctx, `INSERT INTO process_steps (step_key, process_key) VALUES (?, ?) ON CONFLICT (step_key) DO NOTHING`, k, key); err != nil {
			return fmt.Errorf("process steps: %w", err)
		}
	}
	return nil
}

// NoteProcessStep records that stepKey is a step of the process key (a
// compensation tried again under a new key).
func (s *Store) NoteProcessStep(ctx context.Context, key, stepKey string) error {
	return s.write(ctx, func(ctx context.Context, tx *txn) error { return noteSteps(ctx, tx, key, []string{stepKey}) })
}

// ProcessOfStep is the key of the process whose step (or compensation)
// has the key stepKey; ErrNotFound when it is no process's.
func (s *Store) ProcessOfStep(ctx context.Context, stepKey string) (string, error) {
	var key string
	err := s.rdb.QueryRowContext(ctx, `SELECT process_key FROM process_steps WHERE step_key = ?`, stepKey).Scan(&key)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrNotFound
	}
	return key, err
}

// PurgeProcesses deletes up to batch final processes completed before
// cutoff, with their steps' keys (the steps are operations, purged as
// such); a process not final never expires.
func (s *Store) PurgeProcesses(ctx context.Context, cutoff time.Time, batch int) (int, error) {
	var n int64
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		rows, err := tx.QueryContext(ctx, `SELECT key FROM processes WHERE state IN (?, ?, ?) AND completed_at < ? ORDER BY completed_at, key LIMIT ?`,
			ProcessSucceeded, ProcessCompensated, ProcessRejected, formatTime(cutoff), batch)
		if err != nil {
			return fmt.Errorf("purge processes: %w", err)
		}
		var keys []string
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				rows.Close()
				return err
			}
			keys = append(keys, k)
		}
		rows.Close()
		for _, k := range keys {
			if _, err := tx.ExecContext(ctx, `DELETE FROM process_steps WHERE process_key = ?`, k); err != nil {
				return fmt.Errorf("purge processes: %w", err)
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM processes WHERE key = ?`, k); err != nil {
				return fmt.Errorf("purge processes: %w", err)
			}
		}
		n = int64(len(keys))
		return rows.Err()
	})
	return int(n), err
}
