package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aguic/aguic/vm"
)

// Loader returns a machine for the program version hash: the current
// program, or one compiled from the sources the store keeps for it.
type Loader func(ctx context.Context, hash string) (*vm.Machine, error)

// Recovered is what Recover did with one run.
type Recovered struct {
	Run     Run
	Outcome vm.Outcome // the outcome of the resumed run
	Err     error      // why it could not be resumed; the run is then recorded as failed
}

// Recover finds the runs a crash left running and resumes each from its
// last checkpoint, or, when that is impossible (its program version is
// gone, its frame does not load), records it as failed. Either way the
// thread is usable again afterwards: not running, its lease released.
func Recover(ctx context.Context, st Store, owner string, ttl time.Duration, load Loader) ([]Recovered, error) {
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
	out := make([]Recovered, 0, len(runs))
	for _, r := range runs {
		res := Recovered{Run: r}
		res.Outcome, res.Err = recoverRun(ctx, st, owner, ttl, load, r)
		out = append(out, res)
	}
	return out, nil
}

func recoverRun(ctx context.Context, st Store, owner string, ttl time.Duration, load Loader, r Run) (vm.Outcome, error) {
	lease, err := st.Acquire(ctx, r.Key, owner, ttl)
	if err != nil {
		return vm.Outcome{}, fmt.Errorf("take thread %s: %w", r.Key.Thread, err)
	}
	defer st.Release(context.WithoutCancel(ctx), lease)
	t, err := st.Thread(ctx, r.Key)
	if err != nil {
		return vm.Outcome{}, err
	}
	fail := func(cause error) (vm.Outcome, error) {
		r.Status, r.Finished, r.Error = Failed, time.Now(), "the run was interrupted and could not resume: "+cause.Error()
		c := Commit{Run: &r}
		if t.RunID == r.ID {
			t.Status = Failed
			c.Checkpoint = &t
		}
		if _, err := st.Commit(ctx, lease, c); err != nil {
			return vm.Outcome{}, errors.Join(cause, err)
		}
		return vm.Outcome{}, cause
	}
	if t.RunID != r.ID || t.Status != Running {
		return fail(fmt.Errorf("the thread has moved on to run %s", t.RunID))
	}
	m, err := load(ctx, t.Hash)
	if err != nil {
		return fail(err)
	}
	f, err := vm.UnmarshalFrame(t.Frame)
	if err != nil {
		return fail(err)
	}
	j, err := NewJournal(ctx, st, lease, r, t.Hash, nil, f, nil, nil)
	if err != nil {
		return fail(err)
	}
	o := m.Run(ctx, f, nil, j)
	if err := j.Finish(f, o); err != nil {
		return o, err
	}
	return o, nil
}
