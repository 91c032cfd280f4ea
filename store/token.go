package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Scopes an agent token can carry. Each intent needs exactly one.
var Scopes = []string{"read", "draft", "write", "post", "pay"}

// TokenPrefix starts every agent token, so a leaked one is recognisable.
const TokenPrefix = "og_"

// Token is an agent token as stored: never the secret, only its hash.
type Token struct {
	ID        int64
	Agent     string // the agent identity the token acts as
	Scopes    []string
	CreatedAt time.Time
	RevokedAt time.Time // zero while valid
}

// Has reports whether the token carries scope.
func (t Token) Has(scope string) bool { return slices.Contains(t.Scopes, scope) }

// AgentNamePattern is what an agent name looks like, unanchored, as an
// HTML form's pattern attribute takes it. A name starts with a letter, so
// it can never be read as a token id (`oncegate token revoke 12`).
const AgentNamePattern = `[A-Za-z][A-Za-z0-9._\-]{0,63}`

var agentName = regexp.MustCompile(`^` + AgentNamePattern + `$`)

// ParseScopes checks a comma-separated scope list and returns it sorted
// in the canonical order of Scopes, without duplicates.
func ParseScopes(list string) ([]string, error) {
	var out []string
	for _, sc := range strings.Split(list, ",") {
		sc = strings.TrimSpace(sc)
		if sc == "" {
			continue
		}
		if !slices.Contains(Scopes, sc) {
			return nil, fmt.Errorf("%w: unknown scope %q (known: %s)", ErrInvalid, sc, strings.Join(Scopes, ", "))
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: at least one scope is needed (known: %s)", ErrInvalid, strings.Join(Scopes, ", "))
	}
	slices.SortFunc(out, func(a, b string) int { return slices.Index(Scopes, a) - slices.Index(Scopes, b) })
	return out, nil
}

// HashToken is how a token secret is stored and looked up.
func HashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// ValidateAgentName refuses, with ErrInvalid, a name agentName does not
// match. The CLI and the admin form check names with it before anything
// is written.
func ValidateAgentName(agent string) error {
	if !agentName.MatchString(agent) {
		return fmt.Errorf("%w: agent name must be 1-64 characters of A-Z a-z 0-9 . _ - starting with a letter", ErrInvalid)
	}
	return nil
}

// CreateToken makes a new token for agent with scopes and returns its
// secret, which is shown once and never stored.
func (s *Store) CreateToken(ctx context.Context, agent string, scopes []string) (string, Token, error) {
	var r0 string
	var r1 Token
	err := s.write(ctx, func(ctx context.Context, tx *txn) (err error) {
		r0, r1, err = s.createTokenTx(ctx, tx, agent, scopes)
		return err
	})
	return r0, r1, err
}

func (s *Store) createTokenTx(ctx context.Context, tx *txn, agent string, scopes []string) (string, Token, error) {
	if err := ValidateAgentName(agent); err != nil {
		return "", Token{}, fmt.Errorf("create token: %w", err)
	}
	scopes, err := ParseScopes(strings.Join(scopes, ","))
	if err != nil {
		return "", Token{}, fmt.Errorf("create token: %w", err)
	}
	buf := make([]byte, 32)
	rand.Read(buf)
	secret := TokenPrefix + base64.RawURLEncoding.EncodeToString(buf)

	now := s.now()
	var id int64
	err = tx.QueryRowContext(ctx, `
		INSERT INTO tokens (agent, hash, scopes, created_at) VALUES (?, ?, ?, ?) RETURNING id`,
		agent, HashToken(secret), strings.Join(scopes, ","), formatTime(now)).Scan(&id)
	if err != nil {
		return "", Token{}, fmt.Errorf("create token: %w", interpretError(err))
	}
	if err := s.appendAudit(ctx, tx, "token.created", "", map[string]any{"token_id": id, "agent": agent, "scopes": scopes}); err != nil {
		return "", Token{}, err
	}
	return secret, Token{ID: id, Agent: agent, Scopes: scopes, CreatedAt: now}, nil
}

// TokenBySecret returns the valid token with that secret, or ErrNotFound
// (also for a revoked one).
func (s *Store) TokenBySecret(ctx context.Context, secret string) (Token, error) {
	ctx, cancel := s.be.readContext(ctx)
	defer cancel()
	row := s.rdb.QueryRowContext(ctx, `
		SELECT id, agent, scopes, created_at, revoked_at FROM tokens
		WHERE hash = ? AND revoked_at IS NULL`, HashToken(secret))
	t, err := scanToken(row)
	if err != nil {
		return Token{}, fmt.Errorf("find token: %w", interpretError(err))
	}
	return t, nil
}

// ListTokens returns every token, newest first.
func (s *Store) ListTokens(ctx context.Context) ([]Token, error) {
	rows, err := s.rdb.QueryContext(ctx, `
		SELECT id, agent, scopes, created_at, revoked_at FROM tokens ORDER BY id DESC`)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	defer rows.Close()
	var out []Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("list tokens: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// RevokeToken revokes the token with id ref, or every valid token of the
// agent named ref. It returns how many tokens it revoked; none is ErrNotFound.
func (s *Store) RevokeToken(ctx context.Context, ref string) (int, error) {
	var r0 int
	err := s.write(ctx, func(ctx context.Context, tx *txn) (err error) {
		r0, err = s.revokeTokenTx(ctx, tx, ref)
		return err
	})
	return r0, err
}

func (s *Store) revokeTokenTx(ctx context.Context, tx *txn, ref string) (int, error) {
	now := formatTime(s.now())
	q, arg := `UPDATE tokens SET revoked_at = ? WHERE agent = ? AND revoked_at IS NULL RETURNING id, agent`, any(ref)
	if id, perr := strconv.ParseInt(ref, 10, 64); perr == nil {
		q, arg = `UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL RETURNING id, agent`, id
	}
	rows, err := tx.QueryContext(ctx, q, now, arg)
	if err != nil {
		return 0, fmt.Errorf("revoke token: %w", err)
	}
	var ids []int64
	var agents []string
	for rows.Next() {
		var id int64
		var agent string
		if err := rows.Scan(&id, &agent); err != nil {
			rows.Close()
			return 0, fmt.Errorf("revoke token: %w", err)
		}
		ids = append(ids, id)
		if !slices.Contains(agents, agent) {
			agents = append(agents, agent)
		}
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return 0, fmt.Errorf("revoke token: %w", err)
	}
	rows.Close()
	if len(ids) == 0 {
		return 0, fmt.Errorf("revoke token %q: %w (no valid token with that id or agent)", ref, ErrNotFound)
	}
	// The trail names whose access ended, not only the reference typed.
	slices.Sort(ids)
	detail := map[string]any{"ref": ref, "count": len(ids), "agent": strings.Join(agents, ", "), "token_ids": ids}
	if err := s.appendAudit(ctx, tx, "token.revoked", "", detail); err != nil {
		return 0, err
	}
	return len(ids), nil
}

// CountTokens returns how many tokens were ever made.
func (s *Store) CountTokens(ctx context.Context) (int, error) {
	var n int
	err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM tokens`).Scan(&n)
	return n, err
}

func scanToken(sc scanner) (Token, error) {
	var t Token
	var scopes string
	var created, revoked sql.NullString
	if err := sc.Scan(&t.ID, &t.Agent, &scopes, &created, &revoked); err != nil {
		return Token{}, err
	}
	t.Scopes = strings.Split(scopes, ",")
	t.CreatedAt, t.RevokedAt = parseTime(created), parseTime(revoked)
	return t, nil
}
