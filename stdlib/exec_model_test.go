package stdlib_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/vmtest"
	"github.com/rogpeppe/go-internal/txtar"
)

func init() {
	// Other tests of the package may declare -update too: share it.
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the want files of testdata/model/*.txtar")
	}
}

func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// TestModel runs every testdata/model/*.txtar archive. An archive holds
//
//   - flow.wf: the program; its workflow "test" runs;
//   - script: the replies of the scripted provider "script" (the default
//     model is "script/default");
//   - context.json: the initial context (optional);
//   - resume.json: when present, the suspended run is resumed with it
//     ({"agent": …, "merge": …}), once on the same frame and once on a
//     frame serialized and loaded back, which must give the same;
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
			if updating() {
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
	if data := files["resume.json"]; data != nil {
		if o.Status != vm.Suspended {
			t.Fatalf("resume.json, but the run ended %s", o.Status)
		}
		var in struct {
			Agent map[string]any `json:"agent"`
			Merge map[string]any `json:"merge"`
		}
		if err := json.Unmarshal(data, &in); err != nil {
			t.Fatalf("resume.json: %v", err)
		}
		if reload {
			f = vmtest.Reload(t, f)
		}
		rec = &vmtest.Recorder{}
		o = m.Run(t.Context(), f, &vm.Resume{Agent: in.Agent, Merge: in.Merge}, rec)
		b.WriteString("## run 2\n")
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
	if o.Status != vm.Failed || !strings.HasPrefix(o.Err.Message, "the node names no model and the server has no default model") {
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
		o := m.Run(ctx, f, nil, sink)
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
	o := m.Run(t.Context(), f, nil, vm.SinkFunc(func(e vm.Event) error {
		if e.Type == vm.TextContent && e.Delta == "one" {
			return boom
		}
		return nil
	}))
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
		o = m.Run(context.Background(), f, nil, sink)
	}
	if o.Status != vm.Finished {
		b.Fatalf("outcome %+v", o)
	}
}
