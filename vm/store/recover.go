package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aguic/aguic/vm"
)

// Loader returns a machine for the program version hash: the current
// program, or one compiled from the sources the store keeps for it.
type Loader func(ctx context.Context, hash string) (*vm.Machine, error)

// Recovered is what recovery did with one run.
type Recovered struct {
	Run     Run
	Outcome vm.Outcome // the outcome of the resumed run
	Err     error      // why it could not be resumed; the run is then recorded as failed
}

// Recovery is the runs a crash left running or queued, with their
// threads' leases held: no other run can start on those threads until
// their runs are recovered.
//
// Use it as: Claim before serving requests, then Resume (in the
// background). A request for a thread still being recovered finds its
// lease held (ErrBusy).
type Recovery struct {
	st     Store
	claims []*claim

	// Start, when set, is told as each run begins to resume, with the
	// context it runs in; it returns the context the run goes on in (a
	// tracer's span in it) and the live audience of its events and nodes.
	Start func(ctx context.Context, r Run) (context.Context, Live)

	mu      sync.Mutex
	running map[Key]recovering // the runs being resumed, by thread
}

// recovering is a run Resume is resuming: its id, and what cancels it.
type recovering struct {
	runID  string
	cancel context.CancelFunc
}

// Cancel cancels run runID of the thread if Resume is resuming it, and
// reports whether it was: the run ends cancelled, as a run a client
// cancels does (a cancel request, Store.OnCancel).
func (rec *Recovery) Cancel(key Key, runID string) bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	r, ok := rec.running[key]
	if ok && r.runID == runID {
		r.cancel()
	}
	return ok && r.runID == runID
}

// claim is one thread's runs to recover: the one running first, if any,
// then the queued ones in their order.
type claim struct {
	runs    []Run
	lease   Lease  // as taken: renewals change only its expiry, which commits do not check
	renewed Lease  // what the renewals write
	stop    func() // stops renewing the lease; nil once given up
}

// claimBatch is how many stranded threads Claim asks the store for at a
// time.
const claimBatch = 100

// Claim finds the runs a crash left running or queued, on threads whose
// lease nobody holds (Store.Stranded: after a restart, every such thread of
// a store one process owns; among processes that share a store, those of a
// process that died, once their leases expired), and takes their threads'
// leases for owner, renewing them until the runs are resumed. A thread
// another owner takes first is left to that owner.
func Claim(ctx context.Context, st Store, owner string, ttl time.Duration) (*Recovery, error) {
	if ttl <= 0 {
		ttl = time.Minute
	}
	rec := &Recovery{st: st}
	fail := func(err error) (*Recovery, error) {
		rec.Release(ctx)
		return nil, err
	}
	for {
		keys, err := st.Stranded(ctx, claimBatch)
		if err != nil {
			return fail(fmt.Errorf("list stranded threads: %w", err))
		}
		taken, err := rec.claim(ctx, keys, owner, ttl)
		if err != nil {
			return fail(err)
		}
		if len(keys) < claimBatch || taken == 0 {
			return rec, nil
		}
	}
}

// ClaimThread is Claim for one thread: its runs left running or queued,
// if nobody holds its lease.
func ClaimThread(ctx context.Context, st Store, key Key, owner string, ttl time.Duration) (*Recovery, error) {
	if ttl <= 0 {
		ttl = time.Minute
	}
	rec := &Recovery{st: st}
	if _, err := rec.claim(ctx, []Key{key}, owner, ttl); err != nil {
		rec.Release(ctx)
		return nil, err
	}
	return rec, nil
}

// claim takes the leases of the threads keys whose runs are pending, for
// owner, and returns how many it took. A thread another owner holds is
// left to it.
func (rec *Recovery) claim(ctx context.Context, keys []Key, owner string, ttl time.Duration) (int, error) {
	st := rec.st
	taken := 0
	for _, k := range keys {
		// The list may be older than the end of a run that released its
		// lease since: Claim takes a lease only where runs are left.
		l, runs, err := st.Claim(ctx, k, owner, ttl)
		if errors.Is(err, ErrBusy) {
			continue
		}
		if err != nil {
			return taken, fmt.Errorf("take thread %s: %w", k.Thread, err)
		}
		if len(runs) == 0 { // none, or recovered by another meanwhile
			continue
		}
		taken++
		c := &claim{runs: runs, lease: l, renewed: l}
		c.stop = renew(context.WithoutCancel(ctx), st, &c.renewed, ttl, nil)
		rec.claims = append(rec.claims, c)
	}
	return taken, nil
}

// Runs returns the runs Claim took.
func (rec *Recovery) Runs() []Run {
	var out []Run
	for _, c := range rec.claims {
		out = append(out, c.runs...)
	}
	return out
}

// Release gives up the leases of the threads not resumed yet; their runs
// are recovered at the next start.
func (rec *Recovery) Release(ctx context.Context) {
	for _, c := range rec.claims {
		if c.stop != nil {
			c.stop()
			c.stop = nil
			rec.st.Release(context.WithoutCancel(ctx), c.lease)
		}
	}
}

// Resume recovers the claimed threads, at most workers at a time (at
// least one). On each thread it resumes the run a crash left running from
// its last checkpoint, or, when that is impossible (its program version is
// gone, its frame does not load), records it as failed; then it starts the
// queued runs in order. Either way the thread is usable again afterwards:
// not running, its lease released. The loader is asked for "" when a
// queued run starts on a thread that has no frame yet: the current
// program. done, when not nil, learns of each run as it ends. When ctx
// ends (the process stops), the runs in progress stop where they are and
// stay running in the store, and the threads not started keep their lease
// until Release: the next start recovers them all.
func (rec *Recovery) Resume(ctx context.Context, load Loader, workers int, done func(Recovered)) []Recovered {
	var mu sync.Mutex
	var out []Recovered
	sem := make(chan struct{}, max(workers, 1))
	var wg sync.WaitGroup
	for _, c := range rec.claims {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		stop := c.stop
		c.stop = nil
		wg.Go(func() {
			defer func() { <-sem }()
			defer rec.st.Release(context.WithoutCancel(ctx), c.lease)
			defer stop()
			for _, r := range c.runs {
				if ctx.Err() != nil {
					return // the rest stay for the next start
				}
				res := Recovered{Run: r}
				runCtx, cancel := context.WithCancel(ctx)
				rec.mu.Lock()
				if rec.running == nil {
					rec.running = map[Key]recovering{}
				}
				rec.running[r.Key] = recovering{runID: r.ID, cancel: cancel}
				rec.mu.Unlock()
				var live Live
				if rec.Start != nil {
					runCtx, live = rec.Start(runCtx, r)
				}
				if r.Status == Queued {
					res.Outcome, res.Err = startQueued(ctx, runCtx, rec.st, c.lease, r, load, live)
				} else {
					res.Outcome, res.Err = recoverRun(ctx, runCtx, rec.st, c.lease, r, load, live)
				}
				rec.mu.Lock()
				delete(rec.running, r.Key)
				rec.mu.Unlock()
				cancel()
				mu.Lock()
				out = append(out, res)
				mu.Unlock()
				if done != nil {
					done(res)
				}
			}
		})
	}
	wg.Wait()
	return out
}

// Recover claims the runs a crash left running or queued and recovers
// them, one thread at a time: Claim, then Resume.
func Recover(ctx context.Context, st Store, owner string, ttl time.Duration, load Loader) ([]Recovered, error) {
	rec, err := Claim(ctx, st, owner, ttl)
	if err != nil {
		return nil, err
	}
	defer rec.Release(ctx)
	return rec.Resume(ctx, load, 1, nil), nil
}

// startQueued starts a queued run under the thread's lease, with the
// input it was queued with. runCtx, a child of ctx, cancels the run alone:
// it ends cancelled; ctx (the process's) leaves it for the next start.
func startQueued(ctx, runCtx context.Context, st Store, lease Lease, r Run, load Loader, live Live) (vm.Outcome, error) {
	var in queuedInput
	if err := json.Unmarshal(r.Input, &in); err != nil {
		return vm.Outcome{}, fmt.Errorf("the input of queued run %s: %w", r.ID, err)
	}
	th, err := st.Thread(ctx, r.Key)
	if err != nil {
		return vm.Outcome{}, err
	}
	hash := th.Hash
	if in.Fresh || len(th.Frame) == 0 {
		hash = ""
	}
	m, err := load(ctx, hash)
	if err != nil {
		return vm.Outcome{}, err
	}
	t, err := Begin(ctx, st, Request{
		Key: r.Key, Lease: &lease, RunID: r.ID, Queued: true,
		Machine: m, Load: load, Fresh: in.Fresh, Context: in.Context, Resume: storedResume(in.Resume),
		Live: live,
	})
	if err != nil {
		return vm.Outcome{}, err
	}
	o, _, err := t.run(runCtx, ctx)
	return o, err
}

// recoverRun resumes a run a crash left running, under the thread's lease.
// runCtx, a child of ctx, cancels the run alone: it ends cancelled; ctx
// (the process's) leaves it running for the next start.
func recoverRun(ctx, runCtx context.Context, st Store, lease Lease, r Run, load Loader, live Live) (vm.Outcome, error) {
	held := context.WithoutCancel(ctx)
	th, err := st.Thread(ctx, r.Key)
	if err != nil {
		return vm.Outcome{}, err
	}
	in := storedInput(th, r)
	var f *vm.Frame
	fail := func(cause error) (vm.Outcome, error) {
		c := abandon(th, r, in, f, Failed, "the run was interrupted and could not resume: "+cause.Error())
		if _, err := st.Commit(held, lease, c); err != nil {
			return vm.Outcome{}, errors.Join(cause, err)
		}
		return vm.Outcome{}, cause
	}
	if th.RunID != r.ID || th.Status != Running {
		return fail(fmt.Errorf("the thread has moved on to run %s", th.RunID))
	}
	if f, err = LoadFrame(th); err != nil {
		return fail(err)
	}
	m, err := load(ctx, th.Hash)
	if err != nil {
		return fail(err)
	}
	j := newJournal(held, st, lease, r, th.Hash, in, storedSizes(th), live, nil)
	var resume *vm.Resume
	if len(th.Deltas) == in.Deltas {
		// Nothing of the run was saved: it starts again, with its input.
		resume = storedResume(in.Resume)
		f.Track()
		j.undo = f.UndoDelta
	} else {
		f.Track()
		j.undo = func(seq int64) ([]byte, error) { return undoTo(th, in.Deltas, seq) }
	}
	o := m.Run(runCtx, f, resume, j.observer())
	if o.Status == vm.Cancelled && ctx.Err() != nil {
		// Stopped with the process: the next start goes on from the last
		// save, as after a crash.
		return o, ctx.Err()
	}
	if err := j.Finish(f, o); err != nil {
		return o, err
	}
	return o, nil
}

// storedInput is the input run r of thread th was started with, as its
// record keeps it. A run of format 1 has none, nor does one whose input
// does not decode: it goes on from the thread's frame as it is.
func storedInput(th Thread, r Run) turnInput {
	in := turnInput{Deltas: len(th.Deltas)}
	if len(r.Input) > 0 && json.Unmarshal(r.Input, &in) != nil {
		in = turnInput{Deltas: len(th.Deltas)}
	}
	in.Deltas = min(in.Deltas, len(th.Deltas))
	return in
}

// abandon is the commit that ends run r, which was interrupted, with
// status (Failed or Cancelled) and the reason, without going on: the
// thread goes back to where the run's turn found it (in is the turn's
// input, f the frame as the run left it, or nil), as a failed or cancelled
// run leaves it.
func abandon(th Thread, r Run, in turnInput, f *vm.Frame, status Status, reason string) Commit {
	r.Status, r.Finished, r.Error, r.Input = status, time.Now(), reason, nil
	o := vm.Outcome{Status: vm.Status(status)}
	if status == Failed {
		o.Err = &vm.Error{Code: vm.ErrInternal, Message: reason}
	}
	r.Outcome, _ = json.Marshal(o)
	c := Commit{Run: &r}
	if th.RunID == r.ID && th.Status == Running {
		cp := &Thread{Status: status, Hash: th.Hash, RunID: r.ID}
		if w := in.Waiting; w != nil {
			cp.Status, cp.Wait, cp.RunID = Suspended, w.Wait, w.RunID
			cp.WakeAt = waitingWake(w.Wait, time.Now())
		}
		c.Checkpoint, c.Trim, c.Keep = cp, true, in.Deltas
		if f != nil {
			// The ids the interrupted run used are not made again.
			c.Delta, _ = undoTo(th, c.Keep, f.Seq)
		}
	}
	return c
}

// CancelStranded cancels run runID of the thread when no process executes
// it (its process died, and recovery has not resumed it yet): it takes the
// thread's lease for owner and ends the run cancelled, the thread back to
// where the run's turn found it. ErrBusy when a process holds the lease
// (it executes the run, and a cancel request reaches it); ErrNotFound when
// the run is not running.
func CancelStranded(ctx context.Context, st Store, key Key, runID, owner string, ttl time.Duration) error {
	l, err := st.Acquire(ctx, key, owner, ttl)
	if err != nil {
		return err
	}
	defer st.Release(context.WithoutCancel(ctx), l)
	r, err := st.Run(ctx, key, runID)
	if err != nil {
		return err
	}
	if r.Status != Running {
		return fmt.Errorf("run %s is %s: %w", runID, r.Status, ErrNotFound)
	}
	th, err := st.Thread(ctx, key)
	if err != nil {
		return err
	}
	in := storedInput(th, r)
	f, _ := LoadFrame(th)
	_, err = st.Commit(context.WithoutCancel(ctx), l, abandon(th, r, in, f, Cancelled, "the run was cancelled while no process executed it"))
	return err
}

// undoTo is the delta that gives back the small fields of the thread's
// frame with its first keep deltas, with an id counter of at least seq.
func undoTo(th Thread, keep int, seq int64) ([]byte, error) {
	before := th
	before.Deltas = th.Deltas[:keep]
	f, err := LoadFrame(before)
	if err != nil {
		return nil, err
	}
	f.Track()
	return f.UndoDelta(seq)
}

// storedResume is a resume as a turn's stored input holds it, with the
// tool results that inputs stored before resumes carried them lack taken
// from its $agent.
func storedResume(r *vm.Resume) *vm.Resume {
	if r != nil && r.ToolResults == nil && r.Agent != nil {
		r.ToolResults = vm.ToolResults(r.Agent)
	}
	return r
}
