// Package vmtest helps tests run real .wf programs: it compiles source
// text with the stdlib, runs it on a Machine, and records the events.
package vmtest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
)

// Compile compiles one .wf source with the stdlib registered with opts and
// fails the test on any error diagnostic.
func Compile(t testing.TB, src string, opts stdlib.Options) (*vm.Program, *vm.Registry) {
	t.Helper()
	reg := vm.NewRegistry()
	stdlib.RegisterWith(reg, opts)
	prog, diags := compiler.Compile(reg, compiler.Source{Name: "test.wf", Text: []byte(src)})
	if diags.HasErrors() {
		t.Fatalf("compile: %v", diags.Err())
	}
	return prog, reg
}

// Machine compiles src and returns a machine for it with a fixed clock and
// predictable frame ids ("f1", "f2"…), so runs are reproducible.
func Machine(t testing.TB, src string, opts stdlib.Options) *vm.Machine {
	t.Helper()
	prog, reg := Compile(t, src, opts)
	n := 0
	var mu sync.Mutex
	return &vm.Machine{
		Program:  prog,
		Registry: reg,
		Now:      func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) },
		NewID: func() string {
			mu.Lock()
			defer mu.Unlock()
			n++
			return fmt.Sprintf("f%d", n)
		},
	}
}

// Recorder is a Sink that keeps every event.
type Recorder struct {
	mu     sync.Mutex
	Events []vm.Event
}

// Emit records e.
func (r *Recorder) Emit(e vm.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Events = append(r.Events, e)
	return nil
}

// Types returns the types of the recorded events, in order.
func (r *Recorder) Types() []vm.EventType {
	out := make([]vm.EventType, len(r.Events))
	for i, e := range r.Events {
		out[i] = e.Type
	}
	return out
}

// Text returns the recorded events one per line in a compact, stable form
// for golden comparisons: TYPE key=value….
func (r *Recorder) Text() string {
	var b strings.Builder
	for _, e := range r.Events {
		b.WriteString(Format(e))
		b.WriteByte('\n')
	}
	return b.String()
}

// Format renders one event as TYPE key=value… with the fields it sets.
func Format(e vm.Event) string {
	var b strings.Builder
	b.WriteString(string(e.Type))
	add := func(k string, v any) { fmt.Fprintf(&b, " %s=%v", k, v) }
	if e.MessageID != "" {
		add("msg", e.MessageID)
	}
	if e.Role != "" {
		add("role", e.Role)
	}
	if e.Delta != "" {
		add("delta", fmt.Sprintf("%q", e.Delta))
	}
	if e.ToolCallID != "" {
		add("call", e.ToolCallID)
	}
	if e.ToolCallName != "" {
		add("tool", e.ToolCallName)
	}
	if e.Content != "" {
		add("content", fmt.Sprintf("%q", e.Content))
	}
	if e.ActivityType != "" {
		add("activity", e.ActivityType)
	}
	if e.Name != "" {
		add("name", e.Name)
	}
	if e.SubagentRunID != "" {
		add("run", e.SubagentRunID)
	}
	if e.Value != nil {
		add("value", vm.Text(e.Value))
	}
	if e.Patch != nil {
		add("patch", vm.Text(e.Patch))
	}
	if e.Silent {
		b.WriteString(" silent")
	}
	if e.Hidden {
		b.WriteString(" hidden")
	}
	return b.String()
}

// Run starts workflow id of m with context and runs it to its outcome.
func Run(t testing.TB, m *vm.Machine, id string, context map[string]any) (*vm.Frame, vm.Outcome, *Recorder) {
	t.Helper()
	f, err := m.NewFrame(id, context)
	if err != nil {
		t.Fatal(err)
	}
	rec := &Recorder{}
	o := m.Run(context_(), f, nil, vm.Observer{Events: rec})
	return f, o, rec
}

// Reload serializes f and loads it back, as a checkpoint would.
func Reload(t testing.TB, f *vm.Frame) *vm.Frame {
	t.Helper()
	data, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	g, err := vm.UnmarshalFrame(data)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func context_() context.Context { return context.Background() }
