package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"fmt"
	"time"
)

// Digest bounds the messages one address gets: at most After within any
// Window. Notices beyond that wait for the window and go out as one
// digest, so a burst of fifty approvals is one message, not fifty.
type Digest struct {
	After  int
	Window time.Duration
}

// NoticeSend is one message to one address: a notice alone, or a digest
// of several, oldest first.
type NoticeSend struct {
	Channel string
	Address string
	Notices []Notice
}

// IsDigest reports whether the message is a digest of several notices.
func (m NoticeSend) IsDigest() bool { return len(m.Notices) > 1 }

// TakeNotices leases the messages due now, at most limit: pending
// notices whose time came, address by address. An address that has had
// fewer than d.After messages within d.Window gets each notice alone
// while they fit, else one digest of all of them; one that had its
// d.After waits, its notices due when the window frees a place.
func (s *Store) TakeNotices(ctx context.Context, d Digest, limit int, lease time.Duration) ([]NoticeSend, error) {
	var out []NoticeSend
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		out = out[:0]
		now := s.now()
		groups, err := dueNotices(ctx, tx, now)
		if err != nil {
			return fmt.Errorf("take notices: %w", err)
		}
		for _, g := range groups {
			if len(out) >= limit {
				break
			}
			// Gateways sharing the journal count an address's messages one
			// at a time: another's lease, once committed, counts here.
			if err := tx.lock(ctx, int32(noticeLockClass), addressLock(g[0].Channel, g[0].Address)); err != nil {
				return fmt.Errorf("take notices: %w", err)
			}
			sent, oldest, err := sentWithin(ctx, tx, g[0].Channel, g[0].Address, now.Add(-d.Window), now)
			if err != nil {
				return fmt.Errorf("take notices: %w", err)
			}
			switch {
			case sent+len(g) <= d.After:
				for _, n := range g {
					out = append(out, NoticeSend{Channel: n.Channel, Address: n.Address, Notices: []Notice{n}})
				}
			case sent < d.After:
				out = append(out, NoticeSend{Channel: g[0].Channel, Address: g[0].Address, Notices: g})
			default:
				// The address had its share of the window: the notices
				// wait until its oldest message leaves it.
				free := oldest.Add(d.Window)
				if !free.After(now) {
					free = now.Add(time.Second)
				}
				for _, n := range g {
					if _, err := tx.ExecContext(ctx, `UPDATE notices SET next_at = ? WHERE id = ?`, formatTime(free), n.ID); err != nil {
						return fmt.Errorf("take notices: %w", err)
					}
				}
			}
		}
		until := formatTime(now.Add(lease))
		for _, m := range out {
			var digest any
			if m.IsDigest() {
				digest = m.Notices[0].ID
			}
			for _, n := range m.Notices {
				if _, err := tx.ExecContext(ctx, `UPDATE notices SET lease_until = ?, digest_of = ? WHERE id = ?`, until, digest, n.ID); err != nil {
					return fmt.Errorf("take notices: %w", err)
				}
			}
		}
		return nil
	})
	return out, err
}

// noticeLockClass is the first half of the PostgreSQL advisory lock of
// an address's messages; the second is taken from the address
// (addressLock).
const noticeLockClass = 0x6f6e6e74 // "onnt"

// addressLock is the second half of an address's lock.
func addressLock(channel, address string) int32 {
	sum := sha256.Sum256([]byte(channel + "\x00" + address))
	return int32(binary.BigEndian.Uint32(sum[:4]))
}

// dueNotices are the pending notices due at now and not leased, grouped
// by address in the order of their first notice.
func dueNotices(ctx context.Context, tx *txn, now time.Time) ([][]Notice, error) {
	rows, err := tx.QueryContext(ctx, `
		SELECT `+noticeColumns+` FROM notices
		WHERE state = 'pending' AND next_at <= ? AND (lease_until IS NULL OR lease_until < ?)
		ORDER BY id LIMIT 2000`+tx.skipLocked(), formatTime(now), formatTime(now))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var groups [][]Notice
	at := map[[2]string]int{}
	for rows.Next() {
		n, err := scanNotice(rows)
		if err != nil {
			return nil, err
		}
		k := [2]string{n.Channel, n.Address}
		i, ok := at[k]
		if !ok {
			i = len(groups)
			at[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], n)
	}
	return groups, rows.Err()
}

// sentWithin counts the messages to an address since: sent ones (a
// digest is one) and those being sent now; oldest is the first one sent.
func sentWithin(ctx context.Context, tx *txn, channel, address string, since, now time.Time) (int, time.Time, error) {
	var n int
	var oldest sql.NullString
	err := tx.QueryRowContext(ctx, `
		SELECT count(DISTINCT coalesce(digest_of, id)), min(sent_at) FROM notices
		WHERE channel = ? AND address = ?
			AND ((state = 'sent' AND sent_at > ?) OR (state = 'pending' AND lease_until >= ?))`,
		channel, address, formatTime(since), formatTime(now)).Scan(&n, &oldest)
	if err != nil {
		return 0, time.Time{}, err
	}
	t := parseTime(oldest)
	if t.IsZero() {
		t = now
	}
	return n, t, nil
}

// NoticeTry is one try of a message and what it came to.
type NoticeTry struct {
	Send  NoticeSend
	Sent  bool
	Error string    // what went wrong, safe to show
	Next  time.Time // when to try again; zero: never (the notices failed)
}

// RecordNotices records tries of messages, in one write, and frees their
// leases. Notices of a digest that was not sent may go out differently
// next time.
func (s *Store) RecordNotices(ctx context.Context, tries []NoticeTry) error {
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		now := formatTime(s.now())
		for _, t := range tries {
			state, next, sent := NoticePending, formatTime(t.Next), any(nil)
			switch {
			case t.Sent:
				state, next, sent = NoticeSent, now, now
			case t.Next.IsZero():
				state, next = NoticeFailed, now
			}
			for _, n := range t.Send.Notices {
				if _, err := tx.ExecContext(ctx, `
					UPDATE notices SET state = ?, attempts = attempts + 1, next_at = ?, lease_until = NULL, last_error = coalesce(?, last_error), sent_at = ?
					WHERE id = ?`, state, next, nullString(t.Error), sent, n.ID); err != nil {
					return fmt.Errorf("record notice: %w", err)
				}
				if t.Sent {
					continue
				}
				// Not sent: no digest holds it any more.
				if _, err := tx.ExecContext(ctx, `UPDATE notices SET digest_of = NULL WHERE id = ?`, n.ID); err != nil {
					return fmt.Errorf("record notice: %w", err)
				}
			}
		}
		return nil
	})
}

// PurgeNotices deletes up to batch notices sent or failed before cutoff,
// oldest first, and says how many: they told their people, and a digest
// looks back only its window.
func (s *Store) PurgeNotices(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	var n int64
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		res, err := tx.ExecContext(ctx, `
			DELETE FROM notices WHERE id IN (
				SELECT id FROM notices WHERE state <> 'pending' AND next_at < ? ORDER BY id LIMIT ?)`, formatTime(cutoff), batch)
		if err != nil {
			return fmt.Errorf("purge notices: %w", err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}
