package sim

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// TelegramToken is the bot token the built-in Telegram simulator takes.
const TelegramToken = "123456789:SIMULATED-oncegate-bot-token"

// TelegramSim is the Telegram Bot API as a bot sees it, for notices:
// getMe and sendMessage under /bot<token>/, answering as the real API
// does ({"ok": true, "result": …}, or ok false with error_code and
// description), keeping every message sent. Down makes it answer 502 to
// the next calls, as the API does when it is overloaded.
type TelegramSim struct {
	token string

	mu    sync.Mutex
	sent  []TelegramMessage
	down  int
	calls int
}

// TelegramMessage is one message a bot sent.
type TelegramMessage struct {
	MessageID int64     `json:"message_id"`
	ChatID    string    `json:"chat_id"`
	Text      string    `json:"text"`
	At        time.Time `json:"at"`
}

// NewTelegram is a Bot API simulator taking token only.
func NewTelegram(token string) *TelegramSim { return &TelegramSim{token: token} }

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

// Reset forgets the messages and the fault.
func (t *TelegramSim) Reset() {
	t.mu.Lock()
	t.sent, t.down, t.calls = nil, 0, 0
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

// botError is the Bot API's refusal.
func botError(w http.ResponseWriter, status int, description string) {
	WriteJSON(w, status, map[string]any{"ok": false, "error_code": status, "description": description})
}
