package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// TelegramToken is the bot token the built-in Telegram simulator takes.
const TelegramToken = "123456789:SIMULATED-oncegate-bot-token"

// TelegramSim is the Telegram Bot API as a bot sees it, for notices:
// getMe, sendMessage and getUpdates under /bot<token>/, answering as the
// real API does ({"ok": true, "result": …}, or ok false with error_code
// and description), keeping every message sent. Say is a person writing
// to the bot, read with getUpdates. Down makes it answer 502 to the next
// calls, as the API does when it is overloaded.
type TelegramSim struct {
	token string

	mu sync.Mutex
	// maxHold bounds how long getUpdates holds a long poll (the real API
	// holds it up to 50 s): a poll no one ends does not hold a test long.
	maxHold time.Duration
	sent    []TelegramMessage
	down    int
	calls   int
	// updates are the people's messages not yet confirmed, oldest first;
	// lastUpdate is the latest update_id given, kept across Reset so a
	// bot's offset from before it still reads the new ones.
	updates    []telegramUpdate
	lastUpdate int64
	said       int64 // the people's messages so far: their message_ids
	// queued is closed when an update is queued (then replaced); held is
	// the long poll waiting, closed when a newer one ends it.
	queued chan struct{}
	held   chan struct{}
}

// telegramUpdate is one update as getUpdates gives it: a person's
// message in their private chat with the bot.
type telegramUpdate struct {
	UpdateID int64            `json:"update_id"`
	Message  telegramIncoming `json:"message"`
}

type telegramIncoming struct {
	MessageID int64          `json:"message_id"`
	From      map[string]any `json:"from"`
	Chat      map[string]any `json:"chat"`
	Date      int64          `json:"date"`
	Text      string         `json:"text"`
}

// TelegramMessage is one message a bot sent.
type TelegramMessage struct {
	MessageID int64     `json:"message_id"`
	ChatID    string    `json:"chat_id"`
	Text      string    `json:"text"`
	At        time.Time `json:"at"`
}

// NewTelegram is a Bot API simulator taking token only.
func NewTelegram(token string) *TelegramSim {
	return &TelegramSim{token: token, maxHold: 10 * time.Second, queued: make(chan struct{})}
}

func init() {
	registrations = append(registrations, func(s *Server) {
		t := NewTelegram(TelegramToken)
		s.Handle("/telegram/", http.StripPrefix("/telegram", t).ServeHTTP)
		s.Handle("GET /_sim/telegram/messages", func(w http.ResponseWriter, r *http.Request) {
			WriteJSON(w, http.StatusOK, map[string]any{"messages": t.Messages()})
		})
		s.Handle("POST /_sim/telegram/down", func(w http.ResponseWriter, r *http.Request) {
			n, err := strconv.Atoi(r.URL.Query().Get("times"))
			if err != nil || n < 0 {
				WriteJSON(w, http.StatusBadRequest, map[string]any{"error": "times must be a count"})
				return
			}
			t.Down(n)
			WriteJSON(w, http.StatusOK, map[string]any{"ok": true})
		})
		s.Handle("POST /_sim/telegram/updates", func(w http.ResponseWriter, r *http.Request) {
			var req struct {
				ChatID int64  `json:"chat_id"`
				Text   string `json:"text"`
			}
			if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil || req.ChatID <= 0 || req.Text == "" {
				WriteJSON(w, http.StatusBadRequest, map[string]any{"error": "give chat_id (a person's, above 0) and text"})
				return
			}
			t.Say(req.ChatID, req.Text)
			WriteJSON(w, http.StatusOK, map[string]any{"ok": true})
		})
		s.OnReset(t.Reset)
	})
}

// Down makes the next n calls answer 502 Bad Gateway.
func (t *TelegramSim) Down(n int) {
	t.mu.Lock()
	t.down = n
	t.mu.Unlock()
}

// Messages are the messages sent so far, oldest first.
func (t *TelegramSim) Messages() []TelegramMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]TelegramMessage(nil), t.sent...)
}

// Calls is how many calls of the Bot API came, refused ones included.
func (t *TelegramSim) Calls() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls
}

// HoldAtMost bounds the long polls from now on to d (10 s at first).
func (t *TelegramSim) HoldAtMost(d time.Duration) {
	t.mu.Lock()
	t.maxHold = d
	t.mu.Unlock()
}

// Polling reports whether a long poll is held, waiting for an update.
func (t *TelegramSim) Polling() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.held != nil
}

// Say is the person of chat writing text to the bot in their private
// chat: an update for the next getUpdates, waking one that waits.
func (t *TelegramSim) Say(chat int64, text string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastUpdate++
	t.said++
	t.updates = append(t.updates, telegramUpdate{UpdateID: t.lastUpdate, Message: telegramIncoming{
		MessageID: t.said,
		From:      map[string]any{"id": chat, "is_bot": false, "first_name": "Person " + strconv.FormatInt(chat, 10), "language_code": "ru"},
		Chat:      map[string]any{"id": chat, "type": "private", "first_name": "Person " + strconv.FormatInt(chat, 10)},
		Date:      time.Now().Unix(),
		Text:      text,
	}})
	t.wake()
}

// wake answers the long poll waiting, if any. t.mu is held.
func (t *TelegramSim) wake() {
	close(t.queued)
	t.queued = make(chan struct{})
}

// Reset forgets the messages, the people's updates and the fault; a
// long poll waiting is answered.
func (t *TelegramSim) Reset() {
	t.mu.Lock()
	t.sent, t.down, t.calls, t.updates = nil, 0, 0, nil
	t.wake()
	t.mu.Unlock()
}

// ServeHTTP answers /bot<token>/<method>.
func (t *TelegramSim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/")
	bot, method, ok := strings.Cut(path, "/")
	t.mu.Lock()
	t.calls++
	down := t.down > 0
	if down {
		t.down--
	}
	t.mu.Unlock()
	switch {
	case down:
		http.Error(w, "502 Bad Gateway", http.StatusBadGateway)
		return
	case !ok || !strings.HasPrefix(bot, "bot") || bot[len("bot"):] != t.token:
		botError(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	switch method {
	case "getMe":
		id, _, _ := strings.Cut(t.token, ":")
		n, _ := strconv.ParseInt(id, 10, 64)
		WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "result": map[string]any{
			"id": n, "is_bot": true, "first_name": "oncegate", "username": "oncegate_sim_bot"}})
	case "sendMessage":
		t.sendMessage(w, r)
	case "getUpdates":
		t.getUpdates(w, r)
	default:
		botError(w, http.StatusNotFound, "Not Found")
	}
}

// sendMessage takes chat_id and text, as JSON or a form.
func (t *TelegramSim) sendMessage(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ChatID json.RawMessage `json:"chat_id"`
		Text   string          `json:"text"`
	}
	chat := ""
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
			botError(w, http.StatusBadRequest, "Bad Request: can't parse JSON")
			return
		}
		chat = strings.Trim(string(req.ChatID), `"`)
	} else {
		chat, req.Text = r.FormValue("chat_id"), r.FormValue("text")
	}
	switch {
	case chat == "" || strings.Trim(chat, "-0123456789") != "":
		botError(w, http.StatusBadRequest, "Bad Request: chat not found")
		return
	case strings.TrimSpace(req.Text) == "":
		botError(w, http.StatusBadRequest, "Bad Request: message text is empty")
		return
	case len([]rune(req.Text)) > 4096:
		botError(w, http.StatusBadRequest, "Bad Request: message is too long")
		return
	}
	t.mu.Lock()
	m := TelegramMessage{MessageID: int64(len(t.sent) + 1), ChatID: chat, Text: req.Text, At: time.Now()}
	t.sent = append(t.sent, m)
	t.mu.Unlock()
	id, _ := strconv.ParseInt(chat, 10, 64)
	WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "result": map[string]any{
		"message_id": m.MessageID, "date": m.At.Unix(), "chat": map[string]any{"id": id, "type": "private"}, "text": m.Text}})
}

// getUpdates gives the people's updates from offset, at most limit (1 to
// 100, default 100), holding the call up to timeout seconds (0 to 50, as
// the real API clamps them) until one comes. The parameters come in the
// query, a form or JSON. Updates below offset are confirmed and
// forgotten; a negative offset keeps only the last -offset. As the real
// API does (tdlib/telegram-bot-api, Client::do_get_updates), a call that
// is about to wait ends the one already waiting, which answers 409.
func (t *TelegramSim) getUpdates(w http.ResponseWriter, r *http.Request) {
	args := map[string]string{}
	for k := range r.URL.Query() {
		args[k] = r.URL.Query().Get(k)
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		raw, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		var body map[string]json.RawMessage
		if err := json.Unmarshal(raw, &body); err != nil && len(bytes.TrimSpace(raw)) > 0 {
			botError(w, http.StatusBadRequest, "Bad Request: can't parse JSON")
			return
		}
		for k, v := range body {
			args[k] = strings.Trim(string(v), `"`)
		}
	} else {
		for _, k := range []string{"offset", "limit", "timeout"} {
			if v := r.FormValue(k); v != "" {
				args[k] = v
			}
		}
	}
	// An argument that is not a number is 0, then clamped, as the real
	// API reads them.
	arg := func(k string, def, lo, hi int64) int64 {
		v, ok := args[k]
		if !ok || v == "" {
			return def
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		return min(max(n, lo), hi)
	}
	offset, limit, timeout := arg("offset", 0, -1<<31, 1<<31-1), arg("limit", 100, 1, 100), arg("timeout", 0, 0, 50)

	t.mu.Lock()
	switch {
	case offset > 0:
		i := 0
		for i < len(t.updates) && t.updates[i].UpdateID < offset {
			i++
		}
		t.updates = t.updates[i:]
	case offset < 0 && int64(len(t.updates)) > -offset:
		t.updates = t.updates[int64(len(t.updates))+offset:]
	}
	if len(t.updates) > 0 || timeout == 0 {
		out := t.take(limit)
		t.mu.Unlock()
		WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "result": out})
		return
	}
	if t.held != nil {
		close(t.held)
	}
	mine, queued := make(chan struct{}), t.queued
	t.held = mine
	hold := time.NewTimer(min(time.Duration(timeout)*time.Second, t.maxHold))
	t.mu.Unlock()

	defer hold.Stop()
	select {
	case <-queued:
	case <-mine:
	case <-hold.C:
	case <-r.Context().Done():
	}
	t.mu.Lock()
	if t.held != mine {
		t.mu.Unlock()
		botError(w, http.StatusConflict, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running")
		return
	}
	t.held = nil
	out := t.take(limit)
	t.mu.Unlock()
	WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "result": out})
}

// take is the first limit updates, kept until a later offset confirms
// them. t.mu is held.
func (t *TelegramSim) take(limit int64) []telegramUpdate {
	return append([]telegramUpdate{}, t.updates[:min(int64(len(t.updates)), limit)]...)
}

// botError is the Bot API's refusal.
func botError(w http.ResponseWriter, status int, description string) {
	WriteJSON(w, status, map[string]any{"ok": false, "error_code": status, "description": description})
}
