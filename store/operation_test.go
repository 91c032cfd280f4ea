package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

const fp1 = "1111111111111111111111111111111111111111111111111111111111111111"
const fp2 = "2222222222222222222222222222222222222222222222222222222222222222"

func claimReq(key, fingerprint, owner string) store.ClaimRequest {
	return store.ClaimRequest{
		Key: key, Intent: "invoice.create", Fingerprint: fingerprint, TargetSystem: "onec",
		Agent: "agent-a", Payload: json.RawMessage(`{"order_id":"o-1"}`),
		Owner: owner, Lease: 30 * time.Second,
	}
}

// MustClaim claims req and fails the test unless the decision is want.
func MustClaim(tb testing.TB, s *store.Store, req store.ClaimRequest, want store.Decision) store.Operation {
	tb.Helper()
	d, op, err := s.Claim(context.Background(), req)
	if err != nil {
		tb.Fatal(err)
	}
	if d != want {
		tb.Fatalf("claim %s: decision %v, want %v (row status %s)", req.Key, d, want, op.Status)
	}
	return op
}

func TestClaim(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		const key = "test:invoice.create:order-1:v1"

		t.Run("New", func(t *testing.T) {
			s := j.Open(t)
			op := MustClaim(t, s, claimReq(key, fp1, "run-1"), store.DecisionExecute)
			if op.Status != store.StatusStarted || op.LeaseOwner != "run-1" || op.AttemptCount != 1 {
				t.Fatalf("new row = %+v", op)
			}
		})
		t.Run("OnlyNew", func(t *testing.T) {
			// A claim of a new key only: the key's first claim runs; once the
			// key has a row, it is answered as it is and nothing is written.
			s := j.Open(t)
			req := claimReq(key, fp1, "run-1")
			req.OnlyNew = true
			first := MustClaim(t, s, req, store.DecisionExecute)
			for _, other := range []store.ClaimRequest{req, claimReq(key, fp2, "run-2")} {
				other.OnlyNew = true
				other.Duplicates = &store.DuplicateCheck{BusinessKey: strings.Repeat("ab", 32), Window: time.Hour, Action: store.DuplicateBlock}
				got := MustClaim(t, s, other, store.DecisionExists)
				if !reflect.DeepEqual(got, first) {
					t.Fatalf("answered %+v, want the row %+v", got, first)
				}
			}
			events, err := s.AuditEvents(ctx, store.AuditFilter{OperationKey: key})
			if err != nil || len(events) != 1 {
				t.Fatalf("audit events %+v, %v; want the first claim's only", events, err)
			}
		})
		t.Run("InProgress", func(t *testing.T) {
			s := j.Open(t)
			MustClaim(t, s, claimReq(key, fp1, "run-1"), store.DecisionExecute)
			MustClaim(t, s, claimReq(key, fp1, "run-1"), store.DecisionInProgress)
		})
		t.Run("Replay", func(t *testing.T) {
			s := j.Open(t)
			MustClaim(t, s, claimReq(key, fp1, "run-1"), store.DecisionExecute)
			if err := s.Complete(ctx, key, "run-1", "INV-000001", json.RawMessage(`{"number":"000001"}`)); err != nil {
				t.Fatal(err)
			}
			op := MustClaim(t, s, claimReq(key, fp1, "run-1"), store.DecisionReplay)
			if got, want := op.TargetObjectID, "INV-000001"; got != want {
				t.Fatalf("object id = %q, want %q", got, want)
			}
			if got, want := string(op.Result), `{"number":"000001"}`; got != want {
				t.Fatalf("result = %s, want %s", got, want)
			}
		})
		t.Run("ReplayFailedFinal", func(t *testing.T) {
			s := j.Open(t)
			MustClaim(t, s, claimReq(key, fp1, "run-1"), store.DecisionExecute)
			if err := s.Fail(ctx, key, "run-1", true, store.Failure{Code: "REFERENCE_NOT_FOUND", Field: "customer_id", Message: "m"}); err != nil {
				t.Fatal(err)
			}
			op := MustClaim(t, s, claimReq(key, fp1, "run-1"), store.DecisionReplay)
			if op.Status != store.StatusFailedFinal || op.ErrorCode != "REFERENCE_NOT_FOUND" || op.ErrorField != "customer_id" {
				t.Fatalf("row = %+v", op)
			}
		})
		t.Run("ErrMismatch", func(t *testing.T) {
			s := j.Open(t)
			MustClaim(t, s, claimReq(key, fp1, "run-1"), store.DecisionExecute)
			op := MustClaim(t, s, claimReq(key, fp2, "run-1"), store.DecisionMismatch)
			if got, want := op.Fingerprint, fp1; got != want {
				t.Fatalf("stored fingerprint changed to %s", got)
			}
		})
		t.Run("ErrForeign", func(t *testing.T) {
			s := j.Open(t)
			MustClaim(t, s, claimReq(key, fp1, "run-1"), store.DecisionExecute)
			req := claimReq(key, fp1, "run-1")
			req.Agent = "agent-b"
			MustClaim(t, s, req, store.DecisionForeign)
		})
		t.Run("ExpiredLeaseResumes", func(t *testing.T) {
			s := j.Open(t)
			c := pinClock(s)
			MustClaim(t, s, claimReq(key, fp1, "run-1"), store.DecisionExecute)
			c.Advance(31 * time.Second)
			op := MustClaim(t, s, claimReq(key, fp1, "run-2"), store.DecisionResume)
			if op.LeaseOwner != "run-2" || op.ResumedFrom != store.StatusStarted {
				t.Fatalf("row = %+v", op)
			}
			// The old holder is fenced off.
			err := s.Complete(ctx, key, "run-1", "INV-1", nil)
			if !errors.Is(err, store.ErrLeaseLost) {
				t.Fatalf("complete by the old holder: %v, want ErrLeaseLost", err)
			}
		})
		t.Run("UnknownResumes", func(t *testing.T) {
			s := j.Open(t)
			MustClaim(t, s, claimReq(key, fp1, "run-1"), store.DecisionExecute)
			if err := s.MarkUnknown(ctx, key, "run-1", "", store.Failure{Code: "OUTCOME_UNKNOWN"}, time.Now()); err != nil {
				t.Fatal(err)
			}
			op, err := s.Get(ctx, key)
			if err != nil || op.Status != store.StatusUnknown || op.LeaseOwner != "" {
				t.Fatalf("after MarkUnknown: %+v, %v", op, err)
			}
			op = MustClaim(t, s, claimReq(key, fp1, "run-1"), store.DecisionResume)
			if op.ResumedFrom != store.StatusUnknown || op.Status != store.StatusStarted {
				t.Fatalf("row = %+v", op)
			}
		})
		t.Run("RetryableResumes", func(t *testing.T) {
			s := j.Open(t)
			MustClaim(t, s, claimReq(key, fp1, "run-1"), store.DecisionExecute)
			if err := s.Fail(ctx, key, "run-1", false, store.Failure{Code: "TARGET_UNAVAILABLE"}); err != nil {
				t.Fatal(err)
			}
			op := MustClaim(t, s, claimReq(key, fp1, "run-1"), store.DecisionResume)
			if op.ResumedFrom != store.StatusFailedRetryable {
				t.Fatalf("row = %+v", op)
			}
			if err := s.RecordAttempt(ctx, key, "run-1", 2, time.Minute); err != nil {
				t.Fatal(err)
			}
			if op, _ = s.Get(ctx, key); op.AttemptCount != 2 {
				t.Fatalf("attempt count = %d, want 2", op.AttemptCount)
			}
		})
		t.Run("Refused", func(t *testing.T) {
			s := j.Open(t)
			req := claimReq(key, fp1, "run-1")
			req.Refused = &store.Failure{Code: "REFERENCE_NOT_FOUND", Field: "customer_id", Message: "m", Detail: "1C said so"}
			op := MustClaim(t, s, req, store.DecisionRefused)
			if op.Status != store.StatusFailedFinal || op.AttemptCount != 0 || op.LeaseOwner != "" || op.ErrorField != "customer_id" || op.CompletedAt.IsZero() {
				t.Fatalf("refused row = %+v", op)
			}
			// Replayed afterwards; a later refusal does not touch the row.
			MustClaim(t, s, req, store.DecisionReplay)
			events, _ := s.AuditEvents(ctx, store.AuditFilter{OperationKey: key})
			if len(events) != 1 || events[0].Event != "operation.failed_final" || !strings.Contains(string(events[0].Detail), "1C said so") {
				t.Fatalf("audit %+v", events)
			}
		})
		t.Run("AwaitingApproval", func(t *testing.T) {
			s := j.Open(t)
			req := claimReq("test:payment.charge:order-1:v1", fp1, "run-1")
			req.AwaitApproval = true
			op := MustClaim(t, s, req, store.DecisionAwaitingApproval)
			if op.Status != store.StatusAwaitingApproval || op.LeaseOwner != "" || op.AttemptCount != 0 {
				t.Fatalf("row = %+v", op)
			}
			MustClaim(t, s, req, store.DecisionAwaitingApproval)
		})
	})
}

// TestClaimParallel races many claims of one key, across two Store
// handles on the same file (as two processes would be): exactly one wins.
func TestClaimParallel(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		path := j.Location(t)
		var stores [2]*store.Store
		for i := range stores {
			s, err := store.Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			stores[i] = s
		}
		const n = 40
		var wg sync.WaitGroup
		decisions := make(chan store.Decision, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, _, err := stores[i%2].Claim(context.Background(), claimReq("test:invoice.create:race:v1", fp1, fmt.Sprint("run-", i)))
				if err != nil {
					t.Error(err)
					return
				}
				decisions <- d
			}()
		}
		wg.Wait()
		close(decisions)
		count := map[store.Decision]int{}
		for d := range decisions {
			count[d]++
		}
		if got, want := count[store.DecisionExecute], 1; got != want {
			t.Fatalf("executors = %d, want %d (decisions %v)", got, want, count)
		}
		if got, want := count[store.DecisionInProgress], n-1; got != want {
			t.Fatalf("in progress = %d, want %d", got, want)
		}
	})
}

func TestOrphanLeases(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		s := j.Open(t)
		MustClaim(t, s, claimReq("test:invoice.create:a:v1", fp1, "dead-run"), store.DecisionExecute)
		MustClaim(t, s, claimReq("test:invoice.create:b:v1", fp1, "live-run"), store.DecisionExecute)
		MustClaim(t, s, claimReq("test:invoice.create:c:v1", fp1, "live-run/3f2a"), store.DecisionExecute)
		MustClaim(t, s, claimReq("test:invoice.create:d:v1", fp1, "live-runner/1"), store.DecisionExecute)
		n, err := s.OrphanLeases(ctx, "live-run")
		if err != nil {
			t.Fatal(err)
		}
		wantN, want := 2, map[string]store.Status{"a": store.StatusUnknown, "b": store.StatusStarted, "c": store.StatusStarted, "d": store.StatusUnknown}
		if n != wantN {
			t.Fatalf("orphaned %d rows, want %d", n, wantN)
		}
		for key, want := range want {
			if op, _ := s.Get(ctx, "test:invoice.create:"+key+":v1"); op.Status != want {
				t.Errorf("%s: %s, want %s", key, op.Status, want)
			}
		}
	})
}

func TestGet(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		s := j.Open(t)
		if _, err := s.Get(context.Background(), "test:invoice.create:none:v1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get of a missing key: %v, want ErrNotFound", err)
		}
	})
}

// TestSchemaChecks proves the journal's own constraints refuse bad rows
// even when the code is bypassed.
func TestSchemaChecks(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		s := j.Open(t)
		db := store.RawDB(t, s)
		insert := func(status, fingerprint string) error {
			_, err := db.Exec(`INSERT INTO operations (operation_key, intent, fingerprint, status, target_system, agent, payload, created_at, updated_at)
			VALUES (?, 'invoice.create', ?, ?, 'onec', 'a', '{}', 'now', 'now')`, "k-"+status+fingerprint[:2], fingerprint, status)
			return err
		}
		if err := insert("done", fp1); err == nil || !strings.Contains(strings.ToUpper(err.Error()), "CHECK") {
			t.Fatalf("status 'done' accepted: %v", err)
		}
		if err := insert("started", "abc"); err == nil {
			t.Fatal("short fingerprint accepted")
		}
		if err := insert("succeeded", fp1); err == nil {
			t.Fatal("succeeded without object id accepted")
		}
		if err := insert("started", fp2); err != nil {
			t.Fatalf("valid row refused: %v", err)
		}
		if err := insert("started", fp2); err == nil {
			t.Fatal("duplicate key accepted")
		}
	})
}

// An object at a target leads back to the operation that made it, through
// an index (a refund's approval shows the charge it refunds).
func TestByObject(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		s := j.Open(t)
		const key = "test:invoice.create:by-object:v1"
		MustClaim(t, s, claimReq(key, fp1, "run-1"), store.DecisionExecute)
		if err := s.Complete(ctx, key, "run-1", "INV-77", nil); err != nil {
			t.Fatal(err)
		}
		op, err := s.ByObject(ctx, "onec", "INV-77")
		if err != nil || op.Key != key {
			t.Fatalf("ByObject = %+v, %v", op, err)
		}
		if _, err := s.ByObject(ctx, "crm", "INV-77"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("another target's object: %v, want ErrNotFound", err)
		}
		if j.Postgres() {
			return // the plan below is SQLite's
		}
		db, err := sql.Open("sqlite", s.Path())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var plan strings.Builder
		rows, err := db.Query(`EXPLAIN QUERY PLAN SELECT operation_key FROM operations WHERE target_system = ? AND target_object_id = ? ORDER BY created_at LIMIT 1`, "onec", "INV-77")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id, parent, unused int
			var detail string
			rows.Scan(&id, &parent, &unused, &detail)
			plan.WriteString(detail + "\n")
		}
		rows.Close()
		if !strings.Contains(plan.String(), "operations_object (target_object_id=?") {
			t.Fatalf("the look-up does not use its index:\n%s", plan.String())
		}
	})
}

func TestDecisionString(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		d    store.Decision
		want string
	}{
		{store.DecisionExecute, "execute"},
		{store.DecisionAwaitingApproval, "awaiting_approval"},
		{store.DecisionRefused, "refused"},
		{0, "Decision(0)"},
		{store.DecisionDuplicate, "duplicate"},
		{store.DecisionExists, "exists"},
		{store.DecisionExists + 1, "Decision(11)"},
		{-1, "Decision(-1)"},
	} {
		if got := c.d.String(); got != c.want {
			t.Errorf("Decision(%d).String() = %q, want %q", int(c.d), got, c.want)
		}
	}
}

// Completed returns the row as its completion committed it, so the answer
// to the agent needs no second read: exactly the row the journal holds,
// attempts recorded after the claim included; a lease not held changes
// nothing.
func TestCompletedReturnsTheRow(t *testing.T) {
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		s := j.Open(t)
		ctx := context.Background()
		key := "test:invoice.create:completed:v1"
		claimed := MustClaim(t, s, claimReq(key, fp1, "run-1"), store.DecisionExecute)
		if err := s.RecordAttempt(ctx, key, "run-1", 2, time.Minute); err != nil {
			t.Fatal(err)
		}
		other := claimed
		other.LeaseOwner = "run-2"
		if _, err := s.Completed(ctx, other, "INV-1", nil); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("completed under another's lease: %v", err)
		}
		op, err := s.Completed(ctx, claimed, "INV-000001", json.RawMessage(`{"number":"000001"}`))
		if err != nil {
			t.Fatal(err)
		}
		read, err := s.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if op.Status != store.StatusSucceeded || op.AttemptCount != 2 || !reflect.DeepEqual(op, read) {
			t.Fatalf("returned %+v\nread     %+v", op, read)
		}
	})
}

// A new key's claim answers the row it wrote without reading it back:
// that answer is exactly what the journal then holds, for each kind of
// new row (to run, refused, awaiting approval, a suspected duplicate held
// or let through).
func TestClaimAnswersTheRowWritten(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		s := j.Open(t)
		rule := func(action store.DuplicateAction) *store.DuplicateCheck {
			return &store.DuplicateCheck{BusinessKey: strings.Repeat("ab", 32), Window: time.Hour, Action: action}
		}
		withRule := func(r store.ClaimRequest, action store.DuplicateAction) store.ClaimRequest {
			r.Duplicates = rule(action)
			r.IntentVersion, r.IntentDigest, r.ActorID, r.RequestID = 3, strings.Repeat("cd", 32), "user-7", "req-1"
			return r
		}
		refused := claimReq("test:invoice.create:refused:v1", fp1, "run-1")
		refused.Refused = &store.Failure{Code: "REFERENCE_NOT_FOUND", Field: "customer_id", Message: "no such customer"}
		money := claimReq("test:invoice.create:money:v1", fp1, "run-1")
		money.AwaitApproval, money.ApprovalTTL = true, time.Hour
		for _, c := range []struct {
			req  store.ClaimRequest
			want store.Decision
		}{
			{withRule(claimReq("test:invoice.create:first:v1", fp1, "run-1"), store.DuplicateWarn), store.DecisionExecute},
			{withRule(claimReq("test:invoice.create:warned:v1", fp1, "run-1"), store.DuplicateWarn), store.DecisionExecute},
			{withRule(claimReq("test:invoice.create:held:v1", fp1, "run-1"), store.DuplicateHold), store.DecisionAwaitingApproval},
			{refused, store.DecisionRefused},
			{money, store.DecisionAwaitingApproval},
		} {
			answered := MustClaim(t, s, c.req, c.want)
			answered.Suspected = false // not stored
			held, err := s.Get(ctx, c.req.Key)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(answered, held) {
				t.Errorf("%s: the claim answered\n%+v\nthe journal holds\n%+v", c.req.Key, answered, held)
			}
		}
	})
}
