package notify

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oncegate/oncegate/store"
)

// A person links their Telegram chat by sending the bot the one-time
// code their page in the admin UI gives them: the dispatcher reads the
// bot's messages with getUpdates and answers each in its chat.

// pollWait is how long one getUpdates waits for a person's message.
const pollWait = 25 * time.Second

// linkRetryMax bounds the wait between reads of a Bot API that fails.
const linkRetryMax = time.Minute

// linkWarnEvery is how often a failing read is logged again while it
// lasts: a second gateway on the same bot is said, not shouted.
const linkWarnEvery = 10 * time.Minute

// reading are the bots read in this process, by address and token: a
// second reader's long poll would end the first's with 409, over and
// over.
var reading sync.Map

// The answers to a person's message, in Russian then English.
const (
	linkedText  = "Готово: уведомления oncegate для %s будут приходить сюда.\nDone: oncegate notices for %s come here."
	alreadyText = "Этот чат уже привязан: уведомления oncegate для %s приходят сюда.\nThis chat is already linked: oncegate notices for %s come here."
	unknownText = "Код не подошёл или устарел: получите новый на своей странице в oncegate.\n" +
		"This code is unknown or expired: get a new one on your page in oncegate."
	linkFailedText = "Не получилось связать чат: попробуйте ещё раз через минуту.\nThe chat could not be linked: try again in a minute."
)

// update is one update of getUpdates; only a message is read.
type update struct {
	ID      int64 `json:"update_id"`
	Message *struct {
		From *struct {
			IsBot bool `json:"is_bot"`
		} `json:"from"`
		Chat struct {
			ID   int64  `json:"id"`
			Type string `json:"type"`
		} `json:"chat"`
		Text string `json:"text"`
	} `json:"message"`
}

// readLinks reads the bot's messages until ctx is done and links the
// chats that send a code. The offset is kept in memory: each read
// confirms the updates before it, and a restart that reads one again
// finds its code spent. A failing Bot API (down, 409 while another
// process reads the same bot, the network) is read again after
// LinkRetry, doubling to a minute.
func (d *Dispatcher) readLinks(ctx context.Context) {
	key := d.telegram.base + "/bot" + d.telegram.token
	if _, taken := reading.LoadOrStore(key, true); taken {
		return
	}
	defer reading.Delete(key)
	client := &http.Client{
		Timeout:       pollWait + 10*time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	d.log.Info("telegram: people link their chats by sending the bot the code from their page")
	var (
		offset          int64
		wait            time.Duration
		failing, warned time.Time
	)
	for ctx.Err() == nil {
		var batch []update
		err := d.telegram.call(ctx, client, "getUpdates", map[string]any{
			"offset": offset, "timeout": int(pollWait / time.Second), "allowed_updates": []string{"message"}}, &batch)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			wait = min(max(2*wait, d.LinkRetry, time.Millisecond), linkRetryMax)
			pause := wait + time.Duration(rand.Int64N(int64(wait)/10+1))
			if se, ok := err.(*sendError); ok && se.after > pause {
				pause = se.after
			}
			now := time.Now()
			if failing.IsZero() {
				failing = now
			}
			if now.Sub(warned) >= linkWarnEvery {
				args := []any{"err", d.redact.Foreign(err.Error()), "retry_in", pause.Round(time.Millisecond)}
				if !warned.IsZero() {
					args = append(args, "failing_for", now.Sub(failing).Round(time.Second))
				}
				warned = now
				d.log.Warn("telegram: the bot's messages could not be read; no chat is linked until they are", args...)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
			continue
		}
		if !failing.IsZero() {
			d.log.Info("telegram: the bot's messages are read again", "after", time.Since(failing).Round(time.Second))
			failing, warned, wait = time.Time{}, time.Time{}, 0
		}
		for _, u := range batch {
			offset = max(offset, u.ID+1)
			d.answer(ctx, u)
		}
	}
}

// answer is the bot's answer to u: a private chat sending a code is
// linked to the code's user, told so; a code unknown, spent or expired
// is told so; any other message gets how to link. Groups and other bots
// get nothing. Neither the code nor the chat is logged or echoed.
func (d *Dispatcher) answer(ctx context.Context, u update) {
	m := u.Message
	if m == nil || m.Chat.Type != "private" || m.Chat.ID <= 0 || m.From == nil || m.From.IsBot {
		return
	}
	chat := strconv.FormatInt(m.Chat.ID, 10)
	text := d.linkHint()
	if code, ok := linkCode(m.Text); ok {
		name, err := d.store.LinkTelegram(ctx, code, chat)
		switch {
		case err == nil:
			d.log.Info("telegram: a person linked their chat", "user", name)
			text = fmt.Sprintf(linkedText, name, name)
		case errors.Is(err, store.ErrNotFound):
			text = unknownText
			// A code spent by this very chat (read again after a restart,
			// or by another gateway on the bot): it is linked, say so.
			if name, err := d.store.UserOfChat(ctx, chat); err == nil {
				text = fmt.Sprintf(alreadyText, name, name)
			}
		case ctx.Err() != nil:
			return
		default:
			d.log.Warn("telegram: a chat could not be linked", "err", err)
			text = linkFailedText
		}
	}
	if err := d.telegram.send(ctx, chat, message{Text: text}); err != nil && ctx.Err() == nil {
		d.log.Warn("telegram: the bot's answer to a person could not be sent", "err", d.redact.Foreign(err.Error()))
	}
}

// linkHint says how to link a chat, naming the page that gives the code.
func (d *Dispatcher) linkHint() string {
	page := ""
	if d.adminURL != "" {
		page = " (" + d.adminURL + "/admin/me)"
	}
	return "Чтобы уведомления oncegate приходили сюда, получите код на своей странице в oncegate, «Мои уведомления»" + page +
		", и пришлите его сюда: /start КОД.\n" +
		"To get oncegate notices here, get a code on your page in oncegate, My notices" + page + ", and send it here: /start CODE."
}

// linkCode is the code text carries: "/start CODE" (what a t.me link
// with ?start=CODE sends; "/start@bot CODE" too), or a word that may be
// a code alone. Spaces and dashes inside are dropped: a code read out
// in groups still counts.
func linkCode(text string) (string, bool) {
	f := strings.Fields(text)
	if len(f) > 0 && (f[0] == "/start" || strings.HasPrefix(f[0], "/start@")) {
		code := strings.ReplaceAll(strings.Join(f[1:], ""), "-", "")
		return code, code != ""
	}
	code := strings.ReplaceAll(strings.Join(f, ""), "-", "")
	if len(code) < 6 || len(code) > 12 || len(f) > 3 {
		return "", false
	}
	for _, c := range code {
		if (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return "", false
		}
	}
	return code, true
}
