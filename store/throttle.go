package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Login throttling: every failed sign-in is a row per scope (the name
// tried, the client address), kept for LoginWindow, so the limits hold
// across restarts. A sign-in is counted as failed before its password is
// checked and given back when the password is right, so sign-ins run in
// parallel cannot all pass a check made before any of them was counted.
const (
	// LoginWindow is how long a failed sign-in counts.
	LoginWindow = 15 * time.Minute
	// NameFailureLimit failures for one user name within the window
	// throttle that name, from any address.
	NameFailureLimit = 5
	// AddrFailureLimit failures from one address within the window
	// throttle that address, for any name.
	AddrFailureLimit = 20
)

// maxSubject bounds what is stored of a name or address; valid names are
// shorter, so only garbage is cut.
const maxSubject = 128

// sourceChecks bounds the sign-ins from one address being counted and
// checked at once; more are refused at once (ErrLoginBusy). Hashing holds
// a good deal of memory and waits for one of few slots (hashSlots), so a
// burst from one address neither queues without bound nor takes every
// slot from everyone else.
const sourceChecks = 2

// ErrThrottled: too many failed sign-ins for the name or from the address
// within LoginWindow; the password was not checked.
var ErrThrottled = errors.New("too many failed sign-ins")

// ErrLoginBusy: sourceChecks sign-ins from the same address are being
// checked already; the password was not checked.
var ErrLoginBusy = errors.New("too many sign-ins at once from one address")

// throttleLock is the PostgreSQL advisory lock under which a sign-in is
// counted: gateways sharing the journal, and a gateway's several writers,
// must not both see room for one more failure and both take it.
const throttleLock = 0x6f6e63656c6f676e // "oncelogn"

// Login is a person's sign-in as name from addr with password. Counting
// and deciding are one step: in one journal write it refuses a name or an
// address over its limit (ErrThrottled, with the wait until enough
// failures leave the window) or counts the attempt as failed, and only
// then checks the password; a right password gives its count back and
// forgets the name's earlier failures. So however many sign-ins run at
// once, at most the limit of them are checked. A throttled sign-in is
// neither checked nor counted, so the wait does not grow. A wrong
// password, an unknown name and a disabled user are ErrBadCredentials
// alike. addr is the client's IP (a port is dropped; an IPv6 address
// counts as its /64); an empty name or addr is not counted.
func (s *Store) Login(ctx context.Context, name, password, addr string) (User, time.Duration, error) {
	src := sourceKey{s, addrSubject(addr)}
	if !sources.acquire(src) {
		return User{}, 0, fmt.Errorf("sign in: %w", ErrLoginBusy)
	}
	defer sources.release(src)

	ids, wait, err := s.countLoginAttempt(ctx, name, addr)
	if err != nil {
		return User{}, 0, fmt.Errorf("sign in: %w", err)
	}
	if wait > 0 {
		return User{}, wait, fmt.Errorf("sign in: %w", ErrThrottled)
	}
	// Any failure from here on, a refused password or not, stays counted.
	u, err := s.Authenticate(ctx, name, password)
	if err != nil {
		return User{}, 0, err
	}
	if err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		return s.loginSucceededTx(ctx, tx, ids, u.Name)
	}); err != nil {
		return User{}, 0, fmt.Errorf("sign in: %w", err)
	}
	return u, 0, nil
}

// countLoginAttempt is the first step of Login: the wait when name or
// addr is over its limit, else the ids of the failure rows it counted.
func (s *Store) countLoginAttempt(ctx context.Context, name, addr string) (ids []int64, wait time.Duration, err error) {
	err = s.write(ctx, func(ctx context.Context, tx *txn) error {
		ids, wait = nil, 0 // a write may run again (PostgreSQL conflicts)
		if err := tx.lock(ctx, int64(throttleLock)); err != nil {
			return fmt.Errorf("count sign-in: %w", err)
		}
		now := s.now()
		if _, err := tx.ExecContext(ctx, `DELETE FROM login_failures WHERE at <= ?`,
			formatTime(now.Add(-LoginWindow))); err != nil {
			return fmt.Errorf("count sign-in: %w", err)
		}
		w, err := throttleWait(ctx, tx, now, name, addr)
		if err != nil || w > 0 {
			wait = w
			return err
		}
		for _, c := range loginScopes(name, addr) {
			var id int64
			if err := tx.QueryRowContext(ctx, `
				INSERT INTO login_failures (scope, subject, at) VALUES (?, ?, ?) RETURNING id`,
				c.scope, c.subject, formatTime(now)).Scan(&id); err != nil {
				return fmt.Errorf("count sign-in: %w", interpretError(err))
			}
			ids = append(ids, id)
		}
		return nil
	})
	return ids, wait, err
}

// loginSucceededTx gives back the failures a successful sign-in counted
// (ids) and forgets name's earlier ones. Its address's earlier failures
// stay: an address guessing many names stays throttled even when one
// guess is right.
func (s *Store) loginSucceededTx(ctx context.Context, tx *txn, ids []int64, name string) error {
	for _, id := range ids {
		if _, err := tx.ExecContext(ctx, `DELETE FROM login_failures WHERE id = ?`, id); err != nil {
			return fmt.Errorf("forget sign-in failures: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `
		DELETE FROM login_failures WHERE scope = 'name' AND subject = ?`, nameSubject(name)); err != nil {
		return fmt.Errorf("forget sign-in failures: %w", err)
	}
	return nil
}

// LoginAllowed reports how long a sign-in as name from addr would wait
// now: 0 when it may go ahead, else the time until enough failures leave
// the window. It only reads; Login decides and counts in one step.
func (s *Store) LoginAllowed(ctx context.Context, name, addr string) (time.Duration, error) {
	wait, err := throttleWait(ctx, s.rdb, s.now(), name, addr)
	if err != nil {
		return 0, fmt.Errorf("check login throttle: %w", err)
	}
	return wait, nil
}

// rowQuerier is the read pool or the writer's transaction.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// loginScope is what one failed sign-in counts against, with its limit.
type loginScope struct {
	scope, subject string
	limit          int
}

// loginScopes are the name and the address of a sign-in, those not empty.
func loginScopes(name, addr string) []loginScope {
	var out []loginScope
	for _, c := range []loginScope{{"name", nameSubject(name), NameFailureLimit}, {"addr", addrSubject(addr), AddrFailureLimit}} {
		if c.subject != "" {
			out = append(out, c)
		}
	}
	return out
}

// throttleWait is the time until name and addr are both under their
// limits at now: 0 when they are.
func throttleWait(ctx context.Context, q rowQuerier, now time.Time, name, addr string) (time.Duration, error) {
	var wait time.Duration
	for _, c := range loginScopes(name, addr) {
		// The limit-th most recent failure: when it leaves the window,
		// fewer than limit remain.
		var at sql.NullString
		err := q.QueryRowContext(ctx, `
			SELECT at FROM login_failures
			WHERE scope = ? AND subject = ? AND at > ?
			ORDER BY at DESC LIMIT 1 OFFSET ?`,
			c.scope, c.subject, formatTime(now.Add(-LoginWindow)), c.limit-1).Scan(&at)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return 0, err
		}
		wait = max(wait, parseTime(at).Add(LoginWindow).Sub(now))
	}
	return wait, nil
}

// sourceKey is one address's sign-ins on one store.
type sourceKey struct {
	s    *Store
	addr string
}

// loginSources counts the sign-ins of each source being checked now.
type loginSources struct {
	mu sync.Mutex
	n  map[sourceKey]int
}

var sources = loginSources{n: map[sourceKey]int{}}

// acquire takes one of src's sourceChecks places, if one is free.
func (l *loginSources) acquire(src sourceKey) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[src] >= sourceChecks {
		return false
	}
	l.n[src]++
	return true
}

func (l *loginSources) release(src sourceKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[src]--; l.n[src] <= 0 {
		delete(l.n, src)
	}
}

// nameSubject is what a user name is counted as: in lower case, as user
// names compare.
func nameSubject(name string) string {
	name = strings.ToLower(strings.ToValidUTF8(name, "\uFFFD"))
	for len(name) > maxSubject {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	return name
}

// addrSubject is what a client address is counted as: the IP without a
// port, an IPv6 address as its /64 (one host usually holds a whole /64).
func addrSubject(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		addr = host
	}
	if ip, err := netip.ParseAddr(addr); err == nil {
		ip = ip.Unmap()
		if ip.Is6() {
			p, _ := ip.WithZone("").Prefix(64)
			return p.String()
		}
		return ip.String()
	}
	return nameSubject(addr)
}
