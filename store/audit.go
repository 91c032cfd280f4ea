package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Actor kinds of audit events.
const (
	ActorAgent  = "agent"
	ActorUser   = "user"
	ActorSystem = "system"
)

// Actor is who caused an event: an agent identity, a signed-in user, or a
// worker of the gateway.
type Actor struct {
	Kind string
	Name string
}

type actorKey struct{}

// WithActor returns a context whose journal writes are audited as actor.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// actorOf is the actor of ctx; the gateway itself when none was set.
func actorOf(ctx context.Context) Actor {
	if a, ok := ctx.Value(actorKey{}).(Actor); ok && a.Kind != "" {
		return a
	}
	return Actor{Kind: ActorSystem, Name: "gateway"}
}

// AuditEvent is one entry of the audit trail.
type AuditEvent struct {
	ID           int64
	At           time.Time
	Actor        Actor
	Event        string
	OperationKey string
	Detail       json.RawMessage // small JSON object, secrets masked
	PrevHash     string
	Hash         string
}

// genesis is the prev_hash of the first event.
var genesis = strings.Repeat("0", 64)

// canonicalEvent is what an event's hash covers, in a fixed field order:
// {"id":N followed by its canonicalRest.
func canonicalEvent(e AuditEvent) []byte {
	return append(strconv.AppendInt([]byte(`{"id":`), e.ID, 10), canonicalRest(e)...)
}

// canonicalRest is an event's canonical form after its id, the part
// known before the chain's head tells the id: ,"at":…}.
func canonicalRest(e AuditEvent) []byte {
	b, _ := json.Marshal(struct {
		At           string          `json:"at"`
		ActorKind    string          `json:"actor_kind"`
		Actor        string          `json:"actor"`
		Event        string          `json:"event"`
		OperationKey string          `json:"operation_key"`
		Detail       json.RawMessage `json:"detail"`
	}{formatTime(e.At), e.Actor.Kind, e.Actor.Name, e.Event, e.OperationKey, e.Detail})
	b[0] = ','
	return b
}

func chainHash(prev string, e AuditEvent) string {
	h := sha256.New()
	h.Write([]byte(prev))
	h.Write(canonicalEvent(e))
	return hex.EncodeToString(h.Sum(nil))
}

// appendAudit adds an event to the caller's write, chained to the last
// one when its batch commits (backend.commit). detail is marshalled as JSON
// (maps sort their keys).
func (s *Store) appendAudit(ctx context.Context, tx *txn, event, key string, detail map[string]any) error {
	if detail == nil {
		detail = map[string]any{}
	}
	d, err := json.Marshal(detail)
	if err != nil {
		return fmt.Errorf("append audit: %w", err)
	}
	tx.audit = append(tx.audit, AuditEvent{At: s.now(), Actor: actorOf(ctx), Event: event, OperationKey: key, Detail: d})
	return nil
}

// auditLock is the PostgreSQL advisory lock that orders appends to the
// chain: each event names its predecessor's hash, so two instances must
// not both read one head. A transaction takes it as its last step (the
// server's oncegate_chain_audit, called last in a batch), after its row
// locks, and holds it until it commits (pg_advisory_xact_lock), so
// appends are serialized for no longer than a commit and cannot deadlock
// with the rows' locks. A sequence would order the ids but not give an
// event its predecessor's hash before that one commits.
const auditLock = 0x6f6e636567617465 // "oncegate"

// chainAudit reads the chain's head and writes events after it, each
// naming its predecessor's hash.
func chainAudit(ctx context.Context, tx *txn, events []AuditEvent) error {
	var prevID int64
	prev := genesis
	err := tx.QueryRowContext(ctx, `SELECT id, hash FROM audit_events ORDER BY id DESC LIMIT 1`).Scan(&prevID, &prev)
	if err != nil && err != sql.ErrNoRows {
		return err
	}
	args := make([]any, 0, auditColumns*min(len(events), maxAuditRows))
	for rest := events; len(rest) > 0; {
		n := auditRows(len(rest))
		args = args[:0]
		for _, e := range rest[:n] {
			e.ID = prevID + 1
			e.Hash = chainHash(prev, e)
			args = append(args, e.ID, formatTime(e.At), e.Actor.Kind, e.Actor.Name, e.Event, nullString(e.OperationKey), string(e.Detail), prev, e.Hash)
			prevID, prev = e.ID, e.Hash
		}
		if _, err := tx.ExecContext(ctx, auditInsert[n], args...); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}

// chainAuditCall has the journal server chain events (the function
// oncegate_chain_audit, migration 0012): it takes the chain's lock, reads
// the head, hashes each event's canonical form after its id and inserts
// them, in one statement; chainAuditArgs are its arguments.
const chainAuditCall = `SELECT oncegate_chain_audit($1, $2, $3, $4, $5, $6, $7, $8)`

func chainAuditArgs(events []AuditEvent) []any {
	n := len(events)
	ats, kinds, actors, names, keys, details := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	rests := make([][]byte, n)
	for i, e := range events {
		ats[i], kinds[i], actors[i], names[i], keys[i], details[i] = formatTime(e.At), e.Actor.Kind, e.Actor.Name, e.Event, e.OperationKey, string(e.Detail)
		rests[i] = canonicalRest(e)
	}
	return []any{int64(auditLock), ats, kinds, actors, names, keys, details, rests}
}

// Where the gateway chains them (SQLite), a batch's events are written
// with multi-row INSERTs: one statement for many events, not one each.
// Each statement holds a power of two of rows, up to maxAuditRows, so a
// batch takes as many as its count has ones in binary and the writer
// keeps at most seven of them prepared.
const (
	maxAuditRows = 64
	auditColumns = 9
)

// auditInsert is the INSERT of n events, for each power of two n up to
// maxAuditRows.
var auditInsert = func() map[int]string {
	out := map[int]string{}
	for n := 1; n <= maxAuditRows; n *= 2 {
		var b strings.Builder
		b.WriteString(`INSERT INTO audit_events (id, at, actor_kind, actor, event, operation_key, detail, prev_hash, hash) VALUES `)
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?)")
		}
		out[n] = b.String()
	}
	return out
}()

// auditRows is how many of the waiting events the next INSERT writes:
// the largest power of two not above them, at most maxAuditRows.
func auditRows(waiting int) int {
	n := 1
	for n*2 <= min(waiting, maxAuditRows) {
		n *= 2
	}
	return n
}

// Audit records an event that changes nothing else in the journal (a
// sign-in, a manual note), in its own transaction.
func (s *Store) Audit(ctx context.Context, event, key string, detail map[string]any) error {
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		return s.auditTx(ctx, tx, event, key, detail)
	})
}

func (s *Store) auditTx(ctx context.Context, tx *txn, event, key string, detail map[string]any) error {
	if err := s.appendAudit(ctx, tx, event, key, detail); err != nil {
		return err
	}
	return nil
}

// AuditFilter selects audit events. Zero fields select everything.
type AuditFilter struct {
	OperationKey string
	Event        string // exact name, or a prefix ending in "." (e.g. "approval.")
	Actor        string
	From, To     time.Time
	BeforeID     int64 // keyset pagination: events with a smaller id
	Limit        int   // default 100
}

// AuditEvents returns events matching f, newest first.
func (s *Store) AuditEvents(ctx context.Context, f AuditFilter) ([]AuditEvent, error) {
	q := `SELECT id, at, actor_kind, actor, event, coalesce(operation_key, ''), detail, prev_hash, hash FROM audit_events WHERE 1=1`
	var args []any
	if f.OperationKey != "" {
		q += ` AND operation_key = ?`
		args = append(args, f.OperationKey)
	}
	if strings.HasSuffix(f.Event, ".") {
		q += ` AND event >= ? AND event < ?`
		args = append(args, f.Event, f.Event[:len(f.Event)-1]+"/")
	} else if f.Event != "" {
		q += ` AND event = ?`
		args = append(args, f.Event)
	}
	if f.Actor != "" {
		q += ` AND actor = ?`
		args = append(args, f.Actor)
	}
	if !f.From.IsZero() {
		q += ` AND at >= ?`
		args = append(args, formatTime(f.From))
	}
	if !f.To.IsZero() {
		q += ` AND at < ?`
		args = append(args, formatTime(f.To))
	}
	if f.BeforeID > 0 {
		q += ` AND id < ?`
		args = append(args, f.BeforeID)
	}
	if f.Limit <= 0 {
		f.Limit = 100
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, f.Limit)
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list audit events: %w", err)
	}
	defer rows.Close()
	var out []AuditEvent
	for rows.Next() {
		e, err := scanAudit(rows)
		if err != nil {
			return nil, fmt.Errorf("list audit events: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

func scanAudit(sc scanner) (AuditEvent, error) {
	var e AuditEvent
	var at, detail string
	if err := sc.Scan(&e.ID, &at, &e.Actor.Kind, &e.Actor.Name, &e.Event, &e.OperationKey, &detail, &e.PrevHash, &e.Hash); err != nil {
		return AuditEvent{}, err
	}
	e.At = parseTime(sql.NullString{String: at, Valid: true})
	e.Detail = json.RawMessage(detail)
	return e, nil
}

// AuditReport is the outcome of VerifyAudit.
type AuditReport struct {
	Events   int   // events checked
	BrokenAt int64 // id of the first event whose link is broken; 0 when intact
	Reason   string
	// The head: the last event checked. A chain cut short at its end is
	// still a valid chain; only a head noted earlier, compared with
	// HeadHolds, shows the cut.
	LastID   int64
	LastHash string
	LastAt   time.Time
}

// VerifyAudit walks the whole chain and reports the first broken link: an
// event whose content no longer hashes to its stored hash, whose prev_hash
// is not its predecessor's hash, or a gap in the ids (a deleted event).
func (s *Store) VerifyAudit(ctx context.Context) (AuditReport, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT id, at, actor_kind, actor, event, coalesce(operation_key, ''), detail, prev_hash, hash FROM audit_events ORDER BY id`)
	if err != nil {
		return AuditReport{}, fmt.Errorf("verify audit: %w", err)
	}
	defer rows.Close()
	var r AuditReport
	prev, prevID := genesis, int64(0)
	for rows.Next() {
		e, err := scanAudit(rows)
		if err != nil {
			return AuditReport{}, fmt.Errorf("verify audit: %w", err)
		}
		r.Events++
		switch {
		case e.ID != prevID+1:
			r.BrokenAt, r.Reason = e.ID, fmt.Sprintf("event %d follows event %d: events in between are missing", e.ID, prevID)
		case e.PrevHash != prev:
			r.BrokenAt, r.Reason = e.ID, fmt.Sprintf("event %d does not link to the hash of event %d", e.ID, prevID)
		case chainHash(prev, e) != e.Hash:
			r.BrokenAt, r.Reason = e.ID, fmt.Sprintf("event %d was changed after it was written", e.ID)
		}
		if r.BrokenAt != 0 {
			return r, nil
		}
		prev, prevID = e.Hash, e.ID
		r.LastID, r.LastHash, r.LastAt = e.ID, e.Hash, e.At
	}
	return r, rows.Err()
}

// HeadHolds reports whether the audit trail still holds event id with
// hash, a head noted from an earlier verify. On an intact chain that
// means nothing up to that event was changed or removed.
func (s *Store) HeadHolds(ctx context.Context, id int64, hash string) (bool, error) {
	var got string
	err := s.rdb.QueryRowContext(ctx, `SELECT hash FROM audit_events WHERE id = ?`, id).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("audit head: %w", err)
	}
	return got == hash, nil
}
