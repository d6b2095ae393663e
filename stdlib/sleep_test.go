package stdlib_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aguic/aguic/internal/vmtest"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
)

// TestSleep: a sleep node parks the run until its time, refuses a resume
// before it, and goes on after it.
func TestSleep(t *testing.T) {
	m := vmtest.Machine(t, `wf 1
workflow w {
  conversation = true
  flow {
    nap: sleep "90s"
    say "awake"
  }
}
`, stdlib.Options{})
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m.Now = func() time.Time { return now }
	f, err := m.NewFrame("w", nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := &vmtest.Recorder{}
	o := m.Run(context.Background(), f, nil, vm.Observer{Events: rec})
	if o.Status != vm.Suspended || o.Wait == nil || o.Wait.Kind != vm.WaitTimer || o.Wait.Until != now.Add(90*time.Second).UnixMilli() {
		t.Fatalf("first run: %+v, wait %+v", o, o.Wait)
	}
	now = now.Add(time.Minute)
	o = m.Run(context.Background(), f, &vm.Resume{}, vm.Observer{Events: rec})
	if o.Status != vm.Failed || o.Err.Code != vm.ErrResume || !strings.Contains(o.Err.Message, "sleeps until 2026-01-02T03:05:35Z") {
		t.Fatalf("a resume a minute in: %+v %v", o, o.Err)
	}
	f, err = m.NewFrame("w", nil) // a failed run leaves the thread as it was: start over
	if err != nil {
		t.Fatal(err)
	}
	now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m.Run(context.Background(), f, nil, vm.Observer{Events: rec})
	now = now.Add(90 * time.Second)
	rec = &vmtest.Recorder{}
	if o = m.Run(context.Background(), f, &vm.Resume{}, vm.Observer{Events: rec}); o.Status != vm.Finished || !strings.Contains(rec.Text(), `delta="awake"`) {
		t.Errorf("the resume when the time has come: %+v, said %q", o, rec.Text())
	}
}
