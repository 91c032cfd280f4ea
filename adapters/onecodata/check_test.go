package onecodata_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/onecodata"
	"github.com/oncegate/oncegate/adapters/sim"
)

const invoiceSet = "Document_СчетНаОплатуПокупателю"

// byHand makes a document in 1C the way a person does: 1C chooses its
// Ref_Key. It returns the document as 1C answered it.
func (f *fixture) byHand(tb testing.TB, props map[string]any) map[string]any {
	tb.Helper()
	body, _ := json.Marshal(props)
	u := f.server.URL + sim.ODataPath + "/" + url.PathEscape(invoiceSet) + "?$format=json"
	req, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	req.SetBasicAuth("buh", sim.ODataPassword)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != http.StatusCreated {
		tb.Fatalf("create by hand: %d %v", resp.StatusCode, err)
	}
	return doc
}

func postOp(key, doc string) adapters.Op {
	return adapters.Op{Key: key, Intent: "sales_order.post", Version: 1, Payload: json.RawMessage(`{"order_id":"` + doc + `"}`)}
}

func TestCheckObject_Create(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		f := setup(t, 2*time.Second, nil)
		op := invoiceOp("check:create:1")
		made, err := f.c.Execute(ctx, op)
		if err != nil {
			t.Fatal(err)
		}
		want, err := f.c.Lookup(ctx, op)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{made.ObjectID, strings.ToUpper(made.ObjectID)} {
			got, err := f.c.CheckObject(ctx, op, id)
			if err != nil {
				t.Fatalf("CheckObject(%s): %v", id, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("CheckObject = %#v, Lookup = %#v", got, want)
			}
		}
	})

	t.Run("MadeByHand", func(t *testing.T) {
		t.Parallel()
		f := setup(t, 2*time.Second, nil)
		doc := f.byHand(t, map[string]any{"Комментарий": "order-1"})
		ref := doc["Ref_Key"].(string)
		got, err := f.c.CheckObject(ctx, invoiceOp("check:create:2"), ref)
		if err != nil {
			t.Fatalf("CheckObject of a document made in 1C: %v", err)
		}
		if want := (adapters.Result{ObjectID: ref, Data: map[string]any{"number": doc["Number"]}}); !reflect.DeepEqual(got, want) {
			t.Fatalf("CheckObject = %#v, want %#v", got, want)
		}
	})

	t.Run("BaseIgnoringKeys", func(t *testing.T) {
		t.Parallel()
		f := setup(t, 2*time.Second, nil)
		f.sim.SetODataSettings(sim.ODataSettings{IgnoreClientKeys: true})
		op := invoiceOp("check:create:3")
		_, err := f.c.Execute(ctx, op)
		ae := adapterstest.WantError(t, err, adapters.Final, codes.TargetIgnoresKeys, "")
		// The base keeps no key the gateway chose; the document it made
		// is checked by its own id all the same.
		got, err := f.c.CheckObject(ctx, op, ae.ObjectID)
		if err != nil || got.ObjectID != ae.ObjectID || got.Data["number"] == "" {
			t.Fatalf("CheckObject at a base ignoring keys = %#v, %v", got, err)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		f := setup(t, 2*time.Second, nil)
		op := invoiceOp("check:create:4")
		for _, id := range []string{
			"3f2504e0-4f89-11d3-9a0c-0305e82c3301",
			// A customer's Ref_Key: an object of another kind, which the
			// binding's entity set does not hold.
			sim.ODataRef("Catalog_Контрагенты", "customer-1042"),
		} {
			if _, err := f.c.CheckObject(ctx, op, id); !errors.Is(err, adapters.ErrNotFound) {
				t.Fatalf("CheckObject(%s) = %v, want ErrNotFound", id, err)
			}
		}
	})

	t.Run("ErrMalformedID", func(t *testing.T) {
		t.Parallel()
		f := setup(t, 2*time.Second, nil)
		for _, id := range []string{"", "0000-000001", "guid'3f2504e0-4f89-11d3-9a0c-0305e82c3301'", "3f2504e0-4f89-11d3-9a0c-0305e82c330"} {
			_, err := f.c.CheckObject(ctx, invoiceOp("check:create:5"), id)
			adapterstest.WantFinal(t, err, codes.Validation, "Ref_Key")
		}
		if got := f.gets.Load(); got != 0 {
			t.Fatalf("%d reads for malformed ids", got)
		}
	})

	t.Run("ErrOtherOperation", func(t *testing.T) {
		t.Parallel()
		f := setup(t, 2*time.Second, nil)
		other, err := f.c.Execute(ctx, invoiceOp("check:create:6-other"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.c.CheckObject(ctx, invoiceOp("check:create:6"), other.ObjectID)
		adapterstest.WantFinal(t, err, codes.InvalidState, "another operation")
	})

	t.Run("ErrMarkedForDeletion", func(t *testing.T) {
		t.Parallel()
		f := setup(t, 2*time.Second, nil)
		doc := f.byHand(t, map[string]any{"Комментарий": "order-1", "DeletionMark": true})
		_, err := f.c.CheckObject(ctx, invoiceOp("check:create:7"), doc["Ref_Key"].(string))
		adapterstest.WantFinal(t, err, codes.InvalidState, "marked for deletion")
	})

	t.Run("ErrRead", func(t *testing.T) {
		t.Parallel()
		f := setup(t, 2*time.Second, nil)
		b := append(bindings(), adapters.Binding{Intent: "sales_order.get_status", Version: 1,
			Schema: json.RawMessage(postSchema), Map: json.RawMessage(`{"read":{"entity":"` + invoiceSet + `","document":"order_id"}}`)})
		if err := f.c.Bind(b); err != nil {
			t.Fatal(err)
		}
		op := adapters.Op{Intent: "sales_order.get_status", Version: 1, Payload: json.RawMessage(`{"order_id":"3f2504e0-4f89-11d3-9a0c-0305e82c3301"}`)}
		_, err := f.c.CheckObject(ctx, op, "3f2504e0-4f89-11d3-9a0c-0305e82c3301")
		adapterstest.WantFinal(t, err, codes.IntentNotAllowed, "only reads")
	})

	t.Run("ErrUnavailable", func(t *testing.T) {
		t.Parallel()
		f := setup(t, 2*time.Second, nil)
		op := invoiceOp("check:create:8")
		made, err := f.c.Execute(ctx, op)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.sim.Inject(sim.Fault{Target: sim.OneCOData, Fault: sim.FaultStatus, Status: 503, On: sim.OnLookup}); err != nil {
			t.Fatal(err)
		}
		_, err = f.c.CheckObject(ctx, op, made.ObjectID)
		if err == nil || errors.Is(err, adapters.ErrNotFound) || errors.Is(err, adapters.ErrCannotCheck) || adapters.ClassOf(err) == adapters.Final {
			t.Fatalf("CheckObject during an outage = %v, want an error that says it could not tell", err)
		}
	})
}

func TestCheckObject_Post(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		f := setup(t, 2*time.Second, nil)
		doc, err := f.c.Execute(ctx, invoiceOp("check:post:1-doc"))
		if err != nil {
			t.Fatal(err)
		}
		op := postOp("check:post:1", doc.ObjectID)
		// A draft: the posting is not done.
		_, err = f.c.CheckObject(ctx, op, doc.ObjectID)
		adapterstest.WantFinal(t, err, codes.InvalidState, "not posted")
		if _, err := f.c.Execute(ctx, op); err != nil {
			t.Fatal(err)
		}
		want, err := f.c.Lookup(ctx, op)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.c.CheckObject(ctx, op, strings.ToUpper(doc.ObjectID))
		if err != nil {
			t.Fatalf("CheckObject of the posted document: %v", err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("CheckObject = %#v, Lookup = %#v", got, want)
		}
	})

	t.Run("ErrAnotherDocument", func(t *testing.T) {
		t.Parallel()
		f := setup(t, 2*time.Second, nil)
		mine, err := f.c.Execute(ctx, invoiceOp("check:post:2-doc"))
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := f.c.Execute(ctx, invoiceOp("check:post:2-other"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.c.Execute(ctx, postOp("check:post:2-other-post", theirs.ObjectID)); err != nil {
			t.Fatal(err)
		}
		_, err = f.c.CheckObject(ctx, postOp("check:post:2", mine.ObjectID), theirs.ObjectID)
		adapterstest.WantFinal(t, err, codes.InvalidState, "order_id", mine.ObjectID)
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		f := setup(t, 2*time.Second, nil)
		id := onecodata.RefKey("x", "y", "z")
		if _, err := f.c.CheckObject(ctx, postOp("check:post:3", id), id); !errors.Is(err, adapters.ErrNotFound) {
			t.Fatalf("CheckObject of a document 1C does not hold = %v, want ErrNotFound", err)
		}
	})

	t.Run("ErrMarkedForDeletion", func(t *testing.T) {
		t.Parallel()
		f := setup(t, 2*time.Second, nil)
		ref := f.byHand(t, map[string]any{"Комментарий": "order-1", "DeletionMark": true})["Ref_Key"].(string)
		_, err := f.c.CheckObject(ctx, postOp("check:post:4", ref), ref)
		adapterstest.WantFinal(t, err, codes.InvalidState, "marked for deletion")
	})
}
