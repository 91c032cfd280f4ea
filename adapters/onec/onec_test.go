package onec_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/onec"
	"github.com/oncegate/oncegate/adapters/sim"
)

const (
	testUser     = "oncegate-gw"
	testPassword = "s3cret-Passw0rd"
)

// setup serves a fresh simulator and returns a client of its 1C service.
func setup(tb testing.TB, timeout time.Duration) (*sim.Server, *onec.Client, string) {
	tb.Helper()
	s := sim.New()
	ts := httptest.NewServer(s)
	tb.Cleanup(ts.Close)
	return s, MustNew(tb, ts.URL+"/onec", timeout), ts.URL
}

func MustNew(tb testing.TB, baseURL string, timeout time.Duration) *onec.Client {
	tb.Helper()
	c, err := onec.New(onec.Config{BaseURL: baseURL, Username: testUser, Password: testPassword, Timeout: timeout})
	if err != nil {
		tb.Fatalf("new client: %v", err)
	}
	return c
}

// newOp builds an operation with a fingerprint over intent and payload.
func newOp(tb testing.TB, key, intent string, payload map[string]any) adapters.Op {
	tb.Helper()
	raw, err := json.Marshal(payload)
	if err != nil {
		tb.Fatal(err)
	}
	sum := sha256.Sum256(append([]byte(intent+"\n"), raw...))
	return adapters.Op{Key: key, Intent: intent, Fingerprint: hex.EncodeToString(sum[:]), Payload: raw, Attempt: 1}
}

// invoice is order-48291's invoice.create payload for customer.
func invoice(customer string) map[string]any {
	p := adapterstest.InvoicePayload("order-48291", 2)
	p["customer_id"] = customer
	return p
}

func invoiceOp(tb testing.TB, key string) adapters.Op {
	return newOp(tb, key, "invoice.create", invoice("customer-1042"))
}

func draftOp(tb testing.TB, key string) adapters.Op {
	return newOp(tb, key, "sales_order.create_draft", map[string]any{
		"organization_id": "org-main", "customer_id": "customer-1042", "warehouse_id": "warehouse-01", "currency": "RUB",
		"items": []any{map[string]any{"product_id": "product-778", "quantity": 2, "unit": "pcs"}},
	})
}

func postOp(tb testing.TB, key, orderID string) adapters.Op {
	return newOp(tb, key, "sales_order.post", map[string]any{"order_id": orderID})
}

// MustExecute executes op and fails the test on any error.
func MustExecute(tb testing.TB, c *onec.Client, op adapters.Op) adapters.Result {
	tb.Helper()
	res, err := c.Execute(context.Background(), op)
	if err != nil {
		tb.Fatalf("execute %s: %v", op.Key, err)
	}
	return res
}

func effects(tb testing.TB, s *sim.Server, key string, want int) {
	tb.Helper()
	if got := s.Effects(sim.OneC, key); got != want {
		tb.Fatalf("effects(%s) = %d, want %d", key, got, want)
	}
}

// idPattern is an object id of the 1C service: a kind prefix and the UUID
// of the document's reference, never its number.
var idPattern = regexp.MustCompile(`^(INV|SO|DOC)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// objectID reports whether id is an object id with prefix.
func objectID(id, prefix string) bool {
	return idPattern.MatchString(id) && strings.HasPrefix(id, prefix)
}

func inject(tb testing.TB, s *sim.Server, f sim.Fault) {
	tb.Helper()
	f.Target = sim.OneC
	if err := s.Inject(f); err != nil {
		tb.Fatal(err)
	}
}

func TestExecute(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t, time.Second)
		res := MustExecute(t, c, invoiceOp(t, "test:invoice.create:order-1:v1"))
		if got, want := res.ObjectID, "INV-"; !objectID(got, want) {
			t.Fatalf("object id = %q, want %q", got, want)
		}
		if got, want := res.Data["number"], "ОГ00-000001"; got != want {
			t.Fatalf("number = %v, want %v", got, want)
		}
		if got, want := res.Data["state"], "created"; got != want {
			t.Fatalf("state = %v, want %v", got, want)
		}
		effects(t, s, "test:invoice.create:order-1:v1", 1)
	})

	t.Run("Replay", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t, time.Second)
		op := invoiceOp(t, "test:invoice.create:order-1:v1")
		first := MustExecute(t, c, op)
		op.Attempt = 2
		second := MustExecute(t, c, op)
		if first.ObjectID != second.ObjectID || first.Data["number"] != second.Data["number"] {
			t.Fatalf("replay = %+v, want %+v", second, first)
		}
		effects(t, s, op.Key, 1)
		if got, want := s.Calls(sim.OneC, op.Key), 2; got != want {
			t.Fatalf("calls = %d, want %d", got, want)
		}
	})

	t.Run("ErrKeyMismatch", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t, time.Second)
		key := "test:invoice.create:order-1:v1"
		MustExecute(t, c, invoiceOp(t, key))
		_, err := c.Execute(context.Background(), newOp(t, key, "invoice.create", invoice("customer-2001")))
		adapterstest.WantError(t, err, adapters.Final, codes.KeyMismatch, "")
		effects(t, s, key, 1)
	})

	t.Run("ErrIntentNotAllowed", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t, time.Second)
		op := newOp(t, "test:payment.charge:p-1:v1", "payment.charge", map[string]any{"amount_minor": 1})
		_, err := c.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Final, codes.IntentNotAllowed, "intent")
		effects(t, s, op.Key, 0)
	})

	t.Run("ErrUnknownField", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t, time.Second)
		p := invoice("customer-1042")
		p["posted"] = true
		op := newOp(t, "test:invoice.create:order-1:v1", "invoice.create", p)
		_, err := c.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Final, codes.Validation, "payload")
		effects(t, s, op.Key, 0)
	})
}

func TestExecuteReferences(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(p map[string]any)
		code   string
		field  string
	}{
		{"CustomerNotFound", func(p map[string]any) { p["customer_id"] = "customer-404" }, codes.ReferenceNotFound, "customer_id"},
		{"CustomerBlocked", func(p map[string]any) { p["customer_id"] = "customer-blocked-1" }, codes.ReferenceInactive, "customer_id"},
		{"OrganizationNotFound", func(p map[string]any) { p["organization_id"] = "org-other" }, codes.ReferenceNotFound, "organization_id"},
		{"ProductDeleted", func(p map[string]any) {
			p["items"].([]any)[0].(map[string]any)["product_id"] = "product-deleted-1"
		}, codes.ReferenceInactive, "items[0].product_id"},
		{"UnitNotFound", func(p map[string]any) {
			p["items"] = append(p["items"].([]any), map[string]any{"product_id": "product-779", "quantity": 1, "unit": "box", "price_minor": 100})
		}, codes.ReferenceNotFound, "items[1].unit"},
		{"Currency", func(p map[string]any) { p["currency"] = "USD" }, codes.Validation, "currency"},
		{"FirstOfMany", func(p map[string]any) {
			p["customer_id"] = "customer-blocked-1"
			p["currency"] = "EUR"
		}, codes.ReferenceInactive, "customer_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, c, _ := setup(t, time.Second)
			p := invoice("customer-1042")
			tt.change(p)
			op := newOp(t, "test:invoice.create:order-1:v1", "invoice.create", p)
			_, err := c.Execute(context.Background(), op)
			e := adapterstest.WantError(t, err, adapters.Final, tt.code, tt.field)
			if got, want := e.Field, tt.field; got != want {
				t.Fatalf("field = %q, want %q", got, want)
			}
			// The agent reads the adapter's fixed text; 1C's own goes to logs.
			if e.Message == "" || strings.Contains(e.Message, "external id") || strings.Contains(e.Message, "the object is") {
				t.Fatalf("message = %q, want the adapter's fixed text", e.Message)
			}
			if e.Err == nil || !strings.Contains(e.Err.Error(), tt.code) {
				t.Fatalf("cause = %v, want 1C's answer for the logs", e.Err)
			}
			effects(t, s, op.Key, 0)
			// A refusal registers nothing: the key is still free.
			if _, err := c.Lookup(context.Background(), op); !errors.Is(err, adapters.ErrNotFound) {
				t.Fatalf("lookup after refusal: %v, want ErrNotFound", err)
			}
		})
	}
}

func TestExecuteFaults(t *testing.T) {
	t.Parallel()
	for _, status := range []int{429, 502, 503} {
		t.Run("Status"+http.StatusText(status), func(t *testing.T) {
			t.Parallel()
			s, c, _ := setup(t, time.Second)
			op := invoiceOp(t, "test:invoice.create:order-1:v1")
			inject(t, s, sim.Fault{Fault: sim.FaultStatus, Status: status})
			_, err := c.Execute(context.Background(), op)
			e := adapterstest.WantError(t, err, adapters.Retry, codes.TargetUnavailable, "")
			wantAfter := 1
			if status == 502 {
				wantAfter = 0
			}
			if got := e.RetryAfter; got != wantAfter {
				t.Fatalf("retry after = %d, want %d", got, wantAfter)
			}
			effects(t, s, op.Key, 0)
		})
	}

	t.Run("ResetBeforeRead", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t, time.Second)
		// A first call leaves a kept-alive connection: the reset then hits a
		// reused one, where net/http could resend by itself.
		MustExecute(t, c, invoiceOp(t, "test:invoice.create:warm-up:v1"))
		op := invoiceOp(t, "test:invoice.create:order-1:v1")
		inject(t, s, sim.Fault{Fault: sim.FaultReset})
		_, err := c.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Retry, codes.TargetUnavailable, "")
		effects(t, s, op.Key, 0)
		if got, want := s.Calls(sim.OneC, op.Key), 1; got != want {
			t.Fatalf("calls = %d, want %d (no hidden resend)", got, want)
		}
		MustExecute(t, c, op)
		effects(t, s, op.Key, 1)
	})

	t.Run("DropResponseAfterCommit", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t, time.Second)
		MustExecute(t, c, invoiceOp(t, "test:invoice.create:warm-up:v1"))
		op := invoiceOp(t, "test:invoice.create:order-1:v1")
		inject(t, s, sim.Fault{Fault: sim.FaultDropResponse})
		_, err := c.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Reconcile, codes.OutcomeUnknown, "")
		if got, want := s.Calls(sim.OneC, op.Key), 1; got != want {
			t.Fatalf("calls = %d, want %d (no hidden resend)", got, want)
		}
		found, err := c.Lookup(context.Background(), op)
		if err != nil {
			t.Fatalf("lookup: %v", err)
		}
		if got, want := found.ObjectID, "INV-"; !objectID(got, want) {
			t.Fatalf("lookup object id = %q, want %q", got, want)
		}
		again := MustExecute(t, c, op)
		if again.ObjectID != found.ObjectID {
			t.Fatalf("execute again = %q, want %q", again.ObjectID, found.ObjectID)
		}
		effects(t, s, op.Key, 1)
	})

	t.Run("DelayPastTimeout", func(t *testing.T) {
		t.Parallel()
		s, c, base := setup(t, 200*time.Millisecond)
		patient := MustNew(t, base+"/onec", 2*time.Second)
		op := invoiceOp(t, "test:invoice.create:order-1:v1")
		// 1C is slow inside its transaction past the gateway's deadline:
		// the module checks the deadline the client sent right before it
		// commits, and rolls back instead of committing late.
		inject(t, s, sim.Fault{Fault: sim.FaultDelay, DelayMS: 400})
		_, err := c.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Reconcile, codes.OutcomeUnknown, "")
		// The look-up waits behind the key's lock until the slow call has
		// ended, so its answer is final: nothing was made.
		if _, err := patient.Lookup(context.Background(), op); !errors.Is(err, adapters.ErrNotFound) {
			t.Fatalf("lookup after the refused late commit: %v, want ErrNotFound", err)
		}
		effects(t, s, op.Key, 0)
		again := MustExecute(t, c, op)
		if !objectID(again.ObjectID, "INV-") {
			t.Fatalf("execute again = %+v", again)
		}
		effects(t, s, op.Key, 1)
	})

	t.Run("LateCommit", func(t *testing.T) {
		t.Parallel()
		s, c, base := setup(t, 200*time.Millisecond)
		patient := MustNew(t, base+"/onec", 2*time.Second)
		op := invoiceOp(t, "test:invoice.create:order-1:v1")
		// A commit that lands after the gateway has gone anyway (1C's
		// clock behind the gateway's): the look-up waits for it.
		inject(t, s, sim.Fault{Fault: sim.FaultLateCommit, DelayMS: 400})
		_, err := c.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Reconcile, codes.OutcomeUnknown, "")
		found, err := patient.Lookup(context.Background(), op)
		if err != nil {
			t.Fatalf("lookup: %v", err)
		}
		again := MustExecute(t, c, op)
		if again.ObjectID != found.ObjectID || !objectID(found.ObjectID, "INV-") {
			t.Fatalf("lookup %q, execute again %q, want one INV- id twice", found.ObjectID, again.ObjectID)
		}
		effects(t, s, op.Key, 1)
	})

	t.Run("InternalError", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t, time.Second)
		op := invoiceOp(t, "test:invoice.create:order-1:v1")
		// The module's answer to an unexpected exception: rolled back, but
		// the gateway cannot know that, so it looks the key up.
		inject(t, s, sim.Fault{Fault: sim.FaultStatus, Status: 500})
		_, err := c.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Reconcile, codes.OutcomeUnknown, "")
		if _, err := c.Lookup(context.Background(), op); !errors.Is(err, adapters.ErrNotFound) {
			t.Fatalf("lookup after a 500: %v, want ErrNotFound", err)
		}
		effects(t, s, op.Key, 0)
	})

	t.Run("LockConflict", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t, 2*time.Second)
		s.SetOneCLockTimeout(50 * time.Millisecond)
		op := invoiceOp(t, "test:invoice.create:order-1:v1")
		// A first call holds the key's lock inside its transaction; the
		// second waits the lock timeout and is answered 503: certainly no
		// effect, so the gateway sends the key again later.
		inject(t, s, sim.Fault{Fault: sim.FaultDelay, DelayMS: 1000})
		first := make(chan error, 1)
		go func() { _, err := c.Execute(context.Background(), op); first <- err }()
		for s.Calls(sim.OneC, op.Key) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		_, err := c.Execute(context.Background(), op)
		if e := (*adapters.Error)(nil); !errors.As(err, &e) || e.Code != codes.TargetUnavailable {
			// The second call took the lock before the first did.
			<-first
			t.Skipf("the second call was not sent while the first held the lock: %v", err)
		}
		adapterstest.WantError(t, err, adapters.Retry, codes.TargetUnavailable, "")
		if err := <-first; err != nil {
			t.Fatalf("first call: %v", err)
		}
		effects(t, s, op.Key, 1)
	})

	t.Run("ContextCanceled", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t, time.Second)
		op := invoiceOp(t, "test:invoice.create:order-1:v1")
		inject(t, s, sim.Fault{Fault: sim.FaultDelay, DelayMS: 300})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := c.Execute(ctx, op)
		adapterstest.WantError(t, err, adapters.Reconcile, codes.OutcomeUnknown, "")
	})
}

func TestRetryPolicy(t *testing.T) {
	t.Parallel()
	s, c, _ := setup(t, time.Second)
	op := invoiceOp(t, "test:invoice.create:order-1:v1")
	inject(t, s, sim.Fault{Fault: sim.FaultStatus, Status: 503, Times: 2})
	policy := adapters.RetryPolicy{MaxAttempts: 4, InitialDelay: 10 * time.Millisecond, Multiplier: 2, MaxDelay: 20 * time.Millisecond, Jitter: true}
	var seen []int
	res, attempts, err := policy.Execute(context.Background(), c, op, func(n int) error { seen = append(seen, n); return nil })
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	if got, want := attempts, 3; got != want {
		t.Fatalf("attempts = %d, want %d (seen %v)", got, want, seen)
	}
	if got, want := res.ObjectID, "INV-"; !objectID(got, want) {
		t.Fatalf("object id = %q, want %q", got, want)
	}
	effects(t, s, op.Key, 1)
	if got, want := s.Calls(sim.OneC, op.Key), 3; got != want {
		t.Fatalf("calls = %d, want %d", got, want)
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		_, c, _ := setup(t, time.Second)
		op := draftOp(t, "test:sales_order.create_draft:d-1:v1")
		made := MustExecute(t, c, op)
		found, err := c.Lookup(context.Background(), op)
		if err != nil {
			t.Fatalf("lookup: %v", err)
		}
		if found.ObjectID != made.ObjectID || found.Data["state"] != "draft" || found.Data["number"] != "ОГ00-000001" {
			t.Fatalf("lookup = %+v, want %+v", found, made)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		_, c, _ := setup(t, time.Second)
		_, err := c.Lookup(context.Background(), invoiceOp(t, "test:invoice.create:never:v1"))
		if !errors.Is(err, adapters.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})

	t.Run("OtherIntent", func(t *testing.T) {
		t.Parallel()
		_, c, _ := setup(t, time.Second)
		op := invoiceOp(t, "test:invoice.create:order-1:v1")
		MustExecute(t, c, op)
		op.Intent = "sales_order.create_draft"
		if _, err := c.Lookup(context.Background(), op); !errors.Is(err, adapters.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound: keys are unique per intent", err)
		}
	})

	t.Run("ErrUnavailable", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t, time.Second)
		inject(t, s, sim.Fault{Fault: sim.FaultStatus, Status: 503, On: sim.OnLookup})
		_, err := c.Lookup(context.Background(), invoiceOp(t, "test:invoice.create:order-1:v1"))
		adapterstest.WantError(t, err, adapters.Retry, codes.TargetUnavailable, "")
	})

	t.Run("ErrWrongPublication", func(t *testing.T) {
		t.Parallel()
		_, _, base := setup(t, time.Second)
		// A 404 from the web server, not from the service, is no "not found",
		// and no refusal either: the configuration is wrong, the key lives on.
		c := MustNew(t, base+"/elsewhere", time.Second)
		_, err := c.Lookup(context.Background(), invoiceOp(t, "test:invoice.create:order-1:v1"))
		if errors.Is(err, adapters.ErrNotFound) {
			t.Fatal("a 404 page was taken for 'no effect'")
		}
		adapterstest.WantError(t, err, adapters.Retry, codes.TargetNotPublished, "")
	})
}

func TestSalesOrder(t *testing.T) {
	t.Parallel()
	s, c, _ := setup(t, time.Second)
	ctx := context.Background()
	draft := MustExecute(t, c, draftOp(t, "test:sales_order.create_draft:d-1:v1"))
	if got, want := draft.ObjectID, "SO-"; !objectID(got, want) {
		t.Fatalf("draft id = %q, want %q", got, want)
	}
	if got, want := draft.Data["state"], "draft"; got != want {
		t.Fatalf("draft state = %v, want %v", got, want)
	}
	st, err := c.OrderStatus(ctx, draft.ObjectID)
	if err != nil || st.Data["state"] != "draft" {
		t.Fatalf("status = %+v, %v; want draft", st, err)
	}

	post := postOp(t, "test:sales_order.post:SO-000001:v1", draft.ObjectID)
	posted := MustExecute(t, c, post)
	if posted.ObjectID != draft.ObjectID || posted.Data["state"] != "posted" || posted.Data["number"] != "ОГ00-000001" {
		t.Fatalf("post = %+v, want SO-000001 posted", posted)
	}
	effects(t, s, post.Key, 1)
	if again := MustExecute(t, c, post); again.ObjectID != posted.ObjectID || again.Data["state"] != "posted" {
		t.Fatalf("post replay = %+v", again)
	}
	effects(t, s, post.Key, 1)
	st, err = c.OrderStatus(ctx, draft.ObjectID)
	if err != nil || st.ObjectID != draft.ObjectID || st.Data["state"] != "posted" {
		t.Fatalf("status = %+v, %v; want posted", st, err)
	}

	t.Run("ErrAlreadyPosted", func(t *testing.T) {
		_, err := c.Execute(ctx, postOp(t, "test:sales_order.post:SO-000001:v2", draft.ObjectID))
		e := adapterstest.WantError(t, err, adapters.Final, codes.InvalidState, "order_id")
		if e.Field != "order_id" {
			t.Fatalf("field = %q, want order_id", e.Field)
		}
	})
	t.Run("ErrUnknownOrder", func(t *testing.T) {
		_, err := c.Execute(ctx, postOp(t, "test:sales_order.post:SO-999999:v1", "SO-999999"))
		e := adapterstest.WantError(t, err, adapters.Final, codes.ReferenceNotFound, "order_id")
		if e.Field != "order_id" {
			t.Fatalf("field = %q, want order_id", e.Field)
		}
	})
	t.Run("ErrStatusNotFound", func(t *testing.T) {
		_, err := c.OrderStatus(ctx, "SO-404")
		e := adapterstest.WantError(t, err, adapters.Final, codes.ReferenceNotFound, "order_id")
		if !errors.Is(err, adapters.ErrNotFound) || e.Field != "order_id" {
			t.Fatalf("err = %v, want REFERENCE_NOT_FOUND on order_id wrapping ErrNotFound", err)
		}
	})
}

func TestValidate(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t, time.Second)
		op := invoiceOp(t, "test:invoice.create:order-1:v1")
		plan, err := c.Validate(context.Background(), op)
		if err != nil {
			t.Fatalf("validate: %v", err)
		}
		if got, want := plan.Data["total_minor"], json.Number("125000"); got != want {
			t.Fatalf("total = %v, want %v (plan %v)", got, want, plan.Data)
		}
		effects(t, s, op.Key, 0)
		if got := s.Calls(sim.OneC, op.Key); got != 0 {
			t.Fatalf("calls = %d, want 0", got)
		}
		if _, err := c.Lookup(context.Background(), op); !errors.Is(err, adapters.ErrNotFound) {
			t.Fatalf("lookup after validate: %v, want ErrNotFound", err)
		}
		// Execute after validate is the first document.
		if res := MustExecute(t, c, op); !objectID(res.ObjectID, "INV-") {
			t.Fatalf("object id = %q", res.ObjectID)
		}
	})
	t.Run("ErrReference", func(t *testing.T) {
		t.Parallel()
		_, c, _ := setup(t, time.Second)
		_, err := c.Validate(context.Background(), newOp(t, "", "invoice.create", invoice("customer-blocked-1")))
		e := adapterstest.WantError(t, err, adapters.Final, codes.ReferenceInactive, "customer_id")
		if e.Field != "customer_id" {
			t.Fatalf("field = %q, want customer_id", e.Field)
		}
	})
	t.Run("ErrKeyMismatch", func(t *testing.T) {
		t.Parallel()
		_, c, _ := setup(t, time.Second)
		key := "test:invoice.create:order-1:v1"
		MustExecute(t, c, invoiceOp(t, key))
		_, err := c.Validate(context.Background(), newOp(t, key, "invoice.create", invoice("customer-2001")))
		adapterstest.WantError(t, err, adapters.Final, codes.KeyMismatch, "")
	})
}

// basicAuth puts the simulator behind HTTP Basic authentication.
func basicAuth(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != testUser || p != testPassword {
			w.Header().Set("WWW-Authenticate", `Basic realm="1C"`)
			http.Error(w, "authorization required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func TestBasicAuth(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(basicAuth(sim.New()))
	t.Cleanup(ts.Close)

	MustExecute(t, MustNew(t, ts.URL+"/onec", time.Second), invoiceOp(t, "test:invoice.create:order-1:v1"))

	wrong, err := onec.New(onec.Config{BaseURL: ts.URL + "/onec", Username: testUser, Password: "wrong-password"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = wrong.Execute(context.Background(), invoiceOp(t, "test:invoice.create:order-2:v1"))
	adapterstest.WantError(t, err, adapters.Retry, codes.TargetPermissionDenied, "")
}

// TestErrorsHideSecrets collects the errors of every failure path and checks
// none quotes the password, the host or the base URL.
func TestErrorsHideSecrets(t *testing.T) {
	t.Parallel()
	s, c, base := setup(t, 200*time.Millisecond)
	ctx := context.Background()
	var errs []error
	collect := func(_ any, err error) {
		if err == nil {
			t.Fatal("want an error")
		}
		errs = append(errs, err)
	}
	collect(c.Execute(ctx, newOp(t, "test:invoice.create:a:v1", "invoice.create", invoice("customer-404"))))
	MustExecute(t, c, invoiceOp(t, "test:invoice.create:b:v1"))
	collect(c.Execute(ctx, newOp(t, "test:invoice.create:b:v1", "invoice.create", invoice("customer-2001"))))
	inject(t, s, sim.Fault{Fault: sim.FaultStatus, Status: 503})
	collect(c.Execute(ctx, invoiceOp(t, "test:invoice.create:c:v1")))
	inject(t, s, sim.Fault{Fault: sim.FaultReset})
	collect(c.Execute(ctx, invoiceOp(t, "test:invoice.create:d:v1")))
	inject(t, s, sim.Fault{Fault: sim.FaultDropResponse})
	collect(c.Execute(ctx, invoiceOp(t, "test:invoice.create:e:v1")))
	inject(t, s, sim.Fault{Fault: sim.FaultDelay, DelayMS: 400})
	collect(c.Execute(ctx, invoiceOp(t, "test:invoice.create:f:v1")))
	collect(c.OrderStatus(ctx, "SO-404"))
	collect(MustNew(t, base+"/elsewhere", time.Second).Execute(ctx, invoiceOp(t, "test:invoice.create:g:v1")))

	auth := httptest.NewServer(basicAuth(sim.New()))
	t.Cleanup(auth.Close)
	wrong, _ := onec.New(onec.Config{BaseURL: auth.URL + "/onec", Username: "someone", Password: testPassword + "x"})
	collect(wrong.Execute(ctx, invoiceOp(t, "test:invoice.create:h:v1")))

	closed := httptest.NewServer(sim.New())
	closedURL := closed.URL
	closed.Close()
	collect(MustNew(t, closedURL+"/onec", time.Second).Execute(ctx, invoiceOp(t, "test:invoice.create:i:v1")))

	for _, bad := range []string{"http://" + testUser + ":" + testPassword + "@127.0.0.1:1/onec", "ftp://127.0.0.1/" + testPassword, "::" + testPassword} {
		_, err := onec.New(onec.Config{BaseURL: bad})
		collect(nil, err)
	}

	u, _ := url.Parse(base)
	for _, err := range errs {
		text := err.Error()
		for _, secret := range []string{testPassword, u.Host, u.Hostname(), base, "Authorization", "Basic "} {
			if strings.Contains(text, secret) {
				t.Errorf("error %q contains %q", text, secret)
			}
		}
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "onec", "/onec", "ftp://host/onec", "http://", "http://host/onec?x=1", "http://host/onec#f", "http://u:p@host/onec"} {
		if _, err := onec.New(onec.Config{BaseURL: bad}); err == nil {
			t.Errorf("New(%q) = nil error, want an error", bad)
		}
	}
	for _, good := range []string{"http://host/accounting", "https://host:8443/base/", "http://[::1]:9001/onec"} {
		c, err := onec.New(onec.Config{BaseURL: good})
		if err != nil {
			t.Errorf("New(%q): %v", good, err)
			continue
		}
		if got, want := c.Name(), "onec"; got != want {
			t.Errorf("name = %q, want %q", got, want)
		}
	}
	if _, err := onec.New(onec.Config{BaseURL: "http://host/onec", Timeout: -time.Second}); err == nil {
		t.Error("negative timeout accepted")
	}
}

// A gateway with many operations in flight keeps its connections to 1C
// open between them: a second wave of 32 parallel calls dials nothing.
func TestConnectionsKept(t *testing.T) {
	t.Parallel()
	s := sim.New()
	// The first wave's calls are held until all 32 are in flight, so it
	// opens 32 connections; the second wave then finds them all idle.
	var arrived atomic.Int64
	all := make(chan struct{})
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := arrived.Add(1); n == 32 {
			close(all)
		} else if n < 32 {
			<-all
		}
		s.ServeHTTP(w, r)
	}))
	var dialed atomic.Int64
	ts.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			dialed.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	c := MustNew(t, ts.URL+"/onec", 5*time.Second)
	wave := func(n int) {
		var wg sync.WaitGroup
		for i := range 32 {
			wg.Go(func() { MustExecute(t, c, invoiceOp(t, fmt.Sprintf("test:invoice.create:conn-%d-%d:v1", n, i))) })
		}
		wg.Wait()
	}
	wave(1)
	first := dialed.Load()
	wave(2)
	if again := dialed.Load() - first; again != 0 {
		t.Fatalf("the second wave dialed %d new connections (the first %d)", again, first)
	}
}
