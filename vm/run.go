package vm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	exprvm "github.com/expr-lang/expr/vm"
)

// DefaultMaxVisits is how many nodes one run may visit unless the machine
// says otherwise: a guard against runaway loops.
const DefaultMaxVisits = 1000

// Machine runs the workflows of a compiled program. It holds no run state:
// one machine serves any number of concurrent runs, each on its own Frame.
type Machine struct {
	Program   *Program
	Registry  *Registry
	MaxVisits int              // node visits per run; 0 means DefaultMaxVisits
	Deadline  time.Duration    // the longest a run may take; 0 means no deadline
	Now       func() time.Time // the clock; nil means time.Now
	NewID     func() string    // frame ids; nil means random
}

func (m *Machine) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *Machine) newID() string {
	if m.NewID != nil {
		return m.NewID()
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// NewFrame returns a frame that runs workflow id from its first node with
// the given context.
func (m *Machine) NewFrame(id string, context map[string]any) (*Frame, error) {
	w := m.Program.Workflow(id)
	if w == nil {
		return nil, fmt.Errorf("unknown workflow %q", id)
	}
	return NewFrame(w, m.newID(), context), nil
}

// Run runs f until the flow ends, a node suspends the run, the run fails or
// ctx is cancelled. A suspended frame continues at its node with resume
// (nil is an empty resume); a frame saved inside a node (Call.Checkpoint)
// runs that node again, without a resume, with the state it saved; a frame
// whose flow ended starts again from the first node with its context. Every event goes to obs.Events; open steps,
// messages and tool calls are closed before Run returns. f is updated in
// place: save it to continue later.
func (m *Machine) Run(ctx context.Context, f *Frame, resume *Resume, obs Observer) Outcome {
	w := m.Program.Workflow(f.Workflow)
	if w == nil {
		return failed(&Error{Code: ErrInternal, Message: fmt.Sprintf("frame of unknown workflow %q", f.Workflow)})
	}
	if m.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.Deadline)
		defer cancel()
	}
	max := m.MaxVisits
	if max <= 0 {
		max = DefaultMaxVisits
	}
	r := &runner{m: m, wf: w, frame: f, max: max, visits: new(atomic.Int64), out: &tracker{sink: obs.Events}}
	r.observer = obs.Nodes
	if cp := obs.Saver; cp != nil {
		r.checkpoint = func(f *Frame) error {
			r.out.mu.Lock()
			defer r.out.mu.Unlock()
			r.out.unsaved = false
			return cp.Checkpoint(f)
		}
		r.effect = func() error {
			r.out.mu.Lock()
			defer r.out.mu.Unlock()
			return cp.Effect()
		}
	}
	f.Visits = 0
	if f.Ended {
		f.Ended, f.Node = false, w.Entry
		if f.Output != nil {
			f.Output = nil
			f.noteOutput()
		}
	}
	if resume != nil {
		// A new turn: the client's $agent and who asks, $user, replace the
		// old ones whole, and a context merge applies, whether the run
		// resumes or starts again.
		if resume.Agent != nil {
			f.SetRoot("agent", Normalize(resume.Agent))
			f.setUser(resume.User)
		}
		if resume.Merge != nil {
			f.MergeContext(Normalize(resume.Merge).(map[string]any))
		}
	}
	if !f.Suspended {
		resume = nil
	} else if resume == nil {
		resume = &Resume{}
	}
	o := r.loop(ctx, "", resume)
	f.Visits = int(r.visits.Load())
	if err := r.out.closeAll(f); err != nil && o.Status != Failed {
		o = failed(&Error{Code: ErrInternal, Message: err.Error()})
	}
	return o
}

func failed(e *Error) Outcome { return Outcome{Status: Failed, Err: e} }

// runner is one run (or one parallel branch, or one called workflow) in
// progress.
type runner struct {
	m      *Machine
	wf     *Workflow
	frame  *Frame
	max    int
	visits *atomic.Int64
	out    *tracker
	env    map[string]any
	vm     exprvm.VM
	caught *Error // the error a catch node binds

	// ctx is the context loop runs under: evaluations give up once it is
	// done (see eval).
	ctx context.Context

	subagent string // the run id of a called workflow; "" for the main flow

	// checkpoint saves the frame between two nodes of the main flow, and
	// inside one that asks (Call.Checkpoint); nil for parallel branches,
	// called workflows and sinks that do not save.
	checkpoint func(*Frame) error
	// effect is called before a node of the main flow that is not pure
	// runs; nil when checkpoint is.
	effect func() error
	// observer learns when the nodes of the main flow start and end; nil
	// for parallel branches, called workflows and sinks that do not ask.
	observer NodeObserver
}

// loop runs nodes from frame.Node until the flow ends, the run suspends or
// fails, or it reaches the node stop (the join of a parallel branch).
func (r *runner) loop(ctx context.Context, stop string, resume *Resume) Outcome {
	f := r.frame
	r.ctx = ctx
	for {
		if err := ctx.Err(); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return failed(&Error{Code: ErrDeadline, Message: "the run's deadline passed", NodeID: f.Node})
			}
			return Outcome{Status: Cancelled}
		}
		if f.Node == "" || f.Node == stop {
			if stop == "" {
				f.Ended = true
				return Outcome{Status: Finished, Result: f.Output}
			}
			return Outcome{Status: Finished}
		}
		n := r.wf.Node(f.Node)
		if n == nil {
			return failed(&Error{Code: ErrInternal, Message: fmt.Sprintf("workflow %q has no node %q", r.wf.ID, f.Node)})
		}
		if v := r.visits.Add(1); v > int64(r.max) {
			return failed(&Error{Code: ErrVisits, Message: fmt.Sprintf("the run visited more than %d nodes; is a loop running away?", r.max), NodeID: n.ID, Span: n.Span})
		}
		resumed := resume != nil
		if r.effect != nil && !r.pure(n) {
			// What the run said since its last save is saved before a
			// node that may take long (a model, a service), so that those
			// who follow the run from the store see it meanwhile. Not
			// before the node that takes the resume: a run recovered from
			// a save goes on without it.
			if !resumed && r.checkpoint != nil && r.unsaved() {
				if err := r.checkpoint(f); err != nil {
					return failed(&Error{Code: ErrInternal, Message: "saving the checkpoint before " + n.ID + " failed: " + err.Error(), NodeID: n.ID, Span: n.Span})
				}
			}
			if err := r.effect(); err != nil {
				return failed(&Error{Code: ErrInternal, Message: "saving the turn before " + n.ID + " failed: " + err.Error(), NodeID: n.ID, Span: n.Span})
			}
		}
		if e := r.nodeStarted(n); e != nil {
			return failed(e)
		}
		next, wait, err := r.step(ctx, n, resume)
		resume = nil
		switch {
		case err != nil:
			e := asError(err, n)
			if e.Code == ErrCancelled && ctx.Err() != nil {
				return r.ended(n, NodeEnd{Err: e}, Outcome{Status: Cancelled})
			}
			if resumed && e.Code == ErrResume {
				// The input did not fit what the node waits for: it still
				// waits, and the next request may answer it properly.
				f.Suspended = true
				return r.ended(n, NodeEnd{Err: e}, failed(e))
			}
			catch := n.Next(EdgeError)
			if catch == "" || e.Code == ErrVisits || e.Code == ErrDeadline || e.Code == ErrInternal {
				return r.ended(n, NodeEnd{Err: e}, failed(e))
			}
			if oe := r.nodeEnded(n, NodeEnd{Next: catch, Err: e}); oe != nil {
				return failed(oe)
			}
			r.caught = e
			f.Node = catch
		case wait != nil:
			f.Suspended = true
			return Outcome{Status: Suspended, Wait: wait}
		case n.Kind == KindEnd:
			f.Ended, f.Node = true, ""
			return r.ended(n, NodeEnd{}, Outcome{Status: Finished, Result: f.Output})
		default:
			if e := r.nodeEnded(n, NodeEnd{Next: next}); e != nil {
				return failed(e)
			}
			f.Node = next
			if r.checkpoint != nil && !r.pure(n) {
				if err := r.checkpoint(f); err != nil {
					return failed(&Error{Code: ErrInternal, Message: "saving the checkpoint failed: " + err.Error(), NodeID: n.ID, Span: n.Span})
				}
			}
		}
	}
}

// unsaved reports whether the run emitted an event since its last
// checkpoint.
func (r *runner) unsaved() bool {
	r.out.mu.Lock()
	defer r.out.mu.Unlock()
	return r.out.unsaved
}

// pure reports whether running n again after a crash would repeat nothing
// outside the run; the run is not checkpointed after such a node.
func (r *runner) pure(n *Node) bool {
	switch n.Kind {
	case KindSet, KindIf, KindSwitch, KindFor, KindWhile, KindStep, KindStepEnd, KindTry, KindJoin, KindCatch, KindEnd, KindFail:
		return true
	case KindParallel:
		return false
	}
	spec := r.m.Registry.Kind(n.Kind)
	return spec != nil && spec.Pure
}

// step runs node n and returns the id of the node to run next.
func (r *runner) step(ctx context.Context, n *Node, resume *Resume) (next string, wait *Wait, err error) {
	f := r.frame
	next = n.Next(EdgeNext)
	switch n.Kind {
	case KindSet:
		for _, a := range n.Assigns {
			v, err := r.eval(a.Value)
			if err != nil {
				return "", nil, err
			}
			if err := r.set(a.Path, v); err != nil {
				return "", nil, Errorf(ErrExpr, "%v", err)
			}
		}
	case KindIf:
		ok, err := r.cond(n.Cond)
		if err != nil {
			return "", nil, err
		}
		if ok {
			return n.Next(EdgeTrue), nil, nil
		}
		return n.Next(EdgeFalse), nil, nil
	case KindSwitch:
		for i, c := range n.Cases {
			ok, err := r.cond(c)
			if err != nil {
				return "", nil, err
			}
			if ok {
				return n.Next(fmt.Sprintf("case %d", i+1)), nil, nil
			}
		}
		return n.Next(EdgeDefault), nil, nil
	case KindFor:
		return r.forStep(n)
	case KindWhile:
		return r.whileStep(n)
	case KindStep:
		f.Steps = append(f.Steps, n.Name)
		if err := r.emit(Event{Type: StepStarted, Name: n.Name, NodeID: n.ID}); err != nil {
			return "", nil, err
		}
	case KindStepEnd:
		if len(f.Steps) > 0 {
			f.Steps = f.Steps[:len(f.Steps)-1]
		}
		if err := r.emit(Event{Type: StepFinished, Name: n.Name, NodeID: n.ID}); err != nil {
			return "", nil, err
		}
	case KindParallel:
		return r.parallel(ctx, n)
	case KindJoin:
	case KindTry:
		r.setState(n.ID, len(f.Steps))
	case KindCatch:
		if err := r.closeStepsFrom(strings.TrimSuffix(n.ID, ".catch"), n.ID); err != nil {
			return "", nil, err
		}
		if n.Var != "" && r.caught != nil {
			r.setLocal(n.Var, map[string]any{"message": r.caught.Message, "code": r.caught.Code, "node": r.caught.NodeID})
		}
		r.caught = nil
	case KindEnd:
	case KindFail:
		msg, err := r.eval(n.Arg)
		if err != nil {
			return "", nil, err
		}
		return "", nil, &Error{Code: ErrFail, Message: Text(msg)}
	default:
		return r.node(ctx, n, resume)
	}
	return next, nil, nil
}

// node runs a node of a stdlib kind.
func (r *runner) node(ctx context.Context, n *Node, resume *Resume) (string, *Wait, error) {
	spec := r.m.Registry.Kind(n.Kind)
	if spec == nil || spec.Exec == nil {
		return "", nil, &Error{Code: ErrInternal, Message: fmt.Sprintf("node kind %q has no implementation", n.Kind)}
	}
	if resume != nil {
		r.frame.Suspended = false
	}
	st, err := spec.Exec(ctx, &Call{Node: n, Spec: spec, Resume: resume, r: r})
	if err != nil {
		return "", nil, err
	}
	if st.Wait != nil {
		return "", st.Wait, nil
	}
	if n.Out != nil {
		if err := r.set(n.Out, st.Result); err != nil {
			return "", nil, Errorf(ErrNode, "%v", err)
		}
	}
	edge := st.Edge
	if edge == "" {
		edge = EdgeNext
	}
	next := n.Next(edge)
	if next == "" && edge != EdgeNext && !n.hasEdge(edge) {
		next = n.Next(EdgeNext)
	}
	return next, nil, nil
}

func (n *Node) hasEdge(label string) bool {
	for _, e := range n.Edges {
		if e.Label == label {
			return true
		}
	}
	return false
}

// forStep enters, continues or leaves a for loop. Its state is the list
// being iterated and the index of the current item.
func (r *runner) forStep(n *Node) (string, *Wait, error) {
	st, _ := r.frame.State[n.ID].(map[string]any)
	var list []any
	i := 0
	if st == nil {
		v, err := r.eval(n.Iter)
		if err != nil {
			return "", nil, err
		}
		switch v := Normalize(v).(type) {
		case nil:
		case []any:
			list = v
		default:
			return "", nil, Errorf(ErrExpr, "for expects a list, found a %s", kindOf(v))
		}
	} else {
		list, _ = st["list"].([]any)
		i, _ = st["i"].(int)
		i++
	}
	if i >= len(list) {
		r.setState(n.ID, nil)
		r.setLocal(n.Var, nil)
		return n.Next(EdgeNext), nil, nil
	}
	r.setState(n.ID, map[string]any{"list": list, "i": i})
	r.setLocal(n.Var, list[i])
	return n.Next(EdgeBody), nil, nil
}

// whileStep checks a while loop's condition and its bound.
func (r *runner) whileStep(n *Node) (string, *Wait, error) {
	ok, err := r.cond(n.Cond)
	if err != nil {
		return "", nil, err
	}
	if !ok {
		r.setState(n.ID, nil)
		return n.Next(EdgeNext), nil, nil
	}
	count, _ := r.frame.State[n.ID].(int)
	if count >= n.Max {
		r.setState(n.ID, nil)
		return "", nil, Errorf(ErrNode, "while loop ran %d times, its max", n.Max)
	}
	r.setState(n.ID, count+1)
	return n.Next(EdgeBody), nil, nil
}

// closeStepsFrom finishes the steps a try block opened before its error.
func (r *runner) closeStepsFrom(tryID, nodeID string) error {
	depth, _ := r.frame.State[tryID].(int)
	r.setState(tryID, nil)
	for len(r.frame.Steps) > depth {
		name := r.frame.Steps[len(r.frame.Steps)-1]
		r.frame.Steps = r.frame.Steps[:len(r.frame.Steps)-1]
		if err := r.emit(Event{Type: StepFinished, Name: name, NodeID: nodeID}); err != nil {
			return err
		}
	}
	return nil
}

// setHidden sets the hidden entry key of the frame; nil deletes it.
func (r *runner) setHidden(key string, v any) { r.frame.SetHidden(key, v) }

func (r *runner) setState(id string, v any) {
	r.frame.noteState(id)
	if v == nil {
		delete(r.frame.State, id)
		return
	}
	if r.frame.State == nil {
		r.frame.State = map[string]any{}
	}
	r.frame.State[id] = v
}

func (r *runner) setLocal(name string, v any) {
	r.frame.noteLocal(name)
	if v == nil {
		delete(r.frame.Locals, name)
	} else {
		if r.frame.Locals == nil {
			r.frame.Locals = map[string]any{}
		}
		r.frame.Locals[name] = Normalize(v)
	}
	if r.env != nil {
		r.env[name] = r.frame.Locals[name]
	}
}

// set writes a context path and keeps the expression environment current.
func (r *runner) set(p *Path, v any) error {
	if err := r.frame.Set(p, v); err != nil {
		return err
	}
	if r.env != nil {
		r.env["$"+p.Root] = r.frame.Context[p.Root]
	}
	return nil
}

// emit sends e; an event of a called workflow names the workflow's run.
func (r *runner) emit(e Event) error {
	if r.subagent != "" && e.SubagentRunID == "" {
		e.SubagentRunID = r.subagent
	}
	return r.out.emit(e)
}

// callWorkflow runs workflow id to its end as a sub-workflow of node n.
func (r *runner) callWorkflow(ctx context.Context, n *Node, id string, input any) (any, error) {
	w := r.m.Program.Workflow(id)
	if w == nil {
		return nil, Errorf(ErrCall, "unknown workflow %q", id)
	}
	roots := map[string]any{"input": input, "agent": Copy(r.frame.Context["agent"])}
	if user := r.frame.Context["user"]; user != nil {
		roots["user"] = Copy(user)
	}
	child := NewFrame(w, r.frame.NextID("sub"), roots)
	if err := r.emit(Event{Type: SubagentStarted, SubagentRunID: child.ID, Name: id, NodeID: n.ID}); err != nil {
		return nil, err
	}
	cr := &runner{m: r.m, wf: w, frame: child, max: r.max, visits: r.visits, out: r.out, subagent: child.ID}
	mark := r.out.mark()
	o := cr.loop(ctx, "", nil)
	if o.Status == Finished {
		if err := r.emit(Event{Type: SubagentFinished, SubagentRunID: child.ID, Name: id, Value: child.Output, NodeID: n.ID}); err != nil {
			return nil, err
		}
		return child.Output, nil
	}
	// Close what the child left open before saying it ended.
	if err := r.out.closeFrom(mark, child); err != nil {
		return nil, err
	}
	msg, code := "the run was cancelled", ErrCancelled
	switch o.Status {
	case Suspended:
		msg, code = fmt.Sprintf("workflow %q waits for the client, which a called workflow cannot do", id), ErrCall
	case Failed:
		msg, code = o.Err.Message, o.Err.Code
		if o.Err.Code == ErrDeadline {
			msg, code = "timed out", ErrTimeout
		}
	}
	if err := r.emit(Event{Type: SubagentError, SubagentRunID: child.ID, Name: id, Content: msg, Code: code, NodeID: n.ID}); err != nil {
		return nil, err
	}
	if o.Status == Cancelled {
		return nil, Errorf(ErrCancelled, "the run was cancelled")
	}
	if o.Status == Failed && o.Err.Code == ErrDeadline {
		return nil, Errorf(ErrTimeout, "workflow %q timed out", id)
	}
	return nil, &Error{Code: ErrCall, Message: fmt.Sprintf("workflow %q failed: %s", id, msg)}
}

// parallel runs every branch of n on its own copy of the context, all at
// once, and merges what each wrote at the join. The compiler guarantees
// that no two branches write the same path.
func (r *runner) parallel(ctx context.Context, n *Node) (string, *Wait, error) {
	join := n.ID + ".join"
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	base := r.frame.Context
	type branch struct {
		frame *Frame
		o     Outcome
	}
	var branches []*branch
	var wg sync.WaitGroup
	// cause is the first branch that stopped without finishing: the
	// others were cancelled because of it, so its outcome is the node's.
	var (
		causeMu sync.Mutex
		cause   *branch
	)
	for _, e := range n.Edges {
		if !strings.HasPrefix(e.Label, "branch ") {
			continue
		}
		bf := *r.frame
		bf.changes = nil // the parent records what the branches wrote when it merges
		bf.Context = Copy(base).(map[string]any)
		bf.Locals, _ = Copy(r.frame.Locals).(map[string]any)
		bf.State, _ = Copy(r.frame.State).(map[string]any)
		bf.Hidden, _ = Copy(r.frame.Hidden).(map[string]any)
		bf.Steps = slices.Clone(r.frame.Steps)
		bf.Node = e.To
		bf.ID = r.frame.ID + "." + strings.TrimPrefix(e.Label, "branch ") // ids the branch makes stay unique
		b := &branch{frame: &bf}
		branches = append(branches, b)
		br := &runner{m: r.m, wf: r.wf, frame: b.frame, max: r.max, visits: r.visits, out: r.out}
		wg.Go(func() {
			b.o = br.loop(ctx, join, nil)
			if b.o.Status != Finished {
				causeMu.Lock()
				if cause == nil {
					cause = b
				}
				causeMu.Unlock()
				cancel()
			}
		})
	}
	wg.Wait()
	for _, b := range branches {
		// The branches counted from the parent's counter: the ids of a
		// later pass, or of the next turn, must come after theirs.
		r.frame.Seq = max(r.frame.Seq, b.frame.Seq)
	}
	stopped := branches
	if cause != nil {
		// Checked first: the branches before it in the source may have
		// stopped only because it cancelled them.
		stopped = append([]*branch{cause}, branches...)
	}
	for _, b := range stopped {
		switch b.o.Status {
		case Failed:
			return "", nil, b.o.Err
		case Cancelled:
			return "", nil, Errorf(ErrCancelled, "the run was cancelled")
		}
	}
	merged := Copy(base).(map[string]any)
	for _, b := range branches {
		merge3(merged, base, b.frame.Context)
		for id, st := range b.frame.State {
			r.setState(id, st)
		}
		for k, v := range b.frame.Hidden {
			if !equal(v, r.frame.Hidden[k]) {
				r.setHidden(k, v)
			}
		}
		if !equal(b.frame.Output, r.frame.Output) {
			r.frame.Output = b.frame.Output // an output set in a branch
			r.frame.noteOutput()
		}
	}
	r.frame.Context = merged
	for k, v := range merged {
		if old, had := base[k]; !had || !equal(old, v) {
			r.frame.noteSet(k, nil, nil, nil)
		}
	}
	for k := range base {
		if _, still := merged[k]; !still {
			r.frame.noteSet(k, nil, nil, nil)
		}
	}
	r.env = nil
	return join, nil, nil
}

// merge3 applies to dst what changed from orig to changed.
func merge3(dst, orig, changed map[string]any) {
	for k, cv := range changed {
		ov, had := orig[k]
		if had && equal(ov, cv) {
			continue
		}
		if cm, ok := cv.(map[string]any); ok {
			om, ok1 := ov.(map[string]any)
			dm, ok2 := dst[k].(map[string]any)
			if ok1 && ok2 {
				merge3(dm, om, cm)
				continue
			}
		}
		dst[k] = Copy(cv)
	}
	for k := range orig {
		if _, still := changed[k]; !still {
			delete(dst, k)
		}
	}
}
