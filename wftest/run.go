package wftest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aguic/aguic/internal/jsonenc"
	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
)

// Options tunes Run.
type Options struct {
	// MaxVisits is the most nodes one run may visit; 0 means
	// vm.DefaultMaxVisits.
	MaxVisits int
	// Update makes the failing expectations that may be rewritten
	// (Matcher.Updatable) updates instead of failures.
	Update bool
}

// Result is what one test did.
type Result struct {
	Test     *Test
	Failures []Failure
	Updates  []Update // with Options.Update: the expectations to rewrite
	Elapsed  time.Duration
}

// Failed reports whether the test failed.
func (r *Result) Failed() bool { return len(r.Failures) > 0 }

// Failure is one failed expectation or problem, at a line of the test file.
type Failure struct {
	Line, Col int
	Msg       string
}

// Update replaces bytes Start to End of a line of the test file with Text.
type Update struct {
	Line       int
	Start, End int
	Text       string
}

// scriptedDefault is the model of model nodes that name none.
const scriptedDefault = "scripted/default"

// Run runs test t of f against prog. Each call has a machine, a registry,
// a model script and a frame of its own, so tests may run in parallel.
func Run(ctx context.Context, prog *vm.Program, f *File, t *Test, opts Options) *Result {
	start := time.Now()
	r := &runner{f: f, t: t, opts: opts, res: &Result{Test: t}, offset: 0}
	defer func() { r.res.Elapsed = time.Since(start) }()
	if !r.setUp(prog) {
		return r.res
	}
	defer r.close()
	r.play(ctx)
	return r.res
}

// runner is one test as it runs: the client's side (its history, what
// the run waits for) and the machine's (the frame).
type runner struct {
	f    *File
	t    *Test
	opts Options
	res  *Result

	m       *vm.Machine
	wf      *vm.Workflow
	tools   []agui.Tool
	fwd     any
	hist    agui.Reducer
	frame   *vm.Frame // the conversation's frame, or the last stateless run's
	pending *vm.Wait  // what the last run waits for; nil when nothing
	ids     int

	mu     sync.Mutex
	offset time.Duration // how far sleeps moved the clock
	stubs  *stubs

	turn    turn // the last exchange
	started bool // a turn was played
	stopped bool // a step could not be played: the test stops
}

// turn is what one exchange (a request, and the runs that follow on
// their own) streamed, and how it ended.
type turn struct {
	line    int        // the input line that started it
	events  []vm.Event // as the client sees them
	outcome vm.Outcome
}

func (r *runner) failf(line, col int, format string, args ...any) {
	r.res.Failures = append(r.res.Failures, Failure{Line: line, Col: col, Msg: fmt.Sprintf(format, args...)})
}

func (r *runner) now() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return time.Now().Add(r.offset)
}

// Env is the environment test t's workflows read with env(): the file's
// env lines with the test's over them. Nothing else: a test does not
// depend on the environment it runs in. Compile the program a test runs
// with a registry whose Getenv reads it, as env() is bound when compiled.
func (f *File) Env(t *Test) map[string]string {
	env := map[string]string{}
	for k, v := range f.Setup.Env {
		env[k] = v
	}
	for k, v := range t.Setup.Env {
		env[k] = v
	}
	return env
}

// merged is the file's setup with the test's over it.
func (r *runner) merged() Setup {
	s, o := r.f.Setup, r.t.Setup
	if o.Workflow != "" {
		s.Workflow, s.WorkflowLine = o.Workflow, o.WorkflowLine
	}
	if o.Models != "" {
		s.Models, s.ModelsLine = o.Models, o.ModelsLine
	}
	if o.HasState {
		s.State, s.HasState = o.State, true
	}
	if o.HasTools {
		s.Tools, s.HasTools = o.Tools, true
	}
	if o.Forwarded != nil {
		s.Forwarded = o.Forwarded
	}
	s.Env = r.f.Env(r.t)
	s.HTTP = append(slices.Clone(o.HTTP), s.HTTP...)
	s.MCP = append(slices.Clone(o.MCP), s.MCP...)
	return s
}

// setUp picks the workflow and builds the machine.
func (r *runner) setUp(prog *vm.Program) bool {
	s := r.merged()
	wf, line, msg := pickWorkflow(prog, r.f.Path, s)
	if wf == nil {
		r.failf(line, 1, "%s", msg)
		return false
	}
	r.wf = wf
	models, ok := r.models(s)
	if !ok {
		return false
	}
	r.stubs = newStubs(r, prog, s)
	reg := vm.NewRegistry()
	stdlib.RegisterWith(reg, stdlib.Options{
		Getenv:       func(name string) string { return s.Env[name] },
		HTTPClient:   r.stubs.httpClient(),
		Models:       models,
		DefaultModel: scriptedDefault,
		MCP:          r.stubs.mcpPool(),
		ToolCall:     r.stubs.observeTool,
	})
	frames := 0
	r.m = &vm.Machine{Program: prog, Registry: reg, MaxVisits: r.opts.MaxVisits, Now: r.now, NewID: func() string {
		// Frame ids seed the ids of messages: counted, a test's ids are
		// the same at every run.
		frames++
		return fmt.Sprintf("f%d", frames)
	}}
	state := s.State
	if !s.HasState {
		state = map[string]any{}
	}
	r.hist = agui.Reducer{Live: true, State: state}
	r.tools, r.fwd = s.Tools, s.Forwarded
	return true
}

func (r *runner) close() { r.stubs.close() }

// pickWorkflow is the workflow s names, or the only one of the .wf file
// beside the test file.
func pickWorkflow(prog *vm.Program, path string, s Setup) (wf *vm.Workflow, line int, msg string) {
	if s.Workflow != "" {
		if w := prog.Workflow(s.Workflow); w != nil {
			return w, 0, ""
		}
		var ids []string
		for _, w := range prog.Workflows {
			ids = append(ids, w.ID)
		}
		msg := fmt.Sprintf("unknown workflow %q", s.Workflow)
		if near := suggestFrom(s.Workflow, ids); near != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", near)
		}
		return nil, s.WorkflowLine, msg
	}
	src := filepath.Clean(strings.TrimSuffix(path, Ext) + ".wf")
	var in []*vm.Workflow
	for _, w := range prog.Workflows {
		if filepath.Clean(w.Span.File) == src {
			in = append(in, w)
		}
	}
	switch len(in) {
	case 1:
		return in[0], 0, ""
	case 0:
		return nil, 1, fmt.Sprintf("%s declares no workflow: name the workflow to test with a line `workflow id`", src)
	}
	return nil, 1, fmt.Sprintf("%s declares %d workflows: name the one to test with a line `workflow id`", src, len(in))
}

// models is the resolver of model names: every name answers from the
// test's replies, then the file's, then the models script, with their
// delays left out.
func (r *runner) models(s Setup) (func(string) (llm.Provider, error), bool) {
	var text bytes.Buffer
	text.Write(r.f.replyTextOf(r.t.Setup.Replies, true))
	text.Write(r.f.replyTextOf(r.f.Setup.Replies, true))
	if s.Models != "" {
		name := filepath.Join(filepath.Dir(r.f.Path), s.Models)
		data, err := os.ReadFile(name)
		if err != nil {
			r.failf(s.ModelsLine, 1, "models: %v", err)
			return nil, false
		}
		if _, err := llm.ParseScript(data); err != nil {
			r.failf(s.ModelsLine, 1, "models: %s: %s", name, strings.ReplaceAll(err.Error(), "\n", "; "))
			return nil, false
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "delay:") {
				line = ""
			}
			text.WriteString(line + "\n")
		}
	}
	if strings.TrimSpace(text.String()) == "" {
		return func(name string) (llm.Provider, error) {
			return nil, fmt.Errorf("model %q: the test gives no model replies: add `reply` lines, or `models file` for a script", name)
		}, true
	}
	scripted, err := llm.ParseScript(text.Bytes())
	if err != nil { // each part parsed alone: only their sum can be empty
		r.failf(r.t.Line, 1, "models: %v", err)
		return nil, false
	}
	return func(name string) (llm.Provider, error) {
		if _, _, ok := llm.SplitModel(name); !ok {
			return nil, fmt.Errorf("model %q must be written as \"provider/model\", such as \"openai/gpt-4o-mini\"", name)
		}
		return scripted, nil
	}, true
}

// play runs the steps in order. Tool results and interrupt answers on
// consecutive lines go in one request.
func (r *runner) play(ctx context.Context) {
	var (
		msgs    []agui.Message
		answers []vm.ResumeEntry
		first   int // the line of the first input waiting in msgs or answers
		kind    StepKind
		open    []string // the tool call ids or interrupt ids still unanswered
		index   int      // the step of that first input
	)
	flush := func() {
		if msgs == nil && answers == nil {
			return
		}
		r.exchange(ctx, first, index, msgs, answers)
		msgs, answers, open = nil, nil, nil
	}
	for i, st := range r.t.Steps {
		if r.stopped {
			return
		}
		if (st.Kind != StepToolResult && st.Kind != StepAnswer) || st.Kind != kind {
			flush()
		}
		kind = st.Kind
		switch st.Kind {
		case StepUser:
			m := agui.Message{ID: r.nextID("user"), Role: agui.RoleUser, Content: agui.Text(st.Text)}
			r.exchange(ctx, st.Line, i, []agui.Message{m}, nil)
		case StepToolResult:
			if msgs == nil {
				first, index, open = st.Line, i, r.openCalls()
				if open == nil {
					r.stop(st.Line, "tool result %s: the run does not wait for tools (it is %s)", st.Tool, r.outcomeText())
					return
				}
			}
			at := slices.IndexFunc(open, func(id string) bool { return r.toolName(id) == st.Tool })
			if at < 0 {
				names := make([]string, len(open))
				for i, id := range open {
					names[i] = r.toolName(id)
				}
				r.stop(st.Line, "tool result %s: no open call of %s (open: %s)", st.Tool, st.Tool, strings.Join(names, ", "))
				return
			}
			msgs = append(msgs, agui.Message{ID: r.nextID("result"), Role: agui.RoleTool, ToolCallID: open[at], Content: agui.Text(st.Text)})
			open = slices.Delete(open, at, at+1)
		case StepAnswer:
			if answers == nil {
				first, index = st.Line, i
				if w := r.pending; w != nil && w.Kind == vm.WaitInterrupt {
					for _, in := range w.Interrupts {
						open = append(open, in.ID)
					}
				}
				if len(open) == 0 {
					r.stop(st.Line, "answer: the run does not wait for an interrupt (it is %s)", r.outcomeText())
					return
				}
			}
			if len(open) == 0 {
				r.stop(st.Line, "answer: every open interrupt is answered already")
				return
			}
			e := vm.ResumeEntry{InterruptID: open[0], Status: "resolved", Payload: st.Payload}
			if st.Cancel {
				e = vm.ResumeEntry{InterruptID: open[0], Status: "cancelled"}
			}
			answers, open = append(answers, e), open[1:]
		case StepExpect:
			if !r.started && needsTurn(st.Expect) {
				r.stop(st.Line, "expect %s: no turn was played yet: start with a user turn, `> text`", st.Expect.Target)
				return
			}
			r.check(st.Expect)
		}
	}
	flush()
}

// needsTurn reports whether e looks at what a turn did.
func needsTurn(e *Expect) bool {
	switch e.Subject {
	case SubjectState, SubjectMessages:
		return false
	}
	return true
}

// stop fails the test at a line it cannot play.
func (r *runner) stop(line int, format string, args ...any) {
	r.failf(line, 1, format, args...)
	r.stopped = true
}

// openCalls are the frontend tool calls the run waits for.
func (r *runner) openCalls() []string {
	if w := r.pending; w != nil && w.Kind == vm.WaitTool {
		return slices.Clone(w.ToolCallIDs)
	}
	return nil
}

func (r *runner) toolName(id string) string {
	if tc := r.hist.ToolCall(id); tc != nil {
		return tc.Function.Name
	}
	return id
}

func (r *runner) nextID(prefix string) string {
	r.ids++
	return fmt.Sprintf("%s-%d", prefix, r.ids)
}

// exchange sends one request, and the requests a sleep's end makes, and
// records what they streamed. index is the step of line.
func (r *runner) exchange(ctx context.Context, line, index int, msgs []agui.Message, answers []vm.ResumeEntry) {
	r.turn = turn{line: line}
	r.started = true
	for {
		o := r.send(ctx, msgs, answers)
		r.turn.outcome = o
		if o.Status != vm.Suspended || o.Wait == nil || o.Wait.Kind != vm.WaitTimer {
			break
		}
		// A sleep: what a server does when its time comes, at once.
		r.mu.Lock()
		if d := time.Until(time.UnixMilli(o.Wait.Until)) - r.offset; d > 0 {
			r.offset += d + time.Millisecond
		}
		r.mu.Unlock()
		msgs, answers = nil, nil
	}
	unstubbed := r.stubs.takeUnstubbed()
	for _, u := range unstubbed {
		r.failf(line, 1, "%s", u)
	}
	// A run that failed for want of a stub says nothing more.
	if o := r.turn.outcome; o.Status == vm.Failed && len(unstubbed) == 0 && !r.expectsFailure(index) {
		r.failf(line, 1, "the run failed: %s", failureText(o.Err))
	}
}

// expectsFailure reports whether the expectations after step index,
// before the next input, expect the run to fail.
func (r *runner) expectsFailure(index int) bool {
	kind, expects := r.t.Steps[index].Kind, false
	for _, st := range r.t.Steps[index+1:] {
		if st.Kind != StepExpect {
			if expects || st.Kind == StepUser || st.Kind != kind {
				return false
			}
			continue
		}
		expects = true
		if e := st.Expect; e.Subject == SubjectOutcome && (e.Outcome.Status == "failed" || e.Outcome.Status == "" && r.opts.Update) {
			return true
		}
	}
	return false
}

// failureText is a run-time error with its node and place.
func failureText(err *vm.Error) string {
	if err == nil {
		return "no error"
	}
	var where []string
	if err.NodeID != "" {
		where = append(where, "node "+err.NodeID)
	}
	if err.Span.File != "" {
		where = append(where, err.Span.String())
	}
	msg := err.Message
	if len(where) > 0 {
		msg += " (" + strings.Join(where, ", ") + ")"
	}
	return msg
}

// send is one AG-UI request and its run, as `aguic run` plays it: a
// stateless workflow gets the whole history in a new frame, a
// conversation the new messages in its frame, saved and read back between
// turns as a store keeps it.
func (r *runner) send(ctx context.Context, msgs []agui.Message, answers []vm.ResumeEntry) vm.Outcome {
	r.hist.Append(msgs...)
	in := agui.Input{Messages: r.hist.Messages, State: r.hist.State, Tools: r.tools, ForwardedProps: r.fwd}
	if r.wf.Conversation {
		in.Messages = msgs
	}
	failed := func(err error) vm.Outcome {
		return vm.Outcome{Status: vm.Failed, Err: &vm.Error{Code: vm.ErrInternal, Message: err.Error()}}
	}
	agent, err := agui.BuildAgent(in, r.wf.Conversation)
	if err != nil {
		return failed(err)
	}
	var (
		frame  *vm.Frame
		resume *vm.Resume
		saved  []byte
	)
	if !r.wf.Conversation {
		if frame, err = r.m.NewFrame(r.wf.ID, map[string]any{"agent": agent}); err != nil {
			return failed(err)
		}
	} else {
		if r.frame == nil {
			if r.frame, err = r.m.NewFrame(r.wf.ID, nil); err != nil {
				return failed(err)
			}
		}
		if saved, err = r.frame.Marshal(); err != nil {
			return failed(err)
		}
		if frame, err = vm.UnmarshalFrame(saved); err != nil {
			return failed(err)
		}
		resume = &vm.Resume{Agent: agent, Interrupts: answers, ToolResults: vm.ToolResults(agent)}
	}
	o := r.m.Run(ctx, frame, resume, vm.Observer{Events: sink{r}, Nodes: r.stubs})
	if o.Status == vm.Failed && r.wf.Conversation {
		// The conversation stays where it was before the failed turn.
		r.frame, _ = vm.UnmarshalFrame(saved)
		return o
	}
	r.frame = frame
	r.pending = nil
	if o.Status == vm.Suspended {
		r.pending = o.Wait
	}
	return o
}

// sink records the events a client sees and reduces them into its history.
type sink struct{ r *runner }

// Emit records e.
func (s sink) Emit(e vm.Event) error {
	if e.Silent || e.Type == vm.HideToolCall {
		return nil
	}
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	r.turn.events = append(r.turn.events, e)
	_ = r.hist.Add(e) // a patch that does not apply: the client keeps what it had
	return nil
}

// outcomeText is the last turn's outcome as an expectation writes it.
func (r *runner) outcomeText() string {
	if !r.started {
		return "not started"
	}
	return r.describeOutcome(r.turn.outcome)
}

func (r *runner) describeOutcome(o vm.Outcome) string {
	switch o.Status {
	case vm.Finished:
		return "finished"
	case vm.Cancelled:
		return "cancelled"
	case vm.Failed:
		code := vm.ErrInternal
		if o.Err != nil && o.Err.Code != "" {
			code = o.Err.Code
		}
		return "failed " + code
	}
	if o.Wait == nil {
		return "waiting for user"
	}
	switch o.Wait.Kind {
	case vm.WaitTool:
		names := make([]string, len(o.Wait.ToolCallIDs))
		for i, id := range o.Wait.ToolCallIDs {
			names[i] = r.toolName(id)
		}
		return strings.TrimSpace("waiting for tools " + strings.Join(names, ", "))
	case vm.WaitInterrupt:
		reasons := make([]string, len(o.Wait.Interrupts))
		for i, in := range o.Wait.Interrupts {
			reasons[i] = in.Reason
		}
		return strings.TrimSpace("interrupted " + strings.Join(reasons, ", "))
	}
	return "waiting for user"
}

// jsonText renders v as compact JSON, keys sorted, HTML characters as
// they are.
func jsonText(v any) string {
	b, err := jsonenc.Append(nil, v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// canonical is v as the context holds JSON: a round trip through JSON.
func canonical(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	out, _, err := parseJSON(string(data))
	if err != nil {
		return v
	}
	return out
}
