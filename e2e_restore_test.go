package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
)

// restoreOps makes n operations at 1C and Bitrix24, every fifth one for a
// customer that does not exist (it ends failed_final).
func restoreOps(prefix string, n int) []*chaosOp {
	var ops []*chaosOp
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		customer, bad := "customer-1042", i%5 == 4
		if bad {
			customer = "customer-missing-" + id
		}
		op := mixedOp(id, i, customer)
		op.bad = bad
		ops = append(ops, op)
	}
	return ops
}

// answer is what a replay must repeat of an operation's final answer.
type answer struct {
	code     int
	status   any
	objectID any
	result   string
	errors   string
}

func answerOf(code int, body map[string]any) answer {
	res, _ := json.Marshal(body["result"])
	var codes []string
	for _, e := range asList(body["errors"]) {
		if m, ok := e.(map[string]any); ok {
			codes = append(codes, fmt.Sprint(m["code"], "@", m["field"]))
		}
	}
	return answer{code, body["state"], body["target_object_id"], string(res), strings.Join(codes, ",")}
}

func asList(v any) []any { l, _ := v.([]any); return l }

// A backup taken while agents keep the gateway busy, restored with serve
// stopped, answers every replay the original had answered before the
// backup began, the same way and without calling a target. Restore
// refuses while serve runs, and keeps the journal it replaces.
func TestRestoreUnderLoad(t *testing.T) {
	t.Parallel()
	r := newRig(t, forLoad(2000, 1500))
	rep := &chaosReport{t: t}

	// Answered before the backup.
	before := restoreOps("rs-a", 30)
	got := map[string]answer{}
	var mu sync.Mutex
	finalAnswer := func(op *chaosOp) {
		for range 200 {
			code, body, err := r.post(op.key, op.body)
			if err == nil && (code == 200 || code == 422) {
				mu.Lock()
				got[op.key] = answerOf(code, body)
				mu.Unlock()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		rep.Errorf("%s never answered finally", op.key)
	}
	var wg sync.WaitGroup
	for _, op := range before {
		wg.Add(1)
		go func() { defer wg.Done(); finalAnswer(op) }()
	}
	wg.Wait()

	// More operations in flight while the backup is taken.
	r.fault(`{"target":"onec","fault":"delay","delay_ms":300,"times":6}`)
	during := restoreOps("rs-b", 30)
	for _, op := range during {
		wg.Add(1)
		go func() { defer wg.Done(); finalAnswer(op) }()
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= len(before)+5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	answeredBefore := map[string]answer{}
	for k, v := range got {
		answeredBefore[k] = v
	}
	mu.Unlock()
	backupFile := filepath.Join(t.TempDir(), "under-load.db")
	runBinary(t, r.env, "backup", "--config", r.config, "--data", r.dataDir, backupFile)
	wg.Wait()
	// Operations after the backup: the restored journal forgets them.
	lost := restoreOps("rs-c", 10)
	for _, op := range lost {
		wg.Add(1)
		go func() { defer wg.Done(); finalAnswer(op) }()
	}
	wg.Wait()
	if len(answeredBefore) < len(before)+5 {
		t.Fatalf("only %d operations of the second burst were answered before the backup", len(answeredBefore)-len(before))
	}

	// Refused while serve runs; the journal is untouched.
	cmd := exec.Command(bin(t), "restore", "--config", r.config, "--data", r.dataDir, backupFile)
	cmd.Env = append(os.Environ(), r.env...)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "serve is running") {
		t.Fatalf("restore beside serve: %v\n%s", err, out)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(r.dataDir, "journal.db.*")); len(leftovers) != 0 {
		t.Fatalf("a refused restore left %v", leftovers)
	}

	r.gateway.cmd.Process.Signal(syscall.SIGTERM)
	r.gateway.wait()
	out := runBinary(t, r.env, "restore", "--yes", "--config", r.config, "--data", r.dataDir, backupFile)
	if !strings.Contains(out, "integrity ok") || !strings.Contains(out, fmt.Sprintf("schema version %d", store.LatestVersion())) {
		t.Fatalf("restore: %s", out)
	}
	kept, _ := filepath.Glob(filepath.Join(r.dataDir, "journal.db.replaced-*"))
	if len(kept) != 1 || !strings.Contains(out, kept[0]) {
		t.Fatalf("the replaced journal: %v, restore said:\n%s", kept, out)
	}
	// The kept journal is whole: it holds every operation of both bursts.
	if n := countOps(t, kept[0]); n != len(before)+len(during)+len(lost) {
		t.Fatalf("the kept journal holds %d operations, want %d", n, len(before)+len(during)+len(lost))
	}

	calls := r.simJSON("/_sim/calls")
	r.serve()
	for key, want := range answeredBefore {
		var op *chaosOp
		for _, o := range append(before, during...) {
			if o.key == key {
				op = o
			}
		}
		code, body, err := r.post(key, op.body)
		if err != nil {
			t.Fatal(err)
		}
		if got := answerOf(code, body); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: replay after restore %+v, the original answered %+v", key, got, want)
		}
		if want.code == 200 && body["replayed"] != true {
			t.Errorf("%s: not a replay after restore: %v", key, body)
		}
	}
	after := r.simJSON("/_sim/calls")
	for key := range answeredBefore {
		for _, target := range []string{"onec", "bitrix24"} {
			if after[target][key] != calls[target][key] {
				t.Errorf("%s: a replay after restore called %s again", key, target)
			}
		}
	}
	t.Logf("%d replays checked after restoring a backup taken under load (%d operations in the backup)", len(answeredBefore), countOps(t, filepath.Join(r.dataDir, "journal.db")))

	// The keys answered after the backup was taken, which the restored
	// journal may not know, sent again: each is found at its target by key
	// and answered as the original was, never made a second time — at
	// Bitrix24 too, which does not recognise keys itself.
	for _, op := range append(during, lost...) {
		if _, ok := answeredBefore[op.key]; ok {
			continue
		}
		var code int
		var body map[string]any
		for range 200 {
			if code, body, _ = r.post(op.key, op.body); code == 200 || code == 422 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		want := got[op.key]
		if gotAgain := answerOf(code, body); gotAgain.code != want.code || gotAgain.objectID != want.objectID {
			t.Errorf("%s sent again after the restore: %+v, the original answered %+v", op.key, gotAgain, want)
		}
	}
	effects := r.simJSON("/_sim/effects")
	for _, op := range append(append(before, during...), lost...) {
		if n := effects[op.target][op.key]; !op.bad && n != 1 {
			t.Errorf("%s: %d effects at %s after the restore and its resends, want 1", op.key, n, op.target)
		}
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(r.dataDir, "journal.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var adopted int
	if err := db.QueryRow(`SELECT count(*) FROM audit_events WHERE event = 'operation.adopted'`).Scan(&adopted); err != nil {
		t.Fatal(err)
	}
	if adopted == 0 {
		t.Fatal("no key forgotten by the restore was found at its target: the case was not exercised")
	}
	t.Logf("%d keys the restored journal had forgotten were found at their targets and adopted", adopted)
}

// countOps counts the operations in a journal file.
func countOps(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM operations`).Scan(&n); err != nil {
		t.Fatalf("count operations in %s: %v", path, err)
	}
	return n
}

// Restore refuses what it cannot run, naming why, and changes nothing: a
// file that is no database, a damaged one, one from a newer oncegate.
func TestRestoreRefusesBadBackups(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	runBinary(t, nil, "migrate", "up", "--data", data)
	runBinary(t, nil, "token", "create", "--data", data, "--name", "kept-agent", "--scopes", "read")
	good := filepath.Join(dir, "good.db")
	runBinary(t, nil, "backup", "--data", data, good)
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}

	garbage := filepath.Join(dir, "garbage.db")
	os.WriteFile(garbage, []byte("not a journal at all\n"), 0o600)

	// Every page but the first with a broken b-tree header.
	damaged := filepath.Join(dir, "damaged.db")
	bad := append([]byte(nil), raw...)
	pageSize := int(bad[16])<<8 | int(bad[17])
	for off := pageSize; off+40 <= len(bad); off += pageSize {
		for i := 8; i < 40; i++ {
			bad[off+i] = 0xff
		}
	}
	os.WriteFile(damaged, bad, 0o600)

	newer := filepath.Join(dir, "newer.db")
	os.WriteFile(newer, raw, 0o600)
	db, err := sql.Open("sqlite", "file:"+newer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE schema_migrations SET version = ?`, store.LatestVersion()+1); err != nil {
		t.Fatal(err)
	}
	db.Close()

	for _, tc := range []struct{ file, want string }{
		{garbage, "is not an oncegate journal"},
		{damaged, "is damaged"},
		{newer, fmt.Sprintf("schema version %d, newer than this oncegate's %d", store.LatestVersion()+1, store.LatestVersion())},
		{filepath.Join(dir, "missing.db"), "no such file"},
	} {
		out, err := exec.Command(bin(t), "restore", "--data", data, tc.file).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("restore %s: %v\n%s", filepath.Base(tc.file), err, out)
		}
	}
	entries, _ := os.ReadDir(data)
	for _, e := range entries {
		if e.Name() != "journal.db" && e.Name() != "serve.lock" && e.Name() != "journal.created" {
			t.Errorf("a refused restore left %s", e.Name())
		}
	}
	if list := runBinary(t, nil, "token", "list", "--data", data); !strings.Contains(list, "kept-agent") {
		t.Fatalf("the journal changed under refused restores:\n%s", list)
	}
	// The good one restores into an empty data directory, as on a new machine.
	fresh := filepath.Join(dir, "fresh")
	if out := runBinary(t, nil, "restore", "--data", fresh, good); strings.Contains(out, "replaced journal") {
		t.Fatalf("restore into an empty directory claims to keep a journal: %s", out)
	}
	if list := runBinary(t, nil, "token", "list", "--data", fresh); !strings.Contains(list, "kept-agent") {
		t.Fatalf("the restored journal:\n%s", list)
	}
	// Restored again, twice: each restore says which replaced journals are
	// kept and how to remove them; removed so, the journal is whole.
	runBinary(t, nil, "restore", "--data", fresh, good)
	out := runBinary(t, nil, "restore", "--data", fresh, good)
	kept, _ := filepath.Glob(filepath.Join(fresh, "journal.db.replaced-*"))
	var names []string
	for _, k := range kept {
		if !strings.HasSuffix(k, "-wal") && !strings.HasSuffix(k, "-shm") {
			names = append(names, filepath.Base(k))
		}
	}
	remove := "remove them: rm " + filepath.Join(fresh, "journal.db") + ".replaced-*"
	if len(names) != 2 || !strings.Contains(out, "replaced journals kept in "+fresh+": "+strings.Join(names, ", ")) || !strings.Contains(out, remove) {
		t.Fatalf("two replaced journals %v; restore said:\n%s", names, out)
	}
	for _, k := range kept {
		os.Remove(k)
	}
	if list := runBinary(t, nil, "token", "list", "--data", fresh); !strings.Contains(list, "kept-agent") {
		t.Fatalf("the journal after the replaced ones were removed:\n%s", list)
	}
}
