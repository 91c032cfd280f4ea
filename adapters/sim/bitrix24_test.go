package sim_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters/sim"
)

// b24Setup serves fresh simulators, their Bitrix24 portal without a rate
// limit, and returns them with a webhook base URL.
func b24Setup(t *testing.T) (*sim.Server, string) {
	t.Helper()
	s := sim.New()
	p := sim.DefaultBitrix24Portal()
	p.PerSecond = 0
	s.SetBitrix24Portal(p)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL + "/bitrix24" + sim.Bitrix24WebhookPath()
}

// b24Call posts params to a method and decodes the JSON answer.
func b24Call(t *testing.T, client *http.Client, url string, params any) (int, http.Header, map[string]any, error) {
	t.Helper()
	body, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	var answer map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		t.Fatalf("decode answer of %s: %v", url, err)
	}
	return resp.StatusCode, resp.Header, answer, nil
}

// b24Must calls and requires status.
func b24Must(t *testing.T, url string, params any, status int) map[string]any {
	t.Helper()
	got, _, answer, err := b24Call(t, http.DefaultClient, url, params)
	if err != nil {
		t.Fatalf("call %s: %v", url, err)
	}
	if got != status {
		t.Fatalf("status = %d, want %d; answer %v", got, status, answer)
	}
	return answer
}

func b24AssertTime(t *testing.T, answer map[string]any) {
	t.Helper()
	tm, ok := answer["time"].(map[string]any)
	if !ok {
		t.Fatalf("no time block in %v", answer)
	}
	for _, k := range []string{"start", "finish", "duration", "processing", "date_start", "date_finish"} {
		if _, ok := tm[k]; !ok {
			t.Fatalf("time block lacks %s: %v", k, tm)
		}
	}
}

func b24AssertError(t *testing.T, answer map[string]any, code, description string) {
	t.Helper()
	if got, ok := answer["error"].(string); !ok || got != code {
		t.Fatalf("error = %#v, want %q (answer %v)", answer["error"], code, answer)
	}
	if got := answer["error_description"]; got != description {
		t.Fatalf("error_description = %q, want %q", got, description)
	}
	if _, ok := answer["result"]; ok {
		t.Fatalf("error answer carries a result: %v", answer)
	}
}

func b24Fields(origin string) map[string]any {
	return map[string]any{
		"OWNER_TYPE_ID": 3, "OWNER_ID": 1, "TYPE_ID": 2, "DIRECTION": 2,
		"SUBJECT": "Call back", "RESPONSIBLE_ID": 1, "START_TIME": "2026-05-01T10:00:00+00:00",
		"END_TIME":       "2026-05-01T10:00:00+00:00",
		"COMMUNICATIONS": []any{map[string]any{"ENTITY_ID": 1, "ENTITY_TYPE_ID": 3, "VALUE": "+79000000001"}},
		"ORIGINATOR_ID":  "oncegate", "ORIGIN_ID": origin,
	}
}

func TestBitrix24_ContactList(t *testing.T) {
	t.Parallel()
	_, base := b24Setup(t)

	t.Run("All", func(t *testing.T) {
		answer := b24Must(t, base+"crm.contact.list.json", map[string]any{}, http.StatusOK)
		rows, ok := answer["result"].([]any)
		if !ok || len(rows) != len(sim.Customers) {
			t.Fatalf("result = %v", answer["result"])
		}
		if got, want := answer["total"], float64(len(sim.Customers)); got != want {
			t.Fatalf("total = %v, want %v", got, want)
		}
		if _, ok := answer["next"]; ok {
			t.Fatal("next present though everything fits a page")
		}
		b24AssertTime(t, answer)
		// Default select is "*" + "UF_*": user fields yes, multiple fields no.
		first := rows[0].(map[string]any)
		if first["ID"] != "1" || first["ORIGIN_ID"] != "customer-1042" || first["UF_CRM_ONCEGATE_BLOCKED"] != "0" {
			t.Fatalf("first contact = %v", first)
		}
		if _, ok := first["PHONE"]; ok {
			t.Fatal("PHONE selected by default")
		}
	})
	t.Run("ByOrigin", func(t *testing.T) {
		answer := b24Must(t, base+"crm.contact.list", map[string]any{
			"FILTER": map[string]any{"ORIGINATOR_ID": "oncegate", "ORIGIN_ID": "customer-blocked-1"},
			"select": []string{"ID", "ORIGIN_ID", "UF_CRM_ONCEGATE_BLOCKED", "PHONE"},
		}, http.StatusOK)
		rows := answer["result"].([]any)
		if len(rows) != 1 || answer["total"] != float64(1) {
			t.Fatalf("answer = %v", answer)
		}
		row := rows[0].(map[string]any)
		if row["ID"] != "3" || row["UF_CRM_ONCEGATE_BLOCKED"] != "1" || len(row) != 4 {
			t.Fatalf("row = %v", row)
		}
		phones, ok := row["PHONE"].([]any)
		if !ok || len(phones) != 1 || phones[0].(map[string]any)["VALUE"] == "" {
			t.Fatalf("PHONE = %v", row["PHONE"])
		}
	})
	t.Run("CollationAndUnknownKeys", func(t *testing.T) {
		// MySQL compares case-insensitively; unknown filter keys are
		// ignored. Both are why the adapter checks matches exactly.
		answer := b24Must(t, base+"crm.contact.list", map[string]any{
			"filter": map[string]any{"ORIGIN_ID": "CUSTOMER-1042", "NO_SUCH_FIELD": "x"},
		}, http.StatusOK)
		if answer["total"] != float64(1) {
			t.Fatalf("answer = %v", answer)
		}
		answer = b24Must(t, base+"crm.contact.list", map[string]any{
			"filter": map[string]any{"ORIGIN_ID_TYPO": "customer-1042"},
		}, http.StatusOK)
		if answer["total"] != float64(len(sim.Customers)) {
			t.Fatalf("answer = %v", answer)
		}
	})
	t.Run("ErrFilterNotObject", func(t *testing.T) {
		answer := b24Must(t, base+"crm.contact.list", map[string]any{"filter": "ID=1"}, http.StatusBadRequest)
		b24AssertError(t, answer, "", "Parameter 'filter' must be array.")
	})
}

func TestBitrix24_ActivityAdd(t *testing.T) {
	t.Parallel()
	t.Run("OKNoDedupe", func(t *testing.T) {
		t.Parallel()
		s, base := b24Setup(t)
		var ids []any
		for range 2 {
			answer := b24Must(t, base+"crm.activity.add.json", map[string]any{"fields": b24Fields("k1")}, http.StatusOK)
			b24AssertTime(t, answer)
			ids = append(ids, answer["result"])
		}
		if ids[0] != float64(1) || ids[1] != float64(2) {
			t.Fatalf("ids = %v, want 1 and 2", ids)
		}
		if got := s.Effects(sim.Bitrix24, "k1"); got != 2 {
			t.Fatalf("effects = %d, want 2", got)
		}
		if got := s.Calls(sim.Bitrix24, "k1"); got != 2 {
			t.Fatalf("calls = %d, want 2", got)
		}
		answer := b24Must(t, base+"crm.activity.get", map[string]any{"id": 1}, http.StatusOK)
		a := answer["result"].(map[string]any)
		if a["ID"] != "1" || a["ORIGINATOR_ID"] != "oncegate" || a["ORIGIN_ID"] != "k1" || a["OWNER_ID"] != "1" ||
			a["OWNER_TYPE_ID"] != "3" || a["TYPE_ID"] != "2" || a["COMPLETED"] != "N" {
			t.Fatalf("activity = %v", a)
		}
		// The portal answers in its own offset; DEADLINE of a call is START_TIME.
		if a["START_TIME"] != "2026-05-01T13:00:00+03:00" || a["DEADLINE"] != a["START_TIME"] {
			t.Fatalf("times = %v / %v", a["START_TIME"], a["DEADLINE"])
		}
		if _, ok := a["COMMUNICATIONS"]; ok {
			t.Fatal("COMMUNICATIONS returned without being selected")
		}
	})
	t.Run("ErrFields", func(t *testing.T) {
		t.Parallel()
		s, base := b24Setup(t)
		for name, tc := range map[string]struct {
			drop, set string
			value     any
			want      string
		}{
			"subject":        {drop: "SUBJECT", want: "The field SUBJECT is not defined or empty."},
			"type":           {drop: "TYPE_ID", want: "The field TYPE_ID is not defined or invalid."},
			"responsible":    {drop: "RESPONSIBLE_ID", want: "The field RESPONSIBLE_ID is not defined or invalid."},
			"communications": {drop: "COMMUNICATIONS", want: "The field COMMUNICATIONS is not defined or invalid."},
			"owner":          {set: "OWNER_ID", value: 999, want: "Could not build binding. Please ensure that owner info and communications are defined correctly."},
		} {
			fields := b24Fields("bad-" + name)
			delete(fields, tc.drop)
			if tc.set != "" {
				fields[tc.set] = tc.value
			}
			answer := b24Must(t, base+"crm.activity.add", map[string]any{"fields": fields}, http.StatusBadRequest)
			b24AssertError(t, answer, "", tc.want)
			if got := s.Effects(sim.Bitrix24, "bad-"+name); got != 0 {
				t.Fatalf("%s: effects = %d", name, got)
			}
		}
	})
}

func TestBitrix24_ActivityList(t *testing.T) {
	t.Parallel()
	_, base := b24Setup(t)
	for range 51 {
		b24Must(t, base+"crm.activity.add", map[string]any{"fields": b24Fields("many")}, http.StatusOK)
	}
	b24Must(t, base+"crm.activity.add", map[string]any{"fields": b24Fields("one")}, http.StatusOK)

	filter := map[string]any{"ORIGINATOR_ID": "oncegate", "ORIGIN_ID": "many"}
	answer := b24Must(t, base+"crm.activity.list", map[string]any{
		"filter": filter, "select": []string{"ID", "ORIGIN_ID"}, "order": map[string]string{"ID": "DESC"},
	}, http.StatusOK)
	rows := answer["result"].([]any)
	if len(rows) != 50 || answer["total"] != float64(51) || answer["next"] != float64(50) {
		t.Fatalf("page 1: %d rows, total %v, next %v", len(rows), answer["total"], answer["next"])
	}
	if first := rows[0].(map[string]any); first["ID"] != "51" || len(first) != 2 {
		t.Fatalf("first row = %v", first)
	}
	answer = b24Must(t, base+"crm.activity.list", map[string]any{
		"filter": filter, "order": map[string]string{"ID": "DESC"}, "start": 50,
	}, http.StatusOK)
	rows = answer["result"].([]any)
	if len(rows) != 1 || rows[0].(map[string]any)["ID"] != "1" {
		t.Fatalf("page 2 = %v", rows)
	}
	if _, ok := answer["next"]; ok {
		t.Fatal("next on the last page")
	}

	answer = b24Must(t, base+"crm.activity.list", map[string]any{
		"filter": map[string]any{"ORIGIN_ID": "nobody"},
	}, http.StatusOK)
	if rows, ok := answer["result"].([]any); !ok || len(rows) != 0 || answer["total"] != float64(0) {
		t.Fatalf("empty answer = %v", answer)
	}

	answer = b24Must(t, base+"crm.activity.get", map[string]any{"id": 999}, http.StatusBadRequest)
	b24AssertError(t, answer, "", "Activity is not found.")
}

func TestBitrix24_RESTErrors(t *testing.T) {
	t.Parallel()
	s := sim.New()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)

	hook := srv.URL + "/bitrix24/rest/1/" + sim.DefaultBitrix24Secret + "/"
	answer := b24Must(t, hook+"crm.deal.delete.json", map[string]any{"id": 1}, http.StatusNotFound)
	b24AssertError(t, answer, "ERROR_METHOD_NOT_FOUND", "Method not found!")

	for _, wrong := range []string{"/bitrix24/rest/0/" + sim.DefaultBitrix24Secret + "/", "/bitrix24/rest/1/anysecret/", "/bitrix24/rest/2/" + sim.DefaultBitrix24Secret + "/"} {
		answer = b24Must(t, srv.URL+wrong+"crm.contact.list.json", map[string]any{}, http.StatusUnauthorized)
		b24AssertError(t, answer, "NO_AUTH_FOUND", "Wrong authorization data")
	}

	resp, err := http.Post(hook+"crm.contact.list", "application/json", strings.NewReader("{not json"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad JSON: status %d", resp.StatusCode)
	}
}

func TestBitrix24_Faults(t *testing.T) {
	t.Parallel()
	t.Run("ResetBeforeRead", func(t *testing.T) {
		t.Parallel()
		s, base := b24Setup(t)
		s.Inject(sim.Fault{Target: sim.Bitrix24, Fault: sim.FaultReset})
		if _, _, _, err := b24Call(t, http.DefaultClient, base+"crm.activity.add", map[string]any{"fields": b24Fields("r")}); err == nil {
			t.Fatal("no error after a reset")
		}
		if s.Effects(sim.Bitrix24, "r") != 0 || s.Calls(sim.Bitrix24, "r") != 0 {
			t.Fatal("a reset call reached the simulator")
		}
	})
	t.Run("StatusOnLookupSparesAdd", func(t *testing.T) {
		t.Parallel()
		s, base := b24Setup(t)
		s.Inject(sim.Fault{Target: sim.Bitrix24, Fault: sim.FaultStatus, Status: 503, On: sim.OnLookup})
		b24Must(t, base+"crm.activity.add", map[string]any{"fields": b24Fields("l")}, http.StatusOK)
		status, header, _, err := b24Call(t, http.DefaultClient, base+"crm.activity.list", map[string]any{})
		if err != nil || status != http.StatusServiceUnavailable || header.Get("Retry-After") == "" {
			t.Fatalf("list under fault: status %d, Retry-After %q, err %v", status, header.Get("Retry-After"), err)
		}
		b24Must(t, base+"crm.activity.list", map[string]any{}, http.StatusOK)
	})
	t.Run("DropResponseAfterCommit", func(t *testing.T) {
		t.Parallel()
		s, base := b24Setup(t)
		s.Inject(sim.Fault{Target: sim.Bitrix24, Fault: sim.FaultDropResponse})
		if _, _, _, err := b24Call(t, http.DefaultClient, base+"crm.activity.add", map[string]any{"fields": b24Fields("d")}); err == nil {
			t.Fatal("an answer came despite the drop")
		}
		if got := s.Effects(sim.Bitrix24, "d"); got != 1 {
			t.Fatalf("effects = %d, want 1", got)
		}
	})
	t.Run("DelayCommitsAfterCallerLeft", func(t *testing.T) {
		t.Parallel()
		s, base := b24Setup(t)
		s.Inject(sim.Fault{Target: sim.Bitrix24, Fault: sim.FaultDelay, DelayMS: 300})
		impatient := &http.Client{Timeout: 100 * time.Millisecond}
		_, _, _, err := b24Call(t, impatient, base+"crm.activity.add", map[string]any{"fields": b24Fields("late")})
		var ne interface{ Timeout() bool }
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("err = %v, want a timeout", err)
		}
		deadline := time.Now().Add(3 * time.Second)
		for s.Effects(sim.Bitrix24, "late") == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the delayed add never committed")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

func TestBitrix24_Reset(t *testing.T) {
	t.Parallel()
	s, base := b24Setup(t)
	b24Must(t, base+"crm.activity.add", map[string]any{"fields": b24Fields("x")}, http.StatusOK)
	s.Reset()
	answer := b24Must(t, base+"crm.activity.list", map[string]any{}, http.StatusOK)
	if answer["total"] != float64(0) {
		t.Fatalf("activities survived the reset: %v", answer)
	}
	answer = b24Must(t, base+"crm.activity.add", map[string]any{"fields": b24Fields("x")}, http.StatusOK)
	if answer["result"] != float64(1) {
		t.Fatalf("id after reset = %v, want 1", answer["result"])
	}
	if got := s.Effects(sim.Bitrix24, "x"); got != 1 {
		t.Fatalf("effects = %d, want 1", got)
	}
}
