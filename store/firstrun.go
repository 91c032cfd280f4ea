package store

import (
	"context"
	"fmt"
)

// firstRunLock is the PostgreSQL advisory lock under which a gateway
// checks for, and makes, what a new journal needs (its first admin, its
// first agent token): gateways started together on one new journal take
// turns, so exactly one makes each and the others find it made.
const firstRunLock = 0x6f6e63656669 // "oncefi"

// CreateFirstUser adds the user, with the checks of CreateUser, only when
// the journal has no user yet, and reports whether it did. Made by
// another gateway meanwhile is not an error: made is false.
func (s *Store) CreateFirstUser(ctx context.Context, name, role, password string) (u User, made bool, err error) {
	for _, err := range []error{validateUserName(name), validateRole(role), ValidatePassword(password)} {
		if err != nil {
			return User{}, false, fmt.Errorf("create first user: %w", err)
		}
	}
	hash, err := hashPassword(ctx, password) // outside the write, as in CreateUser
	if err != nil {
		return User{}, false, fmt.Errorf("create first user: %w", err)
	}
	err = s.write(ctx, func(ctx context.Context, tx *txn) error {
		n, err := s.firstRunCount(ctx, tx, `SELECT count(*) FROM users`)
		if err != nil || n > 0 {
			return err
		}
		u, err = s.createUserTx(ctx, tx, name, role, hash)
		made = err == nil
		return err
	})
	if err != nil {
		return User{}, false, fmt.Errorf("create first user: %w", err)
	}
	return u, made, nil
}

// CreateFirstToken makes a token as CreateToken does only when the
// journal has no token yet, and reports whether it did; the secret is
// returned by the call that made it and by no other.
func (s *Store) CreateFirstToken(ctx context.Context, agent string, scopes []string) (secret string, tok Token, made bool, err error) {
	err = s.write(ctx, func(ctx context.Context, tx *txn) error {
		n, err := s.firstRunCount(ctx, tx, `SELECT count(*) FROM tokens`)
		if err != nil || n > 0 {
			return err
		}
		secret, tok, err = s.createTokenTx(ctx, tx, agent, scopes)
		made = err == nil
		return err
	})
	if err != nil {
		return "", Token{}, false, fmt.Errorf("create first token: %w", err)
	}
	return secret, tok, made, nil
}

// firstRunCount runs a count inside the write, after taking the first
// run's lock on PostgreSQL (SQLite's write transaction is exclusive
// already).
func (s *Store) firstRunCount(ctx context.Context, tx *txn, query string) (int, error) {
	if err := tx.lock(ctx, int64(firstRunLock)); err != nil {
		return 0, err
	}
	var n int
	if err := tx.QueryRowContext(ctx, query).Scan(&n); err != nil {
		return 0, err
	}
	return n, nil
}
