package onec_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/sim"
)

// unknownSO is an order id of the right shape that 1C does not hold.
const unknownSO = "SO-0f8fad5b-d9cb-469f-a165-70867728950e"

// A document the operation's own key made is what a look-up by that key
// answers, whichever intent made or posted it.
func TestCheckObject(t *testing.T) {
	t.Parallel()
	s, c, _ := setup(t, time.Second)
	var _ adapters.ObjectChecker = c
	ctx := context.Background()
	draft := draftOp(t, "test:sales_order.create_draft:check-1:v1")
	order := MustExecute(t, c, draft)
	bill := invoiceOp(t, "test:invoice.create:check-1:v1")
	inv := MustExecute(t, c, bill)
	for _, tc := range []struct {
		op adapters.Op
		id string
	}{{draft, order.ObjectID}, {bill, inv.ObjectID}} {
		got, err := c.CheckObject(ctx, tc.op, tc.id)
		want, lerr := c.Lookup(ctx, tc.op)
		if err != nil || lerr != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: check = %+v, %v; lookup = %+v, %v", tc.op.Intent, got, err, want, lerr)
		}
	}

	// The post's key is the post's own: the draft's key still made the
	// order, and the order is now posted.
	post := postOp(t, "test:sales_order.post:check-1:v1", order.ObjectID)
	MustExecute(t, c, post)
	got, err := c.CheckObject(ctx, post, order.ObjectID)
	want, lerr := c.Lookup(ctx, post)
	if err != nil || lerr != nil || !reflect.DeepEqual(got, want) || got.Data["state"] != "posted" {
		t.Fatalf("post: check = %+v, %v; lookup = %+v, %v", got, err, want, lerr)
	}
	got, err = c.CheckObject(ctx, draft, order.ObjectID)
	if err != nil || got.ObjectID != order.ObjectID || got.Data["number"] != order.Data["number"] || got.Data["state"] != "posted" {
		t.Fatalf("the posted draft: check = %+v, %v; want the order as it is now", got, err)
	}
	if n := s.Effects(sim.OneC, draft.Key) + s.Effects(sim.OneC, post.Key) + s.Effects(sim.OneC, bill.Key); n != 3 {
		t.Fatalf("effects = %d, want 3: a check writes nothing", n)
	}
}

// A document a person made in 1C, under no key, can be any operation's
// effect of its kind.
func TestCheckObjectByHand(t *testing.T) {
	t.Parallel()
	s, c, _ := setup(t, time.Second)
	ctx := context.Background()
	for _, tc := range []struct {
		kind, state string
		op          adapters.Op
	}{
		{"sales_order", "draft", draftOp(t, "test:sales_order.create_draft:hand-1:v1")},
		{"invoice", "created", invoiceOp(t, "test:invoice.create:hand-1:v1")},
	} {
		id, err := s.MakeOneCDocument(tc.kind)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.CheckObject(ctx, tc.op, " "+id+" ")
		if err != nil || got.ObjectID != id || got.Data["state"] != tc.state || !strings.HasPrefix(got.Data["number"].(string), "ОГ00-") || len(got.Data) != 2 {
			t.Fatalf("%s by hand: %+v, %v; want %s with its number and state %s", tc.kind, got, err, id, tc.state)
		}
	}

	// An order a person posted is what sales_order.post leaves.
	id, err := s.MakeOneCDocument("sales_order")
	if err != nil {
		t.Fatal(err)
	}
	post := postOp(t, "test:sales_order.post:hand-1:v1", id)
	if _, err := c.CheckObject(ctx, post, id); err == nil {
		t.Fatal("a draft was accepted as a post's effect")
	}
	if err := s.SetOneCDocumentState(id, "posted"); err != nil {
		t.Fatal(err)
	}
	if got, err := c.CheckObject(ctx, post, id); err != nil || got.Data["state"] != "posted" {
		t.Fatalf("posted by hand: %+v, %v", got, err)
	}

	// An order another operation posted is that operation's effect.
	order := MustExecute(t, c, draftOp(t, "test:sales_order.create_draft:hand-2:v1"))
	poster := postOp(t, "test:sales_order.post:hand-2:v1", order.ObjectID)
	MustExecute(t, c, poster)
	_, err = c.CheckObject(ctx, postOp(t, "test:sales_order.post:hand-3:v1", order.ObjectID), order.ObjectID)
	if e := adapterstest.WantError(t, err, adapters.Final, codes.Validation, ""); !strings.Contains(e.Message, "posted by operation "+poster.Key) {
		t.Fatalf("message %q does not name the post that posted it", e.Message)
	}
}

// A document that is there but cannot be the operation's effect is a
// Final refusal whose message says why.
func TestCheckObjectRefused(t *testing.T) {
	t.Parallel()
	s, c, _ := setup(t, time.Second)
	ctx := context.Background()
	made := draftOp(t, "test:sales_order.create_draft:made-1:v1")
	order := MustExecute(t, c, made)
	inv := MustExecute(t, c, invoiceOp(t, "test:invoice.create:made-1:v1"))
	deleted, err := s.MakeOneCDocument("sales_order")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetOneCDocumentState(deleted, "deleted"); err != nil {
		t.Fatal(err)
	}
	draft, err := s.MakeOneCDocument("sales_order")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		op   adapters.Op
		id   string
		code string
		says []string
	}{
		{"OtherKey", draftOp(t, "test:sales_order.create_draft:other-1:v1"), order.ObjectID, codes.Validation, []string{"made by operation " + made.Key}},
		{"OtherKind", draftOp(t, "test:sales_order.create_draft:other-2:v1"), inv.ObjectID, codes.Validation, []string{"an invoice", "a sales order", "sales_order.create_draft"}},
		{"Deleted", draftOp(t, "test:sales_order.create_draft:other-3:v1"), deleted, codes.ReferenceInactive, []string{"marked for deletion"}},
		{"DraftWherePosted", postOp(t, "test:sales_order.post:other-4:v1", draft), draft, codes.InvalidState, []string{"a draft", "not posted"}},
		{"GetStatus", newOp(t, "", "sales_order.get_status", map[string]any{"order_id": draft}), draft, codes.IntentNotAllowed, []string{"only reads"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.CheckObject(ctx, tc.op, tc.id)
			e := adapterstest.WantError(t, err, adapters.Final, tc.code, "", testPassword)
			for _, w := range tc.says {
				if !strings.Contains(e.Message, w) {
					t.Errorf("message %q does not say %q", e.Message, w)
				}
			}
			if errors.Is(err, adapters.ErrNotFound) || errors.Is(err, adapters.ErrCannotCheck) {
				t.Errorf("a refusal is no ErrNotFound or ErrCannotCheck: %v", err)
			}
		})
	}
}

// An id of the right shape that 1C does not hold is "not found"; an id of
// another shape is refused before 1C is asked.
func TestCheckObjectIDs(t *testing.T) {
	t.Parallel()
	s, c, _ := setup(t, time.Second)
	ctx := context.Background()
	op := draftOp(t, "test:sales_order.create_draft:ids-1:v1")
	if _, err := c.CheckObject(ctx, op, unknownSO); !errors.Is(err, adapters.ErrNotFound) {
		t.Fatalf("an unknown order: %v, want ErrNotFound", err)
	}
	inject(t, s, sim.Fault{Fault: sim.FaultStatus, Status: http.StatusServiceUnavailable, On: sim.OnLookup, Times: 1})
	for _, id := range []string{"", "ОГ00-000001", "SO-123", "so-0f8fad5b-d9cb-469f-a165-70867728950e",
		"SO-0F8FAD5B-D9CB-469F-A165-70867728950E", "DOC-0f8fad5b-d9cb-469f-a165-70867728950e", unknownSO + "/../x", "SO-" + unknownSO} {
		_, err := c.CheckObject(ctx, op, id)
		adapterstest.WantError(t, err, adapters.Final, codes.Validation, "")
	}
	// The fault is still pending: no malformed id reached 1C.
	if _, err := c.CheckObject(ctx, op, unknownSO); errors.Is(err, adapters.ErrNotFound) {
		t.Fatal("a malformed id was sent to 1C")
	}
}

// A firm's own route: the gateway knows only that its key made the
// document, not which kind of document the firm's handler makes.
func TestCheckObjectFirmIntent(t *testing.T) {
	t.Parallel()
	s, c, _ := setup(t, time.Second)
	ctx := context.Background()
	if err := s.PublishOneC("purchase_order.create_draft"); err != nil {
		t.Fatal(err)
	}
	payload := map[string]any{"supplier_id": "supplier-1"}
	op := newOp(t, "test:purchase_order.create_draft:po-1:v1", "purchase_order.create_draft", payload)
	made := MustExecute(t, c, op)
	got, err := c.CheckObject(ctx, op, made.ObjectID)
	want, lerr := c.Lookup(ctx, op)
	if err != nil || lerr != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("check = %+v, %v; lookup = %+v, %v", got, err, want, lerr)
	}
	other := newOp(t, "test:purchase_order.create_draft:po-2:v1", "purchase_order.create_draft", payload)
	_, err = c.CheckObject(ctx, other, made.ObjectID)
	if e := adapterstest.WantError(t, err, adapters.Final, codes.Validation, ""); !strings.Contains(e.Message, op.Key) {
		t.Fatalf("message %q does not name %s", e.Message, op.Key)
	}
	hand, err := s.MakeOneCDocument("sales_order")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CheckObject(ctx, other, hand); !errors.Is(err, adapters.ErrCannotCheck) {
		t.Fatalf("a document no key made, for a firm's route: %v, want ErrCannotCheck", err)
	}
}

// A module published before the route existed answers its publication's
// bare 404: the gateway cannot check, which is neither "not found" nor a
// fault of 1C.
func TestCheckObjectOlderModule(t *testing.T) {
	t.Parallel()
	s := sim.New()
	older := http.NewServeMux()
	older.HandleFunc("/onec/hs/oncegate/v1/documents/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Not Found", http.StatusNotFound) // no template matches: the platform's own answer
	})
	older.Handle("/", s)
	ts := httptest.NewServer(older)
	t.Cleanup(ts.Close)
	c := MustNew(t, ts.URL+"/onec", time.Second)
	op := draftOp(t, "test:sales_order.create_draft:old-1:v1")
	made := MustExecute(t, c, op)
	_, err := c.CheckObject(context.Background(), op, made.ObjectID)
	if !errors.Is(err, adapters.ErrCannotCheck) || errors.Is(err, adapters.ErrNotFound) {
		t.Fatalf("an older module: %v, want ErrCannotCheck", err)
	}
	if strings.Contains(err.Error(), strings.TrimPrefix(ts.URL, "http://")) || strings.Contains(err.Error(), testPassword) {
		t.Fatalf("the error names the publication or the password: %v", err)
	}
}

// A failing service is a failure of the read, never an answer.
func TestCheckObjectUnavailable(t *testing.T) {
	t.Parallel()
	s, c, _ := setup(t, time.Second)
	op := draftOp(t, "test:sales_order.create_draft:down-1:v1")
	made := MustExecute(t, c, op)
	for _, status := range []int{http.StatusServiceUnavailable, http.StatusInternalServerError} {
		inject(t, s, sim.Fault{Fault: sim.FaultStatus, Status: status, Times: 1, On: sim.OnLookup})
		_, err := c.CheckObject(context.Background(), op, made.ObjectID)
		if err == nil || errors.Is(err, adapters.ErrNotFound) || errors.Is(err, adapters.ErrCannotCheck) || adapters.ClassOf(err) == adapters.Final {
			t.Fatalf("a %d: %v, want a failure that is no answer", status, err)
		}
	}
	// A refusal of the read itself says nothing of the document: it is
	// not the Final answer that the document cannot be the effect.
	inject(t, s, sim.Fault{Fault: sim.FaultTargetError, Times: 1, On: sim.OnLookup})
	_, err := c.CheckObject(context.Background(), op, made.ObjectID)
	if e := adapterstest.WantError(t, err, adapters.Retry, codes.TargetUnavailable, ""); strings.Contains(e.Message, sim.LeakyErrorText) {
		t.Fatalf("the message repeats 1C's text: %q", e.Message)
	}
	if got, err := c.CheckObject(context.Background(), op, made.ObjectID); err != nil || got.ObjectID != made.ObjectID {
		t.Fatalf("after the faults: %+v, %v", got, err)
	}
}
