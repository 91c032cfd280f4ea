//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fillDisk makes every write of the process to a file fail, as a full
// disk does (the kernel refuses writes past the process's file size
// limit, 0 here); free lifts the limit again.
func fillDisk(t *testing.T, pid int) (free func()) {
	t.Helper()
	var old unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: 0, Max: unix.RLIM_INFINITY}, &old); err != nil {
		t.Fatalf("limit the gateway's writes: %v", err)
	}
	return func() {
		if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &old, nil); err != nil {
			t.Fatalf("lift the gateway's write limit: %v", err)
		}
	}
}

// said is one answer an agent got.
type said struct {
	key    string
	code   int
	status string
	errors string
	detail string
}

func (s said) nothingSent() bool {
	return strings.Contains(s.detail+s.errors, "nothing was sent") || strings.Contains(s.errors, "JOURNAL_UNAVAILABLE")
}

// postSaid posts and keeps what the agent was told.
func (r *rig) postSaid(key, body string) said {
	code, m, err := r.post(key, body)
	if err != nil {
		r.t.Fatalf("post %s: %v", key, err)
	}
	s := said{key: key, code: code}
	s.status, _ = m["state"].(string)
	s.detail, _ = m["detail"].(string)
	for _, e := range asList(m["errors"]) {
		if em, ok := e.(map[string]any); ok {
			s.errors += fmt.Sprint(em["code"], ": ", em["message"], "; ")
		}
	}
	return s
}

// The disk fills while operations are at the target: their completion
// cannot be written, and they are answered unknown (202, OUTCOME_UNKNOWN,
// retry the same key), never "nothing was sent"; requests that arrive
// while it is full are refused before anything is sent. No answer that
// says nothing was sent has an effect behind it. Once the disk has room
// again the reconciler settles what was left in flight, and every key
// ends with one effect.
func TestFullDiskAnswers(t *testing.T) {
	t.Parallel()
	r := newRig(t, withSettings(loadConfig))
	body := func(id string) string { return fmt.Sprintf(e2eInvoice, id, 1) }
	key := func(id string) string { return "test:invoice.create:" + id + ":v1" }

	var mu sync.Mutex
	var answers []said
	keep := func(s said) {
		mu.Lock()
		answers = append(answers, s)
		mu.Unlock()
	}
	if s := r.postSaid(key("fd-before"), body("fd-before")); s.code != http.StatusOK {
		t.Fatalf("before the disk fills: %+v", s)
	}

	// Operations held at 1C, their claims written.
	const inFlight = 4
	r.fault(fmt.Sprintf(`{"target":"onec","fault":"delay","delay_ms":600,"times":%d}`, inFlight))
	var wg sync.WaitGroup
	for i := range inFlight {
		id := fmt.Sprintf("fd-flight-%d", i)
		wg.Go(func() { keep(r.postSaid(key(id), body(id))) })
	}
	for i := range inFlight {
		for r.getStatus(key(fmt.Sprintf("fd-flight-%d", i))) != "started" {
			time.Sleep(5 * time.Millisecond)
		}
	}

	free := fillDisk(t, r.gateway.cmd.Process.Pid)
	for i := range 6 {
		id := fmt.Sprintf("fd-full-%d", i)
		wg.Go(func() { keep(r.postSaid(key(id), body(id))) })
	}
	wg.Wait()
	// A retry of a key in flight while the disk is still full: its
	// answer says to send the same key again, whatever it says of the
	// state.
	if s := r.postSaid(key("fd-flight-0"), body("fd-flight-0")); s.nothingSent() || (s.code != http.StatusAccepted && s.code != http.StatusConflict) {
		t.Errorf("a retry of a key sent before the disk filled: %+v, want 202 unknown or 409 in progress", s)
	}

	if code := r.readyz(); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz = %d on a full disk, want 503", code)
	}

	effects := r.simJSON("/_sim/effects")["onec"]
	for _, s := range answers {
		if s.nothingSent() && effects[s.key] != 0 {
			t.Errorf("%s was answered %d %s %q %q, yet 1C has %d effects of it", s.key, s.code, s.status, s.errors, s.detail, effects[s.key])
		}
		if effects[s.key] > 0 && s.status == "rejected" {
			t.Errorf("%s was answered rejected (%d %q), yet 1C has its effect", s.key, s.code, s.errors)
		}
		if strings.Contains(s.key, ":fd-flight-") && (s.code != http.StatusAccepted || s.status != "unknown" || !strings.Contains(s.errors, "OUTCOME_UNKNOWN")) {
			t.Errorf("%s, sent before the disk filled: %d %s %q, want 202 unknown OUTCOME_UNKNOWN", s.key, s.code, s.status, s.errors)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// Room again: every key ends with one effect, the same key resent
	// until its answer is final.
	free()
	for deadline := time.Now().Add(time.Minute); r.readyz() != http.StatusOK; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("/readyz never became ready again once the disk had room")
		}
	}
	ids := []string{"fd-before"}
	for i := range inFlight {
		ids = append(ids, fmt.Sprintf("fd-flight-%d", i))
	}
	for i := range 6 {
		ids = append(ids, fmt.Sprintf("fd-full-%d", i))
	}
	deadline := time.Now().Add(2 * time.Minute)
	for _, id := range ids {
		for {
			s := r.postSaid(key(id), body(id))
			if s.code == http.StatusOK {
				break
			}
			if s.code != http.StatusAccepted && s.code != http.StatusConflict && s.code != http.StatusServiceUnavailable {
				t.Fatalf("%s after the disk has room: %+v", id, s)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never settled: %+v", id, s)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	effects = r.simJSON("/_sim/effects")["onec"]
	for _, id := range ids {
		if got := effects[key(id)]; got != 1 {
			t.Errorf("%s has %d effects at 1C, want 1", id, got)
		}
	}
}

// readyz returns the HTTP status of the gateway's readiness.
func (r *rig) readyz() int {
	resp, err := http.Get(r.apiURL + "/readyz")
	if err != nil {
		r.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A gateway does not start on a journal it cannot write: it would answer
// every operation JOURNAL_UNAVAILABLE while its readiness said ready.
func TestServeRefusesReadOnlyJournal(t *testing.T) {
	t.Parallel()
	r := newRig(t, withSettings(loadConfig)) // its first run: the admin made, nothing left to write at start
	r.gateway.cmd.Process.Signal(syscall.SIGTERM)
	r.gateway.wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin(t), "serve", "--config", r.config, "--data", r.dataDir, "--listen", freeAddr(t))
	cmd.Env = append(os.Environ(), r.env...)
	if err := os.Chmod(r.journal, 0o444); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// Permissions bind everyone but root: the gateway runs as nobody,
		// owning its data directory as a service user does.
		asNobody(t, cmd, r.dataDir, r.config)
	}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("serve started on a read-only journal:\n%s", out)
	}
	if err == nil || !strings.Contains(string(out), "cannot be written, so serve does not start") {
		t.Fatalf("serve on a read-only journal: %v\n%s", err, out)
	}
}

// asNobody makes cmd run as the user nobody, with what it needs of the
// test's files: the binary, the configuration and the data directory,
// which becomes nobody's.
func asNobody(t *testing.T, cmd *exec.Cmd, dataDir, config string) {
	t.Helper()
	const nobody = 65534
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	for _, p := range []string{filepath.Dir(bin(t)), filepath.Dir(dataDir), filepath.Dir(filepath.Dir(dataDir)), filepath.Dir(config), filepath.Dir(filepath.Dir(config))} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(config, 0o644); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(dataDir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(p, nobody, nobody)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// getStatus reads a key's state through the API.
func (r *rig) getStatus(key string) string {
	req, _ := http.NewRequest("GET", r.apiURL+"/v1/operations/"+key, nil)
	req.Header.Set("Authorization", "Bearer "+r.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		r.t.Fatal(err)
	}
	s, _ := m["state"].(string)
	return s
}

// The journal deleted under a running gateway: it takes no more work
// (503 JOURNAL_UNAVAILABLE, nothing sent), readiness fails, the log says
// why; a restart does not begin a new journal in its place, which would
// execute every key again, but says the journal is missing and how to
// restore it. --new-journal begins again, and only where none is.
func TestJournalDeletedUnderServe(t *testing.T) {
	t.Parallel()
	r := newRig(t, withSettings(loadConfig))
	body := func(id string) string { return fmt.Sprintf(e2eInvoice, id, 1) }
	key := func(id string) string { return "test:invoice.create:" + id + ":v1" }
	if s := r.postSaid(key("jd-before"), body("jd-before")); s.code != http.StatusOK {
		t.Fatalf("before: %+v", s)
	}

	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(r.journal + suffix); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		id := fmt.Sprintf("jd-after-%d", i)
		s := r.postSaid(key(id), body(id))
		if s.code != http.StatusServiceUnavailable || !strings.Contains(s.errors, "JOURNAL_UNAVAILABLE") {
			t.Errorf("%s after the journal was deleted: %+v, want 503 JOURNAL_UNAVAILABLE", id, s)
		}
	}
	if got := r.simJSON("/_sim/effects")["onec"]; len(got) != 1 {
		t.Errorf("1C has effects of %v, want only jd-before's", got)
	}
	resp, err := http.Get(r.apiURL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz = %d with the journal deleted, want 503", resp.StatusCode)
	}
	if out := r.gateway.output(); !strings.Contains(out, "JOURNAL FILE GONE") {
		t.Errorf("the log does not say the journal is gone")
	}
	r.gateway.cmd.Process.Signal(syscall.SIGTERM)
	r.gateway.wait()

	args := []string{"--config", r.config, "--data", r.dataDir}
	out, err := serveOnce(t, r.env, args...)
	if err == nil || !strings.Contains(out, "the journal is missing") || !strings.Contains(out, "oncegate restore") || strings.Contains(out, "First run") {
		t.Fatalf("serve on a data directory whose journal was deleted: %v\n%s", err, out)
	}
	tok := exec.Command(bin(t), append([]string{"token", "create", "--name", "x", "--scopes", "read"}, args...)...)
	tok.Env = append(os.Environ(), r.env...)
	if out, err := tok.CombinedOutput(); err == nil || !strings.Contains(string(out), "the journal is missing") {
		t.Fatalf("token create on a data directory whose journal was deleted: %v\n%s", err, out)
	}

	// Beginning again on purpose.
	addr := freeAddr(t)
	g := start(t, r.env, append([]string{"serve", "--new-journal", "--listen", addr}, args...)...)
	waitHTTP(t, "http://"+addr+"/readyz")
	if !strings.Contains(g.output(), "First run") {
		t.Errorf("serve --new-journal made no first admin:\n%s", g.output())
	}
	g.cmd.Process.Signal(syscall.SIGTERM)
	g.wait()
	if out, err := serveOnce(t, r.env, append([]string{"--new-journal"}, args...)...); err == nil || !strings.Contains(out, "is not replaced") {
		t.Fatalf("serve --new-journal over a journal: %v\n%s", err, out)
	}
}

// Restore says how recent the backup and the journal it replaces are,
// and replaces a journal holding operations newer than the backup's only
// with --yes: the restored journal forgets them.
func TestRestoreNewerJournal(t *testing.T) {
	t.Parallel()
	r := newRig(t, withSettings(loadConfig))
	body := func(id string) string { return fmt.Sprintf(e2eInvoice, id, 1) }
	key := func(id string) string { return "test:invoice.create:" + id + ":v1" }
	if s := r.postSaid(key("rn-old"), body("rn-old")); s.code != http.StatusOK {
		t.Fatalf("before the backup: %+v", s)
	}
	backup := filepath.Join(t.TempDir(), "journal-backup.db")
	runBinary(t, r.env, "backup", "--config", r.config, "--data", r.dataDir, backup)
	if s := r.postSaid(key("rn-new"), body("rn-new")); s.code != http.StatusOK {
		t.Fatalf("after the backup: %+v", s)
	}
	r.gateway.cmd.Process.Signal(syscall.SIGTERM)
	r.gateway.wait()

	args := []string{"restore", "--config", r.config, "--data", r.dataDir, backup}
	cmd := exec.Command(bin(t), args...)
	cmd.Env = append(os.Environ(), r.env...)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "the backup's newest operation: 20") || !strings.Contains(string(out), "the journal's newest operation:  20") ||
		!strings.Contains(string(out), "--yes") {
		t.Fatalf("restore over a newer journal without --yes: %v\n%s", err, out)
	}
	if leftovers, _ := filepath.Glob(r.journal + ".*"); len(leftovers) != 0 {
		t.Fatalf("a refused restore left %v", leftovers)
	}
	if n := countOps(t, r.journal); n != 2 {
		t.Fatalf("the journal holds %d operations after a refused restore, want 2", n)
	}
	if out := runBinary(t, r.env, append([]string{"restore", "--yes"}, args[1:]...)...); !strings.Contains(out, "restored into") {
		t.Fatalf("restore --yes: %s", out)
	}
	if n := countOps(t, r.journal); n != 1 {
		t.Fatalf("the restored journal holds %d operations, want the backup's 1", n)
	}
}
