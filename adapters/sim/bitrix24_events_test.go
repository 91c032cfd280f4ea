package sim_test

import (
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters/sim"
)

// wantEvent checks one outbound webhook request: the form, field for
// field, its order as the portal encodes it, and ts about now.
func wantEvent(tb testing.TB, got received, event string, handlerID int, id, base string) {
	tb.Helper()
	if got.contentType != "application/x-www-form-urlencoded" {
		tb.Fatalf("Content-Type = %q", got.contentType)
	}
	form, err := url.ParseQuery(got.body)
	if err != nil {
		tb.Fatalf("body %q: %v", got.body, err)
	}
	ts, err := strconv.ParseInt(form.Get("ts"), 10, 64)
	if err != nil || time.Since(time.Unix(ts, 0)).Abs() > time.Minute {
		tb.Fatalf("ts = %q", form.Get("ts"))
	}
	origin := strings.TrimSuffix(base, "/bitrix24/rest/1/sim-webhook/")
	want := url.Values{
		"event": {event}, "event_handler_id": {strconv.Itoa(handlerID)}, "data[FIELDS][ID]": {id}, "ts": {form.Get("ts")},
		"auth[domain]":            {strings.TrimPrefix(origin, "http://")},
		"auth[client_endpoint]":   {origin + "/bitrix24/rest/"},
		"auth[server_endpoint]":   {"https://oauth.bitrix.info/rest/"},
		"auth[member_id]":         {sim.Bitrix24MemberID},
		"auth[application_token]": {sim.Bitrix24ApplicationToken()},
	}
	if !reflect.DeepEqual(form, want) {
		tb.Fatalf("form\n %v\nwant\n %v", form, want)
	}
	prefix := "event=" + event + "&event_handler_id=" + strconv.Itoa(handlerID) + "&data%5BFIELDS%5D%5BID%5D=" + id + "&ts="
	if !strings.HasPrefix(got.body, prefix) || !strings.HasSuffix(got.body, "&auth%5Bapplication_token%5D="+url.QueryEscape(sim.Bitrix24ApplicationToken())) {
		tb.Fatalf("body %q, want it to start %q and end with the token", got.body, prefix)
	}
}

func TestBitrix24Events(t *testing.T) {
	t.Parallel()

	t.Run("DealAddAndUpdate", func(t *testing.T) {
		t.Parallel()
		s, base := b24Setup(t)
		rc := newReceiver(t)
		hook, err := s.AddBitrix24OutboundWebhook(rc.url, "ONCRMDEALADD", "oncrmdealupdate")
		if err != nil {
			t.Fatal(err)
		}
		if hook.ApplicationToken != sim.Bitrix24ApplicationToken() || len(hook.HandlerIDs) != 2 {
			t.Fatalf("hook = %+v", hook)
		}
		b24Must(t, base+"crm.lead.add", map[string]any{"fields": map[string]any{"TITLE": "not bound"}}, http.StatusOK)
		id := b24Must(t, base+"crm.deal.add", map[string]any{"fields": map[string]any{"TITLE": "Order"}}, http.StatusOK)["result"]
		wantEvent(t, rc.wait(t, 1)[0], "ONCRMDEALADD", hook.HandlerIDs["ONCRMDEALADD"], "1", base)
		b24Must(t, base+"crm.deal.update", map[string]any{"id": id, "fields": map[string]any{"STAGE_ID": "PREPARATION"}}, http.StatusOK)
		wantEvent(t, rc.wait(t, 2)[1], "ONCRMDEALUPDATE", hook.HandlerIDs["ONCRMDEALUPDATE"], "1", base)
		if n := s.Bitrix24EventNotices(); len(n) != 2 || n[0].Event != "ONCRMDEALADD" || n[1].URL != rc.url {
			t.Fatalf("notices = %+v", n) // the lead went to no handler
		}
	})

	t.Run("LeadsContactsCompanies", func(t *testing.T) {
		t.Parallel()
		s, base := b24Setup(t)
		rc := newReceiver(t)
		hook, err := s.AddBitrix24OutboundWebhook(rc.url, "ONCRMLEADADD", "ONCRMLEADUPDATE", "ONCRMCONTACTADD", "ONCRMCOMPANYUPDATE")
		if err != nil {
			t.Fatal(err)
		}
		b24Must(t, base+"crm.lead.add", map[string]any{"fields": map[string]any{"TITLE": "Lead"}}, http.StatusOK)
		wantEvent(t, rc.wait(t, 1)[0], "ONCRMLEADADD", hook.HandlerIDs["ONCRMLEADADD"], "1", base)
		b24Must(t, base+"crm.lead.update", map[string]any{"id": 1, "fields": map[string]any{"STATUS_ID": "IN_PROCESS"}}, http.StatusOK)
		wantEvent(t, rc.wait(t, 2)[1], "ONCRMLEADUPDATE", hook.HandlerIDs["ONCRMLEADUPDATE"], "1", base)
		b24Must(t, base+"crm.contact.add", map[string]any{"fields": map[string]any{"NAME": "Anna"}}, http.StatusOK)
		wantEvent(t, rc.wait(t, 3)[2], "ONCRMCONTACTADD", hook.HandlerIDs["ONCRMCONTACTADD"], "4", base)
		b24Must(t, base+"crm.company.add", map[string]any{"fields": map[string]any{"TITLE": "Firm"}}, http.StatusOK)
		b24Must(t, base+"crm.company.update", map[string]any{"id": 1, "fields": map[string]any{"TITLE": "Firm LLC"}}, http.StatusOK)
		wantEvent(t, rc.wait(t, 4)[3], "ONCRMCOMPANYUPDATE", hook.HandlerIDs["ONCRMCOMPANYUPDATE"], "1", base)
	})

	t.Run("Removed", func(t *testing.T) {
		t.Parallel()
		s, base := b24Setup(t)
		rc := newReceiver(t)
		hook, err := s.AddBitrix24OutboundWebhook(rc.url, "ONCRMDEALADD")
		if err != nil {
			t.Fatal(err)
		}
		if !s.RemoveBitrix24OutboundWebhook(hook.ID) || s.RemoveBitrix24OutboundWebhook(hook.ID) || len(s.Bitrix24OutboundWebhooks()) != 0 {
			t.Fatalf("remove: hooks %+v", s.Bitrix24OutboundWebhooks())
		}
		b24Must(t, base+"crm.deal.add", map[string]any{"fields": map[string]any{"TITLE": "Order"}}, http.StatusOK)
		if n := s.Bitrix24EventNotices(); len(n) != 0 || rc.count() != 0 {
			t.Fatalf("events after removal: %+v", n)
		}
	})

	t.Run("CalledOnce", func(t *testing.T) {
		t.Parallel()
		s, base := b24Setup(t)
		rc := newReceiver(t, http.StatusInternalServerError)
		if _, err := s.AddBitrix24OutboundWebhook(rc.url, "ONCRMDEALADD"); err != nil {
			t.Fatal(err)
		}
		b24Must(t, base+"crm.deal.add", map[string]any{"fields": map[string]any{"TITLE": "Order"}}, http.StatusOK)
		rc.wait(t, 1)
		waitFor(t, func() bool { return len(s.Bitrix24EventNotices()[0].Attempts) == 1 })
		time.Sleep(100 * time.Millisecond) // a second call would have come by now
		if n := s.Bitrix24EventNotices(); rc.count() != 1 || n[0].Delivered || !reflect.DeepEqual(n[0].Attempts, []int{500}) {
			t.Fatalf("receiver got %d, notices %+v", rc.count(), n)
		}
	})

	t.Run("EventMethodsNeedAnApplication", func(t *testing.T) {
		t.Parallel()
		s, base := b24Setup(t)
		for _, m := range []string{"event.bind", "event.get.json", "event.unbind"} {
			answer := b24Must(t, base+m, map[string]any{"event": "ONCRMDEALADD", "handler": "https://example.com/h"}, http.StatusForbidden)
			b24AssertError(t, answer, "WRONG_AUTH_TYPE", "Current authorization type is denied for this method")
		}
		wrong := strings.Replace(base, "sim-webhook", "not-the-secret", 1)
		b24AssertError(t, b24Must(t, wrong+"event.bind", map[string]any{}, http.StatusUnauthorized), "NO_AUTH_FOUND", "Wrong authorization data")
		if len(s.Bitrix24OutboundWebhooks()) != 0 {
			t.Fatal("event.bind bound a handler")
		}
	})

	t.Run("PersonChangesADeal", func(t *testing.T) {
		t.Parallel()
		s, base := b24Setup(t)
		rc := newReceiver(t)
		hook, err := s.AddBitrix24OutboundWebhook(rc.url, "ONCRMDEALUPDATE")
		if err != nil {
			t.Fatal(err)
		}
		b24Must(t, base+"crm.deal.add", map[string]any{"fields": map[string]any{"TITLE": "Order"}}, http.StatusOK)
		if err := s.Bitrix24Change("deal", 1, map[string]any{"STAGE_ID": "WON"}); err != nil {
			t.Fatal(err)
		}
		wantEvent(t, rc.wait(t, 1)[0], "ONCRMDEALUPDATE", hook.HandlerIDs["ONCRMDEALUPDATE"], "1", base)
		deal := b24Must(t, base+"crm.deal.get", map[string]any{"id": 1}, http.StatusOK)["result"].(map[string]any)
		if deal["STAGE_ID"] != "WON" || s.Effects(sim.Bitrix24Changes, "1") != 0 {
			t.Fatalf("deal %v, changes counted %d", deal, s.Effects(sim.Bitrix24Changes, "1"))
		}
		if err := s.Bitrix24Change("deal", 9, map[string]any{"STAGE_ID": "WON"}); err == nil {
			t.Fatal("a change of no deal succeeded")
		}
		ctl := strings.TrimSuffix(base, "/bitrix24/rest/1/sim-webhook/") + "/_sim/bitrix24/change"
		if got := postStatus(t, ctl, `{"entity":"deal","id":1,"fields":{"STAGE_ID":"LOSE","OPPORTUNITY":10}}`); got != http.StatusOK {
			t.Fatalf("POST change = %d", got)
		}
		wantEvent(t, rc.wait(t, 2)[1], "ONCRMDEALUPDATE", hook.HandlerIDs["ONCRMDEALUPDATE"], "1", base)
		deal = b24Must(t, base+"crm.deal.get", map[string]any{"id": 1}, http.StatusOK)["result"].(map[string]any)
		if deal["STAGE_ID"] != "LOSE" || deal["OPPORTUNITY"] != "10.00" {
			t.Fatalf("deal after POST change = %v", deal)
		}
		if got := postStatus(t, ctl, `{"entity":"task","id":1,"fields":{}}`); got != http.StatusBadRequest {
			t.Fatalf("POST change of a task = %d", got)
		}
	})

	t.Run("ControlAPI", func(t *testing.T) {
		t.Parallel()
		s, base := b24Setup(t)
		rc := newReceiver(t)
		root := strings.TrimSuffix(base, "/bitrix24/rest/1/sim-webhook/")
		for _, bad := range []string{`{"handler":"` + rc.url + `","events":["ONCRMTASKADD"]}`, `{"handler":"` + rc.url + `"}`,
			`{"handler":"mailto:x","events":["ONCRMDEALADD"]}`, `{"events":["ONCRMDEALADD"]}`} {
			if got := postStatus(t, root+"/_sim/bitrix24/outbound_webhooks", bad); got != http.StatusBadRequest {
				t.Fatalf("POST %s = %d, want 400", bad, got)
			}
		}
		if got := postStatus(t, root+"/_sim/bitrix24/outbound_webhooks", `{"handler":"`+rc.url+`","events":["ONCRMDEALADD"]}`); got != http.StatusOK {
			t.Fatalf("POST outbound webhook = %d", got)
		}
		var hooks struct {
			OutboundWebhooks []sim.Bitrix24OutboundWebhook `json:"outbound_webhooks"`
		}
		getJSON(t, root+"/_sim/bitrix24/outbound_webhooks", &hooks)
		if len(hooks.OutboundWebhooks) != 1 || hooks.OutboundWebhooks[0].Handler != rc.url {
			t.Fatalf("outbound webhooks = %+v", hooks)
		}
		s.Reset() // the portal's settings outlive a reset
		b24Must(t, base+"crm.deal.add", map[string]any{"fields": map[string]any{"TITLE": "Order"}}, http.StatusOK)
		rc.wait(t, 1)
		var events struct{ Events []sim.Notice }
		waitFor(t, func() bool {
			getJSON(t, root+"/_sim/bitrix24/events", &events)
			return len(events.Events) == 1 && events.Events[0].Delivered
		})
		req, _ := http.NewRequest(http.MethodDelete, root+"/_sim/bitrix24/outbound_webhooks/"+strconv.Itoa(hooks.OutboundWebhooks[0].ID), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(s.Bitrix24OutboundWebhooks()) != 0 {
			t.Fatalf("DELETE = %d, hooks %+v", resp.StatusCode, s.Bitrix24OutboundWebhooks())
		}
	})
}

// TestEventsFromEnvironment: what `oncegate sim` and serve's built-in
// simulators are told by their environment: where YooKassa notifies, the
// handler of every Bitrix24 event, and the token it carries.
func TestEventsFromEnvironment(t *testing.T) {
	pay, crm := newReceiver(t), newReceiver(t)
	t.Setenv(sim.YooKassaNotifyURLEnv, pay.url)
	t.Setenv(sim.Bitrix24EventHandlerEnv, crm.url)
	t.Setenv(sim.Bitrix24ApplicationTokenEnv, "token-from-env")
	s, base := b24Setup(t)
	hooks := s.Bitrix24OutboundWebhooks()
	if len(hooks) != 1 || hooks[0].Handler != crm.url || !reflect.DeepEqual(hooks[0].Events, sim.Bitrix24Events) || hooks[0].ApplicationToken != "token-from-env" {
		t.Fatalf("outbound webhooks = %+v", hooks)
	}
	b24Must(t, base+"crm.deal.add", map[string]any{"fields": map[string]any{"TITLE": "Order"}}, http.StatusOK)
	wantEvent(t, crm.wait(t, 1)[0], "ONCRMDEALADD", hooks[0].HandlerIDs["ONCRMDEALADD"], "1", base)

	f := &ykFixture{sim: s, url: strings.Replace(base, "/bitrix24/rest/1/sim-webhook/", "/yookassa/v3", 1)}
	p := f.mustPay(t, "env-pay", "5.00")
	f.wantNotification(t, pay.wait(t, 1)[0], sim.YooKassaPaymentSucceeded, "/payments/"+p["id"].(string))
}
