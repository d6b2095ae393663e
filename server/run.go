package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/aguic/aguic/metrics"
	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/telemetry"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
)

// run is one run in progress: the goroutine that executes it writes its
// frames here, and every stream of the run reads them. Writing never
// waits for a reader, so a slow or vanished client cannot hold the run up.
type run struct {
	id     string
	key    store.Key
	now    func() time.Time
	ctx    context.Context // the run's own: the server's, with the deadline
	cancel context.CancelFunc
	owner  string        // the lease owner: the server's prefix, the run id, a nonce
	lease  store.Lease   // the lease admit took
	done   chan struct{} // closed when the run ended and its terminal frame is written

	mu     sync.Mutex
	frames []frame
	ended  bool
	held   bool          // the frames are held back until the turn is durable (hold, durable)
	wake   chan struct{} // closed and replaced at every change
	final  vm.Status     // how the run ended, once it has

	usage []agui.TokenUsage // the tokens the run's model calls used; only the run's goroutine touches it

	metrics *metrics.Metrics // nil: metrics are off
	began   time.Time        // when the run was admitted, for the latency of its first event
	seen    bool             // the run emitted an event after RUN_STARTED; only the run's goroutine touches it

	trace     *telemetry.Run // its span; nil without tracing
	threadID  string         // the client's thread id, for the terminal event
	queued    *store.Request // what a queued run begins with when its turn comes; nil for one that began at once
	nodes     *lifecycle     // the lifecycle of its nodes, once it is set to execute; under mu
	wantNodes bool           // a follower wants the lifecycle; under mu
}

// frame is one SSE frame: the event's JSON, in each dialect, and its
// sequence number in the thread's log (0: not stored, the frame has no
// id).
type frame struct {
	seq  uint64
	enc  agui.Encoding
	node bool // a frame of the node lifecycle, which a stream shows only when asked
}

func newRun(id string, key store.Key, now func() time.Time) *run {
	return &run{id: id, key: key, now: now, done: make(chan struct{}), wake: make(chan struct{})}
}

func (r *run) push(f frame, last bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	r.frames = append(r.frames, f)
	r.ended = last
	close(r.wake)
	r.wake = make(chan struct{})
}

// hold holds the run's frames back from its streams until durable (or
// the run's end): a client must not see a turn start that a power loss
// could still lose.
func (r *run) hold() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held = true
}

// durable releases the frames that hold held back.
func (r *run) durable() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held {
		r.held = false
		close(r.wake)
		r.wake = make(chan struct{})
	}
}

// end marks the frames complete without adding one.
func (r *run) end() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ended {
		r.ended = true
		close(r.wake)
		r.wake = make(chan struct{})
	}
}

// status is how the run ended; "" while it runs.
func (r *run) status() vm.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.final
}

// next returns the frames from index i on, whether the run has ended, and
// a channel closed at the next change.
func (r *run) next(i int) ([]frame, bool, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held && !r.ended {
		return nil, false, r.wake
	}
	return r.frames[i:], r.ended, r.wake
}

// Emit passes an event that has no sequence number.
func (r *run) Emit(e vm.Event) error { return r.EmitSeq(0, e) }

// EmitSeq turns a live event into its frame. It never fails: a run does
// not stop for its audience.
func (r *run) EmitSeq(seq uint64, e vm.Event) error {
	if e.Type == vm.Usage {
		r.usage = agui.AddUsage(r.usage, e)
		return nil
	}
	if e.Silent {
		return nil
	}
	ev, ok := agui.FromVM(e)
	if !ok {
		return nil // HIDE_TOOL_CALL is for the log only
	}
	if !r.seen && r.metrics != nil {
		r.seen = true
		r.metrics.FirstEvent(r.key.Workflow, time.Since(r.began))
	}
	r.pushEvent(seq, ev, false)
	return nil
}

// pushEvent adds the frame of ev, stamped with the time.
func (r *run) pushEvent(seq uint64, ev agui.Event, last bool) {
	enc, err := agui.Encode(agui.WithTimestamp(ev, r.now()))
	if err != nil {
		enc, _ = agui.Encode(agui.WithTimestamp(agui.RunError("encoding an event failed: "+err.Error(), vm.ErrInternal), r.now()))
	}
	r.push(frame{seq: seq, enc: enc}, last)
}

// stateFirst returns the Request.Events of a run whose client holds
// state (its request's, as $agent has it): the run's first STATE_DELTA
// is preceded by a STATE_SNAPSHOT of that state, unless a STATE_SNAPSHOT
// came first. A client that applies a run's first delta to an empty state
// instead of its own (Copilot Runtime 1.74's in-memory runner does) then
// holds the right state all the same. The snapshot is the run's like its
// other events: stored, replayed and followed with them.
func stateFirst(state any) func(vm.Sink) vm.Sink {
	return func(next vm.Sink) vm.Sink { return &stateSink{next: next, state: state} }
}

// stateSink is the sink stateFirst puts in front of a run's journal.
type stateSink struct {
	next  vm.Sink
	state any  // the client's state when the run began
	sent  bool // a state event of the run went out
}

// Emit passes e on, after the snapshot when e is the run's first state
// event and a delta.
func (s *stateSink) Emit(e vm.Event) error {
	switch e.Type {
	case vm.StateSnapshot:
		s.sent = true
	case vm.StateDelta:
		if !s.sent {
			s.sent = true
			snap := vm.Event{Type: vm.StateSnapshot, Value: s.state, SubagentRunID: e.SubagentRunID, NodeID: e.NodeID}
			if err := s.next.Emit(snap); err != nil {
				return err
			}
		}
	}
	return s.next.Emit(e)
}

// runState is the client's state when a run begins: the baseline that
// state sync compares with, else $agent.state; nil when the request has
// no state.
func runState(agent map[string]any) any {
	if hidden, ok := agent["_hidden"].(map[string]any); ok {
		if st, ok := hidden["state"]; ok {
			return st
		}
	}
	return agent["state"]
}

// pushNode adds the frame of an event of the node lifecycle.
func (r *run) pushNode(ev agui.Event) {
	if enc, err := agui.Encode(agui.WithTimestamp(ev, r.now())); err == nil {
		r.push(frame{enc: enc, node: true}, false)
	}
}

// runRequest is an AG-UI run request resolved to its workflow.
type runRequest struct {
	wf *vm.Workflow
	in *RunAgentInput
}

// reply is what a run request is answered with: the run whose frames go
// out, whether its node lifecycle frames go with them, and, for a run the
// request only follows (a restore), the function that fills it while the
// frames are read. The AG-UI routes send it as SSE (sse); /mcp reads it
// into a tool result.
type reply struct {
	run     *run
	nodes   bool
	produce func(ctx context.Context)
}

// sse is the response that streams rp as server-sent events in dialect d.
func (s *Server) sse(rp reply, d agui.Dialect) *huma.StreamResponse {
	if rp.produce != nil {
		return s.streamWith(rp.run, d, rp.produce)
	}
	return s.streamAfter(rp.run, 0, d, rp.nodes)
}

// start validates a run request, takes the thread's lease and starts the
// run; the 4xx answers all come from here, before any stream.
func (s *Server) start(ctx context.Context, req runRequest) (*huma.StreamResponse, error) {
	rp, err := s.begin(ctx, req)
	if err != nil {
		return nil, err
	}
	return s.sse(rp, agui.DialectOf(req.in.ProtocolVersion)), nil
}

// begin is start without the stream: it checks the request, admits the
// run on its thread and starts it (or answers without running: the
// snapshot of a conversation, a refusal as RUN_ERROR). Every run request,
// of the AG-UI routes and of /mcp, goes through here.
func (s *Server) begin(ctx context.Context, req runRequest) (reply, error) {
	in, wf := req.in, req.wf
	nodes, err := nodeEventsOf(in.ForwardedProps)
	if err != nil {
		return reply{}, err
	}
	nodes = nodes || s.cfg.NodeLifecycle
	model, err := s.requestModel(in.ForwardedProps)
	if err != nil {
		return reply{}, err
	}
	if in.RunID == "" {
		in.RunID = "run-" + uuid.NewString()
	}
	key := store.Key{Scope: scopeOf(ctx), Workflow: wf.ID, Thread: in.ThreadID}
	agent, err := agui.BuildAgent(in.input(), wf.Conversation)
	if err != nil {
		// The request is well formed but the workflow cannot take it:
		// AG-UI says RUN_ERROR, and nothing starts.
		s.cfg.Metrics.RunEnded(wf.ID, outcomeInvalid)
		r := newRun(in.RunID, key, s.now)
		r.pushEvent(0, agui.RunError(err.Error(), outcomeInvalid), true)
		close(r.done)
		return reply{run: r}, nil
	}
	if model != "" {
		vm.SetRequestModel(agent, model)
	}
	// The hook sees every run request, also one the snapshot answers (a
	// reload): a run request it refuses gets nothing of the thread. The
	// read routes are guarded by the scope alone.
	hook, err := s.hookRequest(ctx, in, wf, key, agent)
	if err != nil {
		s.cfg.Metrics.RunEnded(wf.ID, outcomeRejected)
		return s.rejected(in, key, err)
	}
	key.Scope = hook.Scope
	if wf.Conversation && len(in.Messages) == 0 && len(in.Resume) == 0 {
		// A client that sends nothing new asks where the conversation
		// stands (it reloaded): the snapshot stream, and nothing runs.
		rp, err := s.restoreReply(ctx, key, in.ThreadID, in.RunID, 0)
		if err == nil {
			return rp, nil
		}
		if !isNotFound(err) {
			return reply{}, err
		}
	}
	if err := s.checkResume(ctx, key, wf, in); err != nil {
		return reply{}, err
	}
	r, queued, err := s.admit(ctx, key, in.RunID, wf.Busy)
	if err != nil {
		return reply{}, err
	}
	r.threadID = in.ThreadID
	r.metrics, r.began = s.cfg.Metrics, time.Now()
	trigger := "request"
	if queued {
		trigger = "queued"
	}
	r.trace = s.cfg.Tracing.StartRun(ctx, telemetry.RunInfo{Workflow: wf.ID, Thread: in.ThreadID, RunID: in.RunID, Trigger: trigger})
	r.ctx = r.trace.Context(r.ctx)
	sreq := store.Request{
		Key:     key,
		Owner:   r.owner,
		Lease:   &r.lease,
		TTL:     s.cfg.LeaseTTL,
		RunID:   in.RunID,
		Machine: s.cfg.Machine,
		Load:    s.cfg.Load,
		Frames:  s.frames,
		Live:    s.live(r, nodes),
		Events:  stateFirst(runState(hook.Agent)),
		Release: true,
		Now:     s.now,
	}
	// Who asks is the turn's $user, as the authentication found it:
	// nothing the request or the hook sends stands for it.
	user := userOf(ctx)
	delete(hook.Context, "user")
	if wf.Conversation {
		sreq.Resume = &vm.Resume{Agent: hook.Agent, User: user, Interrupts: in.resume(), ToolResults: vm.ToolResults(hook.Agent)}
		if len(hook.Context) > 0 {
			sreq.Resume.Merge = hook.Context
		}
	} else {
		sreq.Fresh = true
		sreq.Context = hook.Context
		if user != nil {
			sreq.Context["user"] = user
		}
	}
	// The turn's input is written ahead, and the client sees nothing of
	// the run, RUN_STARTED included, before it is durable: a turn the
	// client saw start survives a crash.
	sreq.Live.Nodes = r.trace.Nodes(sreq.Live.Nodes)
	if queued {
		if err := s.enqueue(r, sreq); err != nil {
			r.trace.End(vm.Outcome{}, err)
			return reply{}, beginError(key, in.RunID, err)
		}
		r.pushEvent(0, agui.RunStarted(in.ThreadID, in.RunID, in.ParentRunID, nil), false)
		go s.waitTurn(r)
		return reply{run: r, nodes: nodes}, nil
	}
	r.hold()
	sreq.OnDurable = r.durable
	turn, err := store.Begin(r.ctx, s.cfg.Store, sreq)
	if err != nil {
		r.trace.End(vm.Outcome{}, err)
		s.release(r)
		return reply{}, beginError(key, in.RunID, err)
	}
	r.trace.Chain(turn.Frame())
	r.pushEvent(0, agui.RunStarted(in.ThreadID, in.RunID, in.ParentRunID, nil), false)
	go s.execute(r, turn)
	return reply{run: r, nodes: nodes}, nil
}

// beginError is the answer to a run that could not begin.
func beginError(key store.Key, runID string, err error) error {
	switch {
	case errors.Is(err, store.ErrRunExists):
		return huma.Error409Conflict(fmt.Sprintf("thread %q already has a run %q; a new turn needs a new runId", key.Thread, runID))
	case errors.Is(err, store.ErrInterrupted):
		return busy(key)
	}
	return storeFailed("starting the run failed", err)
}

func isNotFound(err error) bool {
	var se huma.StatusError
	return errors.As(err, &se) && se.GetStatus() == http.StatusNotFound
}

// owner is a lease owner unique to one run, even when clients reuse run
// ids: only the same owner may take a held lease again.
func (s *Server) owner(runID string) string {
	return s.cfg.Owner + "/" + runID + "/" + uuid.NewString()[:8]
}

// admit registers a run on the thread key and takes the thread's lease
// for it, or, when a run is in progress on the thread, in this process or
// another that shares the store, does what the workflow's busy policy
// says: 409 (reject), cancel that run and wait for its end (interrupt), or
// register the run as queued behind it (enqueue; queued is then true and
// no lease is taken; a queued run also waits for the runs queued before
// it, wherever they were sent). 503 once Shutdown began.
func (s *Server) admit(ctx context.Context, key store.Key, runID, policy string) (r *run, queued bool, err error) {
	for {
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			return nil, false, huma.NewError(http.StatusServiceUnavailable, "the server is shutting down")
		}
		other := s.runs[key]
		if other != nil || policy == vm.BusyEnqueue && len(s.queues[key]) > 0 {
			switch policy {
			case vm.BusyEnqueue:
				r := s.queue(key, runID)
				s.mu.Unlock()
				return r, true, nil
			case vm.BusyInterrupt:
				s.mu.Unlock()
				other.cancel()
				select {
				case <-other.done:
				case <-ctx.Done():
					return nil, false, ctx.Err()
				}
				continue
			}
			s.mu.Unlock()
			return nil, false, busy(key)
		}
		r = s.newRun(key, runID)
		s.runs[key] = r
		s.mu.Unlock()

		// The lease taken here is the run's: the run goes on under it, so
		// no other owner can slip in between.
		err := s.acquire(ctx, r)
		if err == nil && policy == vm.BusyEnqueue {
			// Runs queued in other processes go first.
			ahead, perr := s.queuedAhead(ctx, key)
			if perr != nil || ahead {
				s.cfg.Store.Release(context.WithoutCancel(ctx), r.lease)
				err = cmp.Or(perr, store.ErrBusy)
			}
		}
		if err == nil {
			return r, false, nil
		}
		s.forget(r)
		s.drop(r)
		switch {
		case !errors.Is(err, store.ErrBusy):
			return nil, false, storeFailed("taking the thread failed", err)
		case policy == vm.BusyEnqueue:
			s.mu.Lock()
			r := s.queue(key, runID)
			s.mu.Unlock()
			return r, true, nil
		case policy == vm.BusyInterrupt:
			if err := s.interruptElsewhere(ctx, key); err != nil {
				return nil, false, err
			}
			continue
		}
		return nil, false, busy(key)
	}
}

// newRun makes a run of the server, counted until it ends; s.mu is held.
func (s *Server) newRun(key store.Key, runID string) *run {
	runCtx, cancel := context.WithCancel(s.runCtx)
	if s.cfg.Deadline > 0 {
		runCtx, cancel = withDeadline(runCtx, cancel, s.cfg.Deadline)
	}
	r := newRun(runID, key, s.now)
	r.ctx, r.cancel, r.owner = runCtx, cancel, s.owner(runID)
	s.wg.Add(1)
	return r
}

// acquire takes the thread's lease for r: store.ErrBusy while another run
// holds it.
func (s *Server) acquire(ctx context.Context, r *run) error {
	lease, err := s.cfg.Store.Acquire(ctx, r.key, r.owner, s.cfg.LeaseTTL)
	if err != nil {
		return err
	}
	r.lease = lease
	return nil
}

// release undoes admit for a run that did not begin.
func (s *Server) release(r *run) {
	s.cfg.Store.Release(context.WithoutCancel(r.ctx), r.lease)
	s.forget(r)
	s.drop(r)
}

// drop ends a run that never ran: its context is cancelled, it is done
// for those who wait on it, and the server stops counting it.
func (s *Server) drop(r *run) {
	r.cancel()
	close(r.done)
	s.wg.Done()
}

// busy is the 409 of a thread a run holds; Retry-After says when to try
// again, in seconds.
func busy(key store.Key) error {
	return huma.ErrorWithHeaders(huma.Error409Conflict(fmt.Sprintf("a run is in progress on thread %q of workflow %q; send the next request when it has finished", key.Thread, key.Workflow)), http.Header{"Retry-After": {"1"}})
}

func withDeadline(ctx context.Context, cancel context.CancelFunc, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, c2 := context.WithTimeout(ctx, d)
	return ctx, func() { c2(); cancel() }
}

// forget removes r from the runs in progress and from the queues of this
// process. The runs queued behind it learn from the store that the thread
// is free (they watch it).
func (s *Server) forget(r *run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runs[r.key] == r {
		delete(s.runs, r.key)
	}
	q := s.queues[r.key]
	for i, x := range q {
		if x == r {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(s.queues, r.key)
	} else {
		s.queues[r.key] = q
	}
}

// execute runs one run to its end in a goroutine of its own: the request
// that started it may be gone long before.
func (s *Server) execute(r *run, turn *store.Turn) {
	growStack()
	defer s.wg.Done()
	defer close(r.done)
	defer r.cancel()
	started, t0 := s.now(), time.Now()
	s.cfg.Metrics.TurnStarted()
	// A turn of pure nodes is durable when it ends, and its stream goes
	// out at once then; one that runs longer is synced after ackDelay, so
	// that its client hears from it.
	ack := time.AfterFunc(ackDelay, func() { turn.Sync() })
	defer ack.Stop()
	o, _, err := turn.RunUntil(r.ctx, s.handing)
	if !turn.Released() {
		s.cfg.Store.Release(context.WithoutCancel(r.ctx), r.lease)
	}
	s.forget(r)
	r.mu.Lock()
	r.final = o.Status
	if err != nil {
		r.final = vm.Failed
	}
	r.mu.Unlock()
	r.trace.End(o, err)
	now := s.now()
	outcome := s.outcome(o, err)
	s.cfg.Metrics.TurnEnded(r.key.Workflow, outcome, metrics.OriginRequest, time.Since(t0))
	s.cfg.Metrics.RunEnded(r.key.Workflow, outcome)
	if outcome == outcomeHandedOver {
		// Handed over: the run goes on in another process.
		r.pushEvent(0, agui.RunError(fmt.Sprintf("the server stopped; another replica goes on with the run: follow it at %s/threads/%s/runs/%s/events", s.base, r.threadID, r.id), "handed_over"), true)
		s.log.Info("run handed over", "workflow", r.key.Workflow, "thread", r.key.Thread, "run", r.id)
		return
	}
	r.pushEvent(0, terminal(r.threadID, r.id, o, err, r.usage), true)
	if s.cfg.OnRunEnd != nil {
		e := EndOf(r.key, r.id, o, err, started, now)
		e.ThreadID, e.Usage, e.Trigger = r.threadID, r.usage, TriggerRequest
		s.cfg.OnRunEnd(e)
	}
	attrs := []any{"workflow", r.key.Workflow, "thread", r.key.Thread, "run", r.id, "status", string(o.Status), "duration", now.Sub(started).String()}
	switch {
	case err != nil:
		s.log.Error("run failed", append(attrs, "error", err.Error())...)
	case o.Status == vm.Failed:
		s.log.Info("run ended", append(attrs, "error", o.Err.Message, "code", o.Err.Code)...)
	default:
		s.log.Info("run ended", attrs...)
	}
}

// ackDelay is how long a run's frames may be held back, at most, before
// its turn is synced so that they can go out (see run.hold).
const ackDelay = 10 * time.Millisecond

// terminal is the event that ends a run's stream, with the tokens its
// model calls used.
func terminal(threadID, runID string, o vm.Outcome, err error, usage []agui.TokenUsage) agui.Event {
	if err != nil {
		e := agui.RunError(err.Error(), errCode(err))
		e.Usage = usage
		return e
	}
	return agui.RunFinished(threadID, runID, o, usage)
}

// errCode is the RUN_ERROR code of a run that could not run to its end
// because of err.
func errCode(err error) string {
	switch {
	case errors.Is(err, store.ErrBusy):
		return "busy"
	case errors.Is(err, store.ErrUnavailable):
		return codeUnavailable
	case errors.Is(err, store.ErrLeaseLost):
		return "lease_lost"
	}
	return vm.ErrInternal
}

// growStack grows the stack of a new goroutine that will run a turn to
// the size a turn needs, in one copy while the stack is one frame deep:
// a goroutine starts with 8 KiB, and a turn, down through the
// interpreter into expr's VM, needs more; growing it frame by frame, as
// the turn goes deeper, copies the whole stack each time, which took
// about 6% of the CPU of a short turn.
//
//go:noinline
func growStack() {
	var frame [turnStack]byte
	keep(frame[:])
}

// turnStack is about the stack a turn takes: the 32 KiB stack the runtime
// grows to holds it.
const turnStack = 16 << 10

//go:noinline
func keep(b []byte) { b[0] = 1 }
