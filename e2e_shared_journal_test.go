package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// Several gateways on one PostgreSQL journal, as a firm runs them behind
// a load balancer: the real binaries, one database, the simulators shared.

// postTo sends envelope with key to the gateway at addr until the answer
// is final (200 or 422), as an agent retrying would; it returns the last
// answer's status and body.
func postTo(t *testing.T, addr, token, key, envelope string) (int, map[string]any) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/operations", strings.NewReader(envelope))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("%s: %v", addr, err)
			return 0, nil
		}
		var body map[string]any
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil {
			t.Errorf("%s: answer %d is not JSON: %v", addr, resp.StatusCode, err)
			return resp.StatusCode, nil
		}
		switch resp.StatusCode {
		case 200, 422:
			return resp.StatusCode, body
		case 202, 409, 503:
			if resp.StatusCode == 409 && errorCode(body) != "IDEMPOTENCY_KEY_IN_USE" {
				return resp.StatusCode, body
			}
			time.Sleep(20 * time.Millisecond)
		default:
			return resp.StatusCode, body
		}
	}
	t.Errorf("%s: %s not final after 60 s", addr, key)
	return 0, nil
}

// errorCode is the first machine code of an error answer.
func errorCode(body map[string]any) string {
	if errs, _ := body["errors"].([]any); len(errs) > 0 {
		if e, _ := errs[0].(map[string]any); e != nil {
			code, _ := e["code"].(string)
			return code
		}
	}
	return ""
}

// 50 identical requests at once, spread over two gateways on one
// journal: one effect at the target, one object id in every answer.
func TestSharedJournalOneEffect(t *testing.T) {
	t.Parallel()
	c := newRig(t, forLoad(2000, 1500), onJournal(storetest.Database(t)))
	c.addInstance(t)
	// The first attempt is slow, so the other requests arrive while it
	// holds the key.
	c.fault(`{"target":"onec","fault":"delay","delay_ms":300,"times":1}`)

	const key, n = "test:invoice.create:shared-one:v1", 50
	body := fmt.Sprintf(e2eInvoice, "shared-one", 2)
	objects := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		addr := []string{c.addr, c.others[0].addr}[i%2]
		wg.Go(func() {
			code, ans := postTo(t, addr, c.token, key, body)
			if code != 200 {
				t.Errorf("request %d at %s: %d %v", i, addr, code, ans)
				return
			}
			objects[i], _ = ans["target_object_id"].(string)
		})
	}
	wg.Wait()
	if got := c.simJSON("/_sim/effects")["onec"][key]; got != 1 {
		t.Fatalf("%d effects at 1C for one key sent %d times over two gateways, want 1", got, n)
	}
	slices.Sort(objects)
	if objects = slices.Compact(objects); len(objects) != 1 || objects[0] == "" {
		t.Fatalf("answers name objects %q, want one", objects)
	}
	st, err := store.Open(context.Background(), c.journal)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	row, err := st.Get(context.Background(), key)
	if err != nil || row.Status != store.StatusSucceeded || row.TargetObjectID != objects[0] || row.AttemptCount != 1 {
		t.Fatalf("journal row %+v, %v; want succeeded with %s after one attempt", row, err, objects[0])
	}
}

// The chaos scenario on two gateways sharing one journal: faults at every
// target, agents retrying over both, one gateway killed -9 and started
// again several times while the other serves. Every key ends with at most
// one effect, every succeeded key with exactly one, nothing accepted is
// lost, and the audit chain both wrote is whole.
func TestSharedJournalChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test skipped in -short mode")
	}
	t.Parallel()
	c := newRig(t, forChaos(t), onJournal(storetest.Database(t)))
	c.addInstance(t)
	runChaos(t, c, 4)
	out := runBinary(t, c.env, "audit", "verify", "--config", c.config, "--data", c.dataDir)
	if !strings.Contains(out, "intact") {
		t.Fatalf("audit verify after chaos on two gateways: %s", out)
	}
}

// A gateway killed while it holds an operation's lease (its request is at
// the target): the other gateway takes the row only after the lease ran
// out, and settles it by looking the key up at the target, without
// sending it again.
func TestSharedJournalDeadLease(t *testing.T) {
	t.Parallel()
	c := newRig(t, forLoad(1500, 1500), onJournal(storetest.Database(t)))
	other := c.addInstance(t)
	st, err := store.Open(context.Background(), c.journal)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	const key = "test:invoice.create:dead-lease:v1"
	// 1C takes a second to answer, then commits (the simulator ignores
	// the caller having gone).
	c.fault(`{"target":"onec","fault":"delay","delay_ms":1000,"times":1}`)
	go func() {
		req, _ := http.NewRequest("POST", "http://"+c.addr+"/v1/operations", strings.NewReader(fmt.Sprintf(e2eInvoice, "dead-lease", 1)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+c.token)
		req.Header.Set("Idempotency-Key", key)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close() // the gateway is killed before it answers
		}
	}()
	var held store.Operation
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		held, err = st.Get(context.Background(), key)
		if err == nil && held.Status == store.StatusStarted && held.AttemptCount == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first gateway never sent the operation: %+v, %v", held, err)
		}
	}
	time.Sleep(100 * time.Millisecond) // the request is at 1C
	c.gateway.kill9()
	killed := time.Now()

	var row store.Operation
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		row, err = st.Get(context.Background(), key)
		if err == nil && row.Status.Terminal() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the surviving gateway did not settle the dead one's row: %+v, %v", row, err)
		}
	}
	if took := time.Since(killed); time.Now().Before(held.LeaseUntil) {
		t.Fatalf("the row was taken %v after the kill, before the dead gateway's lease ran out (%v)", took, held.LeaseUntil)
	}
	if row.Status != store.StatusSucceeded || row.AttemptCount != 1 || row.LeaseOwner != "" {
		t.Fatalf("row %+v: want succeeded after its one attempt", row)
	}
	if got := c.simJSON("/_sim/effects")["onec"][key]; got != 1 {
		t.Fatalf("%d effects at 1C, want 1", got)
	}
	events, err := st.AuditEvents(context.Background(), store.AuditFilter{OperationKey: key})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := len(events) - 1; i >= 0; i-- {
		names = append(names, events[i].Event+"/"+events[i].Actor.Name)
	}
	// The claim records the first attempt; the survivor's look-up is no
	// attempt.
	if want := []string{"operation.started/e2e-agent", "operation.resumed/reconciler", "operation.succeeded/reconciler"}; !slices.Equal(names, want) {
		t.Fatalf("audit of the key: %v, want %v", names, want)
	}
	// The survivor still serves: the agent's retry is answered from the
	// journal.
	if code, ans := postTo(t, other.addr, c.token, key, fmt.Sprintf(e2eInvoice, "dead-lease", 1)); code != 200 || ans["target_object_id"] != row.TargetObjectID {
		t.Fatalf("retry at the surviving gateway: %d %v", code, ans)
	}
}
