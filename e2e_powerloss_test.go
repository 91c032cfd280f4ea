//go:build linux

package main

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
	"github.com/oncegate/oncegate/store/storetest/powerfs"
)

// The journal's promise under power cuts. The gateway's data directory is
// on powerfs, which forgets at a cut whatever was not fsynced. Agents send
// new operations and repeat old keys, an accountant approves payments in
// the admin UI, the targets now and then lose an answer after committing;
// at a random moment the power goes, the gateway is killed, and it boots
// on what survived. After every cut, in the journal that survived:
//
//   - every 200 an agent received is there as succeeded, with the object
//     it was told; every failed_final 422 as failed_final; every 202 has
//     its row;
//   - every approval the accountant was told was recorded is decided;
//   - every execute call a target received has its attempt on record
//     (nothing is sent before the record of its sending is on disk);
//
// and at the end, with every key driven to its final answer: no target
// has two effects for one key, every succeeded key has exactly one, and
// the audit chain verifies. The cut schedule comes from a seed that a
// failure prints (POWER_SEED replays it; POWER_CUTS sets the count).
func TestPowerLoss(t *testing.T) {
	t.Parallel()
	// A build without the race detector: 100 boots and the load cost a
	// fraction of the race build's time; the gateway's goroutines are
	// raced by the other end-to-end tests.
	p := newPowerRig(t, buildTagged(t, ""))
	rep := p.run(powerCuts(100), powerSeed())
	for _, v := range rep.violations {
		t.Error(v)
	}
	if t.Failed() {
		t.Logf("the gateway's last output:\n%s", p.output())
	}
	t.Logf("%s", rep)
}

// TestPowerLossCatchesAnUnsyncedJournal: a gateway built to answer before
// its journal's fsync (the oncegate_unsynced tag: the syncer releases a
// batch's answers, and so its sends, before the WAL's fsync instead of
// after) fails the power-loss checks within 300 cuts; the run ends at the
// first cut that shows it. Without this, the test above could pass
// because it cannot see a lost commit.
func TestPowerLossCatchesAnUnsyncedJournal(t *testing.T) {
	t.Parallel()
	p := newPowerRig(t, buildTagged(t, "oncegate_unsynced"))
	p.stopAtFirst = true
	// The damage shows only when a cut falls between an answer and its
	// fsync: caught within 9 to 63 cuts in runs so far, so up to 300 are
	// allowed (the run ends at the first).
	rep := p.run(300, powerSeed())
	if len(rep.violations) == 0 {
		t.Fatalf("a journal that never fsyncs passed %d power cuts: the test cannot see a lost commit\n%s", rep.cuts, rep)
	}
	t.Logf("the unsynced build was caught at cut %d (%d problems; first: %s)\n%s",
		rep.cuts, len(rep.violations), rep.violations[0], rep)
}

func powerCuts(def int) int {
	if n, err := strconv.Atoi(os.Getenv("POWER_CUTS")); err == nil && n > 0 {
		return n
	}
	return def
}

func powerSeed() uint64 {
	if v, err := strconv.ParseUint(os.Getenv("POWER_SEED"), 10, 64); err == nil {
		return v
	}
	return uint64(time.Now().UnixNano())
}

// buildTagged builds the binary with a build tag ("": none), without the
// race detector (the code under test is the journal's, not its
// goroutines).
func buildTagged(t *testing.T, tag string) string {
	t.Helper()
	bin(t) // the -short skip, and the shared build's checks
	path := filepath.Join(t.TempDir(), "oncegate-"+cmp.Or(tag, "plain"))
	if out, err := exec.Command("go", "build", "-tags", tag, "-o", path, ".").CombinedOutput(); err != nil {
		t.Fatalf("build with %s: %v\n%s", tag, err, out)
	}
	return path
}

// powerRig is a gateway on powerfs against the simulators.
type powerRig struct {
	t        *testing.T
	bin      string
	fs       *powerfs.FS
	mnt      string
	data     string
	config   string
	env      []string
	simURL   string
	addr     string
	token    string
	password string       // the accountant's first
	acc      *http.Client // signed in as the accountant
	gateway  *exec.Cmd
	exited   chan struct{}
	out      *bytes.Buffer
	outMu    sync.Mutex

	mu       sync.Mutex
	ops      map[string]*powerOp // by key
	byEffect map[string]string   // a target's key → the operation's key
	approved map[int64]bool      // approval ids the accountant was told were recorded

	stopAtFirst bool // end the run at the first cut that shows a problem
}

// powerOp is what the agents were told about one key.
type powerOp struct {
	key, target, body string
	effectKey         string
	told              int    // the strongest answer received: 200, 422 or 202 (0: none)
	object            string // of a 200
	final             bool
}

// powerReport is what a run saw.
type powerReport struct {
	seed       uint64
	cuts       int
	caughtCuts int
	violations []string
	seen       map[string]bool
	booting    time.Duration // starting the gateway on what survived
	phases     map[string]int
	torn       int
	answers    map[int]int
	ops        int
	approvals  int
	lostAnswer int
	elapsed    time.Duration
}

func (r *powerReport) String() string {
	phases := make([]string, 0, len(r.phases))
	for k, v := range r.phases {
		phases = append(phases, fmt.Sprintf("%s: %d", k, v))
	}
	sort.Strings(phases)
	codes := make([]int, 0, len(r.answers))
	for c := range r.answers {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var answers []string
	for _, c := range codes {
		answers = append(answers, fmt.Sprintf("%d=%d", c, r.answers[c]))
	}
	return fmt.Sprintf("POWER_SEED=%d: %d power cuts in %v, %v of it booting (%s; %d tore a write); %d operations, %d approvals, %d answers lost by targets; answers %s",
		r.seed, r.cuts, r.elapsed.Round(time.Second), r.booting.Round(time.Second), strings.Join(phases, ", "), r.torn, r.ops, r.approvals, r.lostAnswer, strings.Join(answers, " "))
}

func newPowerRig(t *testing.T, binary string) *powerRig {
	t.Helper()
	p := &powerRig{t: t, bin: binary, fs: powerfs.New(), ops: map[string]*powerOp{}, byEffect: map[string]string{}, approved: map[int64]bool{}}
	p.mnt = filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(p.mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.fs.Mount(p.mnt); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v: the power-loss test needs FUSE (/dev/fuse, root)", err)
		}
		t.Skipf("%v: the power-loss test needs FUSE (/dev/fuse, root)", err)
	}
	t.Cleanup(func() {
		p.kill()
		if err := p.fs.Unmount(); err != nil {
			t.Error(err)
		}
	})
	p.data = filepath.Join(p.mnt, "data")

	simAddr := freeAddr(t)
	start(t, []string{sim.Bitrix24RateEnv + "=1000", sim.Bitrix24BucketEnv + "=1000"}, "sim", "--listen", simAddr)
	p.simURL = "http://" + simAddr
	waitHTTP(t, p.simURL+"/_sim/effects")

	p.config = filepath.Join(t.TempDir(), "oncegate.yaml")
	cfg := fmt.Sprintf(`contour: test
targets:
  onec: { base_url: "%[1]s/onec", timeout_ms: 1500 }
  bitrix24: { webhook_url_env: E2E_BITRIX24_WEBHOOK, timeout_ms: 1500, settle_ms: 300, rate: { per_second: 1000, burst: 1000 } }
  yookassa: { base_url: "%[1]s/yookassa/v3", shop_id: "e2e-shop", secret_key_env: E2E_YOOKASSA_SECRET, timeout_ms: 1500, read_timeout_ms: 1500, settle_ms: 300 }
retry: { max_attempts: 3, initial_delay_ms: 10, multiplier: 2, max_delay_ms: 40, jitter: true }
reconciler: { interval_ms: 100, review_after: 1000, max_backoff_ms: 400 }
rate_limit: { per_second: 100000, burst: 100000 }
`, p.simURL)
	if err := os.WriteFile(p.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p.env = []string{
		"E2E_BITRIX24_WEBHOOK=" + p.simURL + "/bitrix24" + sim.Bitrix24WebhookPath(),
		"E2E_YOOKASSA_SECRET=sim-secret-key",
	}
	p.addr = freeAddr(t)
	p.command("migrate", "up")
	p.token = lastLine(p.command("token", "create", "--name", "power-agent", "--scopes", "read,draft,write,post,pay"))
	p.password = "power-accountant-1"
	p.command("user", "add", "--role", "accountant", "acc")
	if err := p.serve(); err != nil {
		t.Fatal(err)
	}
	// The accountant signs in once (choosing her own password): her
	// session is in the journal and outlives the cuts, as a browser's
	// cookie does a gateway's restart.
	p.acc = signIn(t, "http://"+p.addr, "acc", p.password)
	p.acc.Timeout = 10 * time.Second
	// The machine has been up a while: everything so far is on disk.
	p.fs.SyncAll()
	return p
}

// command runs a short command of the binary on the rig's data directory.
func (p *powerRig) command(args ...string) string {
	p.t.Helper()
	cmd := exec.Command(p.bin, append(args, "--config", p.config, "--data", p.data)...)
	cmd.Env = append(os.Environ(), append(p.env, "ONCEGATE_PASSWORD="+p.password)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		p.t.Fatalf("oncegate %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}

// serve starts the gateway on the rig's address and waits until ready.
func (p *powerRig) serve() error {
	p.out = &bytes.Buffer{}
	cmd := exec.Command(p.bin, "serve", "--config", p.config, "--data", p.data, "--listen", p.addr)
	cmd.Env = append(os.Environ(), p.env...)
	w := lockedWriter{&p.outMu, p.out}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	p.gateway, p.exited = cmd, exited
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		select {
		case <-exited:
			return fmt.Errorf("the gateway exited on what survived the cut:\n%s", p.output())
		default:
		}
		if resp, err := http.Get("http://" + p.addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
	}
	return fmt.Errorf("the gateway did not become ready in 30 s:\n%s", p.output())
}

func (p *powerRig) output() string {
	p.outMu.Lock()
	defer p.outMu.Unlock()
	return p.out.String()
}

func (p *powerRig) kill() {
	if p.gateway != nil {
		p.gateway.Process.Kill()
		<-p.exited
		p.gateway = nil
	}
}

// newOp is the i-th operation of the load: an invoice in 1C, a call-back
// in the CRM, or a payment that waits for the accountant; one in twenty
// names a customer nobody has and ends failed_final.
func (p *powerRig) newOp(rng *rand.Rand, i int) *powerOp {
	id := fmt.Sprintf("pw-%d", i)
	customer := "customer-1042"
	if rng.IntN(20) == 0 {
		customer = "customer-missing-" + id
	}
	op := &powerOp{}
	switch rng.IntN(3) {
	case 0:
		op.target, op.key = "onec", "test:invoice.create:"+id+":v1"
		op.body = fmt.Sprintf(`{"schema_version":"1.0","intent":"invoice.create","payload":{"order_id":%q,"organization_id":"org-main","customer_id":%q,"currency":"RUB","items":[{"product_id":"product-778","quantity":%d,"unit":"pcs","price_minor":62500}]}}`, id, customer, 1+rng.IntN(4))
		op.effectKey = op.key
	case 1:
		op.target, op.key = "bitrix24", "test:crm.callback:create:"+id+":v1"
		op.body = fmt.Sprintf(`{"schema_version":"1.0","intent":"crm.callback.create","payload":{"customer_id":%q,"due_at":"2026-12-03T10:00:00+03:00","comment":"call back"}}`, customer)
		op.effectKey = op.key
	default:
		op.target, op.key = "yookassa", "test:payment.charge:"+id+":v1"
		op.body = fmt.Sprintf(`{"schema_version":"1.0","intent":"payment.charge","payload":{"account_id":"merchant-account-17","order_id":%q,"amount_minor":%d,"currency":"RUB"}}`, id, 1000+rng.IntN(100000))
		op.effectKey = yookassa.IdempotenceKey(op.key)
	}
	p.mu.Lock()
	p.ops[op.key] = op
	p.byEffect[op.target+"\x00"+op.effectKey] = op.key
	p.mu.Unlock()
	return op
}

// final reports whether op's key got its final answer.
func (p *powerRig) final(op *powerOp) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return op.final
}

// send posts op's key once and records what the agent was told.
func (p *powerRig) send(ctx context.Context, c *http.Client, op *powerOp, rep *powerReport) {
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+p.addr+"/v1/operations", strings.NewReader(op.body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+p.token)
	req.Header.Set("Idempotency-Key", op.key)
	resp, err := c.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return // the answer did not arrive whole: the agent was told nothing
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	rep.answers[resp.StatusCode]++
	switch resp.StatusCode {
	case 200:
		object, _ := body["target_object_id"].(string)
		if op.told == 200 && op.object != object {
			rep.violations = append(rep.violations, fmt.Sprintf("%s: told 200 with %s, then 200 with %s", op.key, op.object, object))
		}
		op.told, op.object, op.final = 200, object, true
	case 422:
		if body["state"] == "failed_final" {
			if op.told == 200 {
				rep.violations = append(rep.violations, fmt.Sprintf("%s: told 200, then failed_final", op.key))
			}
			op.told, op.final = 422, true
		}
	case 202:
		if op.told == 0 {
			op.told = 202
		}
	}
}

// approveAll approves every waiting payment as the accountant, in the
// admin UI, and records each approval the UI said it recorded.
func (p *powerRig) approveAll(ctx context.Context, c *http.Client, rep *powerReport) {
	page, err := p.page(ctx, c, "GET", "/admin/approvals", nil)
	if err != nil {
		return
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	if csrf == nil {
		return
	}
	for _, m := range regexp.MustCompile(`action="/admin/approvals/(\d+)/approve"`).FindAllStringSubmatch(page, -1) {
		id, _ := strconv.ParseInt(m[1], 10, 64)
		// The operation's page, not the list, comes back: with hundreds
		// waiting, the list is the slow part of a decision.
		out, err := p.page(ctx, c, "POST", "/admin/approvals/"+m[1]+"/approve", url.Values{"csrf": {csrf[1]}, "confirm": {"yes"}, "from": {"operation"}})
		if err != nil || !strings.Contains(out, `class="flash flash-ok"`) {
			continue // not said to be recorded: nothing was promised
		}
		p.mu.Lock()
		p.approved[id] = true
		rep.approvals++
		p.mu.Unlock()
	}
}

// page requests an admin page; an error unless it ends in a 200 (a
// decision's redirect followed).
func (p *powerRig) page(ctx context.Context, c *http.Client, method, path string, form url.Values) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, method, "http://"+p.addr+path, strings.NewReader(form.Encode()))
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != 200 || resp.Request.URL.Path == "/admin/login" && path != "/admin/login" {
		return "", fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	return string(b), nil
}

// load runs agents, the accountant and the targets' lost answers until
// ctx ends.
func (p *powerRig) load(ctx context.Context, rng *rand.Rand, next *atomic.Int64, rep *powerReport) {
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	for a := range 4 {
		seed := rng.Uint64()
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(a)))
			for ctx.Err() == nil {
				op := p.anyOp(r)
				if op == nil || r.IntN(3) > 0 {
					op = p.newOp(r, int(next.Add(1)))
				}
				p.send(ctx, client, op, rep)
				if !p.final(op) {
					// Waiting for the accountant or the target: an agent
					// asks again a little later.
					sleep(ctx, 20*time.Millisecond)
				}
			}
		})
	}
	wg.Go(func() {
		for ctx.Err() == nil {
			p.approveAll(ctx, p.acc, rep)
			sleep(ctx, 30*time.Millisecond)
		}
	})
	seed := rng.Uint64()
	wg.Go(func() {
		r := rand.New(rand.NewPCG(seed, 99))
		targets := []string{"onec", "bitrix24", "yookassa"}
		for ctx.Err() == nil {
			sleep(ctx, time.Duration(50+r.IntN(150))*time.Millisecond)
			f := fmt.Sprintf(`{"target":%q,"fault":%q,"times":1}`, targets[r.IntN(len(targets))], sim.FaultDropResponse)
			if resp, err := http.Post(p.simURL+"/_sim/faults", "application/json", strings.NewReader(f)); err == nil {
				resp.Body.Close()
				p.mu.Lock()
				rep.lostAnswer++
				p.mu.Unlock()
			}
		}
	})
	wg.Wait()
}

// anyOp is a key sent before: a replay, or a retry of one not yet final.
func (p *powerRig) anyOp(r *rand.Rand) *powerOp {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.ops) == 0 {
		return nil
	}
	n := r.IntN(len(p.ops))
	for _, op := range p.ops {
		if n == 0 {
			return op
		}
		n--
	}
	panic("unreachable")
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// run makes cuts power cuts under load, checking the journal after each,
// then drives every key to its final answer and checks the targets.
func (p *powerRig) run(cuts int, seed uint64) *powerReport {
	t := p.t
	rep := &powerReport{seed: seed, phases: map[string]int{}, answers: map[int]int{}, seen: map[string]bool{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay with POWER_SEED=%d POWER_CUTS=%d", seed, cuts)
		}
	})
	rng := rand.New(rand.NewPCG(seed, 45))
	var next atomic.Int64
	began := time.Now()
	for i := range cuts {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		// The load's own generator, seeded here: rng stays this goroutine's.
		load := rand.New(rand.NewPCG(rng.Uint64(), uint64(i)))
		go func() { p.load(ctx, load, &next, rep); close(done) }()
		time.Sleep(time.Duration(20+rng.IntN(400)) * time.Millisecond)

		var tear *rand.Rand
		if rng.IntN(4) == 0 {
			tear = rand.New(rand.NewPCG(rng.Uint64(), 1))
		}
		cut := p.fs.Cut(tear)
		p.kill()
		cancel()
		<-done
		rep.cuts++
		rep.phases[cutPhase(cut)]++
		if cut.Torn > 0 {
			rep.torn++
		}
		if err := p.fs.Unmount(); err != nil {
			t.Fatal(err)
		}
		before := len(rep.violations)
		p.checkJournal(fmt.Sprintf("cut %d (%v)", i+1, cut), rep)
		if len(rep.violations) > before {
			rep.caughtCuts++
			if p.stopAtFirst {
				break
			}
		}
		if err := p.fs.Mount(p.mnt); err != nil {
			t.Fatal(err)
		}
		booted := time.Now()
		err := p.serve()
		rep.booting += time.Since(booted)
		if err != nil {
			rep.violations = append(rep.violations, fmt.Sprintf("cut %d: %v", i+1, err))
			rep.caughtCuts++
			break
		}
	}
	if p.gateway != nil {
		p.finish(rep)
	}
	rep.ops = len(p.ops)
	rep.elapsed = time.Since(began)
	return rep
}

// cutPhase names what the journal was doing when the power went, by
// what of its files was not yet synced.
func cutPhase(c powerfs.Cut) string {
	wal, db := c.Files[filepath.Join("data", "journal.db-wal")], c.Files[filepath.Join("data", "journal.db")]
	switch {
	case wal > 0 && db > 0:
		return "mid-commit and mid-checkpoint"
	case wal > 0:
		return "mid-commit (WAL written, not synced)"
	case db > 0:
		return "mid-checkpoint"
	case c.Entries > 0:
		return "a file created, not yet in its synced directory"
	default:
		return "between commits"
	}
}

// checkJournal checks the journal that survived a cut, read from a copy
// of the filesystem, against what was told and what the targets received.
func (p *powerRig) checkJournal(when string, rep *powerReport) {
	t := p.t
	dir := t.TempDir()
	if err := p.fs.Export(dir); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// Each problem is reported at the first cut that shows it.
	bad := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if !rep.seen[msg] {
			rep.seen[msg] = true
			rep.violations = append(rep.violations, when+": "+msg)
		}
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "data", "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	type row struct {
		status, object string
		attempts       int
	}
	rows := map[string]row{}
	q, err := db.Query(`SELECT operation_key, status, coalesce(target_object_id, ''), attempt_count FROM operations`)
	if err != nil {
		bad("the journal cannot be read: %v", err)
		return
	}
	for q.Next() {
		var k string
		var r row
		if err := q.Scan(&k, &r.status, &r.object, &r.attempts); err != nil {
			t.Fatal(err)
		}
		rows[k] = r
	}
	if err := q.Err(); err != nil {
		bad("the journal cannot be read: %v", err)
	}
	q.Close()

	p.mu.Lock()
	defer p.mu.Unlock()
	for _, op := range p.ops {
		r, ok := rows[op.key]
		switch {
		case op.told == 0:
		case !ok:
			bad("%s was answered %d but is not in the journal", op.key, op.told)
		case op.told == 200 && (r.status != "succeeded" || r.object != op.object):
			bad("%s was answered 200 with %s; the journal has %s %q", op.key, op.object, r.status, r.object)
		case op.told == 422 && r.status != "failed_final":
			bad("%s was answered failed_final; the journal has %s", op.key, r.status)
		}
	}
	for id := range p.approved {
		var status string
		if err := db.QueryRow(`SELECT status FROM approvals WHERE id = ?`, id).Scan(&status); err != nil || status == "pending" {
			bad("approval %d was recorded as approved; the journal has %q (%v)", id, status, err)
		}
	}
	var calls map[string]map[string]int
	resp, err := http.Get(p.simURL + "/_sim/calls")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&calls)
	resp.Body.Close()
	for target, keys := range calls {
		for effectKey, n := range keys {
			key, ok := p.byEffect[target+"\x00"+effectKey]
			if !ok || n == 0 {
				continue
			}
			if r, ok := rows[key]; !ok || r.attempts == 0 {
				bad("%s reached %s %d times; the journal has no attempt of it (row %v)", key, target, n, ok)
			}
		}
	}
}

// finish drives every key to its final answer, then checks the targets'
// effects and the audit chain.
func (p *powerRig) finish(rep *powerReport) {
	t := p.t
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			p.approveAll(ctx, p.acc, rep)
			sleep(ctx, 50*time.Millisecond)
		}
	}()
	client := &http.Client{Timeout: 10 * time.Second}
	var pending []*powerOp
	for _, op := range p.ops {
		if !op.final {
			pending = append(pending, op)
		}
	}
	work := make(chan *powerOp)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for op := range work {
				for !p.final(op) && ctx.Err() == nil {
					p.send(ctx, client, op, rep)
					if !p.final(op) {
						sleep(ctx, 50*time.Millisecond)
					}
				}
			}
		})
	}
	for _, op := range pending {
		work <- op
	}
	close(work)
	wg.Wait()
	close(done)
	if ctx.Err() != nil {
		n := 0
		for _, op := range p.ops {
			if !op.final {
				n++
			}
		}
		rep.violations = append(rep.violations, fmt.Sprintf("after the last cut %d operations did not reach a final answer in 90 s", n))
	}

	var effects map[string]map[string]int
	resp, err := http.Get(p.simURL + "/_sim/effects")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&effects)
	resp.Body.Close()
	for target, keys := range effects {
		for k, n := range keys {
			if n > 1 {
				rep.violations = append(rep.violations, fmt.Sprintf("%s: key %s has %d effects", target, k, n))
			}
		}
	}
	for _, op := range p.ops {
		if n := effects[op.target][op.effectKey]; op.told == 200 && n != 1 {
			rep.violations = append(rep.violations, fmt.Sprintf("%s: succeeded with %d effects at %s", op.key, n, op.target))
		}
	}
	p.kill()
	out, err := exec.Command(p.bin, "audit", "verify", "--config", p.config, "--data", p.data).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "audit trail intact") {
		rep.violations = append(rep.violations, fmt.Sprintf("audit verify after the cuts: %v\n%s", err, out))
	}
}
