package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"time"
)

// SessionRefresh is how stale last_seen_at may get before SessionByID
// writes it again: at most one write per session and minute, not one per
// request. The idle timeout is therefore exact to within this much.
const SessionRefresh = time.Minute

// Session is a signed-in browser, as its cookie's id finds it.
type Session struct {
	User      User      // the user as of the lookup: role changes apply at once
	CSRF      string    // the form token of this session; compare with CheckCSRF
	ExpiresAt time.Time // absolute expiry
}

// CheckCSRF reports, in constant time, whether token is the session's
// CSRF token.
func (s Session) CheckCSRF(token string) bool {
	return s.CSRF != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.CSRF)) == 1
}

// hashSessionID is how a session id is stored and looked up.
func hashSessionID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

func randomToken() string {
	buf := make([]byte, 32)
	rand.Read(buf)
	return base64.RawURLEncoding.EncodeToString(buf)
}

// CreateSession signs in the enabled user userID for ttl (absolute
// expiry) and returns the session id for the browser's cookie. Only the
// id's SHA-256 is stored, so the id is shown only now. remoteAddr is kept
// for display. An unknown or disabled user is ErrNotFound.
func (s *Store) CreateSession(ctx context.Context, userID int64, ttl time.Duration, remoteAddr string) (string, Session, error) {
	var r0 string
	var r1 Session
	err := s.write(ctx, func(ctx context.Context, tx *txn) (err error) {
		r0, r1, err = s.createSessionTx(ctx, tx, userID, ttl, remoteAddr)
		return err
	})
	return r0, r1, err
}

func (s *Store) createSessionTx(ctx context.Context, tx *txn, userID int64, ttl time.Duration, remoteAddr string) (string, Session, error) {
	if ttl <= 0 {
		return "", Session{}, fmt.Errorf("create session: %w: ttl must be positive", ErrInvalid)
	}
	if len(remoteAddr) > 128 {
		remoteAddr = remoteAddr[:128]
	}

	u, err := scanUser(tx.QueryRowContext(ctx, `
		SELECT `+userColumns+` FROM users WHERE id = ? AND disabled_at IS NULL`, userID))
	if err != nil {
		return "", Session{}, fmt.Errorf("create session for user %d: %w", userID, interpretError(err))
	}
	id, now := randomToken(), s.now()
	// Stored times have microsecond precision; answer what a lookup will.
	sess := Session{User: u, CSRF: randomToken(), ExpiresAt: now.Add(ttl).Truncate(time.Microsecond)}
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO sessions (id_hash, user_id, csrf_token, created_at, expires_at, last_seen_at, remote_addr)
		VALUES (?, ?, ?, ?, ?, ?, ?)`,
		hashSessionID(id), u.ID, sess.CSRF, formatTime(now), formatTime(sess.ExpiresAt), formatTime(now), remoteAddr); err != nil {
		return "", Session{}, fmt.Errorf("create session: %w", interpretError(err))
	}
	return id, sess, nil
}

// SessionByID returns the live session with the browser's id. It is
// ErrNotFound when the id is unknown, the session passed its absolute
// expiry or sat unused for longer than idle (idle <= 0: no idle limit),
// or its user is disabled; an expired session is deleted on the way.
// A live session's last_seen_at is refreshed at most once per
// SessionRefresh.
func (s *Store) SessionByID(ctx context.Context, id string, idle time.Duration) (Session, error) {
	return s.session(ctx, id, idle, true)
}

// PeekSession is SessionByID for a request no person made (a page's own
// periodic refresh): it does not count as activity, so an unattended
// browser still reaches its idle limit.
func (s *Store) PeekSession(ctx context.Context, id string, idle time.Duration) (Session, error) {
	return s.session(ctx, id, idle, false)
}

func (s *Store) session(ctx context.Context, id string, idle time.Duration, touch bool) (Session, error) {
	if id == "" || len(id) > 128 {
		return Session{}, fmt.Errorf("find session: %w", ErrNotFound)
	}
	ctx, cancel := s.be.readContext(ctx)
	defer cancel()
	hash := hashSessionID(id)
	var sess Session
	var csrf, expires, lastSeen string
	var disabled, created, changed sql.NullString
	u := &sess.User
	err := s.rdb.QueryRowContext(ctx, `
		SELECT s.csrf_token, s.expires_at, s.last_seen_at,
			u.id, u.name, u.role, u.disabled_at, u.created_at, u.password_changed_at, u.must_change_password
		FROM sessions s JOIN users u ON u.id = s.user_id
		WHERE s.id_hash = ?`, hash).
		Scan(&csrf, &expires, &lastSeen, &u.ID, &u.Name, &u.Role, &disabled, &created, &changed, &u.MustChangePassword)
	if err != nil {
		return Session{}, fmt.Errorf("find session: %w", interpretError(err))
	}
	sess.CSRF = csrf
	sess.ExpiresAt = parseTime(sql.NullString{String: expires, Valid: true})
	u.Disabled = disabled.Valid
	u.CreatedAt, u.PasswordChangedAt = parseTime(created), parseTime(changed)
	seen := parseTime(sql.NullString{String: lastSeen, Valid: true})

	now := s.now()
	if !now.Before(sess.ExpiresAt) || (idle > 0 && now.Sub(seen) > idle) || u.Disabled {
		if _, err := s.exec(ctx, `DELETE FROM sessions WHERE id_hash = ?`, hash); err != nil {
			return Session{}, fmt.Errorf("drop expired session: %w", err)
		}
		return Session{}, fmt.Errorf("find session: %w (expired)", ErrNotFound)
	}
	if touch && now.Sub(seen) >= SessionRefresh {
		if _, err := s.exec(ctx, `
			UPDATE sessions SET last_seen_at = ? WHERE id_hash = ? AND last_seen_at < ?`,
			formatTime(now), hash, formatTime(now)); err != nil {
			return Session{}, fmt.Errorf("touch session: %w", err)
		}
	}
	return sess, nil
}

// DeleteSession ends the session with the browser's id (sign-out). An
// unknown id is ErrNotFound, which a sign-out may ignore.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	res, err := s.exec(ctx, `DELETE FROM sessions WHERE id_hash = ?`, hashSessionID(id))
	if err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("delete session: %w", ErrNotFound)
	}
	return nil
}

// PurgeSessions deletes the sessions past their absolute expiry and
// returns how many. Sessions expired only by idleness go when next looked
// up, or at their absolute expiry.
func (s *Store) PurgeSessions(ctx context.Context) (int, error) {
	res, err := s.exec(ctx, `DELETE FROM sessions WHERE expires_at <= ?`, formatTime(s.now()))
	if err != nil {
		return 0, fmt.Errorf("purge sessions: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("purge sessions: %w", err)
	}
	return int(n), nil
}
