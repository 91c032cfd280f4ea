package onecodata_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/onecodata"
	"github.com/oncegate/oncegate/adapters/sim"
)

// interposed is a client whose calls pass through a stand-in for 1C's web
// server in front of the simulator: answer, when it returns a status, is
// sent instead of the simulator's answer. It counts creates (POST of the
// set), postings (POST …/Post) and GETs by key.
type interposed struct {
	c                      *onecodata.Client
	creates, posts, byKeys atomic.Int64
}

func interpose(t *testing.T, s *sim.Server, answer func(r *http.Request) (int, string)) *interposed {
	t.Helper()
	ip := &interposed{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/Post"):
			ip.posts.Add(1)
		case r.Method == http.MethodPost:
			ip.creates.Add(1)
		case strings.Contains(r.URL.Path, "(guid'"):
			ip.byKeys.Add(1)
		}
		if status, body := answer(r); status != 0 {
			w.Header().Set("Content-Type", "application/json;charset=utf-8")
			w.WriteHeader(status)
			w.Write([]byte(body))
			return
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	zone, _ := time.LoadLocation("Europe/Moscow")
	c, err := onecodata.New(onecodata.Config{Instance: "buh", BaseURL: srv.URL + sim.ODataPath, Username: "buh", Password: "sim", Zone: zone, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	bindInvoice(t, c)
	ip.c = c
	return ip
}

func odataError(code, msg string) string {
	b, _ := json.Marshal(map[string]any{"odata.error": map[string]any{"code": code, "message": map[string]any{"lang": "ru", "value": msg}}})
	return string(b)
}

// isCreate, isPosting and isByKey tell the requests apart.
func isCreate(r *http.Request) bool {
	return r.Method == http.MethodPost && !strings.Contains(r.URL.Path, "(guid'")
}
func isPosting(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/Post")
}
func isByKey(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.Contains(r.URL.Path, "(guid'")
}

// A create's refusals by OData error code: 15 under any 4xx is "the key
// exists", settled by the document under the key; -1 under 500 is the
// configuration's own refusal, final with 1C's message; an internal error
// (500 with any other code, or 1C's «внутренняя ошибка») is an unknown
// outcome, settled by a look-up of the key and never sent again blind.
func TestCreateRefusalsByCode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		status  int
		body    string
		present bool // the document is under the key already
		class   adapters.Class
		code    string
		message string
	}{
		{"15 under 409, there", 409, odataError("15", "Сущность с таким ключом уже существует"), true, 0, "", ""},
		{"15 under 422, there", 422, odataError("15", "Сущность с таким ключом уже существует"), true, 0, "", ""},
		{"15 under 404, there", 404, odataError("15", "Сущность с таким ключом уже существует"), true, 0, "", ""},
		{"15 under 403, there", 403, odataError("15", "Сущность с таким ключом уже существует"), true, 0, "", ""},
		{"15 under 400, not shown", 400, odataError("15", "Сущность с таким ключом уже существует"), false, adapters.Reconcile, codes.OutcomeUnknown, ""},
		{"15 under 404, not shown", 404, odataError("15", "Сущность с таким ключом уже существует"), false, adapters.Reconcile, codes.OutcomeUnknown, ""},
		{"-1 under 500, the configuration's rule", 500,
			odataError("-1", "{Документ.СчетНаОплатуПокупателю.МодульОбъекта(57)}: Счет по заказу order-1 уже выставлен: 0000-000017"), false,
			adapters.Final, codes.TargetRejected, "1C refused: Счет по заказу order-1 уже выставлен: 0000-000017"},
		{"-1 under 500, a duplicate key there", 500, odataError("-1", "Нарушено условие уникальности"), true, 0, "", ""},
		{"internal error, code 0", 500, odataError("0", "Возможность не поддерживается"), false, adapters.Reconcile, codes.OutcomeUnknown, ""},
		{"internal error, code 2, written after all", 500, odataError("2", "Неверный формат запроса"), true, 0, "", ""},
		{"1C's own internal error", 500, odataError("-1", "Внутренняя ошибка. Обратитесь к администратору"), false, adapters.Reconcile, codes.OutcomeUnknown, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, 2*time.Second, nil)
			op := invoiceOp("k-refused")
			ref := onecodata.RefKey("buh", "invoice.create", op.Key)
			if tc.present {
				if _, err := f.c.Execute(ctx, op); err != nil {
					t.Fatal(err)
				}
			}
			ip := interpose(t, f.sim, func(r *http.Request) (int, string) {
				if isCreate(r) {
					return tc.status, tc.body
				}
				return 0, ""
			})
			res, err := ip.c.Execute(ctx, op)
			if tc.class == 0 {
				if err != nil || res.ObjectID != ref {
					t.Fatalf("want the document under the key: %+v %v", res, err)
				}
			} else {
				ae := adapterstest.WantError(t, err, tc.class, tc.code, "")
				if tc.message != "" && ae.Message != tc.message {
					t.Fatalf("message %q, want %q", ae.Message, tc.message)
				}
			}
			if n := ip.creates.Load(); n != 1 {
				t.Fatalf("the create was sent %d times, want once", n)
			}
			if n := ip.byKeys.Load(); n != 1 {
				t.Fatalf("the key was read %d times, want once", n)
			}
		})
	}
}

// A posting 1C failed internally at is an unknown outcome, settled by
// reading the document's Posted; a posting the configuration refused is
// POSTING_REFUSED.
func TestPostingInternalError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, 2*time.Second, nil)
	res, err := f.c.Execute(ctx, invoiceOp("k-doc"))
	if err != nil {
		t.Fatal(err)
	}
	post := adapters.Op{Key: "k-post", Intent: "sales_order.post", Version: 1, Payload: json.RawMessage(`{"order_id":"` + res.ObjectID + `"}`)}
	for _, tc := range []struct {
		body  string
		class adapters.Class
		code  string
	}{
		{odataError("-1", "Внутренняя ошибка. Обратитесь к администратору"), adapters.Reconcile, codes.OutcomeUnknown},
		{odataError("0", "Возможность не поддерживается"), adapters.Reconcile, codes.OutcomeUnknown},
		{odataError("-1", "Не удалось провести документ: период закрыт"), adapters.Final, codes.PostingRefused},
	} {
		ip := interpose(t, f.sim, func(r *http.Request) (int, string) {
			if isPosting(r) {
				return 500, tc.body
			}
			return 0, ""
		})
		_, err := ip.c.Execute(ctx, post)
		adapterstest.WantError(t, err, tc.class, tc.code, "")
		if n := ip.posts.Load(); n != 1 {
			t.Fatalf("%s: the posting was sent %d times, want once", tc.body, n)
		}
	}
}

// A read 1C fails internally at is made again a few times: a transient
// failure is not an answer; one that persists is TARGET_UNAVAILABLE, for
// a look-up and for a read alike.
func TestReadInternalErrorRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, 2*time.Second, nil)
	op := invoiceOp("k-read")
	res, err := f.c.Execute(ctx, op)
	if err != nil {
		t.Fatal(err)
	}
	const readBinding = `{"read":{"entity":"Document_СчетНаОплатуПокупателю","document":"order_id"}}`
	for _, fails := range []int{2, 100} {
		for _, body := range []string{odataError("0", "Возможность не поддерживается"), odataError("-1", "Внутренняя ошибка"), ""} {
			var n atomic.Int64
			ip := interpose(t, f.sim, func(r *http.Request) (int, string) {
				if isByKey(r) && n.Add(1) <= int64(fails) {
					return 500, body
				}
				return 0, ""
			})
			if err := ip.c.Bind(append(bindings(), adapters.Binding{Intent: "sales_order.get_status", Version: 1, Schema: []byte(postSchema), Map: []byte(readBinding)})); err != nil {
				t.Fatal(err)
			}
			got, lerr := ip.c.Lookup(ctx, op)
			n.Store(0)
			read, rerr := ip.c.Read(ctx, adapters.Op{Intent: "sales_order.get_status", Version: 1, Payload: json.RawMessage(`{"order_id":"` + res.ObjectID + `"}`)})
			if fails == 2 {
				if lerr != nil || got.ObjectID != res.ObjectID || rerr != nil || read.Data["state"] != "draft" {
					t.Fatalf("%q after two failures: look-up %+v %v; read %+v %v", body, got, lerr, read, rerr)
				}
				continue
			}
			adapterstest.WantError(t, lerr, adapters.Retry, codes.TargetUnavailable, "")
			adapterstest.WantError(t, rerr, adapters.Retry, codes.TargetUnavailable, "")
			if got := ip.byKeys.Load(); got < 4 || got > 8 {
				t.Fatalf("%q: %d reads by key for a look-up and a read, want a few each", body, got)
			}
		}
	}
}
