package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/oncegate/oncegate/store/storetest"
)

// dealOnce is deal.create with a rule that refuses a second deal of one
// customer and title.
var dealOnce = strings.Replace(dealCreate, "references:", "duplicates: { fields: [customer_id, title], window: 720h, action: block }\nreferences:", 1)

// burst sends n requests at once, each with its own key, to the gateways
// at addrs in turn (once each: no retries), and returns the answers by key.
func burst(t *testing.T, addrs []string, token string, n int, key func(i int) string, body func(i int) string) map[string]dupAnswer {
	t.Helper()
	var mu sync.Mutex
	out := map[string]dupAnswer{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", addrs[i%len(addrs)]+"/v1/operations", strings.NewReader(body(i)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Idempotency-Key", key(i))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var a dupAnswer
			if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
				t.Error(err)
				return
			}
			a.HTTP = resp.StatusCode
			mu.Lock()
			out[key(i)] = a
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// dupAnswer is what these tests read of an answer.
type dupAnswer struct {
	HTTP     int
	Errors   []struct{ Code, Message string }
	Warnings []struct{ Code, Message string }
}

// summary is "HTTP/code" for an answer, its warning's code after a "+".
func (a dupAnswer) summary() string {
	s := fmt.Sprint(a.HTTP)
	if len(a.Errors) > 0 {
		s += "/" + a.Errors[0].Code
	}
	if len(a.Warnings) > 0 {
		s += "+" + a.Warnings[0].Code
	}
	return s
}

// count tallies the answers' summaries.
func count(answers map[string]dupAnswer) map[string]int {
	c := map[string]int{}
	for _, a := range answers {
		c[a.summary()]++
	}
	return c
}

// Twenty requests at once, twenty keys, one business event, through the
// binary: under block one reaches the target and the others are refused
// with their keys left free; under hold (the built-in invoice.create) one
// reaches 1C and the others wait for a person; under warn (the built-in
// crm.callback.create) all go on, every one but the first with a warning.
func TestBinaryDuplicateRules(t *testing.T) {
	t.Parallel()
	dir := intentsDir(t, "deal.create.v1.yaml", dealOnce)
	r := newRig(t, withIntents(dir))
	api := []string{r.apiURL}
	const n = 20

	// block: the same customer and title, written in other cases and spaces.
	dealKey := func(i int) string { return fmt.Sprintf("test:deal:create:dup-%d:v1", i) }
	got := burst(t, api, r.token, n, dealKey, func(i int) string {
		title := []string{"Spring order", "  SPRING ORDER", "spring   order "}[i%3]
		return fmt.Sprintf(`{"schema_version":"1.0","intent":"deal.create","payload":{"customer_id":"customer-1042","title":%q}}`, title)
	})
	if c := count(got); c["200"] != 1 || c["409/DUPLICATE_SUSPECTED"] != n-1 {
		t.Fatalf("block: answers %v, want one 200 and %d refusals", c, n-1)
	}
	effects := r.simJSON("/_sim/effects")["bitrix24"]
	made := 0
	for i := range n {
		k := dealKey(i)
		made += effects[k]
		if got[k].HTTP == 409 {
			if code := r.getCode(k); code != http.StatusNotFound {
				t.Fatalf("blocked key %s was journaled: GET answers %d", k, code)
			}
		}
	}
	if made != 1 {
		t.Fatalf("block: %d deals in the CRM, want 1", made)
	}

	// hold: one invoice per order; the rest wait for a person.
	invKey := func(i int) string { return fmt.Sprintf("test:invoice.create:dup-%d:v1", i) }
	got = burst(t, api, r.token, n, invKey, func(i int) string { return fmt.Sprintf(e2eInvoice, "order-dup", 1+i) })
	if c := count(got); c["200"] != 1 || c["202/DUPLICATE_REVIEW_REQUIRED+DUPLICATE_SUSPECTED"] != n-1 {
		t.Fatalf("hold: answers %v, want one 200 and %d held", c, n-1)
	}
	effects = r.simJSON("/_sim/effects")["onec"]
	made = 0
	for i := range n {
		made += effects[invKey(i)]
	}
	if made != 1 {
		t.Fatalf("hold: %d invoices in 1C, want 1", made)
	}

	// warn: all go on.
	cbKey := func(i int) string { return fmt.Sprintf("test:crm.callback:create:dup-%d:v1", i) }
	const m = 5
	got = burst(t, api, r.token, m, cbKey, func(i int) string {
		return fmt.Sprintf(`{"schema_version":"1.0","intent":"crm.callback.create","payload":{"customer_id":"customer-1042","due_at":"2026-12-03T%02d:00:00+03:00"}}`, 9+i)
	})
	if c := count(got); c["200"] != 1 || c["200+DUPLICATE_SUSPECTED"] != m-1 {
		t.Fatalf("warn: answers %v, want %d 200s, all but one warned", c, m)
	}
}

// The same on one PostgreSQL journal shared by two gateways: twenty
// invoices of one order spread over both, one reaches 1C.
func TestSharedJournalDuplicateHold(t *testing.T) {
	t.Parallel()
	c := newRig(t, forLoad(2000, 1500), onJournal(storetest.Database(t)))
	c.addInstance(t)
	const n = 20
	key := func(i int) string { return fmt.Sprintf("test:invoice.create:shared-dup-%d:v1", i) }
	got := burst(t, []string{"http://" + c.addr, "http://" + c.others[0].addr}, c.token, n, key,
		func(i int) string { return fmt.Sprintf(e2eInvoice, "order-shared-dup", 1+i) })
	if cnt := count(got); cnt["200"] != 1 || cnt["202/DUPLICATE_REVIEW_REQUIRED+DUPLICATE_SUSPECTED"] != n-1 {
		t.Fatalf("answers %v, want one 200 and %d held", cnt, n-1)
	}
	effects := c.simJSON("/_sim/effects")["onec"]
	made := 0
	for i := range n {
		made += effects[key(i)]
	}
	if made != 1 {
		t.Fatalf("%d invoices in 1C over two gateways, want 1", made)
	}
}

// getCode is the HTTP status of GET /v1/operations/{key}.
func (r *rig) getCode(key string) int {
	req, _ := http.NewRequest("GET", r.apiURL+"/v1/operations/"+key, nil)
	req.Header.Set("Authorization", "Bearer "+r.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
