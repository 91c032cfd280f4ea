package sim_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/sim"
)

// botCall posts body to the Bot API method at base and decodes its answer.
func botCall(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// The Telegram simulator answers as the Bot API does: its token only, a
// chat and a text required, 502 while down; it keeps what was sent and
// shows it under the simulators' control API.
func TestTelegramSim(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(sim.New())
	defer hs.Close()
	base := hs.URL + "/telegram/bot" + sim.TelegramToken
	if code, out := botCall(t, base+"/getMe", "{}"); code != 200 || out["ok"] != true {
		t.Fatalf("getMe: %d %v", code, out)
	}
	if code, out := botCall(t, hs.URL+"/telegram/bot1:wrong/sendMessage", `{"chat_id": 1001, "text": "x"}`); code != 401 || out["ok"] != false {
		t.Fatalf("a wrong token: %d %v", code, out)
	}
	if code, out := botCall(t, base+"/sendMessage", `{"chat_id": "@anna", "text": "x"}`); code != 400 || out["description"] != "Bad Request: chat not found" {
		t.Fatalf("a bad chat: %d %v", code, out)
	}
	if resp, err := http.Post(hs.URL+"/_sim/telegram/down?times=2", "", nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("down: %v", err)
	}
	for range 2 {
		if code, _ := botCall(t, base+"/sendMessage", `{"chat_id": 1001, "text": "waits"}`); code != 502 {
			t.Fatalf("while down: %d", code)
		}
	}
	if code, out := botCall(t, base+"/sendMessage", `{"chat_id": 1001, "text": "Ждёт решения"}`); code != 200 || out["ok"] != true {
		t.Fatalf("sendMessage: %d %v", code, out)
	}
	resp, err := http.Get(hs.URL + "/_sim/telegram/messages")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct{ Messages []sim.TelegramMessage }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list.Messages) != 1 ||
		list.Messages[0].ChatID != "1001" || list.Messages[0].Text != "Ждёт решения" {
		t.Fatalf("messages %+v, %v", list, err)
	}
}
