package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The webhook outbox. A batch that changes an operation in a way an
// endpoint asked to hear of writes the delivery in the same transaction
// (queueDeliveries, from the batch's audit events), so no crash or power
// cut can lose one or report a change that did not land. The dispatcher
// takes deliveries in id order per endpoint and operation, leased as an
// operation is, so on several gateways each is sent by one at a time.

// Outbox says which endpoints hear which events, and how a delivery's
// body is made.
type Outbox struct {
	Endpoints []OutboxEndpoint
	// Event is the endpoint event an audit event of the batch is, given
	// the state its operation is in after the batch; "" for none.
	Event func(audit string, status Status) string
	// Render makes the body of event about op, as op stands in the batch
	// that changed it. It runs inside the journal's writer: it must be
	// quick and touch nothing else.
	Render func(event string, at time.Time, op Operation) ([]byte, error)
	// RenderProcess makes the body of event about the process p, as
	// Render does for an operation; nil: processes' events are not sent.
	RenderProcess func(event string, at time.Time, p Process) ([]byte, error)
}

// OutboxEndpoint is one endpoint: its name and the events it hears.
type OutboxEndpoint struct {
	Name   string
	Events []string
}

// SetOutbox makes every later batch write the deliveries o asks for; nil
// writes none.
func (s *Store) SetOutbox(o *Outbox) { s.outbox.Store(o) }

// DeliveriesQueued receives after a batch of this gateway wrote
// deliveries, or made some due at once (the dispatcher's wake).
func (s *Store) DeliveriesQueued() <-chan struct{} { return s.queuedDeliveries }

// deliveriesQueued wakes the dispatcher, once however often it is told.
func (s *Store) deliveriesQueued() {
	select {
	case s.queuedDeliveries <- struct{}{}:
	default:
	}
}

// queueDeliveries writes, in the batch's transaction, a delivery for each
// endpoint that hears an event of the batch's audit events; it reports
// whether it wrote any.
func (s *Store) queueDeliveries(ctx context.Context, t *txn, o *Outbox) (bool, error) {
	queued := false
	type sent struct{ key, event string }
	done := map[sent]bool{}
	for _, e := range t.audit {
		if e.OperationKey == "" {
			continue
		}
		var (
			event  string
			render func() ([]byte, error)
		)
		op, err := getOperation(ctx, t, e.OperationKey)
		switch {
		case err == nil:
			event = o.Event(e.Event, op.Status)
			render = func() ([]byte, error) { return o.Render(event, e.At, op) }
		case errors.Is(err, ErrNotFound) && o.RenderProcess != nil:
			// Not an operation's key: a process's, or none.
			p, perr := scanProcess(t.QueryRowContext(ctx, `SELECT `+processColumns+` FROM processes WHERE key = ?`, e.OperationKey))
			if perr != nil {
				if errors.Is(perr, sql.ErrNoRows) {
					continue
				}
				return false, fmt.Errorf("outbox: %w", perr)
			}
			event = o.Event(e.Event, "")
			render = func() ([]byte, error) { return o.RenderProcess(event, e.At, p) }
		case errors.Is(err, ErrNotFound):
			continue
		default:
			return false, fmt.Errorf("outbox: %w", err)
		}
		if event == "" || done[sent{e.OperationKey, event}] {
			continue
		}
		done[sent{e.OperationKey, event}] = true
		var body []byte
		for _, ep := range o.Endpoints {
			if !slices.Contains(ep.Events, event) {
				continue
			}
			if body == nil {
				if body, err = render(); err != nil {
					return false, fmt.Errorf("outbox: %w", err)
				}
			}
			now := formatTime(e.At)
			if _, err := t.ExecContext(ctx, `
				INSERT INTO webhook_deliveries (webhook_id, endpoint, event_type, operation_key, body, created_at, next_at)
				VALUES (?, ?, ?, ?, ?, ?, ?)`, newWebhookID(), ep.Name, event, e.OperationKey, string(body), now, now); err != nil {
				return false, fmt.Errorf("outbox: %w", err)
			}
			queued = true
		}
	}
	return queued, nil
}

// newWebhookID is a delivery's webhook-id: random, so no two deliveries
// of any gateway share one.
func newWebhookID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return "msg_" + hex.EncodeToString(b)
}

// Delivery states.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// Delivery is one webhook to send, or sent.
type Delivery struct {
	ID           int64
	WebhookID    string
	Endpoint     string
	Event        string
	OperationKey string
	Body         []byte
	CreatedAt    time.Time
	State        string
	Attempts     int
	NextAt       time.Time
	LastStatus   int
	LastError    string
	DeliveredAt  time.Time
}

const deliveryColumns = `id, webhook_id, endpoint, event_type, operation_key, body, created_at, state, attempts, next_at,
	coalesce(last_status, 0), coalesce(last_error, ''), delivered_at`

func scanDelivery(sc scanner) (Delivery, error) {
	var d Delivery
	var body string
	var created, next, delivered sql.NullString
	err := sc.Scan(&d.ID, &d.WebhookID, &d.Endpoint, &d.Event, &d.OperationKey, &body, &created, &d.State, &d.Attempts, &next,
		&d.LastStatus, &d.LastError, &delivered)
	if err != nil {
		return Delivery{}, err
	}
	d.Body = []byte(body)
	d.CreatedAt, d.NextAt, d.DeliveredAt = parseTime(created), parseTime(next), parseTime(delivered)
	return d, nil
}

// TakeDeliveries leases up to limit deliveries that are due: pending, their
// time come, not leased, their endpoint neither gone nor paused, and no
// earlier delivery of the same endpoint and operation still pending — so
// an operation's events reach each endpoint in the order they happened,
// while operations do not wait for each other.
func (s *Store) TakeDeliveries(ctx context.Context, limit int, lease time.Duration) ([]Delivery, error) {
	var out []Delivery
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		out = out[:0]
		now := s.now()
		rows, err := tx.QueryContext(ctx, `
			SELECT `+deliveryColumns+` FROM webhook_deliveries d
			WHERE d.state = 'pending' AND d.next_at <= ? AND (d.lease_until IS NULL OR d.lease_until < ?)
				AND NOT EXISTS (SELECT 1 FROM webhook_endpoints p WHERE p.endpoint = d.endpoint)
				AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e
					WHERE e.endpoint = d.endpoint AND e.operation_key = d.operation_key AND e.state = 'pending' AND e.id < d.id)
			ORDER BY d.id LIMIT ?`+tx.skipLocked(), formatTime(now), formatTime(now), limit)
		if err != nil {
			return fmt.Errorf("take deliveries: %w", err)
		}
		for rows.Next() {
			d, err := scanDelivery(rows)
			if err != nil {
				rows.Close()
				return fmt.Errorf("take deliveries: %w", err)
			}
			out = append(out, d)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("take deliveries: %w", err)
		}
		until := formatTime(now.Add(lease))
		for _, d := range out {
			if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET lease_until = ? WHERE id = ?`, until, d.ID); err != nil {
				return fmt.Errorf("take deliveries: %w", err)
			}
		}
		return nil
	})
	return out, err
}

// Attempt is what one try of a delivery came to.
type Attempt struct {
	Delivered bool
	Status    int       // the receiver's HTTP status; 0 when it gave none
	Error     string    // what went wrong, safe to show
	Next      time.Time // when to try again; zero: never (the delivery failed)
	Gone      bool      // the receiver answered 410 Gone: its endpoint stops
}

// Tried is one try of a delivery and what it came to.
type Tried struct {
	Delivery Delivery
	Attempt  Attempt
}

// RecordDeliveries records tries of deliveries, in one write, and frees
// their leases.
func (s *Store) RecordDeliveries(ctx context.Context, tries []Tried) error {
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		now := formatTime(s.now())
		for _, t := range tries {
			d, a := t.Delivery, t.Attempt
			state, next, delivered := DeliveryPending, formatTime(a.Next), any(nil)
			switch {
			case a.Delivered:
				state, next, delivered = DeliveryDelivered, now, now
			case a.Next.IsZero() && !a.Gone:
				state, next = DeliveryFailed, now
			}
			if _, err := tx.ExecContext(ctx, `
				UPDATE webhook_deliveries SET state = ?, attempts = attempts + 1, next_at = ?, lease_until = NULL,
					last_status = ?, last_error = ?, delivered_at = coalesce(?, delivered_at)
				WHERE id = ?`, state, next, a.Status, nullString(a.Error), delivered, d.ID); err != nil {
				return fmt.Errorf("record delivery attempt: %w", err)
			}
			if a.Gone {
				if err := s.stopEndpointTx(ctx, tx, d.Endpoint, "gone", "the receiver answered 410 Gone"); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// StopEndpoint stops deliveries to endpoint (state gone or paused) until
// it is resumed.
func (s *Store) StopEndpoint(ctx context.Context, endpoint, state, reason string) error {
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		return s.stopEndpointTx(ctx, tx, endpoint, state, reason)
	})
}

func (s *Store) stopEndpointTx(ctx context.Context, tx *txn, endpoint, state, reason string) error {
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO webhook_endpoints (endpoint, state, reason, changed_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (endpoint) DO UPDATE SET state = excluded.state, reason = excluded.reason, changed_at = excluded.changed_at`,
		endpoint, state, reason, formatTime(s.now())); err != nil {
		return fmt.Errorf("stop endpoint: %w", err)
	}
	return s.appendAudit(ctx, tx, "webhook.endpoint_"+state, "", map[string]any{"endpoint": endpoint, "reason": reason})
}

// EndpointState is an endpoint's state: "" when deliveries go to it,
// else gone or paused, with why.
func (s *Store) EndpointState(ctx context.Context, endpoint string) (state, reason string, err error) {
	err = s.rdb.QueryRowContext(ctx, `SELECT state, reason FROM webhook_endpoints WHERE endpoint = ?`, endpoint).Scan(&state, &reason)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil
	}
	return state, reason, err
}

// Deliveries lists an endpoint's deliveries (every endpoint's with ""),
// newest first, at most limit.
func (s *Store) Deliveries(ctx context.Context, endpoint string, limit int) ([]Delivery, error) {
	q := `SELECT ` + deliveryColumns + ` FROM webhook_deliveries`
	args := []any{}
	if endpoint != "" {
		q += ` WHERE endpoint = ?`
		args = append(args, endpoint)
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("deliveries: %w", err)
	}
	defer rows.Close()
	var out []Delivery
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, fmt.Errorf("deliveries: %w", err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// ErrNoSuchDelivery refuses sending again a delivery that is not in the
// journal.
var ErrNoSuchDelivery = errors.New("no such delivery")

// ResendDelivery has a delivery sent again at once, as a person asked:
// pending again, its attempts from nought, under the same webhook-id (a
// receiver that had it drops the copy). The audit names who.
func (s *Store) ResendDelivery(ctx context.Context, id int64, user string) (Delivery, error) {
	var got Delivery
	ctx = WithActor(ctx, Actor{Kind: ActorUser, Name: user})
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		d, err := scanDelivery(tx.QueryRowContext(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNoSuchDelivery
		}
		if err != nil {
			return fmt.Errorf("resend delivery: %w", err)
		}
		now := s.now()
		if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_at = ?, lease_until = NULL,
			delivered_at = NULL WHERE id = ?`, formatTime(now), id); err != nil {
			return fmt.Errorf("resend delivery: %w", err)
		}
		d.State, d.Attempts, d.NextAt, d.DeliveredAt = DeliveryPending, 0, now, time.Time{}
		got = d
		return s.appendAudit(ctx, tx, "webhook.delivery_resent", d.OperationKey,
			map[string]any{"endpoint": d.Endpoint, "webhook_id": d.WebhookID, "event": d.Event, "user": user})
	})
	if err == nil {
		s.deliveriesQueued()
	}
	return got, err
}

// ResumeEndpoint sends to an endpoint that answered 410 Gone or was
// paused again, as a person asked: its pending deliveries are due at once,
// their attempts from nought. One still failing after five days pauses it
// again at its next failure. The audit names who.
func (s *Store) ResumeEndpoint(ctx context.Context, endpoint, user string) error {
	ctx = WithActor(ctx, Actor{Kind: ActorUser, Name: user})
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		var was string
		err := tx.QueryRowContext(ctx, `SELECT state FROM webhook_endpoints WHERE endpoint = ?`, endpoint).Scan(&was)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // not stopped: nothing to resume
		}
		if err != nil {
			return fmt.Errorf("resume endpoint: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_endpoints WHERE endpoint = ?`, endpoint); err != nil {
			return fmt.Errorf("resume endpoint: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET attempts = 0, next_at = ? WHERE endpoint = ? AND state = 'pending'`,
			formatTime(s.now()), endpoint); err != nil {
			return fmt.Errorf("resume endpoint: %w", err)
		}
		return s.appendAudit(ctx, tx, "webhook.endpoint_resumed", "", map[string]any{"endpoint": endpoint, "was": was, "user": user})
	})
	if err == nil {
		s.deliveriesQueued()
	}
	return err
}

// StoppedEndpoints are the endpoints gone or paused, by name: state and
// why.
func (s *Store) StoppedEndpoints(ctx context.Context) (map[string][2]string, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT endpoint, state, reason FROM webhook_endpoints`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][2]string{}
	for rows.Next() {
		var name, state, reason string
		if err := rows.Scan(&name, &state, &reason); err != nil {
			return nil, err
		}
		out[name] = [2]string{state, reason}
	}
	return out, rows.Err()
}

// PurgeDelivered deletes up to batch deliveries delivered before cutoff:
// delivered ones are kept as long as the journal keeps operations; a
// delivery not delivered never expires.
func (s *Store) PurgeDelivered(ctx context.Context, cutoff time.Time, batch int) (int, error) {
	res, err := s.exec(ctx, `DELETE FROM webhook_deliveries WHERE id IN (
		SELECT id FROM webhook_deliveries WHERE state = 'delivered' AND delivered_at < ? ORDER BY id LIMIT ?)`, formatTime(cutoff), batch)
	if err != nil {
		return 0, fmt.Errorf("purge deliveries: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
