package bitrix24_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/sim"
)

// callByHand adds an activity the way a manager does in the portal's UI:
// no external origin. It returns its id.
func callByHand(t *testing.T, base string, typeID, ownerType int, ownerID string) string {
	t.Helper()
	answer := simCall(t, base, "crm.activity.add", map[string]any{"fields": map[string]any{
		"OWNER_TYPE_ID": ownerType, "OWNER_ID": ownerID, "TYPE_ID": typeID, "SUBJECT": "Call back",
		"RESPONSIBLE_ID": 1, "COMMUNICATIONS": []map[string]any{{"ENTITY_ID": ownerID, "ENTITY_TYPE_ID": ownerType, "VALUE": "+79000000001"}},
	}})
	return fmt.Sprint(answer["result"])
}

// wantNotEffect asserts a Final refusal whose message holds every one of
// words.
func wantNotEffect(t *testing.T, err error, words ...string) {
	t.Helper()
	e := adapterstest.WantError(t, err, adapters.Final, codes.InvalidState, "")
	for _, w := range words {
		if !strings.Contains(e.Message, w) {
			t.Fatalf("message %q does not say %q", e.Message, w)
		}
	}
}

func TestCheckObject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		_, c, _ := setup(t)
		op := newOp(t, "customer-1042")
		made, err := c.Execute(ctx, op)
		if err != nil {
			t.Fatal(err)
		}
		want, err := c.Lookup(ctx, op)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{made.ObjectID, "00" + made.ObjectID} {
			got, err := c.CheckObject(ctx, op, id)
			if err != nil {
				t.Fatalf("CheckObject(%q): %v", id, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("CheckObject(%q) = %#v, Lookup = %#v", id, got, want)
			}
		}
	})

	t.Run("MadeByHand", func(t *testing.T) {
		t.Parallel()
		_, c, base := setup(t)
		id := callByHand(t, base, 2, 3, "1") // customer-1042 is contact 1
		got, err := c.CheckObject(ctx, newOp(t, "customer-1042"), id)
		if err != nil {
			t.Fatalf("CheckObject of a call a manager added: %v", err)
		}
		if want := (adapters.Result{ObjectID: id, Data: map[string]any{"activity_id": id, "contact_id": "1"}}); !reflect.DeepEqual(got, want) {
			t.Fatalf("CheckObject = %#v, want %#v", got, want)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		_, c, _ := setup(t)
		if _, err := c.CheckObject(ctx, newOp(t, "customer-1042"), "999"); !errors.Is(err, adapters.ErrNotFound) {
			t.Fatalf("CheckObject of an unknown activity = %v, want ErrNotFound", err)
		}
	})

	t.Run("ErrMalformedID", func(t *testing.T) {
		t.Parallel()
		_, c, _ := setup(t)
		for _, id := range []string{"", "0", "-5", "1.5", "12a", " 12", "+7", "99999999999999999999"} {
			_, err := c.CheckObject(ctx, newOp(t, "customer-1042"), id)
			adapterstest.WantError(t, err, adapters.Final, codes.Validation, "")
		}
	})

	t.Run("ErrOtherOperation", func(t *testing.T) {
		t.Parallel()
		_, c, _ := setup(t)
		other := newOp(t, "customer-1042")
		made, err := c.Execute(ctx, other)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.CheckObject(ctx, newOp(t, "customer-1042"), made.ObjectID)
		wantNotEffect(t, err, "another operation", other.Key)
	})

	t.Run("ErrOtherCustomer", func(t *testing.T) {
		t.Parallel()
		_, c, base := setup(t)
		id := callByHand(t, base, 2, 3, "2") // customer-2001's contact
		_, err := c.CheckObject(ctx, newOp(t, "customer-1042"), id)
		wantNotEffect(t, err, "contact 2", "customer_id", "(1)")
	})

	t.Run("ErrNotACall", func(t *testing.T) {
		t.Parallel()
		_, c, base := setup(t)
		id := callByHand(t, base, 1, 3, "1") // a meeting
		_, err := c.CheckObject(ctx, newOp(t, "customer-1042"), id)
		wantNotEffect(t, err, "not a call")
	})

	t.Run("ErrBoundToADeal", func(t *testing.T) {
		t.Parallel()
		_, c, base := setup(t)
		deal := fmt.Sprint(simCall(t, base, "crm.deal.add", map[string]any{"fields": map[string]any{"TITLE": "Boiler"}})["result"])
		id := callByHand(t, base, 2, 2, deal)
		_, err := c.CheckObject(ctx, newOp(t, "customer-1042"), id)
		wantNotEffect(t, err, "bound to a deal")
	})

	t.Run("ErrUnavailable", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t)
		op := newOp(t, "customer-1042")
		made, err := c.Execute(ctx, op)
		if err != nil {
			t.Fatal(err)
		}
		inject(t, s, sim.Fault{Fault: sim.FaultStatus, Status: 503, On: sim.OnLookup})
		_, err = c.CheckObject(ctx, op, made.ObjectID)
		if err == nil || errors.Is(err, adapters.ErrNotFound) || errors.Is(err, adapters.ErrCannotCheck) || adapters.ClassOf(err) == adapters.Final {
			t.Fatalf("CheckObject during an outage = %v, want an error that says it could not tell", err)
		}
		assertNoSecret(t, err)
	})

	t.Run("ErrOutOfSight", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t)
		op := newOp(t, "customer-1042")
		made, err := c.Execute(ctx, op)
		if err != nil {
			t.Fatal(err)
		}
		// The webhook's user no longer sees the call (its contact is
		// another manager's, and the user is no administrator): the CRM
		// answers "Access denied.", which is no answer about the call.
		p := sim.DefaultBitrix24Portal()
		p.WebhookUser, p.WebhookSecret, p.PerSecond = testUser, secret, 0
		s.SetBitrix24Portal(p)
		s.AssignBitrix24Contact("customer-1042", 9)
		_, err = c.CheckObject(ctx, op, made.ObjectID)
		if err == nil || errors.Is(err, adapters.ErrNotFound) || adapters.ClassOf(err) == adapters.Final {
			t.Fatalf("CheckObject of a call out of the user's sight = %v, want an error that says it could not tell", err)
		}
	})
}

func TestCheckObjectDeclared(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("Deal", func(t *testing.T) {
		t.Parallel()
		_, c, base := setup(t)
		mustBind(t, c, dealBinding(dealMap))
		op := dealOp(t, defaultDeal())
		made, err := c.Execute(ctx, op)
		if err != nil {
			t.Fatal(err)
		}
		want, err := c.Lookup(ctx, op)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.CheckObject(ctx, op, made.ObjectID)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("CheckObject = %#v, %v; Lookup = %#v", got, err, want)
		}

		// Another operation's deal.
		mine := dealOp(t, defaultDeal())
		_, err = c.CheckObject(ctx, mine, made.ObjectID)
		wantNotEffect(t, err, "deal was made by another operation", op.Key)

		// A lead's id is no deal's: deals are read by crm.deal.get, and
		// the only deal is 1.
		simCall(t, base, "crm.lead.add", map[string]any{"fields": map[string]any{"TITLE": "Lead"}})
		lead := fmt.Sprint(simCall(t, base, "crm.lead.add", map[string]any{"fields": map[string]any{"TITLE": "Lead"}})["result"])
		if _, err := c.CheckObject(ctx, mine, lead); !errors.Is(err, adapters.ErrNotFound) {
			t.Fatalf("CheckObject of a lead's id as a deal = %v, want ErrNotFound", err)
		}

		// A deal made by hand is taken.
		hand := fmt.Sprint(simCall(t, base, "crm.deal.add", map[string]any{"fields": map[string]any{"TITLE": "Boiler service"}})["result"])
		got, err = c.CheckObject(ctx, mine, hand)
		if err != nil || !reflect.DeepEqual(got, adapters.Result{ObjectID: hand, Data: map[string]any{"deal_id": hand}}) {
			t.Fatalf("CheckObject of a deal made by hand = %#v, %v", got, err)
		}
	})

	t.Run("Activity", func(t *testing.T) {
		t.Parallel()
		_, c, base := setup(t)
		mustBind(t, c, adapters.Binding{Intent: "call.plan", Version: 1, Schema: json.RawMessage(dealSchema),
			References: map[string]string{"customer_id": "customer"},
			Map: json.RawMessage(`{"method": "crm.activity.add", "fields": {
				"OWNER_ID": {"ref": "customer_id"}, "TYPE_ID": {"value": 2}, "SUBJECT": {"from": "title"}}}`)})
		raw, _ := json.Marshal(defaultDeal())
		op := adapters.Op{Key: "test:call:plan:check-1:v1", Intent: "call.plan", Payload: raw, Attempt: 1}
		made, err := c.Execute(ctx, op)
		if err != nil {
			t.Fatal(err)
		}
		want, err := c.Lookup(ctx, op)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.CheckObject(ctx, op, made.ObjectID)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("CheckObject = %#v, %v; Lookup = %#v", got, err, want)
		}
		// A call with another customer.
		_, err = c.CheckObject(ctx, op, callByHand(t, base, 2, 3, "2"))
		wantNotEffect(t, err, "contact 2")
	})
}

// TestCheckObjectPaced: checks queue under the portal's request rate as
// every other call does, instead of being refused QUERY_LIMIT_EXCEEDED.
func TestCheckObjectPaced(t *testing.T) {
	t.Parallel()
	p := sim.DefaultBitrix24Portal()
	p.Admins = []int{testUser}
	p.PerSecond, p.Bucket = 50, 10
	_, c := portalClient(t, p, adapters.Rate{PerSecond: 50, Burst: 3})
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	for range 30 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := c.CheckObject(ctx, newOp(t, "customer-1042"), "999"); !errors.Is(err, adapters.ErrNotFound) {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a paced check: %v", err)
	}
}
