package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/contract"
	"github.com/oncegate/oncegate/server/intent"
	"github.com/oncegate/oncegate/store"
)

// Processes. A process's steps are ordinary operations, submitted here as
// an agent's would be, under keys derived from the process's key, so
// every guarantee of an operation holds for each: the fingerprint, the
// approval, the duplicate rules, reconciliation before any resend. The
// process's own row only says where it stands; where it stands is always
// derived again from its steps' rows, so driving a process twice, after a
// restart or on two gateways at once, decides the same and makes nothing
// twice.

// KindProcess: a process (Process, Steps).
const KindProcess OutcomeKind = KindRead + 1

// StepView is one step of a process as its rows stand.
type StepView struct {
	Name   string
	Intent string
	Key    string
	// Op is the step's operation; nil before the step was sent, or when
	// it was refused before it was journaled (Refusal then).
	Op      *store.Operation
	Refusal *codes.Refusal
	// Compensation is what undoes the step, once its undoing started.
	Compensation *CompensationView
}

// CompensationView is the undoing of a step.
type CompensationView struct {
	Intent  string
	Key     string
	Op      *store.Operation
	Refusal *codes.Refusal
}

// stepKeyPrefix starts the id segment of a derived key: agents' keys may
// not start so, so no agent's key collides with a step's.
const stepKeyPrefix = "px-"

// stepKey is the key of a process's step (or, undo, of its compensation):
// in the step intent's own key grammar, its id segment the process key's
// id, a digest of the whole process key (letters only, so no run of
// digits reads as a card number) and the step's name.
func stepKey(contour, processKey, stepIntent, step string, undo bool) string {
	segs := strings.Split(processKey, ":")
	id := segs[len(segs)-2]
	sum := sha256.Sum256([]byte(processKey))
	var h [12]byte
	for i := range h {
		h[i] = 'a' + sum[i]%16
	}
	if undo {
		step += "-undo"
	}
	tail := "-" + string(h[:]) + "-" + strings.ReplaceAll(step, "_", "-")
	head := contour + ":" + stepIntent + ":" + stepKeyPrefix
	if room := contract.MaxKeyLen - len(head) - len(tail) - len(":v1"); len(id) > room {
		id = id[:max(room, 0)]
	}
	return head + strings.Trim(id, "-._") + tail + ":v1"
}

// undoKey is the key of the compensation of p's step: each round a person
// asked for (ResolveRetry) undoes under a key of its own, as the earlier
// round's is final.
func undoKey(contour string, p store.Process, intentName, step string) string {
	if n := p.UndoRounds[step]; n > 0 {
		step += "-undo" + strconv.Itoa(n+1)
		return stepKey(contour, p.Key, intentName, step, false)
	}
	return stepKey(contour, p.Key, intentName, step, true)
}

// isStepKey reports whether key is shaped as a derived step key.
func isStepKey(key string) bool {
	segs := strings.Split(key, ":")
	return len(segs) >= 4 && strings.HasPrefix(segs[len(segs)-2], stepKeyPrefix)
}

// submitProcess answers a request for a process: its key bound to its
// fingerprint in the journal, then driven as far as it goes now.
func (e *Engine) submitProcess(ctx context.Context, tok store.Token, r request, out *Outcome) (Outcome, error) {
	def := r.def
	for _, sc := range def.StepScopes {
		if !tok.Has(sc) {
			return *out, codes.Refusef(codes.PermissionDenied, "", "this token lacks the %q scope that the steps of %s need (it needs %s)",
				sc, def.Name, strings.Join(def.StepScopes, ", "))
		}
	}
	if r.env.Mode == contract.ModeValidate {
		return e.validateProcess(ctx, tok, r, out)
	}
	p, created, err := e.store.BeginProcess(ctx, store.Process{
		Key: r.key, Intent: def.Name, IntentVersion: def.Version, IntentDigest: def.Digest, Fingerprint: r.norm.Fingerprint,
		Agent: tok.Agent, Scopes: tok.Scopes, RequestID: r.env.RequestID, Payload: r.norm.Payload,
	}, e.owner, e.processLease(def), e.stepKeys(def, r.key))
	if err != nil {
		return *out, err
	}
	switch {
	case p.Agent != tok.Agent:
		return *out, keyForeign()
	case p.Fingerprint != r.norm.Fingerprint:
		return *out, codes.New(codes.KeyMismatch, "", "this key was first used with a different request; a changed request needs a new key. "+
			"The key's own process is "+string(p.State)+"; read it with GET /v1/operations/{key}")
	}
	o := Outcome{Intent: def, Key: r.key, Fingerprint: p.Fingerprint, RequestID: r.env.RequestID, Kind: KindProcess, Replayed: !created}
	o.Process, o.Steps, err = e.driveProcess(ctx, def, p, created)
	return o, err
}

// stepKeys are the keys of a process's steps and of their first
// compensations.
func (e *Engine) stepKeys(def *intent.Intent, key string) []string {
	var out []string
	for _, s := range def.Steps {
		out = append(out, stepKey(e.cfg.Contour, key, s.Intent, s.Name, false))
		if s.Compensate.Kind == intent.CompensateIntent {
			out = append(out, stepKey(e.cfg.Contour, key, s.Compensate.Intent, s.Name, true))
		}
	}
	return out
}

// Process reads a process and its steps for agent; ErrNotFound for a key
// that holds no process of agent's.
func (e *Engine) Process(ctx context.Context, agent, key string) (store.Process, []StepView, error) {
	p, steps, err := e.ProcessOf(ctx, key)
	if err == nil && p.Agent != agent && !strings.HasPrefix(p.Agent, EventAgentPrefix) {
		return store.Process{}, nil, store.ErrNotFound
	}
	return p, steps, err
}

// ProcessOfStep reads the process whose step (or compensation) has the
// key stepKey, and its steps; ErrNotFound when it is no process's.
func (e *Engine) ProcessOfStep(ctx context.Context, stepKey string) (store.Process, []StepView, error) {
	key, err := e.store.ProcessOfStep(ctx, stepKey)
	if err != nil {
		return store.Process{}, nil, err
	}
	return e.ProcessOf(ctx, key)
}

// ProcessOf reads a process and its steps, whoever's it is: for people.
// A process whose steps have ended it is read as ended, though its own
// row may not have followed yet (driveProcess writes that end in the
// background), so a read never shows less than an answer already gave.
// Any other state is the row's: what a person acts on.
func (e *Engine) ProcessOf(ctx context.Context, key string) (store.Process, []StepView, error) {
	p, err := e.store.GetProcess(ctx, key)
	if err != nil {
		return p, nil, err
	}
	def, ok := e.cfg.Catalog.Version(p.Intent, p.IntentVersion)
	if !ok || !def.IsProcess() {
		return p, nil, nil
	}
	if !p.State.Final() && p.State != store.ProcessNeedsReview {
		d, err := e.newDrive(def, p, true)
		if err != nil {
			return p, nil, err
		}
		state, step, code, msg := d.forward(ctx)
		if d.transient == nil || errors.Is(d.transient, errWouldSend) {
			if d.transient == nil && state.Final() {
				p.State, p.Step = state, step
				if code != "" {
					p.ErrorCode, p.ErrorMessage = code, msg
				}
			}
			return p, d.steps, nil
		}
	}
	steps, err := e.viewSteps(ctx, def, p)
	return p, steps, err
}

// driveProcess takes a process as far as it goes now and moves its row to
// where it then stands. A final process, or one waiting for a person, is
// only read. Unless leased (the caller holds the process's lease), a
// pass that only reads the steps' rows comes first: a process that waits
// needs no lease and writes only a change of its state; one with a step
// to send is leased, so one pass at a time sends its steps, on any
// gateway.
func (e *Engine) driveProcess(ctx context.Context, def *intent.Intent, p store.Process, leased bool) (store.Process, []StepView, error) {
	fresh := leased // begun by this request: nothing of it is journaled yet
	if p.State.Final() || p.State == store.ProcessNeedsReview {
		steps, err := e.viewSteps(ctx, def, p)
		return p, steps, err
	}
	unlock := e.processes.lock(p.Key)
	defer unlock()
	if !leased {
		fresh, err := e.store.GetProcess(ctx, p.Key)
		if err != nil {
			return p, nil, err
		}
		if p = fresh; p.State.Final() || p.State == store.ProcessNeedsReview {
			steps, err := e.viewSteps(ctx, def, p)
			return p, steps, err
		}
		d, err := e.newDrive(def, p, true)
		if err != nil {
			return p, nil, err
		}
		state, step, code, msg := d.forward(ctx)
		switch {
		case errors.Is(d.transient, errWouldSend):
		case d.transient != nil:
			return p, d.steps, nil
		default:
			moved, err := e.store.MoveProcess(ctx, p.Key, "", state, step, code, msg)
			return moved, d.steps, err
		}
		if p, leased, err = e.store.LeaseProcess(ctx, p.Key, e.owner, e.processLease(def)); err != nil || !leased {
			return p, d.steps, err // another pass holds it: it sends
		}
	}
	d, err := e.newDrive(def, p, false)
	if err != nil {
		return p, nil, err
	}
	d.fresh = fresh
	state, step, code, msg := d.forward(ctx)
	if state.Final() && d.transient == nil {
		// The steps' rows, on disk, hold the outcome: the answer need not
		// wait for the process's own row to follow them. Until it has,
		// every read derives the same end from the steps (ProcessOf), and
		// a crash before it lands leaves a pass to write it again.
		moved := p
		moved.State, moved.Step, moved.UpdatedAt = state, step, e.store.Now()
		moved.CompletedAt = moved.UpdatedAt
		if code != "" {
			moved.ErrorCode, moved.ErrorMessage = code, msg
		}
		e.moveLater(p.Key, state, step, code, msg)
		return moved, d.steps, nil
	}
	moved, err := e.store.MoveProcess(ctx, p.Key, e.owner, state, step, code, msg)
	if err != nil {
		return p, d.steps, err
	}
	return moved, d.steps, nil
}

// moveLater moves a process to its end and gives back this run's lease,
// in the background; shutdown waits for it (Drain).
func (e *Engine) moveLater(key string, state store.ProcessState, step, code, msg string) {
	move := func() {
		if _, err := e.store.MoveProcess(store.WithActor(context.Background(), processCtx), key, e.owner, state, step, code, msg); err != nil {
			e.log.Warn("process: its end could not be journaled yet; a later pass writes it", "process", key, "err", err)
		}
	}
	if !e.inflight.start() {
		move() // stopping: nothing may be left behind the drain
		return
	}
	go func() {
		defer e.inflight.done()
		move()
	}()
}

// processLease is how long a pass over def may hold its process: every
// step sent in it, and a compensation.
func (e *Engine) processLease(def *intent.Intent) time.Duration {
	return time.Duration(len(def.Steps)+1) * e.MaxLease()
}

// errWouldSend stops a pass that only reads where it would send a step.
var errWouldSend = errors.New("a step is to be sent")

// newDrive starts a pass over p; dry, it sends nothing.
func (e *Engine) newDrive(def *intent.Intent, p store.Process, dry bool) (*drive, error) {
	d := &drive{e: e, def: def, p: p, dry: dry, made: map[string]intent.Made{}, tok: store.Token{Agent: p.Agent, Scopes: p.Scopes}}
	dec := json.NewDecoder(bytes.NewReader(p.Payload))
	dec.UseNumber()
	if err := dec.Decode(&d.payload); err != nil {
		return nil, fmt.Errorf("process %s: its payload: %w", p.Key, err)
	}
	return d, nil
}

// drive is one pass over a process's steps.
type drive struct {
	e   *Engine
	def *intent.Intent
	p   store.Process
	dry bool // only read: stop where a step would be sent (errWouldSend)
	// fresh: the process was begun by this very request, so none of its
	// steps has a row yet, and none is read before it is sent.
	fresh   bool
	tok     store.Token
	payload map[string]any
	made    map[string]intent.Made
	steps   []StepView
	// transient is set when a step could not be sent or read for now:
	// the state stays and the pass is tried again.
	transient error
}

// forward runs the steps in order up to the first that is not succeeded,
// and says where the process stands; a step failed for good turns it to
// undoing the completed ones.
func (d *drive) forward(ctx context.Context) (store.ProcessState, string, string, string) {
	for i, s := range d.def.Steps {
		view := StepView{Name: s.Name, Intent: s.Intent, Key: stepKey(d.e.cfg.Contour, d.p.Key, s.Intent, s.Name, false)}
		var (
			op      *store.Operation
			refusal *codes.Refusal
		)
		if d.p.ErrorCode != "" {
			// A step failed for good before: the process is being undone,
			// and no step is sent again — a step refused then might be
			// accepted now, after what it followed was undone.
			if op = d.read(ctx, view.Key); op == nil && d.transient == nil {
				refusal = &codes.Refusal{Code: d.p.ErrorCode, Message: d.p.ErrorMessage}
			}
		} else {
			op, refusal = d.run(ctx, s.Intent, view.Key, s.Payload)
		}
		view.Op, view.Refusal = op, refusal
		d.steps = append(d.steps, view)
		switch {
		case d.transient != nil:
			d.rest(i + 1)
			return d.p.State, s.Name, "", ""
		case refusal != nil:
			return d.backward(ctx, i-1, s.Name, refusal.Code, refusal.Message)
		}
		switch op.Status {
		case store.StatusSucceeded:
			d.made[s.Name] = made(*op)
		case store.StatusFailedFinal:
			return d.backward(ctx, i-1, s.Name, op.ErrorCode, op.ErrorMessage)
		case store.StatusAwaitingApproval:
			d.rest(i + 1)
			return store.ProcessAwaitingApproval, s.Name, "", ""
		case store.StatusUnknown:
			d.rest(i + 1)
			return store.ProcessUnknown, s.Name, "", ""
		default: // started, or failed_retryable: sent again on the next pass
			d.rest(i + 1)
			return store.ProcessStarted, s.Name, "", ""
		}
	}
	return store.ProcessSucceeded, d.def.Steps[len(d.def.Steps)-1].Name, "", ""
}

// rest adds the steps from i on, not sent yet, to the view.
func (d *drive) rest(i int) {
	for _, s := range d.def.Steps[i:] {
		d.steps = append(d.steps, StepView{Name: s.Name, Intent: s.Intent, Key: stepKey(d.e.cfg.Contour, d.p.Key, s.Intent, s.Name, false)})
	}
}

// backward undoes the completed steps from i down, in reverse order, after
// step failed for good with code; it says where the process then stands.
func (d *drive) backward(ctx context.Context, i int, failed, code, msg string) (store.ProcessState, string, string, string) {
	d.rest(len(d.steps))
	if i < 0 {
		// Nothing was made: refused before any step took effect.
		return store.ProcessRejected, failed, code, msg
	}
	for j := i; j >= 0; j-- {
		s := d.def.Steps[j]
		c := s.Compensate
		switch {
		case c.Kind == intent.CompensateNone || slices.Contains(d.p.Undone, s.Name):
			continue
		case c.Kind == intent.CompensateManual:
			return store.ProcessNeedsReview, s.Name, code, msg
		}
		view := &CompensationView{Intent: c.Intent, Key: undoKey(d.e.cfg.Contour, d.p, c.Intent, s.Name)}
		d.steps[j].Compensation = view
		if d.p.UndoRounds[s.Name] > 0 && !d.dry {
			// A round a person asked for: its key is new.
			if err := d.e.store.NoteProcessStep(ctx, d.p.Key, view.Key); err != nil {
				d.transient = err
				return store.ProcessCompensating, failed, code, msg
			}
		}
		view.Op, view.Refusal = d.run(ctx, c.Intent, view.Key, c.Payload)
		switch {
		case d.transient != nil:
			return store.ProcessCompensating, failed, code, msg
		case view.Refusal != nil:
			return store.ProcessNeedsReview, s.Name, code, msg
		}
		switch view.Op.Status {
		case store.StatusSucceeded:
			continue
		case store.StatusFailedFinal:
			return store.ProcessNeedsReview, s.Name, code, msg
		default:
			return store.ProcessCompensating, failed, code, msg
		}
	}
	return store.ProcessCompensated, failed, code, msg
}

// run submits one step (or compensation) under key, its payload filled
// from fields, as the process's agent: a replay when it ran before. It
// returns the step's row, or the refusal that kept it from the journal;
// anything else is transient (d.transient).
func (d *drive) run(ctx context.Context, name, key string, fields []intent.Field) (*store.Operation, *codes.Refusal) {
	// A step's row that is there and not to be sent again is read, not
	// submitted: a pass over a process that waits writes nothing.
	if !d.fresh {
		if op := d.read(ctx, key); d.transient != nil || op != nil && op.Status != store.StatusFailedRetryable {
			return op, nil
		}
	}
	if d.dry {
		d.transient = errWouldSend
		return nil, nil
	}
	payload, err := intent.Fill(fields, d.payload, d.made)
	if err != nil {
		// A mapping reading what an earlier step did not make: the
		// loader checked names, not what a target answers.
		return nil, &codes.Refusal{Code: codes.Validation, Message: err.Error(), Status: http.StatusUnprocessableEntity}
	}
	body, err := json.Marshal(map[string]any{"schema_version": contract.SchemaVersion, "intent": name, "payload": payload})
	if err != nil {
		d.transient = err
		return nil, nil
	}
	out, err := d.e.Submit(ctx, Submission{Token: d.tok, KeyHeader: key, HasKeyHeader: true, Body: body, step: true})
	var r *codes.Refusal
	switch {
	case err == nil && out.Kind == KindOperation:
		op := out.Op
		return &op, nil
	case errors.As(err, &r) && r.Status < 500 && !codes.Retryable(r.Code):
		return nil, r
	case err == nil:
		d.transient = fmt.Errorf("step %s answered no operation", key)
	default:
		d.transient = err
	}
	d.e.log.Warn("process: a step could not be sent for now; the process is driven again", "process", d.p.Key, "step", key, "err", d.transient)
	return nil, nil
}

// read is the row of key, nil when there is none; a journal that cannot
// be read is transient.
func (d *drive) read(ctx context.Context, key string) *store.Operation {
	op, err := d.e.store.Get(ctx, key)
	switch {
	case err == nil:
		return &op
	case !errors.Is(err, store.ErrNotFound):
		d.transient = err
	}
	return nil
}

// made is what a succeeded step's row says it made.
func made(op store.Operation) intent.Made {
	m := intent.Made{ObjectID: op.TargetObjectID}
	if len(op.Result) > 0 {
		dec := json.NewDecoder(bytes.NewReader(op.Result))
		dec.UseNumber()
		_ = dec.Decode(&m.Result) // a result that is no object reads as none
	}
	return m
}

// viewSteps reads a process's steps from their rows, sending nothing.
func (e *Engine) viewSteps(ctx context.Context, def *intent.Intent, p store.Process) ([]StepView, error) {
	var out []StepView
	for _, s := range def.Steps {
		v := StepView{Name: s.Name, Intent: s.Intent, Key: stepKey(e.cfg.Contour, p.Key, s.Intent, s.Name, false)}
		op, err := e.store.Get(ctx, v.Key)
		switch {
		case err == nil:
			v.Op = &op
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
		if s.Compensate.Kind == intent.CompensateIntent {
			ck := undoKey(e.cfg.Contour, p, s.Compensate.Intent, s.Name)
			if cop, err := e.store.Get(ctx, ck); err == nil {
				v.Compensation = &CompensationView{Intent: s.Compensate.Intent, Key: ck, Op: &cop}
			} else if !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
		}
		out = append(out, v)
	}
	return out, nil
}

// processTick is how often the unfinished processes are driven; one that
// waits for a target that could not be asked is driven less often, up to
// processBackoff.
const (
	processTick    = time.Second
	processBackoff = 30 * time.Second
)

// driveProcesses drives the processes not final, but those waiting for a
// person, as far as each goes now: after a restart, after an approval,
// after a step's outcome was reconciled. next paces the ones a pass left
// where they were for want of a target.
func (e *Engine) driveProcesses(ctx context.Context, next map[string]pace) {
	list, err := e.store.UnfinishedProcesses(ctx, 200)
	if err != nil {
		e.log.Error("processes: list unfinished", "err", err)
		return
	}
	now := time.Now()
	for _, p := range list {
		if ctx.Err() != nil {
			return
		}
		if p.State == store.ProcessNeedsReview || now.Before(next[p.Key].at) {
			continue
		}
		def, ok := e.cfg.Catalog.Version(p.Intent, p.IntentVersion)
		if !ok || !def.IsProcess() || !def.Accepts(p.IntentDigest) {
			continue // its definition is gone or changed: serve refuses to start then
		}
		moved, _, err := e.driveProcess(store.WithActor(ctx, processCtx), def, p, false)
		if err != nil || moved.State == p.State && moved.Step == p.Step && moved.State == store.ProcessStarted {
			wait := min(max(2*next[p.Key].wait, processTick), processBackoff)
			next[p.Key] = pace{at: now.Add(wait), wait: wait}
			continue
		}
		delete(next, p.Key)
	}
}

// pace is when a process is driven next, and the wait before that.
type pace struct {
	at   time.Time
	wait time.Duration
}

// validateProcess answers a process in mode validate: every step whose
// payload the process's alone fills is validated as its intent's own
// request in mode validate (at its target where the target checks), in
// order; a step that reads what an earlier one makes is checked when it
// runs. Nothing is journaled. The plan lists each step.
func (e *Engine) validateProcess(ctx context.Context, tok store.Token, r request, out *Outcome) (Outcome, error) {
	def := r.def
	var values map[string]any
	dec := json.NewDecoder(bytes.NewReader(r.norm.Payload))
	dec.UseNumber()
	if err := dec.Decode(&values); err != nil {
		return *out, err
	}
	type stepPlan struct {
		Name    string          `json:"name"`
		Intent  string          `json:"intent"`
		Checked bool            `json:"checked"`
		Note    string          `json:"note,omitempty"`
		Plan    json.RawMessage `json:"plan,omitempty"`
	}
	var plan []stepPlan
	for _, s := range def.Steps {
		sp := stepPlan{Name: s.Name, Intent: s.Intent}
		if readsSteps(s.Payload) {
			sp.Note = "reads what an earlier step makes: checked when the process runs"
			plan = append(plan, sp)
			continue
		}
		payload, err := intent.Fill(s.Payload, values, nil)
		if err != nil {
			return *out, err
		}
		body, err := json.Marshal(map[string]any{"schema_version": contract.SchemaVersion, "intent": s.Intent, "mode": contract.ModeValidate, "payload": payload})
		if err != nil {
			return *out, err
		}
		o, err := e.Submit(ctx, Submission{Token: tok, Body: body, step: true})
		if err != nil {
			var ref *codes.Refusal
			if errors.As(err, &ref) {
				ref.Message = "step " + s.Name + " (" + s.Intent + "): " + ref.Message
			}
			return *out, err
		}
		sp.Checked, sp.Plan = true, o.Plan
		plan = append(plan, sp)
	}
	raw, err := json.Marshal(map[string]any{"operation": def.Name, "steps": plan})
	if err != nil {
		return *out, err
	}
	return Outcome{Intent: def, Key: r.key, Fingerprint: r.norm.Fingerprint, RequestID: r.env.RequestID, Kind: KindValidated, Plan: raw}, nil
}

// readsSteps reports whether a step's mapping reads what an earlier step
// made.
func readsSteps(fields []intent.Field) bool {
	for _, f := range fields {
		if f.Step != "" || strings.Contains(f.Template, "{steps.") {
			return true
		}
	}
	return false
}
