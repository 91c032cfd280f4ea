package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/oncegate/oncegate/store/storetest"
)

// Five gateways started at the same instant on one new PostgreSQL
// journal, as a service manager starts replicas: every one serves, one
// makes the first admin and agent token, and their one-time secrets are
// printed once, by that one; the token works on every gateway.
func TestSharedJournalSimultaneousFirstRun(t *testing.T) {
	t.Parallel()
	journal := storetest.Database(t)
	const n = 5
	gateways := make([]*proc, n)
	addrs := make([]string, n)
	for i := range gateways {
		addrs[i] = freeAddr(t)
		gateways[i] = prepare(t, []string{"ONCEGATE_JOURNAL_URL=" + journal, "ONCEGATE_CONFIG="}, "serve", "--data", filepath.Join(t.TempDir(), "data"), "--listen", addrs[i])
	}
	startAll := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, p := range gateways {
		wg.Go(func() {
			<-startAll
			errs[i] = p.begin()
		})
	}
	close(startAll)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("gateway %d: %v", i, err)
		}
	}
	for _, addr := range addrs {
		waitHTTP(t, "http://"+addr+"/readyz")
	}

	var admins, tokens int
	var token string
	for _, p := range gateways {
		out := p.output()
		admins += strings.Count(out, "First run: admin user")
		if c := strings.Count(out, "First run: made agent token"); c > 0 {
			tokens += c
			lines := strings.Split(out, "\n")
			for j, l := range lines {
				if strings.HasPrefix(l, "First run: made agent token") && j+1 < len(lines) {
					token = strings.TrimSpace(lines[j+1])
				}
			}
		}
	}
	if admins != 1 || tokens != 1 {
		t.Fatalf("the first admin's password was printed %d times and the first token %d times, want once each", admins, tokens)
	}
	for i, addr := range addrs {
		req, _ := http.NewRequest("GET", "http://"+addr+"/v1/operations/test:invoice.create:none:v1", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("gateway %d answers the first token %d, want 404 (known token, unknown key)", i, resp.StatusCode)
		}
	}
}
