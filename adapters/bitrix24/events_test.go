package bitrix24_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/bitrix24"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/sim"
)

const formType = "application/x-www-form-urlencoded"

// noticeBody reads a notice's body from testdata/notice, past its
// commented header (source, date, assumptions).
func noticeBody(tb testing.TB, name string) []byte {
	tb.Helper()
	raw, err := os.ReadFile("testdata/notice/" + name)
	if err != nil {
		tb.Fatal(err)
	}
	var body []string
	for _, line := range strings.Split(string(raw), "\n") {
		if len(body) == 0 && (strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "") {
			continue
		}
		body = append(body, line)
	}
	return bytes.TrimSpace([]byte(strings.Join(body, "\n")))
}

func TestEvents(t *testing.T) {
	t.Parallel()
	_, c, _ := setup(t)
	want := []string{"ONCRMDEALADD", "ONCRMDEALUPDATE", "ONCRMLEADADD", "ONCRMLEADUPDATE",
		"ONCRMCONTACTADD", "ONCRMCONTACTUPDATE", "ONCRMCOMPANYADD", "ONCRMCOMPANYUPDATE"}
	if got := c.Events(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Events = %v, want %v", got, want)
	}
}

// The notice of Bitrix24's reference parses into its event, its deal and
// the handler's application token; the event's case is Bitrix24's choice.
func TestParseNotice(t *testing.T) {
	t.Parallel()
	_, c, _ := setup(t)
	body := noticeBody(t, "ONCRMDEALUPDATE.txt")
	for _, ct := range []string{formType, formType + "; charset=utf-8", formType + ";charset=UTF-8"} {
		n, token, err := c.ParseNotice(ct, body)
		if err != nil {
			t.Fatalf("ParseNotice(%q): %v", ct, err)
		}
		if want := (adapters.Notice{Event: "ONCRMDEALUPDATE", ObjectID: "759"}); n != want || token != "51856fefc120afa4b628cc82d3935cce" {
			t.Fatalf("ParseNotice(%q) = %+v, %q; want %+v and the application token", ct, n, token, want)
		}
		if got, want := n.ID(), "ONCRMDEALUPDATE-759"; got != want {
			t.Fatalf("ID = %q, want %q", got, want)
		}
	}
	for _, tc := range []struct {
		body  string
		want  adapters.Notice
		token string
	}{
		{"event=onCrmLeadAdd&data[FIELDS][ID]=42&ts=1700000000&auth[application_token]=tok", adapters.Notice{Event: "ONCRMLEADADD", ObjectID: "42"}, "tok"},
		{"event=OnCrmCompanyUpdate&data%5BFIELDS%5D%5BID%5D=0017", adapters.Notice{Event: "ONCRMCOMPANYUPDATE", ObjectID: "17"}, ""},
		{"data%5BFIELDS%5D%5BID%5D=5&event=oncrmcontactupdate&extra[a][b]=c", adapters.Notice{Event: "ONCRMCONTACTUPDATE", ObjectID: "5"}, ""},
	} {
		n, token, err := c.ParseNotice(formType, []byte(tc.body))
		if err != nil || n != tc.want || token != tc.token {
			t.Fatalf("ParseNotice(%s) = %+v, %q, %v; want %+v, %q", tc.body, n, token, err, tc.want, tc.token)
		}
	}
}

// What is not a notice Bitrix24 sends is refused, saying what is wrong,
// and never repeating the token.
func TestParseNoticeRefused(t *testing.T) {
	t.Parallel()
	_, c, _ := setup(t)
	const token = "51856fefc120afa4b628cc82d3935cce"
	sample := string(noticeBody(t, "ONCRMDEALUPDATE.txt"))
	without := func(field string) string {
		var kept []string
		for _, kv := range strings.Split(sample, "&") {
			if !strings.HasPrefix(kv, field+"=") {
				kept = append(kept, kv)
			}
		}
		return strings.Join(kept, "&")
	}
	for _, tc := range []struct {
		name, contentType, body, want string
	}{
		{"NoContentType", "", sample, "the notice has no content type; Bitrix24 sends application/x-www-form-urlencoded"},
		{"JSON", "application/json", sample, `the notice's content type is "application/json", not application/x-www-form-urlencoded`},
		{"Multipart", "multipart/form-data; boundary=x", sample, `the notice's content type is "multipart/form-data; boundary=x", not application/x-www-form-urlencoded`},
		{"Charset", formType + "; charset=windows-1251", sample, `the notice's charset is "windows-1251", not UTF-8`},
		{"NotAForm", formType, "event=ONCRMDEALUPDATE&data[FIELDS][ID]=%zz", "the notice is not a form (application/x-www-form-urlencoded)"},
		{"NoEvent", formType, without("event"), "the notice names no event"},
		{"EmptyEvent", formType, "event=&data[FIELDS][ID]=1", "the notice names no event"},
		{"TwoEvents", formType, "event=ONCRMDEALUPDATE&event=ONCRMDEALADD&data[FIELDS][ID]=1", "the notice names more than one event"},
		{"OtherEvent", formType, strings.Replace(sample, "ONCRMDEALUPDATE", "ONCRMDEALDELETE", 1),
			`the notice's event "ONCRMDEALDELETE" is none this source reads (ONCRMDEALADD, ONCRMDEALUPDATE, ONCRMLEADADD, ONCRMLEADUPDATE, ONCRMCONTACTADD, ONCRMCONTACTUPDATE, ONCRMCOMPANYADD, ONCRMCOMPANYUPDATE)`},
		{"ActivityEvent", formType, "event=onCrmActivityAdd&data[FIELDS][ID]=1",
			`the notice's event "onCrmActivityAdd" is none this source reads (ONCRMDEALADD, ONCRMDEALUPDATE, ONCRMLEADADD, ONCRMLEADUPDATE, ONCRMCONTACTADD, ONCRMCONTACTUPDATE, ONCRMCOMPANYADD, ONCRMCOMPANYUPDATE)`},
		{"NoID", formType, without("data%5BFIELDS%5D%5BID%5D"), "the notice names no record (data[FIELDS][ID])"},
		{"EmptyID", formType, "event=ONCRMDEALUPDATE&data[FIELDS][ID]=", "the notice names no record (data[FIELDS][ID])"},
		{"IDElsewhere", formType, "event=ONCRMDEALUPDATE&data[ID]=7&ID=7", "the notice names no record (data[FIELDS][ID])"},
		{"TwoIDs", formType, "event=ONCRMDEALUPDATE&data[FIELDS][ID]=1&data[FIELDS][ID]=2", "the notice names more than one record (data[FIELDS][ID])"},
		{"ZeroID", formType, "event=ONCRMDEALUPDATE&data[FIELDS][ID]=0", "the notice's record id (data[FIELDS][ID]) is not a positive whole number"},
		{"NegativeID", formType, "event=ONCRMDEALUPDATE&data[FIELDS][ID]=-5", "the notice's record id (data[FIELDS][ID]) is not a positive whole number"},
		{"WordID", formType, "event=ONCRMDEALUPDATE&data[FIELDS][ID]=abc", "the notice's record id (data[FIELDS][ID]) is not a positive whole number"},
		{"FractionID", formType, "event=ONCRMDEALUPDATE&data[FIELDS][ID]=1.5", "the notice's record id (data[FIELDS][ID]) is not a positive whole number"},
		{"HugeID", formType, "event=ONCRMDEALUPDATE&data[FIELDS][ID]=99999999999999999999", "the notice's record id (data[FIELDS][ID]) is not a positive whole number"},
		{"TwoTokens", formType, sample + "&auth%5Bapplication_token%5D=" + token + "x", "the notice carries more than one auth[application_token]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, got, err := c.ParseNotice(tc.contentType, []byte(tc.body))
			// The gateway answers an event the source is not read for as
			// one no rule runs on (422), anything else as malformed (400).
			if notSent := strings.Contains(tc.want, "none this source reads"); err != nil && errors.Is(err, adapters.ErrEventNotSent) != notSent {
				t.Fatalf("errors.Is(%v, ErrEventNotSent) = %v", err, !notSent)
			}
			if err == nil || err.Error() != tc.want {
				t.Fatalf("ParseNotice = %+v, %q, %v; want the error %q", n, got, err, tc.want)
			}
			if strings.Contains(err.Error(), token) {
				t.Fatalf("the refusal repeats the token: %v", err)
			}
		})
	}
}

// A notice is acted on as the CRM holds its record now: the result of the
// entity's get, whole, with numbers as json.Number.
func TestReadBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, c, base := setup(t)
	for _, tc := range []struct{ entity, event string }{
		{"deal", "ONCRMDEALUPDATE"}, {"deal", "ONCRMDEALADD"}, {"lead", "ONCRMLEADADD"}, {"lead", "ONCRMLEADUPDATE"},
		{"contact", "ONCRMCONTACTADD"}, {"contact", "ONCRMCONTACTUPDATE"}, {"company", "ONCRMCOMPANYADD"}, {"company", "ONCRMCOMPANYUPDATE"},
	} {
		fields := map[string]any{"TITLE": "Boiler service", "OPPORTUNITY": 1500, "COMMENTS": "from the site"}
		if tc.entity == "contact" {
			fields = map[string]any{"NAME": "Anna", "LAST_NAME": "Petrova", "PHONE": []map[string]any{{"VALUE": "+79161234567", "VALUE_TYPE": "WORK"}}}
		}
		id := fmt.Sprint(simCall(t, base, "crm."+tc.entity+".add", map[string]any{"fields": fields})["result"])
		rec, err := c.ReadBack(ctx, adapters.Notice{Event: tc.event, ObjectID: id})
		if err != nil {
			t.Fatalf("%s: read-back of %s %s: %v", tc.event, tc.entity, id, err)
		}
		want := simCall(t, base, "crm."+tc.entity+".get", map[string]any{"id": id})["result"]
		if !reflect.DeepEqual(rec, want) {
			t.Fatalf("%s: read-back = %v\nwant the record as the CRM answers it: %v", tc.event, rec, want)
		}
		if rec["ID"] != id {
			t.Fatalf("%s: read-back ID = %#v, want %q", tc.event, rec["ID"], id)
		}
		if tc.entity == "deal" && (rec["TITLE"] != "Boiler service" || rec["OPPORTUNITY"] != "1500.00") {
			t.Fatalf("%s: read-back = %v, want TITLE and OPPORTUNITY \"1500.00\" as the CRM holds them", tc.event, rec)
		}
	}
}

// portalAnswering is a client of a portal that answers every call with
// status and body.
func portalAnswering(t *testing.T, status int, body string) *bitrix24.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	c, err := bitrix24.New(bitrix24.Config{WebhookURL: srv.URL + "/rest/7/" + secret + "/", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Numbers in the record stay as the CRM wrote them, json.Number.
func TestReadBackNumbers(t *testing.T) {
	t.Parallel()
	c := portalAnswering(t, http.StatusOK, `{"result":{"ID":17,"TITLE":"Boiler","OPPORTUNITY":1500.10,"UF_CRM_COUNTER":12345678901234567890},"time":{"start":1}}`)
	rec, err := c.ReadBack(context.Background(), adapters.Notice{Event: "ONCRMDEALUPDATE", ObjectID: "17"})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"ID": "17", "OPPORTUNITY": "1500.10", "UF_CRM_COUNTER": "12345678901234567890"} {
		if got, ok := rec[k].(json.Number); !ok || got.String() != want {
			t.Fatalf("%s = %#v, want the json.Number %s", k, rec[k], want)
		}
	}
}

// An answer that is not the record asked for tells nothing of the notice:
// it is read again later. A refusal of the read's arguments other than
// "Not found" is final, as for any read.
func TestReadBackOddAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := adapters.Notice{Event: "ONCRMDEALUPDATE", ObjectID: "17"}
	for _, body := range []string{
		`{"result":{"ID":"18","TITLE":"Another deal"}}`,
		`{"result":{"TITLE":"No id"}}`,
		`{"result":true}`,
		`{"result":[]}`,
		`{"result":null}`,
	} {
		_, err := portalAnswering(t, http.StatusOK, body).ReadBack(ctx, n)
		if err == nil || errors.Is(err, adapters.ErrNotFound) || adapters.ClassOf(err) != adapters.Retry {
			t.Fatalf("answer %s: read-back = %v, want a retryable error", body, err)
		}
		assertNoSecret(t, err)
	}
	_, err := portalAnswering(t, http.StatusBadRequest, `{"error":"","error_description":"ID is not defined or invalid."}`).ReadBack(ctx, n)
	if errors.Is(err, adapters.ErrNotFound) || adapters.ClassOf(err) != adapters.Final {
		t.Fatalf("a refused read: %v, want a final refusal", err)
	}
}

// A record the portal does not have is "not found"; an id that is none
// is not asked for.
func TestReadBackUnknown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, c, base := setup(t)
	_ = simCall(t, base, "crm.deal.add", map[string]any{"fields": map[string]any{"TITLE": "Boiler"}})
	for _, n := range []adapters.Notice{
		{Event: "ONCRMDEALUPDATE", ObjectID: "999999"},
		{Event: "ONCRMCONTACTADD", ObjectID: "424242"},
		{Event: "ONCRMDEALUPDATE", ObjectID: "abc"},
		{Event: "ONCRMDEALUPDATE", ObjectID: "-1"},
	} {
		if rec, err := c.ReadBack(ctx, n); !errors.Is(err, adapters.ErrNotFound) {
			t.Fatalf("ReadBack(%+v) = %v, %v; want not found", n, rec, err)
		}
	}
	_, err := c.ReadBack(ctx, adapters.Notice{Event: "ONCRMDEALDELETE", ObjectID: "1"})
	if err == nil || errors.Is(err, adapters.ErrNotFound) || adapters.ClassOf(err) != adapters.Final {
		t.Fatalf("read-back of an event it does not read: %v, want a final refusal", err)
	}
}

// A portal that could not answer, or a record the webhook's user may not
// see, is neither "not found" nor a mismatch: the notice stays to be read
// back later, and no error carries the webhook URL.
func TestReadBackUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wantRetry := func(t *testing.T, what string, err error, code string) {
		t.Helper()
		var e *adapters.Error
		if _, mismatch := adapters.IsMismatch(err); mismatch || errors.Is(err, adapters.ErrNotFound) || !errors.As(err, &e) || e.Class != adapters.Retry || e.Code != code {
			t.Fatalf("%s: read-back = %v, want a retryable *adapters.Error %s", what, err, code)
		}
		assertNoSecret(t, err)
	}
	s, c, base := setup(t)
	id := fmt.Sprint(simCall(t, base, "crm.deal.add", map[string]any{"fields": map[string]any{"TITLE": "Boiler", "ASSIGNED_BY_ID": 9}})["result"])
	n := adapters.Notice{Event: "ONCRMDEALUPDATE", ObjectID: id}
	for _, status := range []int{503, 502, 500} {
		inject(t, s, sim.Fault{Fault: sim.FaultStatus, Status: status, On: sim.OnLookup})
		_, err := c.ReadBack(ctx, n)
		wantRetry(t, fmt.Sprint("HTTP ", status), err, codes.TargetUnavailable)
	}
	inject(t, s, sim.Fault{Fault: sim.FaultDelay, DelayMS: 400, On: sim.OnLookup})
	_, err := c.ReadBack(ctx, n)
	wantRetry(t, "no answer in time", err, codes.TargetUnavailable)
	if _, err := c.ReadBack(ctx, n); err != nil {
		t.Fatalf("read-back once the portal answers again: %v", err)
	}

	// The deal is another manager's, and the webhook's user no longer an
	// administrator: the portal answers "Access denied.".
	p := sim.DefaultBitrix24Portal()
	p.WebhookUser, p.WebhookSecret, p.Admins, p.PerSecond = testUser, secret, []int{1}, 0
	s.SetBitrix24Portal(p)
	_, err = c.ReadBack(ctx, n)
	wantRetry(t, "a deal out of the user's sight", err, codes.TargetPermissionDenied)

	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	c, err = bitrix24.New(bitrix24.Config{WebhookURL: down.URL + "/bitrix24/rest/7/" + secret + "/", Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ReadBack(ctx, n)
	wantRetry(t, "the portal down", err, codes.TargetUnavailable)
}
