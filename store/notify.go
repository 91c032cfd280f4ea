package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The notices outbox: people told when something waits for them. A batch
// whose audit events the Notifier maps to a notice writes one row per
// person and channel in the same transaction (queueNotices), as the
// webhook outbox does, so no crash loses one and none is written for a
// change that did not land. The dispatcher (server/notify) leases due
// notices address by address and, where too many pile up for one address
// within the digest window, sends them as one digest.

// Notice channels.
const (
	ChannelEmail    = "email"
	ChannelTelegram = "telegram"
	// ChannelBitrix24 is the portal's own notifications, to the portal's
	// user with the person's e-mail address.
	ChannelBitrix24 = "bitrix24"
)

// Notice states.
const (
	NoticePending = "pending"
	NoticeSent    = "sent"
	NoticeFailed  = "failed"
)

// NoticeEvent is what an audit event of a batch tells people: the event
// and the roles to reach. The zero value tells no one.
type NoticeEvent struct {
	Event string
	Roles []string
}

// NoticeText is one notice's words: nothing secret in any of them.
type NoticeText struct {
	Subject string
	Body    string
	Link    string // the admin card
}

// Notifier says which audit events reach whom, and how a notice reads.
type Notifier struct {
	// Channels are the configured channels (ChannelEmail, ChannelTelegram):
	// a user is reached on each of them they gave an address for.
	Channels []string
	// Audits are the audit events that may tell anyone: the others cost
	// the writer nothing.
	Audits []string
	// Event is what the audit event audit of op tells; kind is the kind of
	// op's pending approval ("" when none).
	Event func(audit string, op Operation, kind string) NoticeEvent
	// Render is the notice of event about op. It runs inside the
	// journal's writer: it must be quick and touch nothing else.
	Render func(event string, op Operation, kind string) (NoticeText, error)
}

// notifyHook is the Notifier in use and the dispatcher's wake.
type notifyHook struct {
	n      *Notifier
	queued chan struct{}
}

// SetNotifier makes every later batch write the notices n asks for; nil
// writes none.
func (s *Store) SetNotifier(n *Notifier) {
	if n == nil {
		s.notify.Store(nil)
		return
	}
	s.notify.Store(&notifyHook{n: n, queued: make(chan struct{}, 1)})
}

// NoticesQueued receives after a batch of this gateway wrote notices (the
// dispatcher's wake); nil without a Notifier.
func (s *Store) NoticesQueued() <-chan struct{} {
	if h := s.notify.Load(); h != nil {
		return h.queued
	}
	return nil
}

// wakeNotices wakes the dispatcher after a batch that wrote notices
// committed.
func (s *Store) wakeNotices() {
	if h := s.notify.Load(); h != nil {
		select {
		case h.queued <- struct{}{}:
		default:
		}
	}
}

// queueNotices writes, in the batch's transaction, the notices its audit
// events ask for: one per event, person and channel. It reports whether
// it wrote any.
func (s *Store) queueNotices(ctx context.Context, t *txn) (bool, error) {
	h := s.notify.Load()
	if h == nil || len(t.audit) == 0 {
		return false, nil
	}
	queued := false
	done := map[string]bool{}
	for _, e := range t.audit {
		if !slices.Contains(h.n.Audits, e.Event) {
			continue
		}
		if e.OperationKey == "" {
			// An event of no operation (a webhook endpoint stopped): told
			// of what its detail names.
			var d struct {
				Endpoint string `json:"endpoint"`
			}
			if json.Unmarshal(e.Detail, &d) != nil || d.Endpoint == "" {
				continue
			}
			e.OperationKey = EndpointKey(d.Endpoint)
		}
		var op Operation
		var err error
		if name, ok := strings.CutPrefix(e.OperationKey, endpointKeyPrefix); ok {
			op = Operation{Key: e.OperationKey, Intent: name}
		} else {
			op, err = getOperation(ctx, t, e.OperationKey)
		}
		if errors.Is(err, ErrNotFound) {
			// A process's key: told in its words (its name and payload).
			p, perr := scanProcess(t.QueryRowContext(ctx, `SELECT `+processColumns+` FROM processes WHERE key = ?`, e.OperationKey))
			if perr != nil {
				return false, fmt.Errorf("notices: %w", perr)
			}
			op, err = Operation{Key: p.Key, Intent: p.Intent, Payload: p.Payload, Agent: p.Agent}, nil
		}
		if err != nil {
			return false, fmt.Errorf("notices: %w", err)
		}
		kind := ""
		if op.Status == StatusAwaitingApproval {
			if err := t.QueryRowContext(ctx, `SELECT kind FROM approvals WHERE operation_key = ? AND status = 'pending'`, op.Key).Scan(&kind); err != nil && err != sql.ErrNoRows {
				return false, fmt.Errorf("notices: %w", err)
			}
		}
		ev := h.n.Event(e.Event, op, kind)
		if ev.Event == "" || len(ev.Roles) == 0 {
			continue
		}
		// One notice per event: its type, operation and moment.
		id := ev.Event + "/" + op.Key + "/" + formatTime(e.At)
		if done[id] {
			continue
		}
		done[id] = true
		people, err := reachable(ctx, t, ev.Roles)
		if err != nil {
			return false, fmt.Errorf("notices: %w", err)
		}
		if len(people) == 0 {
			continue
		}
		text, err := h.n.Render(ev.Event, op, kind)
		if err != nil {
			return false, fmt.Errorf("notices: %w", err)
		}
		now := formatTime(e.At)
		for _, p := range people {
			for _, ch := range h.n.Channels {
				addr := p.address(ch)
				if addr == "" {
					continue
				}
				if _, err := t.ExecContext(ctx, `
					INSERT INTO notices (event_id, recipient, channel, address, event_type, operation_key, subject, body, link, created_at, next_at)
					VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
					ON CONFLICT (event_id, recipient, channel) DO NOTHING`,
					id, p.name, ch, addr, ev.Event, op.Key, text.Subject, text.Body, text.Link, now, now); err != nil {
					return false, fmt.Errorf("notices: %w", err)
				}
				queued = true
			}
		}
	}
	return queued, nil
}

// person is a user that notices reach, but not on the channels they
// turned off.
type person struct {
	name string
	Contact
	off []string
}

func (p person) address(channel string) string {
	if slices.Contains(p.off, channel) {
		return ""
	}
	return p.Contact.Address(channel)
}

// reachable are the enabled users of roles with an address to reach.
func reachable(ctx context.Context, t *txn, roles []string) ([]person, error) {
	rows, err := t.QueryContext(ctx, `
		SELECT name, coalesce(email, ''), coalesce(telegram_chat_id, ''), notify_off, role FROM users
		WHERE disabled_at IS NULL AND (email IS NOT NULL OR telegram_chat_id IS NOT NULL) ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []person
	for rows.Next() {
		var p person
		var role, off string
		if err := rows.Scan(&p.name, &p.Email, &p.Telegram, &off, &role); err != nil {
			return nil, err
		}
		p.off = splitChannels(off)
		for _, r := range roles {
			if r == role {
				out = append(out, p)
				break
			}
		}
	}
	return out, rows.Err()
}

// Contact is how notices reach a user: an e-mail address, a Telegram chat
// id; "" for none.
type Contact struct {
	Email    string
	Telegram string
}

// Address is where a notice on channel reaches the person: the e-mail
// address (Bitrix24 finds the portal's user by it too) or the chat; ""
// for none.
func (c Contact) Address(channel string) string {
	switch channel {
	case ChannelEmail, ChannelBitrix24:
		return c.Email
	case ChannelTelegram:
		return c.Telegram
	}
	return ""
}

var (
	emailPattern = regexp.MustCompile(`^[^\s@<>,;"]{1,64}@[A-Za-z0-9.-]{1,253}\.[A-Za-z0-9-]{2,63}$`)
	chatPattern  = regexp.MustCompile(`^-?[0-9]{1,20}$`)
)

// CheckContact refuses an e-mail address or chat id that notices could
// not reach: ErrInvalid naming which.
func CheckContact(c Contact) error {
	if c.Email != "" && !emailPattern.MatchString(c.Email) {
		return fmt.Errorf("%w: %q is not an e-mail address like anna@firm.example", ErrInvalid, c.Email)
	}
	if c.Telegram != "" && !chatPattern.MatchString(c.Telegram) {
		return fmt.Errorf("%w: %q is not a Telegram chat id (digits, e.g. 123456789; the bot tells a person theirs)", ErrInvalid, c.Telegram)
	}
	return nil
}

// SetContact sets how notices reach user name: each field of c given
// replaces the one stored ("-" clears it, "" leaves it). It is audited
// without the addresses themselves.
func (s *Store) SetContact(ctx context.Context, name string, c Contact) error {
	set := func(v string) (string, bool) { return strings.TrimSpace(v), v != "" }
	email, setEmail := set(c.Email)
	chat, setChat := set(c.Telegram)
	check := Contact{}
	if email != "-" {
		check.Email = email
	}
	if chat != "-" {
		check.Telegram = chat
	}
	if err := CheckContact(check); err != nil {
		return fmt.Errorf("set contact: %w", err)
	}
	value := func(v string) any {
		if v == "-" {
			return nil
		}
		return v
	}
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		u, err := userByName(ctx, tx, name)
		if err != nil {
			return fmt.Errorf("set contact of %q: %w", name, err)
		}
		detail := map[string]any{"name": u.Name}
		if setEmail {
			if _, err := tx.ExecContext(ctx, `UPDATE users SET email = ?, updated_at = ? WHERE id = ?`, value(email), formatTime(s.now()), u.ID); err != nil {
				return fmt.Errorf("set contact: %w", err)
			}
			detail["email"] = email != "-"
		}
		if setChat {
			if _, err := tx.ExecContext(ctx, `UPDATE users SET telegram_chat_id = ?, updated_at = ? WHERE id = ?`, value(chat), formatTime(s.now()), u.ID); err != nil {
				return fmt.Errorf("set contact: %w", err)
			}
			detail["telegram"] = chat != "-"
		}
		return s.appendAudit(ctx, tx, "user.contact_changed", "", detail)
	})
}

// ContactOf is how notices reach user name.
func (s *Store) ContactOf(ctx context.Context, name string) (Contact, error) {
	var c Contact
	err := s.rdb.QueryRowContext(ctx, `SELECT coalesce(email, ''), coalesce(telegram_chat_id, '') FROM users WHERE lower(name) = lower(?)`, name).
		Scan(&c.Email, &c.Telegram)
	if err != nil {
		return Contact{}, fmt.Errorf("contact of %q: %w", name, interpretError(err))
	}
	return c, nil
}

// Notice is one notice to send, or sent.
type Notice struct {
	ID           int64
	EventID      string
	Recipient    string
	Channel      string
	Address      string
	Event        string
	OperationKey string
	Text         NoticeText
	CreatedAt    time.Time
	State        string
	Attempts     int
	NextAt       time.Time
	LastError    string
	SentAt       time.Time
	DigestOf     int64
}

const noticeColumns = `id, event_id, recipient, channel, address, event_type, operation_key, subject, body, link, created_at,
	state, attempts, next_at, coalesce(last_error, ''), sent_at, coalesce(digest_of, 0)`

func scanNotice(sc scanner) (Notice, error) {
	var n Notice
	var created, next, sent sql.NullString
	err := sc.Scan(&n.ID, &n.EventID, &n.Recipient, &n.Channel, &n.Address, &n.Event, &n.OperationKey,
		&n.Text.Subject, &n.Text.Body, &n.Text.Link, &created, &n.State, &n.Attempts, &next, &n.LastError, &sent, &n.DigestOf)
	if err != nil {
		return Notice{}, err
	}
	n.CreatedAt, n.NextAt, n.SentAt = parseTime(created), parseTime(next), parseTime(sent)
	return n, nil
}

// Notices lists the notices to recipient (everyone's with ""), newest
// first, at most limit.
func (s *Store) Notices(ctx context.Context, recipient string, limit int) ([]Notice, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+noticeColumns+` FROM notices WHERE (? = '' OR recipient = ?) ORDER BY id DESC LIMIT ?`,
		recipient, recipient, limit)
	if err != nil {
		return nil, fmt.Errorf("notices: %w", err)
	}
	defer rows.Close()
	var out []Notice
	for rows.Next() {
		n, err := scanNotice(rows)
		if err != nil {
			return nil, fmt.Errorf("notices: %w", err)
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// endpointKeyPrefix marks the key a notice about a webhook endpoint is
// filed under: no operation's key starts so (a key starts with its
// contour, a word without a slash).
const endpointKeyPrefix = "webhook/"

// EndpointKey is the key notices about the webhook endpoint name are
// filed under; Operation.Intent then holds the endpoint's name.
func EndpointKey(name string) string { return endpointKeyPrefix + name }

// FailingChannels are the channels whose latest tried notice did not go
// through, each with what went wrong: what the dashboard warns of. A
// channel that delivered its latest is not among them.
func (s *Store) FailingChannels(ctx context.Context) (map[string]string, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT channel, state, coalesce(last_error, '') FROM notices WHERE attempts > 0 ORDER BY id DESC LIMIT 500`)
	if err != nil {
		return nil, fmt.Errorf("failing channels: %w", err)
	}
	defer rows.Close()
	seen, out := map[string]bool{}, map[string]string{}
	for rows.Next() {
		var channel, state, lastErr string
		if err := rows.Scan(&channel, &state, &lastErr); err != nil {
			return nil, err
		}
		if seen[channel] {
			continue
		}
		seen[channel] = true
		if state != NoticeSent {
			out[channel] = lastErr
		}
	}
	return out, rows.Err()
}
