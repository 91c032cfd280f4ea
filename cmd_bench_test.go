package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store/storetest"
)

// bench loads the gateway and the reference for real and prints a row per
// path with its rate and latencies, and for new operations the journal's
// batches per second and writes per batch.
func TestBenchCommand(t *testing.T) {
	out := runBinary(t, nil, "bench", "--duration", "300ms", "--connections", "4", "--fill", "3000", "--processes", "--waiters", "20", "--events", "100")
	checkBenchRows(t, out)
	// Notices of payments, one in ten again: each payment its one receipt
	// in 1C (the bench fails on a second), alone and beside new operations.
	for _, load := range []string{`notices alone\s+30\s+[0-9]+(\s+[0-9.]+[µm]?s){3}\s+27\s+[0-9.]+[µm]?s(\s+-){3}`,
		`new operations alone(\s+-){7}\s+[1-9][0-9]*(\s+[0-9.]+[µm]?s){2}`,
		`both at once\s+30\s+[0-9]+(\s+[0-9.]+[µm]?s){3}\s+27\s+[0-9.]+[µm]?s\s+[1-9][0-9]*(\s+[0-9.]+[µm]?s){2}`} {
		if !regexp.MustCompile(load).MatchString(out) {
			t.Errorf("no events row %s:\n%s", load, out)
		}
	}
	// New operations while agents long-poll, and what their waiting took.
	if !regexp.MustCompile(`new operation, 20 agents long-polling\s+[1-9][0-9]*\s`).MatchString(out) ||
		!regexp.MustCompile(`20 agents long-polling: RSS [0-9.]+ MB before they waited, [0-9.]+ MB while they waited .*; [0-9]+ polls answered early, 0 failed`).MatchString(out) {
		t.Errorf("no row or memory line of the long-polling agents:\n%s", out)
	}
	// A process of two steps beside its steps sent one by one.
	for _, path := range []string{"two steps sent one by one (invoice, sales order)", "the same two steps as one process"} {
		if !regexp.MustCompile(regexp.QuoteMeta(path) + `\s+[1-9][0-9]*\s`).MatchString(out) {
			t.Errorf("no row %q:\n%s", path, out)
		}
	}
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
	cmd := exec.Command(bin(t), "bench", "--instances", "2")
	if msg, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(msg), "needs a shared journal") {
		t.Errorf("two gateways on a SQLite journal: %v\n%s", err, msg)
	}
}

func checkBenchRows(t *testing.T, out string) {
	t.Helper()
	for _, path := range []string{"bare Echo (reference)", "forwarding to 1C once (reference)", "replay of a final operation", "new operation (1C simulator)", "new operation, random UUID keys", "bare Echo (reference, again)"} {
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
		cpu := `[0-9.]+[µm]?s` // the process's CPU per request
		if !regexp.MustCompile(`\s[1-9][0-9]*\s+[0-9]+\s+[0-9.]+[µm]?s\s+[0-9.]+[µm]?s\s+[0-9.]+×\s+` + vsFwd + `\s+` + cpu + `\s+` + journal + `$`).MatchString(row) {
			t.Errorf("no measured row for %q:\n%s", path, out)
		}
	}
}

// --cpu-quota runs the gateway as a process of its own (serve, as an
// operator runs it) capped in a control group, and reports its own CPU per
// new operation; with --cpuprofile it writes the gateway's profile. Where
// control groups cannot be made (not root, not Linux) it says so and
// stops, measuring nothing.
func TestBenchCommandCapped(t *testing.T) {
	profile := filepath.Join(t.TempDir(), "cpu.prof")
	cmd := exec.Command(bin(t), "bench", "--duration", "300ms", "--connections", "4", "--only", "new", "--cpu-quota", "0.5", "--cpuprofile", profile)
	out, err := cmd.CombinedOutput()
	if !canMakeControlGroups() {
		if err == nil || !strings.Contains(string(out), "--cpu-quota:") {
			t.Fatalf("without the rights to cap a gateway: %v\n%s", err, out)
		}
		return
	}
	if err != nil {
		t.Fatalf("bench --cpu-quota: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "each gateway a process of its own capped at 0.5 CPU") ||
		!regexp.MustCompile(`new operation \(1C simulator\)\s+[1-9][0-9]*\s.*×\s+[0-9.]+[µm]?s\s+-\n`).Match(out) {
		t.Errorf("no row of the capped gateway's new operations with its own CPU:\n%s", out)
	}
	if fi, err := os.Stat(profile + ".gateway-0"); err != nil || fi.Size() == 0 {
		t.Errorf("the gateway wrote no profile: %v", err)
	}
	if m := benchGroups(cmd.Process.Pid); len(m) != 0 {
		t.Errorf("control groups left behind: %v", m)
	}
}

// benchGroups are the control groups the bench with process id pid made
// (oncegate-bench-PID-N) that are still there.
func benchGroups(pid int) []string {
	var all []string
	for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/cpu"} {
		m, _ := filepath.Glob(filepath.Join(root, fmt.Sprintf("oncegate-bench-%d-*", pid)))
		all = append(all, m...)
	}
	return all
}

// An interrupted bench (Ctrl-C, a service manager's stop) stops loading,
// prints no row from a shortened load and cleans up as at its end: its
// gateways stopped and their control groups gone.
func TestBenchCommandInterrupted(t *testing.T) {
	args := []string{"bench", "--duration", "60s", "--connections", "4", "--only", "new"}
	capped := canMakeControlGroups()
	if capped {
		args = append(args, "--cpu-quota", "0.5")
	}
	p := start(t, nil, args...)
	cmd := p.cmd
	// Loading: the header is printed once the gateways answer; capped, the
	// gateway's process is in its group.
	var gateway int
	deadline := time.Now().Add(60 * time.Second)
	for {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the bench did not start loading:\n%s", p.output())
		}
		if !capped && strings.Contains(p.output(), "oncegate bench:") {
			break
		}
		if g := benchGroups(cmd.Process.Pid); capped && len(g) == 1 {
			b, _ := os.ReadFile(filepath.Join(g[0], "cgroup.procs"))
			if gateway, _ = strconv.Atoi(strings.TrimSpace(string(b))); gateway > 0 && strings.Contains(p.output(), "oncegate bench:") {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		if err := p.err; err == nil || !strings.Contains(p.output(), "interrupted") {
			t.Errorf("interrupted bench: %v\n%s", err, p.output())
		}
	case <-time.After(45 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the bench did not stop when interrupted:\n%s", p.output())
	}
	if strings.Contains(p.output(), "new operation (1C simulator)") {
		t.Errorf("a row from a shortened load:\n%s", p.output())
	}
	if m := benchGroups(cmd.Process.Pid); len(m) != 0 {
		t.Errorf("control groups left behind: %v", m)
	}
	if gateway > 0 {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", gateway)); err == nil {
			t.Errorf("the capped gateway (process %d) still runs", gateway)
		}
	}
}

// canMakeControlGroups reports whether this process may make a control
// group where bench makes its own (Linux, as root, a writable hierarchy).
func canMakeControlGroups() bool {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		return false
	}
	dir := "/sys/fs/cgroup/cpu/oncegate-bench-probe"
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		dir = "/sys/fs/cgroup/oncegate-bench-probe"
	}
	if os.Mkdir(dir, 0o755) != nil {
		return false
	}
	os.Remove(dir)
	return true
}
