package stdlib_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aguic/aguic/internal/golden"
	"github.com/aguic/aguic/internal/vmtest"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
	"github.com/rogpeppe/go-internal/txtar"
)

// TestModel runs every testdata/model/*.txtar archive. An archive holds
//
//   - flow.wf: the program; its workflow "test" runs;
//   - script: the replies of the scripted provider "script" (the default
//     model is "script/default");
//   - context.json: the initial context (optional);
//   - resume.json: when present, the suspended run is resumed with it
//     ({"agent": …, "merge": …}), once on the same frame and once on a
//     frame serialized and loaded back, which must give the same;
//     resume2.json, resume3.json… resume the run again, in turn;
//   - want: the events, outcomes, provider requests and final context,
//     rewritten by -update.
//
// Every archive runs in a synctest bubble, so backoffs and delays take no
// real time.
func TestModel(t *testing.T) {
	paths, err := filepath.Glob("testdata/model/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no testdata/model/*.txtar: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			files := map[string][]byte{}
			for _, f := range ar.Files {
				files[f.Name] = f.Data
			}
			var got, reloaded string
			synctest.Test(t, func(t *testing.T) {
				got = runArchive(t, files, false)
				if files["resume.json"] != nil {
					reloaded = runArchive(t, files, true)
				}
			})
			if reloaded != "" && reloaded != got {
				t.Errorf("the run resumed from a reloaded frame differs:\n--- same frame\n%s--- reloaded frame\n%s", got, reloaded)
			}
			want := string(files["want"])
			if got == want {
				return
			}
			if golden.Update() {
				found := false
				for i := range ar.Files {
					if ar.Files[i].Name == "want" {
						ar.Files[i].Data, found = []byte(got), true
					}
				}
				if !found {
					ar.Files = append(ar.Files, txtar.File{Name: "want", Data: []byte(got)})
				}
				if err := os.WriteFile(path, txtar.Format(ar), 0o666); err != nil {
					t.Fatal(err)
				}
				return
			}
			t.Errorf("%s: want differs (-update rewrites it):\n--- got\n%s--- want\n%s", path, got, want)
		})
	}
}

// runArchive runs an archive's program and renders what happened.
func runArchive(t *testing.T, files map[string][]byte, reload bool) string {
	script, err := llm.ParseScript(files["script"])
	if err != nil {
		t.Fatalf("script: %v", err)
	}
	opts := stdlib.Options{
		Models:       llm.Resolver(map[string]llm.Provider{"script": script}),
		DefaultModel: "script/default",
		Getenv:       func(string) string { return "" },
	}
	m := vmtest.Machine(t, string(files["flow.wf"]), opts)
	var context map[string]any
	if data := files["context.json"]; data != nil {
		if err := json.Unmarshal(data, &context); err != nil {
			t.Fatalf("context.json: %v", err)
		}
	}
	var b strings.Builder
	f, o, rec := vmtest.Run(t, m, "test", context)
	b.WriteString("## run 1\n")
	renderRun(&b, rec, o)
	for n := 1; ; n++ {
		name := "resume.json"
		if n > 1 {
			name = fmt.Sprintf("resume%d.json", n)
		}
		data := files[name]
		if data == nil {
			break
		}
		if o.Status != vm.Suspended {
			t.Fatalf("%s, but the run ended %s", name, o.Status)
		}
		var in struct {
			Agent map[string]any `json:"agent"`
			Merge map[string]any `json:"merge"`
		}
		if err := json.Unmarshal(data, &in); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if reload {
			f = vmtest.Reload(t, f)
		}
		rec = &vmtest.Recorder{}
		o = m.Run(t.Context(), f, &vm.Resume{Agent: in.Agent, Merge: in.Merge, ToolResults: vm.ToolResults(in.Agent)}, vm.Observer{Events: rec})
		fmt.Fprintf(&b, "## run %d\n", n+1)
		renderRun(&b, rec, o)
	}
	b.WriteString("## requests\n")
	for i, req := range script.Requests() {
		renderRequest(&b, i+1, &req)
	}
	b.WriteString("## context\n")
	ctx, _ := json.MarshalIndent(f.Context, "", "  ")
	b.Write(ctx)
	b.WriteString("\n")
	if len(f.State) > 0 {
		b.WriteString("## state\n")
		st, _ := json.MarshalIndent(f.State, "", "  ")
		b.Write(st)
		b.WriteString("\n")
	}
	return b.String()
}

func renderRun(b *strings.Builder, rec *vmtest.Recorder, o vm.Outcome) {
	for _, e := range rec.Events {
		b.WriteString(vmtest.Format(e))
		if e.ParentMessageID != "" {
			b.WriteString(" parent=" + e.ParentMessageID)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "outcome: %s", o.Status)
	if o.Wait != nil {
		fmt.Fprintf(b, " waiting for %s %v", o.Wait.Kind, o.Wait.ToolCallIDs)
	}
	if o.Err != nil {
		fmt.Fprintf(b, " %s (%s): %s", o.Err.Code, o.Err.NodeID, o.Err.Message)
	}
	b.WriteString("\n")
}

func renderRequest(b *strings.Builder, n int, req *llm.Request) {
	fmt.Fprintf(b, "%d: model=%s", n, req.Model)
	if len(req.Tools) > 0 {
		var names []string
		for _, t := range req.Tools {
			names = append(names, t.Name)
		}
		fmt.Fprintf(b, " tools=%s", strings.Join(names, ","))
	}
	if req.Temperature != nil {
		fmt.Fprintf(b, " temperature=%v", *req.Temperature)
	}
	if req.MaxTokens != 0 {
		fmt.Fprintf(b, " max_tokens=%d", req.MaxTokens)
	}
	if req.Schema != nil {
		fmt.Fprintf(b, " schema=%s", vm.Text(req.Schema))
	}
	b.WriteString("\n")
	for _, msg := range req.Messages {
		data, _ := json.Marshal(msg)
		fmt.Fprintf(b, "  %s\n", data)
	}
}

// machine compiles src with the stdlib registered with opts.
func machine(t testing.TB, src string, opts stdlib.Options) *vm.Machine {
	t.Helper()
	return vmtest.Machine(t, src, opts)
}

const helloFlow = `wf 1

workflow test {
  flow {
    answer: model {
      prompt = "hello"
    } -> $reply
  }
}
`

func TestModelNoProviders(t *testing.T) {
	m := machine(t, helloFlow, stdlib.Options{DefaultModel: "script/x"})
	_, o, rec := vmtest.Run(t, m, "test", nil)
	if o.Status != vm.Failed || o.Err.Message != "no model providers are configured" || o.Err.NodeID != "answer" || len(rec.Events) != 0 {
		t.Errorf("got %+v %+v, %d events", o, o.Err, len(rec.Events))
	}
}

func TestModelNoModel(t *testing.T) {
	m := machine(t, helloFlow, stdlib.Options{Models: llm.Resolver(nil)})
	_, o, _ := vmtest.Run(t, m, "test", nil)
	if o.Status != vm.Failed || !strings.HasPrefix(o.Err.Message, "the node names no model and no default model is set") {
		t.Errorf("got %+v %+v", o, o.Err)
	}
}

// providerFunc adapts a function to llm.Provider.
type providerFunc func(ctx context.Context, req *llm.Request, on func(llm.Chunk) error) (*llm.Response, error)

func (f providerFunc) Stream(ctx context.Context, req *llm.Request, on func(llm.Chunk) error) (*llm.Response, error) {
	return f(ctx, req, on)
}

// TestModelBatchProvider: a provider that answers without streaming still
// gives whole lifecycles, and tool calls without ids get ids of the run.
func TestModelBatchProvider(t *testing.T) {
	calls := 0
	p := providerFunc(func(ctx context.Context, req *llm.Request, on func(llm.Chunk) error) (*llm.Response, error) {
		calls++
		if calls == 1 {
			return &llm.Response{Reasoning: "think", Text: "Let me add.", ToolCalls: []llm.ToolCall{{Name: "add", Arguments: `{"a":1,"b":2}`}}}, nil
		}
		return &llm.Response{Text: "3"}, nil
	})
	src := `wf 1

workflow test {
  tool add {
    description = "Add two numbers"
    result = $args.a + $args.b
  }
  flow {
    answer: model {
      model = "batch/x"
      tools = [add]
      user_event = false
    } -> $reply
  }
}
`
	m := machine(t, src, stdlib.Options{Models: llm.Resolver(map[string]llm.Provider{"batch": p})})
	f, o, rec := vmtest.Run(t, m, "test", nil)
	want := `REASONING_START msg=reason:msg-f1-1
REASONING_MESSAGE_START msg=reason:msg-f1-1
REASONING_MESSAGE_CONTENT msg=reason:msg-f1-1 delta="think"
REASONING_MESSAGE_END msg=reason:msg-f1-1
REASONING_END msg=reason:msg-f1-1
TEXT_MESSAGE_START msg=msg-f1-2 role=assistant
TEXT_MESSAGE_CONTENT msg=msg-f1-2 delta="Let me add."
TEXT_MESSAGE_END msg=msg-f1-2
TOOL_CALL_START call=call-f1-3 tool=add
TOOL_CALL_ARGS delta="{\"a\":1,\"b\":2}" call=call-f1-3
TOOL_CALL_END call=call-f1-3
TOOL_CALL_RESULT msg=tool:call-f1-3 call=call-f1-3 content="3"
TEXT_MESSAGE_START msg=msg-f1-4 role=assistant
TEXT_MESSAGE_CONTENT msg=msg-f1-4 delta="3"
TEXT_MESSAGE_END msg=msg-f1-4
`
	if o.Status != vm.Finished || rec.Text() != want {
		t.Errorf("outcome %+v, events:\n%s", o, rec.Text())
	}
	for _, e := range rec.Events {
		if e.Type == vm.ToolCallStart && e.ParentMessageID != "msg-f1-2" {
			t.Errorf("parentMessageId = %q", e.ParentMessageID)
		}
	}
	reply := f.Context["reply"].(map[string]any)
	if got := vm.Text(reply["tool_calls"]); got != `[{"arguments":{"a":1,"b":2},"id":"call-f1-3","name":"add"}]` {
		t.Errorf("tool_calls = %s", got)
	}
}

// TestModelRetryWaits: retries wait as backoff says, doubling.
func TestModelRetryWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script, err := llm.ParseScript([]byte("reply\nerror: 503 busy\nreply\nerror: 429 slow down\nreply\nerror: 500 oops\nreply\ntext: ok\n"))
		if err != nil {
			t.Fatal(err)
		}
		src := strings.Replace(helloFlow, `prompt = "hello"`, "prompt = \"hello\"\n      retry = 3\n      backoff = \"2s..3s\"", 1)
		m := machine(t, src, stdlib.Options{Models: llm.Resolver(map[string]llm.Provider{"script": script}), DefaultModel: "script/x"})
		start := time.Now()
		_, o, _ := vmtest.Run(t, m, "test", nil)
		if o.Status != vm.Finished {
			t.Fatalf("outcome %+v %v", o, o.Err)
		}
		if d := time.Since(start); d != 8*time.Second {
			t.Errorf("waited %v, want 2s+3s+3s", d)
		}
	})
}

// TestModelCancel: cancelling the run stops the model call mid-stream and
// closes what it opened.
func TestModelCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script, err := llm.ParseScript([]byte("reply\ndelay: 1s\ntext: one two three four five\n"))
		if err != nil {
			t.Fatal(err)
		}
		m := machine(t, helloFlow, stdlib.Options{Models: llm.Resolver(map[string]llm.Provider{"script": script}), DefaultModel: "script/x"})
		f, err := m.NewFrame("test", nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		rec := &vmtest.Recorder{}
		sink := vm.SinkFunc(func(e vm.Event) error {
			if e.Type == vm.TextContent && e.Delta == " two" {
				cancel()
			}
			return rec.Emit(e)
		})
		o := m.Run(ctx, f, nil, vm.Observer{Events: sink})
		if o.Status != vm.Cancelled {
			t.Errorf("outcome %+v %v", o, o.Err)
		}
		want := `TEXT_MESSAGE_START msg=msg-f1-1 role=user silent
TEXT_MESSAGE_CONTENT msg=msg-f1-1 delta="hello" silent
TEXT_MESSAGE_END msg=msg-f1-1 silent
TEXT_MESSAGE_START msg=msg-f1-2 role=assistant
TEXT_MESSAGE_CONTENT msg=msg-f1-2 delta="one"
TEXT_MESSAGE_CONTENT msg=msg-f1-2 delta=" two"
TEXT_MESSAGE_END msg=msg-f1-2
`
		if rec.Text() != want {
			t.Errorf("events:\n%s", rec.Text())
		}
		if f.Context["reply"] != nil {
			t.Errorf("reply = %v", f.Context["reply"])
		}
	})
}

// TestModelSinkError: a failing sink stops the node without retries.
func TestModelSinkError(t *testing.T) {
	script, _ := llm.ParseScript([]byte("reply repeat\ntext: one two\n"))
	src := strings.Replace(helloFlow, `prompt = "hello"`, "prompt = \"hello\"\n      retry = 3", 1)
	m := machine(t, src, stdlib.Options{Models: llm.Resolver(map[string]llm.Provider{"script": script}), DefaultModel: "script/x"})
	f, _ := m.NewFrame("test", nil)
	boom := errors.New("client gone")
	o := m.Run(t.Context(), f, nil, vm.Observer{Events: vm.SinkFunc(func(e vm.Event) error {
		if e.Type == vm.TextContent && e.Delta == "one" {
			return boom
		}
		return nil
	})})
	if o.Status != vm.Failed || o.Err.Message != "client gone" || len(script.Requests()) != 1 {
		t.Errorf("outcome %+v %+v, %d requests", o, o.Err, len(script.Requests()))
	}
}

// BenchmarkModelStream relays a 1,000-chunk answer through the
// interpreter to a sink that discards it.
func BenchmarkModelStream(b *testing.B) {
	words := make([]string, 1000)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	script, err := llm.ParseScript([]byte("reply repeat\ntext: " + strings.Join(words, " ") + "\n"))
	if err != nil {
		b.Fatal(err)
	}
	m := machine(b, helloFlow, stdlib.Options{Models: llm.Resolver(map[string]llm.Provider{"script": script}), DefaultModel: "script/x"})
	sink := vm.SinkFunc(func(vm.Event) error { return nil })
	var o vm.Outcome
	b.ReportAllocs()
	for b.Loop() {
		f, err := m.NewFrame("test", nil)
		if err != nil {
			b.Fatal(err)
		}
		o = m.Run(context.Background(), f, nil, vm.Observer{Events: sink})
	}
	if o.Status != vm.Finished {
		b.Fatalf("outcome %+v", o)
	}
}

// TestModelFrontendArgumentsNotObject: a frontend tool call whose
// arguments are not a JSON object is not left to the client, which could
// not run it and whose history a later request could not send back: the
// model gets an error result and calls again.
func TestModelFrontendArgumentsNotObject(t *testing.T) {
	calls := 0
	p := providerFunc(func(ctx context.Context, req *llm.Request, on func(llm.Chunk) error) (*llm.Response, error) {
		calls++
		switch calls {
		case 1:
			return &llm.Response{ToolCalls: []llm.ToolCall{
				{ID: "c1", Name: "pick_color", Arguments: `["red"]`},
				{ID: "c2", Name: "pick_color", Arguments: `{"options": [`},
			}}, nil
		case 2:
			return &llm.Response{ToolCalls: []llm.ToolCall{{ID: "c3", Name: "pick_color", Arguments: `{"options": ["red"]}`}}}, nil
		}
		return nil, fmt.Errorf("call %d", calls)
	})
	src := `wf 1

workflow test {
  flow {
    answer: model {
      model      = "batch/x"
      tools      = $agent.tools
      user_event = false
    } -> $reply
  }
}
`
	m := machine(t, src, stdlib.Options{Models: llm.Resolver(map[string]llm.Provider{"batch": p})})
	_, o, rec := vmtest.Run(t, m, "test", map[string]any{"agent": map[string]any{"tools": []any{map[string]any{"name": "pick_color"}}}})
	if o.Status != vm.Suspended || o.Wait == nil || fmt.Sprint(o.Wait.ToolCallIDs) != "[c3]" {
		t.Fatalf("outcome %s %+v %+v, want waiting for c3", o.Status, o.Wait, o.Err)
	}
	var results []string
	for _, e := range rec.Events {
		if e.Type == vm.ToolCallResult {
			results = append(results, e.ToolCallID+": "+e.Content)
		}
	}
	want := []string{
		`c1: error: the arguments must be a JSON object, found ["red"]`,
		`c2: error: the arguments must be a JSON object, found {"options": [`,
	}
	if fmt.Sprint(results) != fmt.Sprint(want) {
		t.Errorf("results %q, want %q", results, want)
	}
	checkLifecycles(t, rec.Events)
}

// toolPairingError says what makes a chat history one a model API
// refuses: a tool call without its result among the tool messages right
// after it, or a tool message that answers no call of the assistant
// message before it.
func toolPairingError(msgs []llm.Message) error {
	for i := 0; i < len(msgs); {
		msg := msgs[i]
		i++
		if msg.Role == llm.RoleTool {
			return fmt.Errorf("message %d: a tool result for %q answers no call", i, msg.ToolCallID)
		}
		if msg.Role != llm.RoleAssistant {
			continue
		}
		open := map[string]bool{}
		for _, tc := range msg.ToolCalls {
			open[tc.ID] = true
		}
		for ; i < len(msgs) && msgs[i].Role == llm.RoleTool; i++ {
			if !open[msgs[i].ToolCallID] {
				return fmt.Errorf("message %d: a tool result for %q answers no open call", i+1, msgs[i].ToolCallID)
			}
			delete(open, msgs[i].ToolCallID)
		}
		if len(open) > 0 {
			return fmt.Errorf("message %d: tool calls without a result: %v", i, open)
		}
	}
	return nil
}

// batchOnly answers with the whole answer of p, streaming nothing.
type batchOnly struct{ p llm.Provider }

func (b batchOnly) Stream(ctx context.Context, req *llm.Request, _ func(llm.Chunk) error) (*llm.Response, error) {
	return b.p.Stream(ctx, req, func(llm.Chunk) error { return nil })
}

// TestModelConversationTurns runs a conversation over five turns: backend
// tool rounds, reasoning with a tool call, text with both a backend and a
// frontend call, two frontend calls answered in two requests, text turned
// off for one turn. Every request sent to the model, and $input.chat after
// every turn, pairs each tool call with its result, as a model API wants;
// the message and tool call ids the client sees are unique across the
// turns, whether the provider streams or answers in one piece.
func TestModelConversationTurns(t *testing.T) {
	const src = `wf 1

workflow test {
  conversation = true

  tool add {
    description = "Add two numbers"
    parameters  = {type: "object", properties: {a: {type: "number"}, b: {type: "number"}}, required: ["a", "b"]}
    result      = $args.a + $args.b
  }

  flow {
    set $input.chat = $input.chat ?? []
    answer: model {
      prompt   = "<<$agent.latestUserMessage?.content>>"
      chat_in  = $input.chat
      chat_out = $input.chat
      tools    = [add, $agent.tools]
      stream   = $agent.stream ?? true
    } -> $reply
    next: suspend
    goto answer
  }
}
`
	const script = `
reply after user match "one"
text: Adding.
tool: add {"a": 1, "b": 2}
reply after tool match "one"
text: 3.

reply after user match "two"
reasoning: Two sums at once.
tool: add {"a": 2, "b": 2}
tool: add {"a": 2, "b": 3}
reply after tool match "two"
text: 4 and 5.

reply after user match "three"
text: Let me add and ask.
tool: add {"a": 3, "b": 3}
tool: pick_color color_1 {}
reply after tool match "three"
text: 6, in blue.

reply after user match "four"
text: Two questions.
tool: pick_color color_2 {}
tool: pick_font font_2 {}
reply after tool match "four"
reasoning: Both answered.
text: Red and serif.

reply after user match "five"
text: Quietly done.
`
	tools := []any{map[string]any{"name": "pick_color"}, map[string]any{"name": "pick_font"}}
	user := func(text string, stream bool) *vm.Resume {
		msg := map[string]any{"id": "u-" + text, "role": "user", "content": text}
		return &vm.Resume{Agent: map[string]any{"latestUserMessage": msg, "messages": []any{msg}, "tools": tools, "stream": stream}}
	}
	result := func(id, content string) *vm.Resume {
		msg := map[string]any{"id": "t-" + id, "role": "tool", "toolCallId": id, "content": content}
		agent := map[string]any{"latestToolResult": msg, "messages": []any{msg}, "tools": tools}
		return &vm.Resume{Agent: agent, ToolResults: vm.ToolResults(agent)}
	}
	turns := []struct {
		name    string
		resume  *vm.Resume
		waiting string // the tool call ids the run ends waiting for; "" when it waits for the user
	}{
		{"one", user("one", false), ""},
		{"two", user("two", true), ""},
		{"three", user("three", true), "[color_1]"},
		{"three, answered", result("color_1", "blue"), ""},
		{"four", user("four", true), "[color_2 font_2]"},
		{"four, the font", result("font_2", "serif"), "[color_2]"},
		{"four, the colour", result("color_2", "red"), ""},
		{"five", user("five", false), ""},
	}
	for _, mode := range []string{"streamed", "batch"} {
		t.Run(mode, func(t *testing.T) {
			scripted, err := llm.ParseScript([]byte(script))
			if err != nil {
				t.Fatal(err)
			}
			var p llm.Provider = scripted
			if mode == "batch" {
				p = batchOnly{scripted}
			}
			m := machine(t, src, stdlib.Options{Models: llm.Resolver(map[string]llm.Provider{"script": p}), DefaultModel: "script/x"})
			f, err := m.NewFrame("test", nil)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]string{} // id → the turn that opened it
			var all []vm.Event
			for i, turn := range turns {
				rec := &vmtest.Recorder{}
				if i > 0 {
					f = vmtest.Reload(t, f)
				}
				in := turn.resume
				if i == 0 {
					in = nil
					f.Context["agent"] = turn.resume.Agent
				}
				o := m.Run(t.Context(), f, in, vm.Observer{Events: rec})
				if o.Status != vm.Suspended {
					t.Fatalf("turn %q: outcome %s %+v", turn.name, o.Status, o.Err)
				}
				waiting := ""
				if o.Wait.Kind == vm.WaitTool {
					waiting = fmt.Sprint(o.Wait.ToolCallIDs)
				}
				if waiting != turn.waiting {
					t.Errorf("turn %q: waits for %q, want %q", turn.name, waiting, turn.waiting)
				}
				checkLifecycles(t, rec.Events)
				for _, e := range rec.Events {
					var id string
					switch e.Type {
					case vm.TextStart, vm.ReasoningStart:
						id = e.MessageID
					case vm.ToolCallStart:
						id = e.ToolCallID
					default:
						continue
					}
					if prev, ok := seen[id]; ok {
						t.Errorf("turn %q: %s reuses id %s of turn %q", turn.name, e.Type, id, prev)
					}
					seen[id] = turn.name
				}
				all = append(all, rec.Events...)
				chat, err := llm.FromValue(f.Context["input"].(map[string]any)["chat"])
				if err != nil {
					t.Fatal(err)
				}
				if err := toolPairingError(chat); err != nil {
					t.Errorf("turn %q: $input.chat: %v", turn.name, err)
				}
			}
			reqs := scripted.Requests()
			if len(reqs) != 9 {
				t.Errorf("%d requests, want 9", len(reqs))
			}
			for i, req := range reqs {
				if err := toolPairingError(req.Messages); err != nil {
					t.Errorf("request %d: %v", i+1, err)
				}
			}
			var text []string
			for _, e := range all {
				if e.Type == vm.TextContent && !e.Silent {
					text = append(text, e.Delta)
				}
			}
			got := strings.Join(text, "")
			const want = "4 and 5.Let me add and ask.6, in blue.Two questions.Red and serif."
			if got != want {
				t.Errorf("the client saw the text %q, want %q (none of the turns with stream = false)", got, want)
			}
			chat, _ := llm.FromValue(f.Context["input"].(map[string]any)["chat"])
			var lines []string
			for _, msg := range chat {
				line := msg.Role + ": " + msg.Content
				for _, tc := range msg.ToolCalls {
					line += " [" + tc.Name + "]"
				}
				lines = append(lines, line)
			}
			wantChat := []string{
				"user: one", "assistant: Adding. [add]", "tool: 3", "assistant: 3.",
				"user: two", "assistant:  [add] [add]", "tool: 4", "tool: 5", "assistant: 4 and 5.",
				"user: three", "assistant: Let me add and ask. [add] [pick_color]", "tool: 6", "tool: blue", "assistant: 6, in blue.",
				"user: four", "assistant: Two questions. [pick_color] [pick_font]", "tool: serif", "tool: red", "assistant: Red and serif.",
				"user: five", "assistant: Quietly done.",
			}
			if strings.Join(lines, "\n") != strings.Join(wantChat, "\n") {
				t.Errorf("$input.chat:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(wantChat, "\n"))
			}
		})
	}
}
