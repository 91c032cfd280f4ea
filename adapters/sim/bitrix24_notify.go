package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The portal's own notifications, for oncegate's notices: user.get finds
// the portal's users by e-mail, im.notify.system.add notifies one. The
// portal's users are none until a test adds them (POST
// /_sim/bitrix24/users {"email": …}); the notifications sent are at GET
// /_sim/bitrix24/notifications.

// Bitrix24Notification is one notification the portal took.
type Bitrix24Notification struct {
	UserID  string    `json:"user_id"`
	Message string    `json:"message"`
	Tag     string    `json:"tag,omitempty"`
	At      time.Time `json:"at"`
}

// b24People are the portal's users and the notifications they got.
type b24People struct {
	mu    sync.Mutex
	users []b24Record
	sent  []Bitrix24Notification
}

func init() {
	registrations = append(registrations, func(s *Server) {
		p := &b24People{}
		// More specific than the simulator's {method}: these two methods
		// are served here, under the same webhook and the same checks.
		s.Handle("POST /bitrix24/rest/{user}/{secret}/user.get.json", p.call(s, OnLookup, p.userGet))
		s.Handle("POST /bitrix24/rest/{user}/{secret}/im.notify.system.add.json", p.call(s, OnExecute, p.notify))
		s.Handle("POST /_sim/bitrix24/users", func(w http.ResponseWriter, r *http.Request) {
			var req struct{ Email string }
			if json.NewDecoder(r.Body).Decode(&req) != nil || !strings.Contains(req.Email, "@") {
				WriteJSON(w, http.StatusBadRequest, map[string]any{"error": "give an email"})
				return
			}
			WriteJSON(w, http.StatusOK, map[string]any{"id": p.add(req.Email)})
		})
		s.Handle("GET /_sim/bitrix24/notifications", func(w http.ResponseWriter, r *http.Request) {
			p.mu.Lock()
			defer p.mu.Unlock()
			WriteJSON(w, http.StatusOK, map[string]any{"notifications": append([]Bitrix24Notification{}, p.sent...)})
		})
		s.OnReset(func() {
			p.mu.Lock()
			p.users, p.sent = nil, nil
			p.mu.Unlock()
		})
	})
}

// add adds an active portal user with email and says their ID.
func (p *b24People) add(email string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	id := strconv.Itoa(100 + len(p.users))
	p.users = append(p.users, b24Record{"ID": id, "ACTIVE": true, "EMAIL": email, "NAME": email[:strings.Index(email, "@")]})
	return id
}

// call checks the webhook as the simulator's other methods do, takes a
// fault injected for calls of kind, then serves the method with its
// parameters.
func (p *b24People) call(s *Server, kind string, serve func(http.ResponseWriter, map[string]json.RawMessage)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.b24.authorized(r); !ok {
			b24Error(w, http.StatusUnauthorized, "NO_AUTH_FOUND", "Wrong authorization data")
			return
		}
		if f := s.TakeFault(Bitrix24, kind); f != nil && f.Before(w) {
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			b24Error(w, http.StatusBadRequest, "", "Could not read the request body.")
			return
		}
		params, ok := b24Params(w, body)
		if !ok {
			return
		}
		serve(w, params)
	}
}

// userGet answers user.get: the active users whose EMAIL is FILTER's.
func (p *b24People) userGet(w http.ResponseWriter, params map[string]json.RawMessage) {
	var filter struct{ Email string }
	// Filter keys are case-insensitive too.
	var raw map[string]json.RawMessage
	json.Unmarshal(params["filter"], &raw)
	for k, v := range raw {
		if strings.EqualFold(k, "EMAIL") {
			json.Unmarshal(v, &filter.Email)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	found := []b24Record{}
	for _, u := range p.users {
		if filter.Email == "" || strings.EqualFold(u["EMAIL"].(string), filter.Email) {
			found = append(found, u)
		}
	}
	WriteJSON(w, http.StatusOK, map[string]any{"result": found, "total": len(found)})
}

// notify answers im.notify.system.add: a user of the portal and a text.
func (p *b24People) notify(w http.ResponseWriter, params map[string]json.RawMessage) {
	var id, msg string
	json.Unmarshal(params["user_id"], &id)
	if id == "" {
		id = strings.Trim(string(params["user_id"]), `"`)
	}
	json.Unmarshal(params["message"], &msg)
	var tag string
	json.Unmarshal(params["tag"], &tag)
	p.mu.Lock()
	defer p.mu.Unlock()
	known := false
	for _, u := range p.users {
		known = known || u["ID"] == id
	}
	switch {
	case !known:
		b24Error(w, http.StatusBadRequest, "USER_ID_EMPTY", "User not found")
		return
	case strings.TrimSpace(msg) == "":
		b24Error(w, http.StatusBadRequest, "MESSAGE_EMPTY", "Message can't be empty")
		return
	}
	if tag != "" {
		// The portal's TAG: a notification under a tag it holds replaces it.
		p.sent = slices.DeleteFunc(p.sent, func(n Bitrix24Notification) bool { return n.Tag == tag })
	}
	p.sent = append(p.sent, Bitrix24Notification{UserID: id, Message: msg, Tag: tag, At: time.Now()})
	WriteJSON(w, http.StatusOK, map[string]any{"result": len(p.sent)})
}
