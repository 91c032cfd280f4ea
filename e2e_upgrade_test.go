package main

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/oncegate/oncegate/store"
)

// Upgrade: a journal at the previous schema version, holding operations,
// tokens and users, is brought to this binary's schema by serve itself;
// every operation answers its replay as before, without a target call,
// and new operations run. Roll back (docs/operations.md): migrate down with this
// binary takes it back to the previous version with its rows.
func TestUpgradeFromPreviousSchema(t *testing.T) {
	t.Parallel()
	latest := store.LatestVersion()
	r := newRig(t, withTimeout(2000), withSettings("rate_limit: { per_second: 100000, burst: 100000 }\n"))
	ops := restoreOps("up", 12)
	want := map[string]answer{}
	for _, op := range ops {
		code, body, err := r.post(op.key, op.body)
		if err != nil || (code != 200 && code != 422) {
			t.Fatalf("%s: %d %v %v", op.key, code, body, err)
		}
		want[op.key] = answerOf(code, body)
	}
	r.gateway.cmd.Process.Signal(syscall.SIGTERM)
	r.gateway.wait()

	// The previous version's journal, with its rows.
	args := []string{"--config", r.config, "--data", r.dataDir}
	if out := runBinary(t, r.env, append([]string{"migrate", "down"}, args...)...); !strings.Contains(out, fmt.Sprintf("version %d ", latest-1)) {
		t.Fatalf("migrate down: %s", out)
	}
	journal := filepath.Join(r.dataDir, "journal.db")
	if n := countOps(t, journal); n != len(ops) {
		t.Fatalf("the previous schema's journal holds %d operations, want %d", n, len(ops))
	}

	// serve upgrades it.
	calls := r.simJSON("/_sim/calls")
	r.serve()
	if out := runBinary(t, r.env, append([]string{"migrate", "version"}, args...)...); !strings.Contains(out, fmt.Sprintf("version %d ", latest)) {
		t.Fatalf("after serve: %s", out)
	}
	for _, op := range ops {
		code, body, err := r.post(op.key, op.body)
		if err != nil {
			t.Fatal(err)
		}
		if got := answerOf(code, body); !reflect.DeepEqual(got, want[op.key]) {
			t.Errorf("%s: after the upgrade %+v, before %+v", op.key, got, want[op.key])
		}
	}
	if after := r.simJSON("/_sim/calls"); !reflect.DeepEqual(after, calls) {
		t.Errorf("replays after the upgrade called the targets: %v, before %v", after, calls)
	}
	if code, body, err := r.post("test:invoice.create:up-new:v1", fmt.Sprintf(e2eInvoice, "up-new", 1)); err != nil || code != 200 {
		t.Fatalf("a new operation after the upgrade: %d %v %v", code, body, err)
	}
	if out := runBinary(t, r.env, append([]string{"token", "list"}, args...)...); !strings.Contains(out, "e2e-agent") {
		t.Fatalf("tokens after the upgrade: %s", out)
	}

	// Roll back: stop, migrate down with this binary; the rows stay.
	r.gateway.cmd.Process.Signal(syscall.SIGTERM)
	r.gateway.wait()
	if out := runBinary(t, r.env, append([]string{"migrate", "down"}, args...)...); !strings.Contains(out, fmt.Sprintf("version %d ", latest-1)) {
		t.Fatalf("roll back: %s", out)
	}
	if n := countOps(t, journal); n != len(ops)+1 {
		t.Fatalf("after the roll back the journal holds %d operations, want %d", n, len(ops)+1)
	}
}
