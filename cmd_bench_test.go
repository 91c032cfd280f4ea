package main

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/store/storetest"
)

// bench loads the gateway and the reference for real and prints a row per
// path with its rate and latencies, and for new operations the journal's
// batches per second and writes per batch.
func TestBenchCommand(t *testing.T) {
	out := runBinary(t, nil, "bench", "--duration", "300ms", "--connections", "4", "--fill", "3000")
	checkBenchRows(t, out)
	// New operations again, on a journal grown by --fill, in the same run.
	if !regexp.MustCompile(`new operation, 3000 more in the journal\s+[1-9][0-9]*\s`).MatchString(out) ||
		!strings.Contains(out, "filled the journal with 3000 operations and 9000 audit events in ") {
		t.Errorf("no row of new operations on the filled journal:\n%s", out)
	}
}

// The same bench on a shared PostgreSQL journal with two gateways, the
// load spread over both; more than one gateway needs a shared journal.
func TestBenchCommandSharedJournal(t *testing.T) {
	env := []string{"BENCH_JOURNAL=" + storetest.Database(t)}
	out := runBinary(t, env, "bench", "--duration", "300ms", "--connections", "4", "--journal-url-env", "BENCH_JOURNAL", "--instances", "2")
	if !strings.Contains(out, "2 gateway(s) on journal postgres://") {
		t.Errorf("the bench does not say it ran two gateways on PostgreSQL:\n%s", out)
	}
	checkBenchRows(t, out)
	cmd := exec.Command(binary, "bench", "--instances", "2")
	if msg, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(msg), "needs a shared journal") {
		t.Errorf("two gateways on a SQLite journal: %v\n%s", err, msg)
	}
}

func checkBenchRows(t *testing.T, out string) {
	t.Helper()
	for _, path := range []string{"bare Echo (reference)", "forwarding to 1C once (reference)", "replay of a final operation", "new operation (1C simulator)", "bare Echo (reference, again)"} {
		row := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, path) {
				row = l
			}
		}
		journal := `(-|[0-9]+ × [0-9.]+)`
		if strings.HasPrefix(path, "new operation") {
			journal = `[1-9][0-9]* × [0-9.]+`
		}
		vsFwd := `-`
		if !strings.Contains(path, "reference") {
			vsFwd = `[0-9.]+×` // a gateway path beside the forwarding handler
		}
		if !regexp.MustCompile(`\s[1-9][0-9]*\s+[0-9]+\s+[0-9.]+[µm]?s\s+[0-9.]+[µm]?s\s+[0-9.]+×\s+` + vsFwd + `\s+` + journal + `$`).MatchString(row) {
			t.Errorf("no measured row for %q:\n%s", path, out)
		}
	}
}
