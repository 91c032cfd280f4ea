package notify

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/mail"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oncegate/oncegate/adapters/redact"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/store"
)

// Schedule is how long after each failed try of a message the next is
// made: a person hears of a short outage late, not never; after the last
// the notices are failed (shown in the journal, none sent).
var Schedule = []time.Duration{10 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour}

// lease bounds one try's hold on a message: after it another gateway may
// send it.
const lease = 2 * time.Minute

// digestItems bounds the notices a digest lists one by one.
const digestItems = 20

// keep is how long sent and failed notices stay in the journal; purged
// hourly, a batch at a time.
const keep = 30 * 24 * time.Hour

// Dispatcher sends the journal's due notices.
type Dispatcher struct {
	store    *store.Store
	email    *emailSender
	telegram *telegramSender
	portal   Portal
	digest   store.Digest
	adminURL string
	redact   *redact.Redactor
	log      *slog.Logger
	// Idle is the longest the dispatcher sleeps when nothing is due
	// (notices written here wake it at once; another gateway's are seen
	// within it).
	Idle time.Duration
	// Schedule is the waits between tries (the package's Schedule).
	Schedule []time.Duration
	// LinkRetry is the first wait before the bot's messages are read
	// again after the Bot API failed (links.go), doubled to a minute.
	LinkRetry time.Duration
}

// New is a dispatcher of st's notices over the channels cfg configures,
// with their secrets; r masks the targets' secrets in what it logs and
// journals, the channels' own are added to it.
func New(st *store.Store, cfg config.NotifyConfig, secrets config.NotifySecrets, targets []redact.Secret, log *slog.Logger) (*Dispatcher, error) {
	after, window := cfg.Digest()
	d := &Dispatcher{store: st, digest: store.Digest{After: after, Window: window}, adminURL: strings.TrimSuffix(cfg.AdminURL, "/"),
		redact: redact.New(append(append([]redact.Secret(nil), targets...), Secrets(secrets)...)...), log: log,
		Idle: time.Second, Schedule: Schedule, LinkRetry: 3 * time.Second}
	if cfg.EmailOn() {
		if secrets.SMTP == nil {
			return nil, fmt.Errorf("notify.email: the mail server's URL was not read")
		}
		from, err := mail.ParseAddress(cfg.Email.From)
		if err != nil {
			return nil, fmt.Errorf("notify.email.from: %q is not an e-mail address", cfg.Email.From)
		}
		d.email = &emailSender{server: *secrets.SMTP, from: from, timeout: 30 * time.Second}
	}
	if cfg.TelegramOn() {
		if secrets.BotToken == "" {
			return nil, fmt.Errorf("notify.telegram: the bot's token was not read")
		}
		d.telegram = &telegramSender{base: cfg.TelegramBase(), token: secrets.BotToken, client: &http.Client{
			Timeout:       15 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}}
	}
	return d, nil
}

// Portal is the Bitrix24 portal's own notifications: the target of
// notify.bitrix24 (adapters/bitrix24's Client).
type Portal interface {
	Notify(ctx context.Context, email, message, tag string) error
}

// SetPortal gives notify.bitrix24's notices their portal; without one
// they wait, kept.
func (d *Dispatcher) SetPortal(p Portal) { d.portal = p }

// Run sends notices until ctx is done, and purges old ones hourly; with
// Telegram, it reads the bot's messages meanwhile to link people's chats.
func (d *Dispatcher) Run(ctx context.Context) {
	if d.telegram != nil {
		var links sync.WaitGroup
		links.Go(func() { d.readLinks(ctx) })
		defer links.Wait()
	}
	var purged time.Time
	for ctx.Err() == nil {
		if now := d.store.Now(); now.Sub(purged) > time.Hour {
			purged = now
			if _, err := d.store.PurgeNotices(ctx, now.Add(-keep), 1000); err != nil && ctx.Err() == nil {
				d.log.Warn("notices: old notices could not be purged", "err", err)
			}
		}
		batch, err := d.store.TakeNotices(ctx, d.digest, 32, lease)
		if err != nil && ctx.Err() == nil {
			d.log.Warn("notices: the outbox could not be read", "err", err)
		}
		tries := make([]store.NoticeTry, len(batch))
		var wg sync.WaitGroup
		for i, m := range batch {
			wg.Go(func() { tries[i] = d.try(ctx, m) })
		}
		wg.Wait()
		if len(tries) > 0 {
			if err := d.store.RecordNotices(context.WithoutCancel(ctx), tries); err != nil {
				d.log.Warn("notices: tries could not be recorded; the messages are sent again", "err", err)
			}
			continue
		}
		select {
		case <-ctx.Done():
		case <-d.store.NoticesQueued():
		case <-time.After(d.Idle):
		}
	}
}

// try sends m once and says what it came to, and when to try again.
func (d *Dispatcher) try(ctx context.Context, m store.NoticeSend) store.NoticeTry {
	msg := d.compose(m)
	var err error
	switch {
	case m.Channel == store.ChannelEmail && d.email != nil:
		err = d.email.send(ctx, m.Address, msg)
	case m.Channel == store.ChannelTelegram && d.telegram != nil:
		err = d.telegram.send(ctx, m.Address, msg)
	case m.Channel == store.ChannelBitrix24 && d.portal != nil:
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		// Tagged by its first notice: sent again after an answer that was
		// lost, it replaces itself at the portal.
		err = d.portal.Notify(pctx, m.Address, msg.Text, "oncegate-"+strconv.FormatInt(m.Notices[0].ID, 10))
		cancel()
	default:
		// A channel no longer configured: kept, and sent should it come
		// back.
		return store.NoticeTry{Send: m, Error: "the channel " + m.Channel + " is not configured", Next: d.store.Now().Add(time.Hour)}
	}
	if err == nil {
		return store.NoticeTry{Send: m, Sent: true}
	}
	t := store.NoticeTry{Send: m, Error: d.redact.Foreign(err.Error())}
	attempts := 0
	for _, n := range m.Notices {
		attempts = max(attempts, n.Attempts)
	}
	if attempts < len(d.Schedule) {
		wait := d.Schedule[attempts]
		wait += time.Duration(rand.Int64N(int64(wait)/10 + 1)) // jitter: a server coming back is not hit at once
		if se, ok := err.(*sendError); ok && se.after > wait {
			wait = se.after
		}
		t.Next = d.store.Now().Add(wait)
	} else {
		d.log.Warn("notices: a message could not be sent and is given up", "channel", m.Channel, "recipient", m.Notices[0].Recipient,
			"notices", len(m.Notices), "err", t.Error)
	}
	return t
}

// compose is m's words: the notice itself, or for a digest how many wait
// and the first of them, each with its card, and the list they wait in.
func (d *Dispatcher) compose(m store.NoticeSend) message {
	if !m.IsDigest() {
		n := m.Notices[0]
		return message{Subject: n.Text.Subject, Text: n.Text.Body}
	}
	count := len(m.Notices)
	var b strings.Builder
	fmt.Fprintf(&b, "Ждут вашего внимания — уведомлений: %d / Waiting for you — notices: %d\n", count, count)
	// The list's link first: a channel that cuts a long text keeps it.
	fmt.Fprintf(&b, "Все / All: %s\n\n", d.adminURL+listPath(m.Notices))
	for i, n := range m.Notices {
		if i == digestItems {
			fmt.Fprintf(&b, "… и ещё %d / … and %d more\n", count-i, count-i)
			break
		}
		fmt.Fprintf(&b, "• %s\n  %s\n", n.Text.Subject, n.Text.Link)
	}
	return message{
		Subject: fmt.Sprintf("oncegate: уведомлений — %d / %d notices wait for you", count, count),
		Text:    d.redact.Own(b.String()),
	}
}

// listPath is the admin page listing what the notices are about: the
// approvals, the review, or the start page for both.
func listPath(ns []store.Notice) string {
	approvals, review := false, false
	for _, n := range ns {
		if n.Event == EventNeedsReview {
			review = true
		} else {
			approvals = true
		}
	}
	switch {
	case approvals && !review:
		return "/admin/approvals"
	case review && !approvals:
		return "/admin/review?flagged=1"
	}
	return "/admin/"
}
