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

// Recovery is the runs a crash left running, with their threads' leases
// held: no other run can start on those threads until each is recovered.
//
// Use it as: Claim before serving requests, then Resume (in the
// background). A request for a thread still being recovered finds its
// lease held (ErrBusy).
type Recovery struct {
	st     Store
	claims []*claim
}

type claim struct {
	run   Run
	lease Lease
	stop  func() // stops renewing the lease
}

// Claim finds the runs a crash left running and takes their threads'
// leases for owner, renewing them until each run is resumed. A thread
// whose lease another owner holds is left to that owner.
func Claim(ctx context.Context, st Store, owner string, ttl time.Duration) (*Recovery, error) {
	if ttl <= 0 {
		ttl = time.Minute
	}
	var runs []Run
	page := Page{}
	for {
		rs, next, err := st.Runs(ctx, Running, page)
		if err != nil {
			return nil, fmt.Errorf("list running runs: %w", err)
		}
		runs = append(runs, rs...)
		if next == "" {
			break
		}
		page.After = next
	}
	rec := &Recovery{st: st}
	for _, r := range runs {
		l, err := st.Acquire(ctx, r.Key, owner, ttl)
		if errors.Is(err, ErrBusy) {
			continue
		}
		if err != nil {
			rec.Release(ctx)
			return nil, fmt.Errorf("take thread %s: %w", r.Key.Thread, err)
		}
		c := &claim{run: r, lease: l}
		c.stop = renew(context.WithoutCancel(ctx), st, &c.lease, ttl)
		rec.claims = append(rec.claims, c)
	}
	return rec, nil
}

// Runs returns the runs Claim took.
func (rec *Recovery) Runs() []Run {
	out := make([]Run, len(rec.claims))
	for i, c := range rec.claims {
		out[i] = c.run
	}
	return out
}

// Release gives up the leases of the runs not resumed yet; they are
// recovered at the next start.
func (rec *Recovery) Release(ctx context.Context) {
	for _, c := range rec.claims {
		if c.stop != nil {
			c.stop()
			c.stop = nil
			rec.st.Release(context.WithoutCancel(ctx), c.lease)
		}
	}
}

// Resume resumes every claimed run, at most workers at a time (at least
// one), each from its last checkpoint, or, when that is impossible (its
// program version is gone, its frame does not load), records it as failed.
// Either way the thread is usable again afterwards: not running, its lease
// released. done, when not nil, learns of each run as it ends. A run not
// started when ctx ends keeps its lease until Release.
func (rec *Recovery) Resume(ctx context.Context, load Loader, workers int, done func(Recovered)) []Recovered {
	out := make([]Recovered, len(rec.claims))
	sem := make(chan struct{}, max(workers, 1))
	var wg sync.WaitGroup
	for i, c := range rec.claims {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			res := Recovered{Run: c.run}
			res.Outcome, res.Err = recoverRun(ctx, rec.st, c, load)
			out[i] = res
			if done != nil {
				done(res)
			}
		})
	}
	wg.Wait()
	return out
}

// Recover claims the runs a crash left running and resumes them, one at a
// time: Claim, then Resume.
func Recover(ctx context.Context, st Store, owner string, ttl time.Duration, load Loader) ([]Recovered, error) {
	rec, err := Claim(ctx, st, owner, ttl)
	if err != nil {
		return nil, err
	}
	defer rec.Release(ctx)
	return rec.Resume(ctx, load, 1, nil), nil
}

// recoverRun resumes one claimed run and releases its lease.
func recoverRun(ctx context.Context, st Store, c *claim, load Loader) (vm.Outcome, error) {
	c.stop()
	c.stop = nil
	lease, r := c.lease, c.run
	held := context.WithoutCancel(ctx)
	defer st.Release(held, lease)
	th, err := st.Thread(ctx, r.Key)
	if err != nil {
		return vm.Outcome{}, err
	}
	in := turnInput{Deltas: len(th.Deltas)} // a run of format 1 has no input: it goes on from its frame
	if len(r.Input) > 0 {
		if err := json.Unmarshal(r.Input, &in); err != nil {
			in = turnInput{Deltas: len(th.Deltas)}
		}
	}
	if in.Deltas > len(th.Deltas) {
		in.Deltas = len(th.Deltas)
	}
	var f *vm.Frame
	fail := func(cause error) (vm.Outcome, error) {
		r.Status, r.Finished, r.Error, r.Input = Failed, time.Now(), "the run was interrupted and could not resume: "+cause.Error(), nil
		c := Commit{Run: &r}
		if th.RunID == r.ID && th.Status == Running {
			cp := &Thread{Status: Failed, Hash: th.Hash, RunID: r.ID}
			if w := in.Waiting; w != nil {
				cp.Status, cp.Wait, cp.RunID = Suspended, w.Wait, w.RunID
			}
			c.Checkpoint, c.Trim, c.Keep = cp, true, in.Deltas
			if f != nil {
				// The ids the interrupted run used are not made again.
				c.Delta, _ = undoTo(th, in.Deltas, f.Seq)
			}
		}
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
	j := newJournal(held, st, lease, r, th.Hash, in, th, nil, nil)
	var resume *vm.Resume
	if len(th.Deltas) == in.Deltas {
		// Nothing of the run was saved: it starts again, with its input.
		resume = in.Resume
		f.Track()
		j.undo = f.UndoDelta
	} else {
		f.Track()
		j.undo = func(seq int64) ([]byte, error) { return undoTo(th, in.Deltas, seq) }
	}
	o := m.Run(ctx, f, resume, j)
	if err := j.Finish(f, o); err != nil {
		return o, err
	}
	return o, nil
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
