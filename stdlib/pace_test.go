package stdlib_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aguic/aguic/internal/vmtest"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/badger"
)

// TestPace runs paced nodes in a synctest bubble, where the pauses take no
// real time but the clock moves by exactly their sum: each node streams
// its pieces with the pace between two of them.
func TestPace(t *testing.T) {
	tests := []struct {
		name   string
		wf     string // a conversation workflow "w"
		script string // the scripted model's replies
		want   string // the events, one a line
		took   time.Duration
	}{
		{
			name: "say streams word by word",
			wf:   `say "counting down: 3 2 1 ✓" { pace = "300ms" }`,
			want: `TEXT_MESSAGE_START msg=msg-f1-1 role=assistant
TEXT_MESSAGE_CONTENT msg=msg-f1-1 delta="counting"
TEXT_MESSAGE_CONTENT msg=msg-f1-1 delta=" down:"
TEXT_MESSAGE_CONTENT msg=msg-f1-1 delta=" 3"
TEXT_MESSAGE_CONTENT msg=msg-f1-1 delta=" 2"
TEXT_MESSAGE_CONTENT msg=msg-f1-1 delta=" 1"
TEXT_MESSAGE_CONTENT msg=msg-f1-1 delta=" ✓"
TEXT_MESSAGE_END msg=msg-f1-1`,
			took: 5 * 300 * time.Millisecond,
		},
		{
			name: "a silent say is not paced, an empty one sends no content",
			wf: `say "stored only" { pace = "1s"; silent = true }
			     say "" { pace = "1s" }
			     say "one" { pace = "1s" }`,
			want: `TEXT_MESSAGE_START msg=msg-f1-1 role=assistant silent
TEXT_MESSAGE_CONTENT msg=msg-f1-1 delta="stored only" silent
TEXT_MESSAGE_END msg=msg-f1-1 silent
TEXT_MESSAGE_START msg=msg-f1-2 role=assistant
TEXT_MESSAGE_END msg=msg-f1-2
TEXT_MESSAGE_START msg=msg-f1-3 role=assistant
TEXT_MESSAGE_CONTENT msg=msg-f1-3 delta="one"
TEXT_MESSAGE_END msg=msg-f1-3`,
		},
		{
			name: "tool arguments stream in pieces after the PredictState event",
			wf: `backend_tool "write_document" {
			       args    = {document: "Once upon a time", title: "Tale"}
			       result  = "written"
			       pace    = "200ms"
			       predict = {document: "document", heading: "title"}
			       persist = "none"
			     }`,
			want: `CUSTOM call=call-f1-1 name=PredictState value=[{"state_key":"document","tool":"write_document","tool_argument":"document"},{"state_key":"heading","tool":"write_document","tool_argument":"title"}]
TOOL_CALL_START call=call-f1-1 tool=write_document
TOOL_CALL_ARGS delta="{\"document\":\"Once" call=call-f1-1
TOOL_CALL_ARGS delta=" upon" call=call-f1-1
TOOL_CALL_ARGS delta=" a" call=call-f1-1
TOOL_CALL_ARGS delta=" time\",\"title\":\"Tale\"}" call=call-f1-1
TOOL_CALL_END call=call-f1-1
TOOL_CALL_RESULT msg=tool:call-f1-1 call=call-f1-1 content="written"`,
			took: 3 * 200 * time.Millisecond,
		},
		{
			name: "a frontend tool predicts without a pace: one delta",
			wf: `ask: frontend_tool "write_document" {
			       args    = {document: "Draft"}
			       predict = {document: "document"}
			       on result { end }
			       on other { end }
			     }`,
			want: `CUSTOM call=call-f1-1 name=PredictState value=[{"state_key":"document","tool":"write_document","tool_argument":"document"}]
TOOL_CALL_START call=call-f1-1 tool=write_document
TOOL_CALL_ARGS delta="{\"document\":\"Draft\"}" call=call-f1-1
TOOL_CALL_END call=call-f1-1`,
		},
		{
			name: "a model's chunks are paced, and its calls of a predicted tool announced",
			wf: `ask: model {
			       prompt  = "write"
			       tools   = [$agent.tools]
			       pace    = "50ms"
			       predict = {document: "write_document.document"}
			       user_event = false
			     }`,
			script: "reply\ntext: Here it is.\ntool: write_document c1 {\"document\": \"Once upon a time\"}\n",
			want: `TEXT_MESSAGE_START msg=msg-f1-1 role=assistant
TEXT_MESSAGE_CONTENT msg=msg-f1-1 delta="Here"
TEXT_MESSAGE_CONTENT msg=msg-f1-1 delta=" it"
TEXT_MESSAGE_CONTENT msg=msg-f1-1 delta=" is."
TEXT_MESSAGE_END msg=msg-f1-1
CUSTOM call=c1 name=PredictState value=[{"state_key":"document","tool":"write_document","tool_argument":"document"}]
TOOL_CALL_START call=c1 tool=write_document
TOOL_CALL_ARGS delta="{\"document\":\"Onc" call=c1
TOOL_CALL_ARGS delta="e upon a time\"}" call=c1
TOOL_CALL_END call=c1
USAGE name=script/default value={"inputTokens":1,"outputTokens":8}`,
			took: 4 * 50 * time.Millisecond,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := vmtest.Machine(t, paceWorkflow(tt.wf), scriptOptions(t, tt.script))
				agent := map[string]any{"tools": []any{map[string]any{"name": "write_document", "parameters": map[string]any{"type": "object"}}}}
				start := time.Now()
				_, o, rec := vmtest.Run(t, m, "w", map[string]any{"agent": agent})
				if o.Status == vm.Failed {
					t.Fatalf("the run failed: %v", o.Err)
				}
				if got := strings.TrimSpace(rec.Text()); got != tt.want {
					t.Errorf("events:\n%s\nwant:\n%s", got, tt.want)
				}
				if took := time.Since(start); took != tt.took {
					t.Errorf("took %v, want %v", took, tt.took)
				}
			})
		})
	}
}

// TestPaceCancelled: a run cancelled while a node pauses between pieces
// stops waiting at once, ends cancelled, and what the node opened is
// closed.
func TestPaceCancelled(t *testing.T) {
	for _, flow := range []string{
		`say "one two three" { pace = "1h" }`,
		`backend_tool "write" { args = {text: "one two three"}; result = "ok"; pace = "1h" }`,
	} {
		synctest.Test(t, func(t *testing.T) {
			m := vmtest.Machine(t, paceWorkflow(flow), stdlib.Options{})
			f, err := m.NewFrame("w", nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			rec := &vmtest.Recorder{}
			start := time.Now()
			sink := vm.SinkFunc(func(e vm.Event) error {
				if e.Type == vm.TextContent || e.Type == vm.ToolCallArgs {
					cancel() // at the first piece: the pause before the second is cut short
				}
				return rec.Emit(e)
			})
			o := m.Run(ctx, f, nil, vm.Observer{Events: sink})
			if o.Status != vm.Cancelled {
				t.Fatalf("%s: outcome %+v, want cancelled", flow, o)
			}
			if took := time.Since(start); took != 0 {
				t.Errorf("%s: took %v after the cancel, want no wait", flow, took)
			}
			types := rec.Types()
			if last := types[len(types)-1]; last != vm.TextEnd && last != vm.ToolCallEnd {
				t.Errorf("%s: the stream ends with %s, want what the node opened closed:\n%s", flow, last, rec.Text())
			}
		})
	}
}

// TestPaceHoldsNothing: a node pausing between pieces holds no lock of the
// run: its pieces so far are out to the live audience, the turn is made
// durable beside it (as a server does when a turn takes long), and a
// cancel ends it.
func TestPaceHoldsNothing(t *testing.T) {
	m := vmtest.Machine(t, paceWorkflow(`say "one two" { pace = "1h" }`), stdlib.Options{})
	st, err := badger.Open(badger.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	first := make(chan struct{})
	durable := make(chan struct{})
	turn, err := store.Begin(context.Background(), st, store.Request{
		Key: store.Key{Workflow: "w", Thread: "t"}, Owner: "o", TTL: time.Minute, RunID: "r",
		Machine: m, Resume: &vm.Resume{}, OnDurable: func() { close(durable) },
		Live: store.Live{Events: func(_ uint64, e vm.Event) error {
			if e.Type == vm.TextContent && e.Delta == "one" {
				close(first)
			}
			return nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan vm.Outcome)
	go func() {
		o, _, _ := turn.Run(ctx)
		ended <- o
	}()
	<-first // the run now waits an hour before "two"
	if err := turn.Sync(); err != nil {
		t.Fatal(err)
	}
	<-durable
	cancel()
	if o := <-ended; o.Status != vm.Cancelled {
		t.Errorf("outcome %+v, want cancelled", o)
	}
}

// paceWorkflow wraps flow statements into a conversation workflow "w".
func paceWorkflow(flow string) string {
	return "wf 1\nworkflow w {\n  conversation = true\n  flow {\n" + flow + "\n  }\n}\n"
}

// scriptOptions answers model calls from script, as the default model
// "script/default"; no model when script is empty.
func scriptOptions(t *testing.T, script string) stdlib.Options {
	t.Helper()
	if script == "" {
		return stdlib.Options{}
	}
	s, err := llm.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	return stdlib.Options{Models: llm.Resolver(map[string]llm.Provider{"script": s}), DefaultModel: "script/default"}
}

// TestPredictComputedArgs: arguments that only the run knows are checked
// when the node runs: a predicted argument the call lacks fails the node
// before anything is sent.
func TestPredictComputedArgs(t *testing.T) {
	m := vmtest.Machine(t, paceWorkflow(`backend_tool "write" { args = $agent.state; result = "ok"; predict = {document: "document"} }`), stdlib.Options{})
	for _, tc := range []struct {
		state   map[string]any
		wantErr string
		want    string
	}{
		{state: map[string]any{"document": "x"}, want: `CUSTOM call=call-f1-1 name=PredictState value=[{"state_key":"document","tool":"write","tool_argument":"document"}]`},
		{state: map[string]any{"text": "x"}, wantErr: `predict: the call of "write" has no argument "document" to predict the state key "document" from`},
	} {
		_, o, rec := vmtest.Run(t, m, "w", map[string]any{"agent": map[string]any{"state": tc.state}})
		if tc.wantErr != "" {
			if o.Status != vm.Failed || o.Err.Code != vm.ErrNode || !strings.Contains(o.Err.Message, tc.wantErr) {
				t.Errorf("state %v: outcome %+v %v, want the error %q", tc.state, o, o.Err, tc.wantErr)
			}
			if len(rec.Events) != 0 {
				t.Errorf("state %v: sent %s", tc.state, rec.Text())
			}
			continue
		}
		if o.Status != vm.Finished || !strings.HasPrefix(rec.Text(), tc.want+"\n") {
			t.Errorf("state %v: outcome %+v, events:\n%s", tc.state, o, rec.Text())
		}
	}
}

// TestPredictHiddenWithItsCall: a frontend_tool call the user abandons is
// hidden from replay, and so is the PredictState event that announced it.
func TestPredictHiddenWithItsCall(t *testing.T) {
	m := vmtest.Machine(t, paceWorkflow(`ask: frontend_tool "write_document" {
	  args    = {document: "Draft"}
	  predict = {document: "document"}
	  on result { say "kept" }
	  on other { say "dropped" }
	}`), stdlib.Options{})
	st, err := badger.Open(badger.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key := store.Key{Workflow: "w", Thread: "t"}
	for i, resume := range []*vm.Resume{{}, {Agent: map[string]any{"messages": []any{map[string]any{"id": "m1", "role": "user", "content": "something else"}}}}} {
		if _, _, err := store.Execute(context.Background(), st, store.Request{
			Key: key, Owner: "o", TTL: time.Minute, RunID: fmt.Sprint("r", i), Machine: m, Resume: resume,
		}); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := st.Events(context.Background(), key, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var replayed []string
	for _, e := range evs {
		if !e.Hidden {
			var ev vm.Event
			if err := json.Unmarshal(e.Data, &ev); err != nil {
				t.Fatal(err)
			}
			replayed = append(replayed, string(ev.Type)+" "+ev.Name+ev.Delta)
		}
	}
	want := []string{"TEXT_MESSAGE_START ", "TEXT_MESSAGE_CONTENT dropped", "TEXT_MESSAGE_END "}
	if !slices.Equal(replayed, want) {
		t.Errorf("replayed %q, want %q", replayed, want)
	}
}
