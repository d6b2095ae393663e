package stdlib_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/aguic/aguic/internal/golden"
	"github.com/aguic/aguic/internal/vmtest"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
)

// msgTurn is one request of a conversation after the first: a resume, and
// how far the clock moves before it.
type msgTurn struct {
	Advance    string           `json:"advance,omitempty"` // a duration
	Agent      map[string]any   `json:"agent,omitempty"`
	Merge      map[string]any   `json:"merge,omitempty"`
	Interrupts []vm.ResumeEntry `json:"interrupts,omitempty"`
}

func (t msgTurn) resume() *vm.Resume {
	return &vm.Resume{Agent: t.Agent, Merge: t.Merge, Interrupts: t.Interrupts, ToolResults: vm.ToolResults(t.Agent)}
}

// msgConversation runs one workflow over several turns with a clock the turns
// move.
type msgConversation struct {
	t   *testing.T
	m   *vm.Machine
	now time.Time
	f   *vm.Frame
}

func newMsgConversation(t *testing.T, src string, ctx map[string]any) *msgConversation {
	t.Helper()
	c := &msgConversation{t: t, m: vmtest.Machine(t, src, stdlib.Options{}), now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	c.m.Now = func() time.Time { return c.now }
	id := c.m.Program.Workflows[0].ID
	f, err := c.m.NewFrame(id, ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.f = f
	return c
}

// run runs the first turn.
func (c *msgConversation) run() (vm.Outcome, *vmtest.Recorder) {
	rec := &vmtest.Recorder{}
	return c.m.Run(context.Background(), c.f, nil, vm.Observer{Events: rec}), rec
}

// resume runs a later turn twice, on the frame in memory and on the frame
// serialized and loaded back, and fails the test unless both runs emit the
// same events, end the same way and leave the same frame.
func (c *msgConversation) resume(tn msgTurn) (vm.Outcome, *vmtest.Recorder) {
	c.t.Helper()
	if tn.Advance != "" {
		d, err := time.ParseDuration(tn.Advance)
		if err != nil {
			c.t.Fatal(err)
		}
		c.now = c.now.Add(d)
	}
	loaded := vmtest.Reload(c.t, c.f)
	rec := &vmtest.Recorder{}
	o := c.m.Run(context.Background(), c.f, tn.resume(), vm.Observer{Events: rec})
	lrec := &vmtest.Recorder{}
	lo := c.m.Run(context.Background(), loaded, tn.resume(), vm.Observer{Events: lrec})
	if got, want := lrec.Text(), rec.Text(); got != want {
		c.t.Errorf("events after a reload differ:\n--- reloaded\n%s--- in memory\n%s", got, want)
	}
	if got, want := msgOutcome(lo), msgOutcome(o); got != want {
		c.t.Errorf("outcome after a reload differs:\nreloaded:  %s\nin memory: %s", got, want)
	}
	if got, want := msgFrameJSON(c.t, loaded), msgFrameJSON(c.t, c.f); got != want {
		c.t.Errorf("frame after a reload differs:\nreloaded:  %s\nin memory: %s", got, want)
	}
	return o, rec
}

func msgFrameJSON(t *testing.T, f *vm.Frame) string {
	t.Helper()
	data, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// get reads a context path of the conversation's frame.
func (c *msgConversation) get(path string) any { return c.f.Get(vm.ParsePath(path)) }

func msgOutcome(o vm.Outcome) string {
	s := "-> " + string(o.Status)
	switch {
	case o.Err != nil:
		s += " " + o.Err.Code + ": " + o.Err.Error()
	case o.Wait != nil:
		s += " " + vm.Text(vm.Normalize(o.Wait))
	case o.Result != nil:
		s += " " + vm.Text(o.Result)
	}
	return s
}

// TestMessagesGolden runs each testdata/messages/*.txtar: the workflow of
// test.wf with the context of context.json, then one resumed run per entry
// of turns.json, and compares the events, outcomes and final context with
// the want section. Every resumed run is also checked against the same run
// from the frame serialized and loaded back.
func TestMessagesGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "messages", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sections := map[string][]byte{}
			for _, f := range ar.Files {
				sections[f.Name] = f.Data
			}
			var ctx map[string]any
			if data := sections["context.json"]; data != nil {
				if err := json.Unmarshal(data, &ctx); err != nil {
					t.Fatalf("context.json: %v", err)
				}
			}
			var turns []json.RawMessage
			if data := sections["turns.json"]; data != nil {
				if err := json.Unmarshal(data, &turns); err != nil {
					t.Fatalf("turns.json: %v", err)
				}
			}
			c := newMsgConversation(t, string(sections["test.wf"]), ctx)
			var b strings.Builder
			o, rec := c.run()
			fmt.Fprintf(&b, "== run 1\n%s%s\n", rec.Text(), msgOutcome(o))
			for i, raw := range turns {
				var tn msgTurn
				if err := json.Unmarshal(raw, &tn); err != nil {
					t.Fatalf("turn %d: %v", i+2, err)
				}
				var compact bytes.Buffer
				_ = json.Compact(&compact, raw)
				o, rec := c.resume(tn)
				fmt.Fprintf(&b, "== run %d %s\n%s%s\n", i+2, compact.String(), rec.Text(), msgOutcome(o))
			}
			state, _ := json.MarshalIndent(c.f.Context, "", "  ")
			fmt.Fprintf(&b, "== context\n%s\n", state)
			got := b.String()

			i := slices.IndexFunc(ar.Files, func(f txtar.File) bool { return f.Name == "want" })
			if golden.Update() {
				if i < 0 {
					ar.Files = append(ar.Files, txtar.File{Name: "want"})
					i = len(ar.Files) - 1
				}
				ar.Files[i].Data = []byte(got)
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if i < 0 {
				t.Fatalf("no want section (run go test -update to create it); got:\n%s", got)
			}
			if want := string(ar.Files[i].Data); got != want {
				t.Errorf("run differs (go test -update to accept):\n--- got\n%s--- want\n%s", got, want)
			}
		})
	}
}

// msgJSON renders v as compact JSON with sorted keys.
func msgJSON(v any) string {
	if v == nil {
		return "null"
	}
	return vm.Text(vm.Normalize(v))
}

// agentWith returns an AG-UI $agent holding one incoming message.
func agentWith(msg map[string]any) map[string]any {
	a := map[string]any{"messages": []any{msg}}
	switch msg["role"] {
	case "user":
		a["latestUserMessage"] = msg
	case "tool":
		a["latestToolResult"] = msg
	}
	return a
}

func msgUser(id, text string) map[string]any {
	return map[string]any{"id": id, "role": "user", "content": text}
}

func msgTool(id, callID string, content any) map[string]any {
	return map[string]any{"id": id, "role": "tool", "toolCallId": callID, "content": content}
}

func TestSay(t *testing.T) {
	tests := []struct {
		name   string
		flow   string
		events string
		result string
	}{
		{"plain", `say "Hi <<1 + 1>>" -> $r`,
			"TEXT_MESSAGE_START msg=msg-f1-1 role=assistant\nTEXT_MESSAGE_CONTENT msg=msg-f1-1 delta=\"Hi 2\"\nTEXT_MESSAGE_END msg=msg-f1-1\n",
			`{"id":"msg-f1-1","text":"Hi 2"}`},
		{"empty text has no content event", `say "<<$nothing>>" -> $r`,
			"TEXT_MESSAGE_START msg=msg-f1-1 role=assistant\nTEXT_MESSAGE_END msg=msg-f1-1\n",
			`{"id":"msg-f1-1","text":""}`},
		{"value as JSON text", `say "<<{b: 1, a: [true]}>>" -> $r`,
			"TEXT_MESSAGE_START msg=msg-f1-1 role=assistant\nTEXT_MESSAGE_CONTENT msg=msg-f1-1 delta=\"{\\\"a\\\":[true],\\\"b\\\":1}\"\nTEXT_MESSAGE_END msg=msg-f1-1\n",
			`{"id":"msg-f1-1","text":"{\"a\":[true],\"b\":1}"}`},
		{"role, id and silent", "say \"x\" {\n role = \"user\"\n id = \"u-<<2>>\"\n silent = true\n} -> $r",
			"TEXT_MESSAGE_START msg=u-2 role=user silent\nTEXT_MESSAGE_CONTENT msg=u-2 delta=\"x\" silent\nTEXT_MESSAGE_END msg=u-2 silent\n",
			`{"id":"u-2","text":"x"}`},
		{"hidden", "say \"x\" {\n role = \"system\"\n hidden = true\n} -> $r",
			"TEXT_MESSAGE_START msg=msg-f1-1 role=system hidden\nTEXT_MESSAGE_CONTENT msg=msg-f1-1 delta=\"x\" hidden\nTEXT_MESSAGE_END msg=msg-f1-1 hidden\n",
			`{"id":"msg-f1-1","text":"x"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := vmtest.Machine(t, "wf 1\nworkflow w {\n flow {\n"+tt.flow+"\n }\n}\n", stdlib.Options{})
			f, o, rec := vmtest.Run(t, m, "w", nil)
			if o.Status != vm.Finished {
				t.Fatalf("outcome %s", msgOutcome(o))
			}
			if got := rec.Text(); got != tt.events {
				t.Errorf("events:\n%s\nwant:\n%s", got, tt.events)
			}
			if got := msgJSON(f.Get(vm.ParsePath("$r"))); got != tt.result {
				t.Errorf("result %s, want %s", got, tt.result)
			}
		})
	}
}

func TestSayErrors(t *testing.T) {
	tests := []struct{ name, flow, want string }{
		{"computed role", `say "x" { role = "<<'bot'>>" }`, `role must be "assistant", "user" or "system", found "bot"`},
		{"computed flag", `say "x" { silent = "<<'yes'>>" }`, `silent must be true or false, found "yes"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := vmtest.Machine(t, "wf 1\nworkflow w {\n flow {\n"+tt.flow+"\n }\n}\n", stdlib.Options{})
			_, o, rec := vmtest.Run(t, m, "w", nil)
			if o.Status != vm.Failed || o.Err.Code != vm.ErrNode || o.Err.Message != tt.want || o.Err.NodeID == "" {
				t.Fatalf("outcome %s; want node error %q", msgOutcome(o), tt.want)
			}
			if len(rec.Events) != 0 {
				t.Errorf("a failing say emitted %d events", len(rec.Events))
			}
		})
	}
}

// TestMessageIDsUnique runs say in a loop over several turns of a
// conversation, reloading the frame between turns, and checks that no two
// messages share an id.
func TestMessageIDsUnique(t *testing.T) {
	c := newMsgConversation(t, `wf 1
workflow w {
  conversation = true
  flow {
    top: for i in [1, 2, 3] { say "<<i>>" }
    backend_tool "t" { result = 1 }
    wait: suspend
    goto top
  }
}
`, nil)
	o, rec := c.run()
	all := rec.Events
	for i := range 3 {
		if o.Status != vm.Suspended {
			t.Fatalf("turn %d: %s", i+1, msgOutcome(o))
		}
		c.f = vmtest.Reload(t, c.f)
		o, rec = c.resume(msgTurn{Agent: agentWith(msgUser(fmt.Sprint("u", i), "next"))})
		all = append(all, rec.Events...)
	}
	seen := map[string]bool{}
	for _, e := range all {
		id := e.MessageID
		if e.Type == vm.ToolCallStart {
			id = e.ToolCallID
		}
		if e.Type != vm.TextStart && e.Type != vm.ToolCallStart && e.Type != vm.ToolCallResult {
			continue
		}
		if seen[id] {
			t.Errorf("id %s used twice", id)
		}
		seen[id] = true
	}
	if len(seen) != 4*5 {
		t.Errorf("%d ids, want 20", len(seen))
	}
}

func TestEmitAndOutput(t *testing.T) {
	m := vmtest.Machine(t, `wf 1
workflow w {
  flow {
    emit "progress" { value = {stage: "fetch", n: 1} }
    emit "<<'ping'>>"
    output [1, "two"]
  }
}
`, stdlib.Options{})
	_, o, rec := vmtest.Run(t, m, "w", nil)
	want := "CUSTOM name=progress value={\"n\":1,\"stage\":\"fetch\"}\nCUSTOM name=ping\n"
	if got := rec.Text(); got != want {
		t.Errorf("events:\n%s\nwant:\n%s", got, want)
	}
	if rec.Events[1].Value != nil {
		t.Errorf("emit without value: value %v, want null", rec.Events[1].Value)
	}
	if o.Status != vm.Finished || msgJSON(o.Result) != `[1,"two"]` {
		t.Errorf("outcome %s", msgOutcome(o))
	}
}

func TestBackendTool(t *testing.T) {
	call := func(args string) string {
		return `{"role":"assistant","toolCalls":[{"arguments":` + args + `,"id":"call-f1-1","name":"lookup_weather"}]}`
	}
	const result = `{"content":"Sunny","role":"tool","toolCallId":"call-f1-1"}`
	tests := []struct {
		name    string
		keys    string
		context map[string]any
		path    string // where the chat is
		chat    string
		result  string
	}{
		{"default persists call and result into a new $input.chat", `result = "Sunny"`, nil,
			"$input.chat", "[" + call(`"{}"`) + "," + result + "]", `{"result":"Sunny","toolCallId":"call-f1-1"}`},
		{"call only, appended to an existing list", "persist = \"call\"\nargs = {city: \"Sydney\"}\nresult = \"Sunny\"",
			map[string]any{"input": map[string]any{"chat": []any{map[string]any{"role": "user", "content": "hi"}}}},
			"$input.chat", `[{"content":"hi","role":"user"},` + call(`"{\"city\":\"Sydney\"}"`) + "]", `{"result":"Sunny","toolCallId":"call-f1-1"}`},
		{"none writes nothing", "persist = \"none\"\nresult = \"Sunny\"", nil,
			"$input", "null", `{"result":"Sunny","toolCallId":"call-f1-1"}`},
		{"another chat path", "chat = $agent.chat\nresult = \"Sunny\"", nil,
			"$agent.chat", "[" + call(`"{}"`) + "," + result + "]", `{"result":"Sunny","toolCallId":"call-f1-1"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "wf 1\nworkflow w {\n flow {\n backend_tool \"lookup_weather\" {\n" + tt.keys + "\n } -> $r\n }\n}\n"
			m := vmtest.Machine(t, src, stdlib.Options{})
			f, o, rec := vmtest.Run(t, m, "w", tt.context)
			if o.Status != vm.Finished {
				t.Fatalf("outcome %s", msgOutcome(o))
			}
			types := fmt.Sprint(rec.Types())
			if want := "[TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END TOOL_CALL_RESULT]"; types != want {
				t.Errorf("events %s, want %s", types, want)
			}
			if e := rec.Events[3]; e.MessageID != "tool:call-f1-1" || e.ToolCallID != "call-f1-1" || e.Content != "Sunny" {
				t.Errorf("result event %+v", e)
			}
			if got := msgJSON(f.Get(vm.ParsePath(tt.path))); got != tt.chat {
				t.Errorf("%s = %s\nwant %s", tt.path, got, tt.chat)
			}
			if got := msgJSON(f.Get(vm.ParsePath("$r"))); got != tt.result {
				t.Errorf("result %s, want %s", got, tt.result)
			}
		})
	}
}

func TestBackendToolContent(t *testing.T) {
	tests := []struct{ result, args, content string }{
		{`"text"`, `{}`, "text"},
		{`{b: [1, 2.5], a: nil}`, `{}`, `{"a":null,"b":[1,2.5]}`},
		{`nil`, `{z: "<b>", a: 1}`, "null"},
		{`42`, `{}`, "42"},
	}
	for _, tt := range tests {
		t.Run(tt.result, func(t *testing.T) {
			src := "wf 1\nworkflow w {\n flow {\n backend_tool \"t\" {\n args = " + tt.args + "\n result = " + tt.result + "\n persist = \"none\"\n }\n }\n}\n"
			m := vmtest.Machine(t, src, stdlib.Options{})
			_, o, rec := vmtest.Run(t, m, "w", nil)
			if o.Status != vm.Finished {
				t.Fatalf("outcome %s", msgOutcome(o))
			}
			if got := rec.Events[3].Content; got != tt.content {
				t.Errorf("content %q, want %q", got, tt.content)
			}
			var args map[string]any
			if err := json.Unmarshal([]byte(rec.Events[1].Delta), &args); err != nil {
				t.Errorf("args %q are not a JSON object: %v", rec.Events[1].Delta, err)
			}
		})
	}
}

func TestBackendToolChatNotAList(t *testing.T) {
	m := vmtest.Machine(t, "wf 1\nworkflow w {\n flow {\n backend_tool \"t\" { result = 1 }\n }\n}\n", stdlib.Options{})
	_, o, _ := vmtest.Run(t, m, "w", map[string]any{"input": map[string]any{"chat": "oops"}})
	if o.Status != vm.Failed || o.Err.Message != "chat history $input.chat must be a list, found \"oops\"" {
		t.Fatalf("outcome %s", msgOutcome(o))
	}
}

// msgFrontendSrc asks the client for confirmation; each branch records which
// one ran.
const msgFrontendSrc = `wf 1
workflow w {
  conversation = true
  flow {
    set $input.chat = [{role: "user", content: "refund please"}]
    ask: frontend_tool "confirm" {
      args       = {orderId: "A1"}
      persist    = "call_and_result"
      hide_after = true
      on result { set $branch = "result" }
      on other { set $branch = "other" }
    } -> $answer
    emit "after" { value = $branch }
  }
}
`

func TestFrontendToolResume(t *testing.T) {
	const (
		call   = `{"role":"assistant","toolCalls":[{"arguments":"{\"orderId\":\"A1\"}","id":"call-f1-1","name":"confirm"}]}`
		user   = `{"content":"refund please","role":"user"}`
		result = `{"content":"{\"ok\":true}","role":"tool","toolCallId":"call-f1-1"}`
	)
	tests := []struct {
		name   string
		msgs   []any
		status vm.Status
		code   string // of a failed run
		msg    string // of a failed run
		branch string
		events string // the resumed run's events
		chat   string
		answer string
	}{
		{name: "matching tool result", msgs: []any{msgTool("t1", "call-f1-1", `{"ok":true}`)},
			status: vm.Finished, branch: "result",
			events: "TOOL_CALL_RESULT msg=tool:call-f1-1 call=call-f1-1 content=\"{\\\"ok\\\":true}\"\nHIDE_TOOL_CALL call=call-f1-1\nCUSTOM name=after value=result\n",
			chat:   "[" + user + "," + call + "," + result + "]",
			answer: `{"content":"{\"ok\":true}","messageId":"t1","toolCallId":"call-f1-1","value":{"ok":true}}`},
		{name: "user message abandons", msgs: []any{msgUser("u2", "never mind")},
			status: vm.Finished, branch: "other",
			events: "HIDE_TOOL_CALL call=call-f1-1\nCUSTOM name=after value=other\n",
			chat:   "[" + user + "]", answer: "null"},
		{name: "result of another call abandons", msgs: []any{msgTool("t1", "call-other", "yes")},
			status: vm.Finished, branch: "other",
			events: "HIDE_TOOL_CALL call=call-f1-1\nCUSTOM name=after value=other\n",
			chat:   "[" + user + "]", answer: "null"},
		{name: "user message with content parts abandons", msgs: []any{map[string]any{"id": "u2", "role": "user", "content": []any{map[string]any{"type": "text", "text": "hi"}}}},
			status: vm.Finished, branch: "other",
			events: "HIDE_TOOL_CALL call=call-f1-1\nCUSTOM name=after value=other\n",
			chat:   "[" + user + "]", answer: "null"},
		{name: "two messages", msgs: []any{msgUser("u2", "a"), msgTool("t1", "call-f1-1", "yes")},
			status: vm.Failed, code: vm.ErrResume, msg: `expected exactly one incoming message for tool call "call-f1-1", found 2`},
		{name: "no message", msgs: []any{},
			status: vm.Failed, code: vm.ErrResume, msg: `expected exactly one incoming message for tool call "call-f1-1", found 0`},
		{name: "missing id", msgs: []any{map[string]any{"role": "tool", "toolCallId": "call-f1-1", "content": "yes"}},
			status: vm.Failed, code: vm.ErrResume, msg: "the incoming message has no id"},
		{name: "non-string content", msgs: []any{msgTool("t1", "call-f1-1", map[string]any{"ok": true})},
			status: vm.Failed, code: vm.ErrResume, msg: `tool message "t1" must have string content, found an object`},
		{name: "missing role", msgs: []any{map[string]any{"id": "x", "content": "hi"}},
			status: vm.Failed, code: vm.ErrResume, msg: `incoming message "x" has no role`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newMsgConversation(t, msgFrontendSrc, nil)
			o, rec := c.run()
			wantFirst := "TOOL_CALL_START call=call-f1-1 tool=confirm\nTOOL_CALL_ARGS delta=\"{\\\"orderId\\\":\\\"A1\\\"}\" call=call-f1-1\nTOOL_CALL_END call=call-f1-1\n"
			if o.Status != vm.Suspended || !reflect.DeepEqual(o.Wait, &vm.Wait{Kind: vm.WaitTool, ToolCallIDs: []string{"call-f1-1"}}) || rec.Text() != wantFirst {
				t.Fatalf("first run: %s\n%s", msgOutcome(o), rec.Text())
			}
			if got := msgJSON(c.get("$input.chat")); got != "["+user+","+call+"]" {
				t.Fatalf("chat while waiting: %s", got)
			}
			o, rec = c.resume(msgTurn{Agent: map[string]any{"messages": tt.msgs}})
			if o.Status != tt.status {
				t.Fatalf("outcome %s, want %s", msgOutcome(o), tt.status)
			}
			if tt.status == vm.Failed {
				if o.Err.Code != tt.code || o.Err.Message != tt.msg || o.Err.NodeID != "ask" {
					t.Errorf("error %s %q at %q; want %s %q at ask", o.Err.Code, o.Err.Message, o.Err.NodeID, tt.code, tt.msg)
				}
				if len(rec.Events) != 0 {
					t.Errorf("a failed resume emitted:\n%s", rec.Text())
				}
				return
			}
			if got := rec.Text(); got != tt.events {
				t.Errorf("events:\n%s\nwant:\n%s", got, tt.events)
			}
			if got := c.get("$branch"); got != tt.branch {
				t.Errorf("branch %v, want %s", got, tt.branch)
			}
			if got := msgJSON(c.get("$input.chat")); got != tt.chat {
				t.Errorf("chat %s\nwant %s", got, tt.chat)
			}
			if got := msgJSON(c.get("$answer")); got != tt.answer {
				t.Errorf("answer %s\nwant %s", got, tt.answer)
			}
			if st := c.f.State["ask"]; st != nil {
				t.Errorf("node state left behind: %v", st)
			}
		})
	}
}

func TestFrontendToolPersist(t *testing.T) {
	tests := []struct {
		persist, hide string
		chat          []string // roles after the result
		hidden        bool
	}{
		{"none", "false", nil, false},
		{"call", "false", []string{"assistant"}, false},
		{"call_and_result", "true", []string{"assistant", "tool"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.persist, func(t *testing.T) {
			src := strings.NewReplacer("PERSIST", tt.persist, "HIDE", tt.hide).Replace(`wf 1
workflow w {
  conversation = true
  flow {
    ask: frontend_tool "pick" {
      persist    = "PERSIST"
      hide_after = HIDE
      on result { emit "result" }
      on other { emit "other" }
    }
  }
}
`)
			c := newMsgConversation(t, src, nil)
			c.run()
			o, rec := c.resume(msgTurn{Agent: agentWith(msgTool("t1", "call-f1-1", "plain text"))})
			if o.Status != vm.Finished {
				t.Fatalf("outcome %s", msgOutcome(o))
			}
			var roles []string
			chat, _ := c.get("$input.chat").([]any)
			for _, m := range chat {
				roles = append(roles, m.(map[string]any)["role"].(string))
			}
			if !slices.Equal(roles, tt.chat) {
				t.Errorf("chat roles %v, want %v", roles, tt.chat)
			}
			if got := slices.Contains(rec.Types(), vm.HideToolCall); got != tt.hidden {
				t.Errorf("HIDE_TOOL_CALL emitted: %v, want %v", got, tt.hidden)
			}
			if got := rec.Types()[len(rec.Types())-1]; got != vm.Custom || rec.Events[len(rec.Events)-1].Name != "result" {
				t.Errorf("last event %s %s, want the result branch", got, rec.Events[len(rec.Events)-1].Name)
			}
		})
	}
}

// TestFrontendToolEmptyResume: a resume that brings no $agent cannot
// answer a tool call.
func TestFrontendToolEmptyResume(t *testing.T) {
	c := newMsgConversation(t, msgFrontendSrc, map[string]any{"agent": agentWith(msgUser("u1", "refund please"))})
	c.run()
	o, _ := c.resume(msgTurn{})
	if o.Status != vm.Failed || o.Err.Code != vm.ErrResume {
		t.Fatalf("outcome %s, want %s", msgOutcome(o), vm.ErrResume)
	}
}

// TestFrontendToolStaleCall: a node that runs afresh while the state of a
// call whose resume failed is still there abandons that call, so the chat
// and the replay hold only the new one.
func TestFrontendToolStaleCall(t *testing.T) {
	c := newMsgConversation(t, msgFrontendSrc, nil)
	c.run()
	if o, _ := c.resume(msgTurn{Agent: map[string]any{"messages": []any{}}}); o.Status != vm.Failed {
		t.Fatalf("outcome %s, want failed", msgOutcome(o))
	}
	c.f.Suspended, c.f.Node = false, "ask" // the node runs again, not resumed
	rec := &vmtest.Recorder{}
	o := c.m.Run(context.Background(), c.f, nil, vm.Observer{Events: rec})
	if o.Status != vm.Suspended || o.Wait.ToolCallIDs[0] != "call-f1-2" {
		t.Fatalf("outcome %s", msgOutcome(o))
	}
	if got := fmt.Sprint(rec.Types()[:2]); got != "[HIDE_TOOL_CALL TOOL_CALL_START]" || rec.Events[0].ToolCallID != "call-f1-1" {
		t.Errorf("events:\n%s", rec.Text())
	}
	want := `[{"content":"refund please","role":"user"},{"role":"assistant","toolCalls":[{"arguments":"{\"orderId\":\"A1\"}","id":"call-f1-2","name":"confirm"}]}]`
	if got := msgJSON(c.get("$input.chat")); got != want {
		t.Errorf("chat %s\nwant %s", got, want)
	}
}

const msgSuspendSrc = `wf 1
workflow w {
  conversation = true
  flow {
    set $count = 1
    set $input.keep = "kept"
    wait: suspend {
      merge = {reply: $agent.latestUserMessage.content, input: {turn: 2}}
    }
    emit "resumed" { value = {count: $count, reply: $reply, agent: $agent, input: $input} }
  }
}
`

func TestSuspend(t *testing.T) {
	first := map[string]any{"agent": map[string]any{"old": true, "latestUserMessage": msgUser("u1", "first")}}
	tests := []struct {
		name string
		tn   msgTurn
		want string // the value of the CUSTOM event after the resume
	}{
		{"empty resume keeps the context", msgTurn{},
			`{"agent":{"latestUserMessage":{"content":"first","id":"u1","role":"user"},"old":true},"count":1,"input":{"keep":"kept","turn":2},"reply":"first"}`},
		{"context merge overwrites and adds", msgTurn{Merge: map[string]any{"count": 5, "input": map[string]any{"extra": true}}},
			`{"agent":{"latestUserMessage":{"content":"first","id":"u1","role":"user"},"old":true},"count":5,"input":{"extra":true,"keep":"kept","turn":2},"reply":"first"}`},
		{"an AG-UI turn replaces $agent whole", msgTurn{Agent: agentWith(msgUser("u2", "second"))},
			`{"agent":{"latestUserMessage":{"content":"second","id":"u2","role":"user"},"messages":[{"content":"second","id":"u2","role":"user"}]},"count":1,"input":{"keep":"kept","turn":2},"reply":"second"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newMsgConversation(t, msgSuspendSrc, first)
			o, rec := c.run()
			if o.Status != vm.Suspended || !reflect.DeepEqual(o.Wait, &vm.Wait{Kind: vm.WaitUser}) || len(rec.Events) != 0 {
				t.Fatalf("first run: %s, %d events", msgOutcome(o), len(rec.Events))
			}
			o, rec = c.resume(tt.tn)
			if o.Status != vm.Finished || len(rec.Events) != 1 {
				t.Fatalf("resume: %s\n%s", msgOutcome(o), rec.Text())
			}
			if got := msgJSON(rec.Events[0].Value); got != tt.want {
				t.Errorf("after resume:\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

const msgInterruptSrc = `wf 1
workflow w {
  conversation = true
  flow {
    approve: interrupt {
      reason          = "approval"
      message         = "Refund order A1?"
      tool_call_id    = "call-9"
      response_schema = {type: "object", properties: {approved: {type: "boolean"}}, required: ["approved"]}
      expires         = "1h"
      metadata        = {order: "A1"}
    } -> $decision
    emit "decided" { value = $decision }
  }
}
`

func TestInterrupt(t *testing.T) {
	const id = "int-f1-1"
	resolved := func(payload any) vm.ResumeEntry {
		return vm.ResumeEntry{InterruptID: id, Status: "resolved", Payload: payload}
	}
	tests := []struct {
		name    string
		tn      msgTurn
		result  string // the decision, when the run finishes
		code    string // the error code, when it fails
		message string
	}{
		{name: "resolved", tn: msgTurn{Interrupts: []vm.ResumeEntry{resolved(map[string]any{"approved": true})}},
			result: `{"payload":{"approved":true},"status":"resolved"}`},
		{name: "cancelled without payload", tn: msgTurn{Interrupts: []vm.ResumeEntry{{InterruptID: id, Status: "cancelled"}}},
			result: `{"payload":null,"status":"cancelled"}`},
		{name: "resolved just before expiry", tn: msgTurn{Advance: "1h", Interrupts: []vm.ResumeEntry{resolved(map[string]any{"approved": false})}},
			result: `{"payload":{"approved":false},"status":"resolved"}`},
		{name: "missing entry", tn: msgTurn{Agent: agentWith(msgUser("u1", "hello"))},
			code: vm.ErrResume, message: `interrupt "int-f1-1" (approval) has no resume entry`},
		{name: "unknown id", tn: msgTurn{Interrupts: []vm.ResumeEntry{resolved(nil), {InterruptID: "int-x", Status: "resolved"}}},
			code: vm.ErrResume, message: `resume entry for unknown interrupt "int-x"; open: "int-f1-1"`},
		{name: "answered twice", tn: msgTurn{Interrupts: []vm.ResumeEntry{resolved(map[string]any{"approved": true}), resolved(map[string]any{"approved": true})}},
			code: vm.ErrResume, message: `interrupt "int-f1-1" is answered more than once`},
		{name: "bad status", tn: msgTurn{Interrupts: []vm.ResumeEntry{{InterruptID: id, Status: "done"}}},
			code: vm.ErrResume, message: `interrupt "int-f1-1": status must be "resolved" or "cancelled", found "done"`},
		{name: "expired", tn: msgTurn{Advance: "1h1ms", Interrupts: []vm.ResumeEntry{resolved(map[string]any{"approved": true})}},
			code: vm.ErrResume, message: `interrupt "int-f1-1" expired at 2026-01-02T04:04:05Z and can no longer be resolved: resume it with status "cancelled"`},
		{name: "cancelled after expiry", tn: msgTurn{Advance: "1h1ms", Interrupts: []vm.ResumeEntry{{InterruptID: id, Status: "cancelled"}}},
			result: `{"payload":null,"status":"cancelled"}`},
		{name: "payload fails the schema", tn: msgTurn{Interrupts: []vm.ResumeEntry{resolved(map[string]any{"approved": "yes"})}},
			code: vm.ErrResume, message: `interrupt "int-f1-1": the payload does not match response_schema: at /approved: got string, want boolean`},
		{name: "missing payload fails the schema", tn: msgTurn{Interrupts: []vm.ResumeEntry{resolved(nil)}},
			code: vm.ErrResume, message: `interrupt "int-f1-1": the payload does not match response_schema: at /: got null, want object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newMsgConversation(t, msgInterruptSrc, nil)
			o, rec := c.run()
			want := &vm.Wait{Kind: vm.WaitInterrupt, Interrupts: []vm.Interrupt{{
				ID: id, Reason: "approval", Message: "Refund order A1?", ToolCallID: "call-9",
				ResponseSchema: map[string]any{"type": "object", "properties": map[string]any{"approved": map[string]any{"type": "boolean"}}, "required": []any{"approved"}},
				ExpiresAt:      c.now.Add(time.Hour).UnixMilli(),
				Metadata:       map[string]any{"order": "A1"},
			}}}
			if o.Status != vm.Suspended || !reflect.DeepEqual(o.Wait, want) || len(rec.Events) != 0 {
				t.Fatalf("first run: %s, %d events\nwant wait %s", msgOutcome(o), len(rec.Events), vm.Text(vm.Normalize(want)))
			}
			o, rec = c.resume(tt.tn)
			if tt.code != "" {
				if o.Status != vm.Failed || o.Err.Code != tt.code || o.Err.Message != tt.message || o.Err.NodeID != "approve" {
					t.Fatalf("outcome %s\nwant %s: %s", msgOutcome(o), tt.code, tt.message)
				}
				return
			}
			if o.Status != vm.Finished || len(rec.Events) != 1 {
				t.Fatalf("outcome %s\n%s", msgOutcome(o), rec.Text())
			}
			if got := msgJSON(rec.Events[0].Value); got != tt.result {
				t.Errorf("decision %s, want %s", got, tt.result)
			}
		})
	}
}

func TestInterruptBadSchema(t *testing.T) {
	m := vmtest.Machine(t, `wf 1
workflow w {
  conversation = true
  flow {
    approve: interrupt {
      reason          = "approval"
      response_schema = {type: 12}
    }
  }
}
`, stdlib.Options{})
	_, o, _ := vmtest.Run(t, m, "w", nil)
	if o.Status != vm.Failed || o.Err.Code != vm.ErrNode || !strings.HasPrefix(o.Err.Message, "response_schema is not a valid JSON Schema: ") {
		t.Fatalf("outcome %s", msgOutcome(o))
	}
}

func TestInterruptSchemaLoadsNothing(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.json")
	if err := os.WriteFile(file, []byte(`{"type": "string"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	m := vmtest.Machine(t, `wf 1
workflow w {
  conversation = true
  flow {
    approve: interrupt {
      reason          = "approval"
      response_schema = {"$ref": "file://`+filepath.ToSlash(file)+`"}
    }
  }
}
`, stdlib.Options{})
	_, o, _ := vmtest.Run(t, m, "w", nil)
	if o.Status != vm.Failed || !strings.Contains(o.Err.Message, "may not refer to other documents") {
		t.Fatalf("outcome %s; want a refused load", msgOutcome(o))
	}
}

// TestResumeFromCheckpoint is the property every suspending kind keeps: a
// conversation that suspends, is saved and loaded back, and resumes emits
// exactly what the same conversation resumed in memory emits, and ends
// with the same context. msgConversation.resume checks it on every turn;
// here each kind goes through several turns.
func TestResumeFromCheckpoint(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		turns []msgTurn
	}{
		{"suspend", msgSuspendSrc, []msgTurn{
			{Agent: agentWith(msgUser("u2", "second")), Merge: map[string]any{"count": 2}},
		}},
		{"frontend_tool result", msgFrontendSrc, []msgTurn{
			{Agent: agentWith(msgTool("t1", "call-f1-1", `{"ok":true}`))},
		}},
		{"frontend_tool other", msgFrontendSrc, []msgTurn{
			{Agent: agentWith(msgUser("u2", "no"))},
		}},
		{"interrupt", msgInterruptSrc, []msgTurn{
			{Interrupts: []vm.ResumeEntry{{InterruptID: "int-f1-1", Status: "resolved", Payload: map[string]any{"approved": true, "note": 1.5}}}},
		}},
		{"every kind in a loop", `wf 1
workflow w {
  conversation = true
  flow {
    top: say "turn <<$n ?? 0>>"
    set $n = ($n ?? 0) + 1
    ask: frontend_tool "pick" {
      persist = "call"
      on result { say "picked <<$pick.content>>" }
      on other { say "skipped" }
    } -> $pick
    gate: interrupt { reason = "go" } -> $gate
    wait: suspend
    if $n < 3 { goto top }
    output $input.chat
  }
}
`, []msgTurn{
			{Agent: agentWith(msgTool("t1", "call-f1-2", "a"))},
			{Interrupts: []vm.ResumeEntry{{InterruptID: "int-f1-4", Status: "cancelled"}}},
			{Agent: agentWith(msgUser("u1", "again"))},
			{Agent: agentWith(msgUser("u2", "skip it"))},
			{Interrupts: []vm.ResumeEntry{{InterruptID: "int-f1-8", Status: "resolved", Payload: "ok"}}},
			{Agent: agentWith(msgUser("u3", "again"))},
			{Agent: agentWith(msgTool("t2", "call-f1-10", "b"))},
			{Interrupts: []vm.ResumeEntry{{InterruptID: "int-f1-12", Status: "resolved"}}},
			{Agent: agentWith(msgUser("u4", "last"))},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newMsgConversation(t, tt.src, map[string]any{"agent": agentWith(msgUser("u0", "hi"))})
			o, _ := c.run()
			for i, tn := range tt.turns {
				if o.Status != vm.Suspended {
					t.Fatalf("before turn %d: %s", i+2, msgOutcome(o))
				}
				o, _ = c.resume(tn)
			}
			if o.Status != vm.Finished {
				t.Fatalf("last turn: %s", msgOutcome(o))
			}
		})
	}
}

func BenchmarkSay(b *testing.B) {
	m := vmtest.Machine(b, "wf 1\nworkflow w {\n flow {\n say \"Hello <<$name>>\" -> $r\n }\n}\n", stdlib.Options{})
	f, err := m.NewFrame("w", map[string]any{"name": "Ada"})
	if err != nil {
		b.Fatal(err)
	}
	sink := vm.SinkFunc(func(vm.Event) error { return nil })
	ctx := context.Background()
	for b.Loop() {
		if o := m.Run(ctx, f, nil, vm.Observer{Events: sink}); o.Status != vm.Finished {
			b.Fatal(msgOutcome(o))
		}
	}
}
