// Package notify tells people when something waits for them: an approval
// to decide, a suspected duplicate held, an operation whose outcome the
// reconciler could not settle. Each notice is journaled in the batch
// that makes the change (store's notices outbox), one per event, person
// and channel, and sent by e-mail or Telegram with retries; past a
// threshold one person's notices go as one digest. A notice says what
// waits (the intent's title, the amount as the admin pages show it) and
// links the card; nothing secret goes in it. With Telegram, the bot's
// messages are read too: a person links their chat by sending the bot
// the one-time code their page gives them (links.go).
package notify

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/oncegate/oncegate/adapters/redact"
	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/intent"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// The events people are told of.
const (
	// EventApprovalWaiting: a money operation waits for its approval.
	EventApprovalWaiting = config.EventApprovalWaiting
	// EventDuplicateHeld: an operation is held as a suspected duplicate
	// of an earlier one until a person decides.
	EventDuplicateHeld = "duplicate.held"
	// EventNeedsReview: the reconciler could not settle an operation's
	// outcome; a person looks it up or resolves it.
	EventNeedsReview = "operation.needs_review"
	// EventProcessNeedsReview: undoing a process's step needs a person.
	EventProcessNeedsReview = "process.needs_review"
	// EventWebhookStopped: a webhook endpoint was paused after five days
	// of failures, or answered 410 Gone; an admin resumes it.
	EventWebhookStopped = "webhook.stopped"
)

// Roles are who is told of each event: whoever the admin UI lets act on
// it (decide the approval, settle the duplicate, resolve the review).
var Roles = map[string][]string{
	EventApprovalWaiting: {store.RoleAccountant},
	EventDuplicateHeld:   {store.RoleAdmin, store.RoleOperator, store.RoleAccountant},
	EventNeedsReview:     {store.RoleAdmin, store.RoleOperator},
	// Admins and operators finish a process in needs_review.
	EventProcessNeedsReview: {store.RoleAdmin, store.RoleOperator},
	EventWebhookStopped:     {store.RoleAdmin},
}

// Audits are the journal's audit events Event may make a notice of.
var Audits = []string{"operation.awaiting_approval", "approval.pending", "operation.flagged_for_review", "process.needs_review",
	"webhook.endpoint_paused", "webhook.endpoint_gone"}

// Event is the notice an audit event of op is, given the kind of op's
// pending approval; "" for none.
func Event(audit string, op store.Operation, kind string) string {
	switch audit {
	case "operation.awaiting_approval", "approval.pending":
		switch {
		case op.Status != store.StatusAwaitingApproval:
		case kind == store.ApprovalDuplicate:
			return EventDuplicateHeld
		case kind != "":
			return EventApprovalWaiting
		}
	case "operation.flagged_for_review":
		return EventNeedsReview
	case "process.needs_review":
		return EventProcessNeedsReview
	case "webhook.endpoint_paused", "webhook.endpoint_gone":
		return EventWebhookStopped
	}
	return ""
}

// Notifier is the journal's notifier for cfg: the channels configured,
// the events above, each notice in words of the catalog's intents, its
// text masked by r (the targets' secrets and the credential patterns;
// nil for the patterns alone).
func Notifier(cfg config.NotifyConfig, catalog *intent.Catalog, r *redact.Redactor) *store.Notifier {
	n := &store.Notifier{
		Event: func(audit string, op store.Operation, kind string) store.NoticeEvent {
			e := Event(audit, op, kind)
			return store.NoticeEvent{Event: e, Roles: Roles[e]}
		},
		Render: func(event string, op store.Operation, _ string) (store.NoticeText, error) {
			return Render(cfg.AdminURL, catalog, r, event, op), nil
		},
		Channels: Channels(cfg),
		Audits:   Audits,
	}
	return n
}

// Channels are the channels cfg configures, as the journal names them.
func Channels(cfg config.NotifyConfig) []string {
	var out []string
	if cfg.EmailOn() {
		out = append(out, store.ChannelEmail)
	}
	if cfg.TelegramOn() {
		out = append(out, store.ChannelTelegram)
	}
	if cfg.Bitrix24On() {
		out = append(out, store.ChannelBitrix24)
	}
	return out
}

// heads are each event's words, in Russian then English.
var heads = map[string][2]string{
	EventApprovalWaiting:    {"Ждёт вашего решения", "Awaiting your decision"},
	EventDuplicateHeld:      {"Задержано как возможный дубль", "Held as a possible duplicate"},
	EventNeedsReview:        {"Исход не установлен, нужна проверка", "Outcome unknown, needs review"},
	EventProcessNeedsReview: {"Процессу нужен человек: отмену шага нужно завершить", "A process needs a person to finish undoing a step"},
	EventWebhookStopped:     {"Вебхуки не доходят до получателя", "Webhooks are not reaching their receiver"},
}

// Render is the notice of event about op: the intent's title and the
// amount as the admin pages show them, the order it is for, and the
// link to its card under adminURL — in Russian, then in English. The
// payload's other fields (the customer, the description, a card's
// token) never go in; r masks what might still look like a secret.
func Render(adminURL string, catalog *intent.Catalog, r *redact.Redactor, event string, op store.Operation) store.NoticeText {
	link := strings.TrimSuffix(adminURL, "/") + admin.OperationHref(op.Key)
	switch event {
	case EventProcessNeedsReview:
		link = strings.TrimSuffix(adminURL, "/") + admin.ProcessHref(op.Key)
	case EventWebhookStopped:
		link = strings.TrimSuffix(adminURL, "/") + "/admin/webhooks"
		text := store.NoticeText{
			Subject: fmt.Sprintf("%s: %s / %s: %s", heads[event][0], op.Intent, heads[event][1], op.Intent),
			Body: fmt.Sprintf("%s: %s\nВозобновите его в разделе «Вебхуки»: %s\n\n%s: %s\nResume it on the Webhooks page: %s\n",
				heads[event][0], op.Intent, link, heads[event][1], op.Intent, link),
			Link: link,
		}
		text.Subject, text.Body = r.Own(text.Subject), r.Own(text.Body)
		return text
	}
	p := payloadOf(op.Payload)
	var lines [2][]string
	var what [2]string
	for i, lang := range []string{"ru", "en"} {
		title := views.LabelsFor(lang).IntentLabel(op.Intent)
		if def, ok := catalog.Lookup(op.Intent); ok && def.Title.In(lang) != "" {
			title = def.Title.In(lang)
		} else if def, ok := catalog.Process(op.Intent); ok && def.Title.In(lang) != "" {
			title = def.Title.In(lang)
		}
		what[i] = title
		if minor, ok := p.minor(); ok {
			what[i] += " — " + admin.Money(minor, p.str("currency"), lang)
		}
		lines[i] = append(lines[i], heads[event][i]+": "+what[i])
		if order := p.str("order_id"); order != "" {
			lines[i] = append(lines[i], []string{"Заказ: ", "Order: "}[i]+order)
		}
		lines[i] = append(lines[i], []string{"Карточка: ", "Card: "}[i]+link)
	}
	text := store.NoticeText{
		Subject: fmt.Sprintf("%s: %s / %s: %s", heads[event][0], what[0], heads[event][1], what[1]),
		Body:    strings.Join(lines[0], "\n") + "\n\n" + strings.Join(lines[1], "\n") + "\n",
		Link:    link,
	}
	text.Subject, text.Body = r.Own(text.Subject), r.Own(text.Body)
	return text
}

// payload is an operation's payload, read for its words.
type payload map[string]any

func payloadOf(raw []byte) payload {
	p := payload{}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if dec.Decode(&p) != nil {
		return payload{}
	}
	return p
}

func (p payload) str(k string) string {
	s, _ := p[k].(string)
	return s
}

func (p payload) minor() (int64, bool) {
	n, ok := p["amount_minor"].(json.Number)
	if !ok {
		return 0, false
	}
	v, err := n.Int64()
	return v, err == nil
}
