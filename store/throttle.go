package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
	"unicode/utf8"
)

// Login throttling: every failed sign-in is a row per scope (the name
// tried, the client address), kept for LoginWindow, so the limits hold
// across restarts.
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

// LoginAllowed reports how long a sign-in as name from addr must wait: 0
// when it may go ahead, else the time until enough failures leave the
// window. While throttled, callers refuse without checking the password
// and without recording a failure, so the wait does not grow. addr is the
// client's IP (a port is dropped; an IPv6 address counts as its /64); an
// empty name or addr is not checked.
func (s *Store) LoginAllowed(ctx context.Context, name, addr string) (time.Duration, error) {
	now := s.now()
	var wait time.Duration
	for _, c := range []struct {
		scope, subject string
		limit          int
	}{{"name", nameSubject(name), NameFailureLimit}, {"addr", addrSubject(addr), AddrFailureLimit}} {
		if c.subject == "" {
			continue
		}
		// The limit-th most recent failure: when it leaves the window,
		// fewer than limit remain.
		var at sql.NullString
		err := s.rdb.QueryRowContext(ctx, `
			SELECT at FROM login_failures
			WHERE scope = ? AND subject = ? AND at > ?
			ORDER BY at DESC LIMIT 1 OFFSET ?`,
			c.scope, c.subject, formatTime(now.Add(-LoginWindow)), c.limit-1).Scan(&at)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("check login throttle: %w", err)
		}
		wait = max(wait, parseTime(at).Add(LoginWindow).Sub(now))
	}
	return wait, nil
}

// RecordLoginFailure counts a failed sign-in against name and addr, and
// prunes failures that left the window.
func (s *Store) RecordLoginFailure(ctx context.Context, name, addr string) error {
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		return s.recordLoginFailureTx(ctx, tx, name, addr)
	})
}

func (s *Store) recordLoginFailureTx(ctx context.Context, tx *txn, name, addr string) error {

	now := s.now()
	if _, err := tx.ExecContext(ctx, `DELETE FROM login_failures WHERE at <= ?`,
		formatTime(now.Add(-LoginWindow))); err != nil {
		return fmt.Errorf("record login failure: %w", err)
	}
	for _, c := range [][2]string{{"name", nameSubject(name)}, {"addr", addrSubject(addr)}} {
		if c[1] == "" {
			continue
		}
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO login_failures (scope, subject, at) VALUES (?, ?, ?)`,
			c[0], c[1], formatTime(now)); err != nil {
			return fmt.Errorf("record login failure: %w", interpretError(err))
		}
	}
	return nil
}

// ClearLoginFailures forgets the failures of name, after a successful
// sign-in. Its address's failures stay: an address guessing many names
// stays throttled even when one guess is right.
func (s *Store) ClearLoginFailures(ctx context.Context, name string) error {
	if _, err := s.exec(ctx, `
		DELETE FROM login_failures WHERE scope = 'name' AND subject = ?`, nameSubject(name)); err != nil {
		return fmt.Errorf("clear login failures: %w", err)
	}
	return nil
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
