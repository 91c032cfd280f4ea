package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// SIGTERM while a burst of operations is in flight: serve tells systemd it
// is stopping, answers every request it had accepted, exits 0, and leaves
// no row that needs a person; the next start resumes, and every operation
// ends with exactly one effect.
func TestSigtermUnderLoad(t *testing.T) {
	t.Parallel()
	r := newRig(t, forLoad(2000, 1500), notStarted())

	// A notify socket, as systemd gives a unit of Type=notify.
	sockPath := filepath.Join(t.TempDir(), "notify.sock")
	sock, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sockPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	notices := make(chan string, 8)
	go func() {
		buf := make([]byte, 256)
		for {
			n, err := sock.Read(buf)
			if err != nil {
				return
			}
			notices <- string(buf[:n])
		}
	}()
	expect := func(want string) {
		t.Helper()
		select {
		case got := <-notices:
			if got != want {
				t.Fatalf("sd_notify: got %q, want %q", got, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("sd_notify: no %q", want)
		}
	}

	r.launch("NOTIFY_SOCKET=" + sockPath)
	expect("READY=1")
	// Ready means listening: the first request is answered.
	if resp, err := http.Get(r.apiURL + "/readyz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/readyz right after READY=1: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// Slow targets, so calls are in flight when the signal comes.
	r.fault(`{"target":"onec","fault":"delay","delay_ms":700,"times":8}`)
	r.fault(`{"target":"bitrix24","fault":"delay","delay_ms":700,"times":8}`)
	var ops []*chaosOp
	for i := range 40 {
		ops = append(ops, mixedOp(fmt.Sprintf("term-%d", i), i, "customer-1042"))
	}

	// One send of each operation, 16 at a time, each on its own connection.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	answered, refused := 0, 0
	sem := make(chan struct{}, 16)
	for _, op := range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			req, _ := http.NewRequest("POST", r.apiURL+"/v1/operations", strings.NewReader(op.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+r.token)
			req.Header.Set("Idempotency-Key", op.key)
			resp, err := client.Do(req)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				resp.Body.Close()
				answered++
				op.accepted = true
			case errors.Is(err, syscall.ECONNREFUSED):
				refused++ // sent after serve stopped listening
			default:
				t.Errorf("%s: a request serve had accepted got no answer: %v", op.key, err)
			}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		calls := r.simJSON("/_sim/calls")
		if len(calls["onec"])+len(calls["bitrix24"]) >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no call reached the targets")
		}
		time.Sleep(10 * time.Millisecond)
	}
	signalled := time.Now()
	r.gateway.cmd.Process.Signal(syscall.SIGTERM)
	expect("STOPPING=1")
	exited := make(chan error, 1)
	go func() { exited <- r.gateway.wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("serve after SIGTERM: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not stop within 60 s of SIGTERM")
	}
	stopTook := time.Since(signalled)
	wg.Wait()
	if !strings.Contains(r.gateway.output(), "oncegate stopped") {
		t.Fatalf("no clean stop in the log:\n%s", r.gateway.output())
	}

	// Nothing needs a person; what was in flight is started under its
	// lease or settled.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(r.dataDir, "journal.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]int{}
	rows, err := db.Query(`SELECT status, needs_review, lease_until IS NOT NULL, count(*) FROM operations GROUP BY 1, 2, 3`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var status string
		var review, leased bool
		var n int
		if err := rows.Scan(&status, &review, &leased, &n); err != nil {
			t.Fatal(err)
		}
		states[status] += n
		if review {
			t.Errorf("%d %s rows need a person after SIGTERM", n, status)
		}
		if status == "started" && !leased {
			t.Errorf("%d started rows without a lease", n)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if answered == 0 {
		t.Fatal("no request was answered before serve stopped")
	}

	// The next start resumes: agents retry their keys until final.
	r.serve()
	rep := &chaosReport{t: t}
	driveAll(t, r, rep, ops)
	for _, op := range ops {
		if op.final != "succeeded" {
			t.Errorf("%s ended %q", op.key, op.final)
		}
	}
	r.check(t, rep, ops)
	t.Logf("SIGTERM: stop took %v; %d answered, %d refused; journal then: %v",
		stopTook.Round(time.Millisecond), answered, refused, states)
}

// driveAll has agents, 16 at a time, send each operation with its key
// until its answer is final, within a minute.
func driveAll(t *testing.T, c *rig, rep *chaosReport, ops []*chaosOp) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	answers := map[int]*atomic.Int64{0: {}}
	work := make(chan *chaosOp)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for op := range work {
				c.drive(ctx, rep, op, answers)
			}
		}()
	}
	for _, op := range ops {
		work <- op
	}
	close(work)
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("the agents did not finish within a minute")
	}
}
