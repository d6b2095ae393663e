package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/host"
	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/telemetry"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/badger"
)

// defaultData is the data directory when neither --data nor AGUIC_DATA
// names one: .aguic under the working directory.
const defaultData = ".aguic"

// openData opens the store in dir; the error reads well on a terminal (a
// directory another process uses names the directory). Leases are not
// stored, so the threads of runs a crash cut are free at once for recovery.
func openData(dir string) (*badger.Store, error) {
	return badger.Open(badger.Options{Dir: dir})
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

// keeping is a chat kept as a thread of a store (aguic run --thread).
type keeping struct {
	st     store.Store
	key    store.Key
	owner  string
	bundle []byte
	vers   *host.Versions
}

// keep plays the chat as thread id of the store at: it resumes the runs a
// crash left unfinished (of the whole data directory; in a database other
// processes share, of this thread only), shows the thread's history, and
// keeps every run of the chat.
func (s *session) keep(ctx context.Context, at where, thread string, bundle []byte) int {
	st, err := at.open(ctx, quietLog(s.e))
	if err != nil {
		s.e.errorf("%v", err)
		return exitUsage
	}
	defer st.Close()
	k := &keeping{
		st:     st,
		key:    store.Key{Scope: "local", Workflow: s.wf.ID, Thread: thread},
		owner:  fmt.Sprintf("aguic-run-%d", os.Getpid()),
		bundle: bundle,
		vers:   host.NewVersions(st, s.m),
	}
	var recovered []store.Recovered
	if at.shared() {
		var rec *store.Recovery
		if rec, err = store.ClaimThread(ctx, st, k.key, k.owner, time.Minute); err == nil {
			recovered = rec.Resume(ctx, k.vers.Load, 1, nil)
			rec.Release(ctx)
		}
	} else {
		recovered, err = store.Recover(ctx, st, k.owner, time.Minute, k.vers.Load)
	}
	if err != nil {
		s.e.errorf("%v", err)
		return exitUsage
	}
	for _, r := range recovered {
		switch {
		case r.Err != nil:
			fmt.Fprintf(s.e.stderr, "recovery: run %s of thread %s could not resume: %v\n", r.Run.ID, r.Run.Key.Thread, r.Err)
		default:
			fmt.Fprintf(s.e.stdout, "recovered run %s of thread %s: %s\n", r.Run.ID, r.Run.Key.Thread, r.Outcome.Status)
		}
	}
	// The sources of this version are stored once, for the thread to be
	// pinned to; runs do not store them again.
	if err := st.PutSource(ctx, s.m.Program.Hash, k.bundle); err != nil {
		s.e.errorf("%v", err)
		return exitUsage
	}
	if err := s.restore(ctx, k); err != nil {
		s.e.errorf("%v", err)
		return exitUsage
	}
	s.kept = k
	return s.play(ctx)
}

// restore rebuilds the client's side of a kept thread from its stored
// events, as a reloaded client does, and prints its history.
func (s *session) restore(ctx context.Context, k *keeping) error {
	t, err := k.st.Thread(ctx, k.key)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	hist := &agui.Reducer{State: s.state}
	for after := t.FirstSeq - min(t.FirstSeq, 1); ; {
		evs, err := k.st.Events(ctx, k.key, after, 500)
		if err != nil {
			return fmt.Errorf("read the history of thread %s: %w", k.key.Thread, err)
		}
		for _, se := range evs {
			e, err := se.Decode()
			if err != nil {
				return err
			}
			if e.Type != vm.HideToolCall {
				hist.Add(e)
			}
		}
		if len(evs) < 500 {
			break
		}
		after = evs[len(evs)-1].Seq
	}
	hist.Live = true
	s.restored = hist
	plural := "s"
	if len(hist.Messages) == 1 {
		plural = ""
	}
	fmt.Fprintf(s.e.stdout, "thread %s: %d message%s so far\n", k.key.Thread, len(hist.Messages), plural)
	for _, m := range hist.Messages {
		fmt.Fprintf(s.e.stdout, "  %s\n", summary(m))
	}
	if t.Status == store.Suspended && len(t.Wait) > 0 && s.wf.Conversation {
		var w vm.Wait
		if err := json.Unmarshal(t.Wait, &w); err == nil {
			s.pending = &w
		}
	}
	return nil
}

// summary renders one message of a restored history on one line.
func summary(m agui.Message) string {
	text := ""
	if m.Content != nil {
		text = m.Content.Text
	}
	switch {
	case m.Role == agui.RoleTool:
		return "← " + text
	case len(m.ToolCalls) > 0:
		line := m.Role + ":"
		if text != "" {
			line += " " + text
		}
		for _, tc := range m.ToolCalls {
			line += fmt.Sprintf(" → %s(%s)", tc.Function.Name, tc.Function.Arguments)
		}
		return line
	}
	return m.Role + ": " + text
}

// run is one run of the kept thread: it resumes the thread's saved frame
// (a conversation) or starts a new one (a stateless workflow), and keeps
// every node boundary.
func (k *keeping) run(ctx context.Context, s *session, agent map[string]any, resume *vm.Resume, runID string, tr *telemetry.Run) (vm.Outcome, error) {
	req := store.Request{
		Key:     k.key,
		Owner:   k.owner,
		RunID:   runID,
		Machine: s.m,
		Load:    k.vers.Load,
		Fresh:   !s.wf.Conversation,
		Live:    store.Live{Events: func(_ uint64, e vm.Event) error { return s.out.Emit(e) }, Nodes: tr.Nodes(nil)},
	}
	if s.wf.Conversation {
		req.Resume = resume
	} else {
		req.Context = map[string]any{"agent": agent}
	}
	t, err := store.Begin(ctx, k.st, req)
	if err != nil {
		return vm.Outcome{}, err
	}
	tr.Chain(t.Frame())
	o, _, err := t.Run(ctx)
	return o, err
}

// compileSources is compile that also returns the sources.
func compileSources(e *env, paths []string) (*vm.Program, []compiler.Source, int) {
	if len(paths) == 0 {
		paths = []string{"."}
	}
	files, ok := wfFiles(e, paths)
	if !ok {
		return nil, nil, exitUsage
	}
	srcs, ok := readSources(e, files)
	if !ok {
		return nil, nil, exitUsage
	}
	prog, diags := compiler.Compile(stdlib.Registry(), srcs...)
	if len(diags) > 0 {
		diags.WriteText(e.stderr, fileSet(srcs))
	}
	if diags.HasErrors() {
		return nil, nil, exitFound
	}
	return prog, srcs, exitOK
}
