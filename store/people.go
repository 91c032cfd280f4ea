package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A person's own say in how they are told (migration 0017): the channels
// they turned off, and the one-time code that links their Telegram chat.

// AllChannels are the channels a notice may go by.
var AllChannels = []string{ChannelEmail, ChannelTelegram, ChannelBitrix24}

// TelegramLinkTTL is how long a code to link a chat may be used.
const TelegramLinkTTL = 10 * time.Minute

// linkAlphabet are the characters of a code: no 0/O, 1/I/L, read aloud
// or typed on a phone without doubt.
const linkAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

// linkCodeLen is a code's length: 31^8, about 8.5e11, against a bot
// anyone may write to, for ten minutes.
const linkCodeLen = 8

func linkHash(code string) string {
	sum := sha256.Sum256([]byte(strings.ToUpper(strings.TrimSpace(code))))
	return hex.EncodeToString(sum[:])
}

// NewTelegramLink issues user name a one-time code that links the chat it
// is sent from to them, valid for TelegramLinkTTL; an earlier code of
// theirs stops working. Only its hash is kept.
func (s *Store) NewTelegramLink(ctx context.Context, name string) (code string, expires time.Time, err error) {
	code = ""
	for len(code) < linkCodeLen {
		var b [1]byte
		rand.Read(b[:])
		// A byte past the last whole round of the alphabet would make
		// its first letters likelier: drawn again.
		if int(b[0]) < 256/len(linkAlphabet)*len(linkAlphabet) {
			code += string(linkAlphabet[int(b[0])%len(linkAlphabet)])
		}
	}
	now := s.now()
	expires = now.Add(TelegramLinkTTL)
	err = s.write(ctx, func(ctx context.Context, tx *txn) error {
		u, err := userByName(ctx, tx, name)
		if err != nil {
			return fmt.Errorf("telegram link of %q: %w", name, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM telegram_links WHERE user_id = ? OR expires_at < ?`, u.ID, formatTime(now)); err != nil {
			return fmt.Errorf("telegram link: %w", interpretError(err))
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO telegram_links (code_hash, user_id, expires_at, created_at) VALUES (?, ?, ?, ?)`,
			linkHash(code), u.ID, formatTime(expires), formatTime(now)); err != nil {
			return fmt.Errorf("telegram link: %w", interpretError(err))
		}
		return nil
	})
	if err != nil {
		return "", time.Time{}, err
	}
	return code, expires, nil
}

// LinkTelegram links chat to the user whose unexpired code this is, and
// spends the code; it returns the user's name. A code unknown, spent or
// expired is ErrNotFound. The link is audited without the code or chat.
func (s *Store) LinkTelegram(ctx context.Context, code, chat string) (string, error) {
	if err := CheckContact(Contact{Telegram: chat}); err != nil {
		return "", fmt.Errorf("link telegram: %w", err)
	}
	var name string
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		var id int64
		err := tx.QueryRowContext(ctx, `
			SELECT u.id, u.name FROM telegram_links l JOIN users u ON u.id = l.user_id
			WHERE l.code_hash = ? AND l.expires_at > ? AND u.disabled_at IS NULL`, linkHash(code), formatTime(s.now())).Scan(&id, &name)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return interpretError(err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM telegram_links WHERE user_id = ?`, id); err != nil {
			return interpretError(err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE users SET telegram_chat_id = ?, updated_at = ? WHERE id = ?`, chat, formatTime(s.now()), id); err != nil {
			return interpretError(err)
		}
		return s.appendAudit(ctx, tx, "user.telegram_linked", "", map[string]any{"name": name})
	})
	if err != nil {
		return "", fmt.Errorf("link telegram: %w", err)
	}
	return name, nil
}

// UserOfChat is the enabled user whose Telegram chat is chat;
// ErrNotFound for none.
func (s *Store) UserOfChat(ctx context.Context, chat string) (string, error) {
	var name string
	err := s.rdb.QueryRowContext(ctx, `SELECT name FROM users WHERE telegram_chat_id = ? AND disabled_at IS NULL ORDER BY id LIMIT 1`, chat).Scan(&name)
	if err != nil {
		return "", fmt.Errorf("user of a chat: %w", interpretError(err))
	}
	return name, nil
}

// NotifyOff are the channels user name turned off.
func (s *Store) NotifyOff(ctx context.Context, name string) ([]string, error) {
	var off string
	if err := s.rdb.QueryRowContext(ctx, `SELECT notify_off FROM users WHERE lower(name) = lower(?)`, name).Scan(&off); err != nil {
		return nil, fmt.Errorf("channels of %q: %w", name, interpretError(err))
	}
	return splitChannels(off), nil
}

// SetNotifyOff sets the channels user name turned off (of ChannelEmail,
// ChannelTelegram, ChannelBitrix24); the others tell them. Audited.
func (s *Store) SetNotifyOff(ctx context.Context, name string, off []string) error {
	for _, c := range off {
		if !slices.Contains(AllChannels, c) {
			return fmt.Errorf("%w: no channel %q (%s)", ErrInvalid, c, strings.Join(AllChannels, ", "))
		}
	}
	off = slices.Compact(slices.Sorted(slices.Values(off)))
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		u, err := userByName(ctx, tx, name)
		if err != nil {
			return fmt.Errorf("channels of %q: %w", name, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE users SET notify_off = ?, updated_at = ? WHERE id = ?`, strings.Join(off, ","), formatTime(s.now()), u.ID); err != nil {
			return fmt.Errorf("channels: %w", interpretError(err))
		}
		return s.appendAudit(ctx, tx, "user.channels_changed", "", map[string]any{"name": u.Name, "off": off})
	})
}

func splitChannels(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
