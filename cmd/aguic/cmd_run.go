package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/aguic/aguic/compiler"

	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/telemetry"
	"github.com/aguic/aguic/vm"
)

// scriptedDefault is the model of model nodes that name none when the
// model answers from a script.
const scriptedDefault = "scripted/default"

func runCommand() *command {
	c := &command{
		name:    "run",
		args:    "[--workflow id] [--model-script file] [--state json] [--tools json] [--max-steps n] [--thread id [--data dir | --store url]] [paths…]",
		summary: "chat with a workflow in the terminal",
		doc: `
Run compiles the .wf files named by paths (files or directories, as for
check; the default is the current directory) and plays a chat with one of
their workflows in the terminal, as an AG-UI client talks to the server:
each line of standard input is a user turn. With several workflows,
--workflow picks one.

The session keeps the client's side of the chat: the messages and the state
reduced from the events the runs stream, as the AG-UI client reduces them.
Each turn sends what a client sends: to a stateless workflow the whole
history with the new message, run from the top in a new frame; to a
conversation workflow only the new message, resuming the flow where it
suspended (a conversation whose flow ended starts again from the top).
--state sets the state the client starts with ({} by default) and --tools
the client's frontend tools ($agent.tools), a JSON list of
{name, description, parameters}.

Events are printed as they stream: text as "assistant: …" (or the role of
the message), reasoning as "reasoning: …", tool calls as "→ name(args)" and
their results as "← result", the state after each snapshot or delta as
"state: <json>", activities as "activity TYPE id: <json>", steps as
"[step name]" and "[step name done]", called workflows as "[call id]" and
"[call id done]", custom events as "custom name: <json>", and the output of
a run as "result: <json>". Silent events are stored by the server but never
streamed, so they are not shown. When standard input is not a terminal,
each line read is echoed after its prompt, so the output reads as a
transcript.

When the run waits for frontend tools, the next line of input is the
result of each call ("tool result for name: "), sent at once as a tool
message. When it waits for an interrupt, its reason and message are
printed and the next line answers it: a JSON value resolves it with that
payload (other text resolves it with the text as a string) and the word
cancel cancels it.

With --model-script, model nodes answer from that script (the format is
documented in package stdlib/llm): every "provider/model" name resolves to
it, and a node that names no model uses "scripted/default". Without it,
model nodes use the providers the environment configures, as in the
server (OPENAI_API_KEY, for one; AGUIC_MODEL names the model of nodes that
name none). http nodes and env work as in the server.

With --thread, the chat is a thread kept in the data directory (--data):
every node boundary is saved, so the next "aguic run --thread id"
continues the conversation, on the version of the workflows it started
with, and shows its history first. Runs a crash left unfinished are
resumed from their last saved node when the directory is opened again.

A failed run prints "error: message (node id, file:line:col)" on standard
error and the session goes on with the next line; a conversation stays
where it was before the failed turn. The end of the input ends the session.`,
		examples: `
# Chat with the example chat workflow, model answers from a script.
aguic run --model-script workflows/scripts/demo.script workflows/chat.wf
# Keep the chat as thread demo; the same command later continues it.
aguic run --thread demo --model-script workflows/scripts/demo.script workflows/support.wf
# Play a transcript: one user turn per line of the file.
aguic run --workflow chat workflows < turns.txt`,
		exit: "0 when every run succeeded, 1 when the sources have errors or a run failed, 2 on a usage or I/O error.",
	}
	c.flags = func(fs *flag.FlagSet) func(*env, []string) int {
		workflow := fs.String("workflow", "", "run the workflow with this `id`")
		script := fs.String("model-script", "", "answer model calls from this script `file`")
		state := fs.String("state", "", "the client's initial state, a `json` value")
		tools := fs.String("tools", "", "the client's frontend tools, a `json` list of {name, description, parameters}")
		thread := fs.String("thread", "", "keep the chat as the thread `id` in the data directory, continuing it if it exists")
		var at where
		at.define(fs, " of --thread")
		maxSteps := vm.DefaultMaxVisits
		checkedVar(fs, &maxSteps, "max-steps", "1000", "the most nodes one run may visit, a guard against a loop that runs away (`n`)", positive)
		return func(e *env, args []string) int {
			s := &session{e: e, state: map[string]any{}}
			if *state != "" {
				v, err := decodeJSON(*state)
				if err != nil {
					return usageError(e, c, "--state: %v", err)
				}
				s.state = v
			}
			if *tools != "" {
				if err := json.Unmarshal([]byte(*tools), &s.tools); err != nil || s.tools == nil {
					return usageError(e, c, "--tools must be a JSON list of {name, description, parameters} objects")
				}
			}
			opts, err := modelOptions(*script, environ)
			if err != nil {
				e.errorf("%v", err)
				return exitUsage
			}
			prog, srcs, status := compileSources(e, args)
			if prog == nil {
				return status
			}
			w, err := pickWorkflow(prog, *workflow)
			if err != nil {
				return usageError(e, c, "%v", err)
			}
			if err := checkModels(prog, opts); err != nil {
				e.errorf("%v", err)
				return exitUsage
			}
			tracing, err := setupTracing(context.Background(), &opts, quietLog(e))
			if err != nil {
				e.errorf("%v", err)
				return exitUsage
			}
			defer tracing.Shutdown(context.Background())
			s.tracing = tracing
			opts.MCP = mcpPool(quietLog(e), tracing)
			defer opts.MCP.Close()
			reg := vm.NewRegistry()
			stdlib.RegisterWith(reg, opts)
			s.m = &vm.Machine{Program: prog, Registry: reg, MaxVisits: maxSteps}
			s.wf = w
			if *thread == "" {
				return s.play(context.Background())
			}
			bundle, _ := compiler.Bundle(srcs)
			return s.keep(context.Background(), at, *thread, bundle)
		}
	}
	return c
}

// anyModel resolves every well-formed "provider/model" name to p.
func anyModel(p llm.Provider) func(string) (llm.Provider, error) {
	return func(name string) (llm.Provider, error) {
		if _, _, ok := llm.SplitModel(name); !ok {
			return nil, fmt.Errorf("model %q must be written as \"provider/model\", such as \"openai/gpt-4o-mini\"", name)
		}
		return p, nil
	}
}

// pickWorkflow returns the workflow id names, or the only one there is.
func pickWorkflow(prog *vm.Program, id string) (*vm.Workflow, error) {
	ids := make([]string, len(prog.Workflows))
	for i, w := range prog.Workflows {
		ids[i] = w.ID
	}
	switch {
	case id != "":
		if w := prog.Workflow(id); w != nil {
			return w, nil
		}
		return nil, fmt.Errorf("unknown workflow %q (the workflows are: %s)", id, strings.Join(ids, ", "))
	case len(ids) == 1:
		return prog.Workflows[0], nil
	case len(ids) == 0:
		return nil, errors.New("the files hold no workflow")
	}
	return nil, fmt.Errorf("the files hold %d workflows: pick one with --workflow (the workflows are: %s)", len(ids), strings.Join(ids, ", "))
}

// session is one chat in the terminal: the client's history on one side,
// the machine and, for a conversation, its frame on the other.
type session struct {
	e     *env
	m     *vm.Machine
	wf    *vm.Workflow
	state any         // the state the client starts with
	tools []agui.Tool // the client's frontend tools

	in      *bufio.Reader
	echo    bool // stdin is not a terminal: echo what is read
	hist    agui.Reducer
	out     *printer
	frame   *vm.Frame // the conversation's frame; nil before the first turn
	pending *vm.Wait  // what the conversation's frame waits for; nil when nothing
	ids     int       // the client's message ids
	turns   int       // the turns run so far
	failed  bool

	kept     *keeping           // the thread the chat is kept as, with --thread; nil without
	tracing  *telemetry.Tracing // traces each turn; nil: none
	restored *agui.Reducer      // the history of a kept thread, as the chat starts
}

// play runs the chat until the input ends and returns the exit status.
// Each line is a user turn, unless the conversation still waits for tool
// results or interrupt answers (a resume that failed): then the next lines
// answer those again, as a client must before it sends anything else.
func (s *session) play(ctx context.Context) int {
	s.in = bufio.NewReader(s.e.stdin)
	s.echo = !isTerminal(s.e.stdin)
	s.hist = agui.Reducer{Live: true, State: s.state}
	if s.restored != nil {
		s.hist = *s.restored
	}
	s.out = &printer{w: s.e.stdout, errw: s.e.stderr, hist: &s.hist, dim: isTerminal(s.e.stdout), roles: map[string]string{}}
	for {
		var (
			msgs    []agui.Message
			answers []vm.ResumeEntry
			ok      bool
		)
		if w := s.pending; w != nil && w.Kind != vm.WaitUser {
			msgs, answers, ok = s.answer(w)
		} else {
			var line string
			line, ok = s.ask("> ")
			msgs = []agui.Message{{ID: s.nextID("user"), Role: agui.RoleUser, Content: agui.Text(line)}}
		}
		if !ok || !s.exchange(ctx, msgs, answers) {
			break
		}
	}
	if s.failed {
		return exitFound
	}
	return exitOK
}

// exchange sends one request, then answers what the run waits for (tool
// results, interrupts) until it no longer waits for the client. It
// returns false when the input ended.
func (s *session) exchange(ctx context.Context, msgs []agui.Message, answers []vm.ResumeEntry) bool {
	for {
		o, ok := s.send(ctx, msgs, answers)
		if !ok || o.Status != vm.Suspended || o.Wait == nil || o.Wait.Kind == vm.WaitUser {
			return true
		}
		if msgs, answers, ok = s.answer(o.Wait); !ok {
			return false
		}
	}
}

// answer reads from the input what the run waits for: a result for each
// pending frontend tool call, or an answer to each open interrupt. ok is
// false when the input ended.
func (s *session) answer(w *vm.Wait) (msgs []agui.Message, answers []vm.ResumeEntry, ok bool) {
	switch w.Kind {
	case vm.WaitTimer:
		// A sleep node: what a server does when the time comes, here and now.
		until := time.UnixMilli(w.Until)
		s.out.println(fmt.Sprintf("(sleeping until %s)", until.Format(time.TimeOnly)))
		time.Sleep(time.Until(until))
	case vm.WaitTool:
		for _, id := range w.ToolCallIDs {
			name := id
			if tc := s.hist.ToolCall(id); tc != nil {
				name = tc.Function.Name
			}
			line, ok := s.ask(fmt.Sprintf("tool result for %s: ", name))
			if !ok {
				return nil, nil, false
			}
			msgs = append(msgs, agui.Message{ID: s.nextID("result"), Role: agui.RoleTool, ToolCallID: id, Content: agui.Text(line)})
		}
	case vm.WaitInterrupt:
		for _, in := range w.Interrupts {
			s.out.interrupt(in)
			line, ok := s.ask("answer (JSON, or cancel): ")
			if !ok {
				return nil, nil, false
			}
			answers = append(answers, resumeEntry(in.ID, line))
		}
	}
	return msgs, answers, true
}

// resumeEntry reads the answer to interrupt id.
func resumeEntry(id, line string) vm.ResumeEntry {
	if strings.TrimSpace(line) == "cancel" {
		return vm.ResumeEntry{InterruptID: id, Status: "cancelled"}
	}
	v, err := decodeJSON(line)
	if err != nil {
		v = line
	}
	return vm.ResumeEntry{InterruptID: id, Status: "resolved", Payload: v}
}

// send is one AG-UI request and its run: msgs are the messages the client
// adds, answers its resume entries.
func (s *session) send(ctx context.Context, msgs []agui.Message, answers []vm.ResumeEntry) (vm.Outcome, bool) {
	s.hist.Append(msgs...)
	in := agui.Input{Messages: s.hist.Messages, State: s.hist.State, Tools: s.tools}
	if s.wf.Conversation {
		in.Messages = msgs
	}
	agent, err := agui.BuildAgent(in, s.wf.Conversation)
	if err != nil {
		s.fail(&vm.Error{Message: err.Error()})
		return vm.Outcome{}, false
	}
	var (
		frame  *vm.Frame
		resume *vm.Resume
		saved  []byte // the conversation's frame before the turn
		wait   = s.pending
	)
	if !s.wf.Conversation {
		if frame, err = s.m.NewFrame(s.wf.ID, map[string]any{"agent": agent}); err != nil {
			s.fail(&vm.Error{Message: err.Error()})
			return vm.Outcome{}, false
		}
	} else {
		if s.frame != nil {
			if saved, err = s.frame.Marshal(); err != nil {
				s.fail(&vm.Error{Message: err.Error()})
				return vm.Outcome{}, false
			}
		} else if s.frame, err = s.m.NewFrame(s.wf.ID, nil); err != nil {
			s.fail(&vm.Error{Message: err.Error()})
			return vm.Outcome{}, false
		}
		// The new $agent replaces the old one whether the flow resumes
		// or starts again from the top.
		frame, resume = s.frame, &vm.Resume{Agent: agent, Interrupts: answers, ToolResults: vm.ToolResults(agent)}
	}
	var o vm.Outcome
	runID, thread := fmt.Sprintf("turn-%d", s.turns+1), ""
	s.turns++
	if s.kept != nil {
		runID, thread = fmt.Sprintf("run-%d-%d", time.Now().UnixMilli(), s.turns), s.kept.key.Thread
	}
	tr := s.tracing.StartRun(ctx, telemetry.RunInfo{Workflow: s.wf.ID, Thread: thread, RunID: runID})
	ctx = tr.Context(ctx)
	if s.kept != nil {
		o, err = s.kept.run(ctx, s, agent, resume, runID, tr)
		tr.End(o, err)
		if err != nil {
			s.fail(&vm.Error{Message: err.Error()})
			return vm.Outcome{}, false
		}
		saved = nil // the store puts the frame back when the run fails
	} else {
		o = s.m.Run(ctx, frame, resume, vm.Observer{Events: s.out, Nodes: tr.Nodes(nil)})
		tr.End(o, nil)
	}
	s.out.endLine()
	switch o.Status {
	case vm.Failed:
		s.fail(o.Err)
		if s.kept != nil {
			// The store put the frame back as the turn found it.
			s.pending = wait
			return o, false
		}
		if s.wf.Conversation {
			s.frame, s.pending = nil, nil
			if saved != nil {
				s.frame, _ = vm.UnmarshalFrame(saved)
				s.pending = wait
			}
		}
		return o, false
	case vm.Suspended:
		if s.wf.Conversation {
			s.pending = o.Wait
		}
		return o, true
	case vm.Cancelled:
		s.out.println("cancelled")
	case vm.Finished:
		if o.Result != nil {
			s.out.println("result: " + jsonText(o.Result))
		}
	}
	s.pending = nil
	return o, true
}

// fail reports a failed run on stderr.
func (s *session) fail(err *vm.Error) {
	s.failed = true
	s.out.endLine()
	var where []string
	if err.NodeID != "" {
		where = append(where, "node "+err.NodeID)
	}
	if err.Span.File != "" {
		where = append(where, err.Span.String())
	}
	msg := "error: " + err.Message
	if len(where) > 0 {
		msg += " (" + strings.Join(where, ", ") + ")"
	}
	fmt.Fprintln(s.e.stderr, msg)
}

// ask reads one line of input after prompt. On a terminal the prompt comes
// first; otherwise the prompt and the line are printed once read, as a
// transcript. ok is false at the end of the input.
func (s *session) ask(prompt string) (string, bool) {
	if !s.echo {
		io.WriteString(s.e.stdout, prompt)
	}
	line, err := s.in.ReadString('\n')
	if err != nil && line == "" {
		if !s.echo {
			io.WriteString(s.e.stdout, "\n")
		}
		return "", false
	}
	line = strings.TrimRight(line, "\r\n")
	if s.echo {
		fmt.Fprintf(s.e.stdout, "%s%s\n", prompt, line)
	}
	return line, true
}

func (s *session) nextID(prefix string) string {
	s.ids++
	return fmt.Sprintf("%s-%d", prefix, s.ids)
}

// printer prints a run's events as they stream and feeds them to the
// client's history. It sees what a client sees: silent events and
// HIDE_TOOL_CALL are never sent live.
type printer struct {
	w, errw io.Writer
	hist    *agui.Reducer
	dim     bool              // dim reasoning (the output is a terminal)
	roles   map[string]string // text message id → role
	line    string            // the message whose line is open; "" when none
}

// Emit prints e.
func (p *printer) Emit(e vm.Event) error {
	if e.Silent || e.Type == vm.HideToolCall {
		return nil
	}
	if err := p.hist.Add(e); err != nil {
		// A patch that does not apply: the client warns and keeps what
		// it had.
		p.endLine()
		fmt.Fprintf(p.errw, "warning: %v\n", err)
		return nil
	}
	switch e.Type {
	case vm.TextStart:
		role := e.Role
		if role == "" {
			role = agui.RoleAssistant
		}
		p.roles[e.MessageID] = role
	case vm.TextContent:
		role := p.roles[e.MessageID]
		if role == "" {
			role = agui.RoleAssistant
		}
		p.stream("text "+e.MessageID, role+": ", e.Delta)
	case vm.TextEnd:
		p.close("text " + e.MessageID)
		delete(p.roles, e.MessageID)
	case vm.ReasoningContent:
		delta := e.Delta
		if p.dim {
			delta = "\x1b[2m" + delta + "\x1b[0m"
		}
		p.stream("reasoning "+e.MessageID, "reasoning: ", delta)
	case vm.ReasoningMsgEnd:
		p.close("reasoning " + e.MessageID)
	case vm.ToolCallEnd:
		name, args := e.ToolCallID, ""
		if tc := p.hist.ToolCall(e.ToolCallID); tc != nil {
			name, args = tc.Function.Name, tc.Function.Arguments
		}
		p.println(fmt.Sprintf("→ %s(%s)", name, args))
	case vm.ToolCallResult:
		p.println("← " + e.Content)
	case vm.StateSnapshot, vm.StateDelta:
		p.println("state: " + jsonText(p.hist.State))
	case vm.ActivitySnapshot, vm.ActivityDelta:
		if m := p.hist.Message(e.MessageID); m != nil && m.Role == agui.RoleActivity {
			id := strings.TrimPrefix(e.MessageID, vm.ActivityPrefix)
			p.println(fmt.Sprintf("activity %s %s: %s", m.ActivityType, id, jsonText(m.ActivityContent)))
		}
	case vm.StepStarted:
		p.println("[step " + e.Name + "]")
	case vm.StepFinished:
		p.println("[step " + e.Name + " done]")
	case vm.SubagentStarted:
		p.println("[call " + e.Name + "]")
	case vm.SubagentFinished:
		p.println("[call " + e.Name + " done]")
	case vm.SubagentError:
		p.println(fmt.Sprintf("[call %s failed: %s]", e.Name, e.Content))
	case vm.Custom:
		p.println(fmt.Sprintf("custom %s: %s", e.Name, jsonText(e.Value)))
	}
	return nil
}

// interrupt prints an open interrupt.
func (p *printer) interrupt(in vm.Interrupt) {
	line := "interrupt " + in.Reason
	if in.Message != "" {
		line += ": " + in.Message
	}
	p.println(line)
	if in.ResponseSchema != nil {
		p.println("  answer schema: " + jsonText(in.ResponseSchema))
	}
}

// stream writes a delta of the message key, starting its line with prefix
// unless that line is the one open.
func (p *printer) stream(key, prefix, delta string) {
	if p.line != key {
		p.endLine()
		io.WriteString(p.w, prefix)
		p.line = key
	}
	io.WriteString(p.w, delta)
}

// close ends the line of the message key if it is open.
func (p *printer) close(key string) {
	if p.line == key {
		p.endLine()
	}
}

// endLine ends the open line, if any.
func (p *printer) endLine() {
	if p.line != "" {
		io.WriteString(p.w, "\n")
		p.line = ""
	}
}

// println writes a line of its own.
func (p *printer) println(s string) {
	p.endLine()
	io.WriteString(p.w, s+"\n")
}

// jsonText renders v as compact JSON, object keys sorted, HTML characters
// as they are.
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// decodeJSON parses one JSON value into the tree the context holds.
func decodeJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not JSON: more than one value")
	}
	return vm.Normalize(v), nil
}

// isTerminal reports whether f is a terminal (a character device).
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	info, err := file.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
