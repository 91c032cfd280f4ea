package sim_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

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

// botForm posts form to the Bot API method at url and decodes its answer.
func botForm(t *testing.T, url string, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(url, form)
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// updateIDs are the update_ids of a getUpdates answer, and its texts.
func updateIDs(t *testing.T, out map[string]any) ([]int64, []string) {
	t.Helper()
	list, ok := out["result"].([]any)
	if out["ok"] != true || !ok {
		t.Fatalf("getUpdates answered %v", out)
	}
	var ids []int64
	var texts []string
	for _, u := range list {
		u := u.(map[string]any)
		ids = append(ids, int64(u["update_id"].(float64)))
		texts = append(texts, u["message"].(map[string]any)["text"].(string))
	}
	return ids, texts
}

// People's messages to the bot come from getUpdates as the Bot API gives
// them: in order, with the chat and its sender, until a later offset
// confirms them; the parameters by JSON, form or query; a reset forgets
// them.
func TestTelegramSimUpdates(t *testing.T) {
	t.Parallel()
	s := sim.New()
	hs := httptest.NewServer(s)
	defer hs.Close()
	base := hs.URL + "/telegram/bot" + sim.TelegramToken
	for _, body := range []string{`{"chat_id": 0, "text": "x"}`, `{"chat_id": 1001}`, `{`} {
		if resp, err := http.Post(hs.URL+"/_sim/telegram/updates", "application/json", strings.NewReader(body)); err != nil || resp.StatusCode != 400 {
			t.Fatalf("updates %s: %v %v", body, resp.StatusCode, err)
		}
	}
	for _, text := range []string{"/start ABCD2345", "привет", "KMNP6789"} {
		resp, err := http.Post(hs.URL+"/_sim/telegram/updates", "application/json", strings.NewReader(`{"chat_id": 1001, "text": "`+text+`"}`))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("updates: %v", err)
		}
		resp.Body.Close()
	}

	code, out := botCall(t, base+"/getUpdates", `{"limit": 2}`)
	ids, texts := updateIDs(t, out)
	if code != 200 || len(ids) != 2 || ids[1] != ids[0]+1 || texts[0] != "/start ABCD2345" || texts[1] != "привет" {
		t.Fatalf("getUpdates: %d %v %v", code, ids, texts)
	}
	m := out["result"].([]any)[0].(map[string]any)["message"].(map[string]any)
	chat, from := m["chat"].(map[string]any), m["from"].(map[string]any)
	if chat["id"] != 1001.0 || chat["type"] != "private" || from["id"] != 1001.0 || from["is_bot"] != false || from["first_name"] == "" ||
		m["message_id"] == nil || m["date"].(float64) < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Fatalf("the message %v", m)
	}
	// Not confirmed: given again; the offset of the second confirms the
	// first.
	if _, out := botForm(t, base+"/getUpdates", url.Values{"offset": {fmt.Sprint(ids[1])}}); fmt.Sprint(updateIDs(t, out)) != fmt.Sprint([]int64{ids[1], ids[1] + 1}, []string{"привет", "KMNP6789"}) {
		t.Fatalf("from the offset %d: %v", ids[1], out)
	}
	if code, out := botCall(t, base+"/getUpdates?offset="+fmt.Sprint(ids[1]+2), ""); code != 200 || len(out["result"].([]any)) != 0 {
		t.Fatalf("all confirmed: %d %v", code, out)
	}
	if _, out := botCall(t, base+"/getUpdates", "{}"); len(out["result"].([]any)) != 0 {
		t.Fatalf("confirmed updates given again: %v", out)
	}

	// A reset forgets what was said; update_ids go on growing.
	for _, text := range []string{"one", "two"} {
		http.Post(hs.URL+"/_sim/telegram/updates", "application/json", strings.NewReader(`{"chat_id": 1002, "text": "`+text+`"}`))
	}
	if resp, err := http.Post(hs.URL+"/_sim/reset", "", nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("reset: %v", err)
	}
	if _, out := botCall(t, base+"/getUpdates", "{}"); len(out["result"].([]any)) != 0 {
		t.Fatalf("after a reset: %v", out)
	}
	http.Post(hs.URL+"/_sim/telegram/updates", "application/json", strings.NewReader(`{"chat_id": 1002, "text": "three"}`))
	if _, out := botCall(t, base+"/getUpdates", fmt.Sprintf(`{"offset": %d}`, ids[1]+2)); fmt.Sprint(updateIDs(t, out)) != fmt.Sprint([]int64{ids[1] + 4}, []string{"three"}) {
		t.Fatalf("after a reset, from the old offset: %v", out)
	}
}

// getUpdates with a timeout holds the call until a person writes, and
// answers at once when they do; a second long poll ends the first with
// 409 Conflict, as the Bot API does; the hold is bounded.
func TestTelegramSimLongPoll(t *testing.T) {
	t.Parallel()
	tg := sim.NewTelegram(sim.TelegramToken)
	hs := httptest.NewServer(tg)
	defer hs.Close()
	base := hs.URL + "/bot" + sim.TelegramToken
	waitPolling := func() {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !tg.Polling(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no long poll held")
			}
		}
	}

	type answer struct {
		code int
		out  map[string]any
		took time.Duration
	}
	poll := func(form url.Values) chan answer {
		c := make(chan answer, 1)
		go func() {
			start := time.Now()
			code, out := botForm(t, base+"/getUpdates", form)
			c <- answer{code, out, time.Since(start)}
		}()
		return c
	}
	first := poll(url.Values{"timeout": {"30"}})
	waitPolling()
	time.Sleep(50 * time.Millisecond)
	tg.Say(1001, "/start ABCD2345")
	a := <-first
	if _, texts := updateIDs(t, a.out); a.code != 200 || fmt.Sprint(texts) != "[/start ABCD2345]" || a.took > 5*time.Second {
		t.Fatalf("the long poll: %d %v after %v", a.code, a.out, a.took)
	}
	ids, _ := updateIDs(t, a.out)

	older := poll(url.Values{"timeout": {"30"}, "offset": {fmt.Sprint(ids[0] + 1)}})
	waitPolling()
	newer := poll(url.Values{"timeout": {"30"}, "offset": {fmt.Sprint(ids[0] + 1)}})
	a = <-older
	if a.code != 409 || a.took > 5*time.Second || a.out["error_code"] != 409.0 || a.out["ok"] != false ||
		a.out["description"] != "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running" {
		t.Fatalf("the older long poll: %d %v after %v", a.code, a.out, a.took)
	}
	waitPolling()
	tg.Say(1002, "KMNP6789")
	if a = <-newer; a.code != 200 || fmt.Sprint(updateIDs(t, a.out)) != fmt.Sprint([]int64{ids[0] + 1}, []string{"KMNP6789"}) {
		t.Fatalf("the newer long poll: %d %v", a.code, a.out)
	}

	tg.HoldAtMost(200 * time.Millisecond)
	if a = <-poll(url.Values{"timeout": {"50"}, "offset": {fmt.Sprint(ids[0] + 2)}}); a.code != 200 || len(a.out["result"].([]any)) != 0 || a.took > 5*time.Second {
		t.Fatalf("a long poll past its bound: %d %v after %v", a.code, a.out, a.took)
	}
}
