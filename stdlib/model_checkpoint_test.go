package stdlib_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aguic/aguic/internal/vmtest"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
)

// modelCrashFlow is a model node with three backend tools, each an HTTP
// request to the test's server, and the client's frontend tools, after a
// history (modelCrashChat).
const modelCrashFlow = `wf 1

workflow w {
  conversation = true

  tool charge {
    description = "Charge the card for an order"
    http POST "<<$input.url>>/charge/<<$args.order>>"
  }

  tool ship {
    description = "Ship an order"
    http POST "<<$input.url>>/ship/<<$args.order>>"
  }

  tool notify {
    description = "Tell the customer"
    http POST "<<$input.url>>/notify/<<$args.order>>"
  }

  flow {
    answer: model {
      prompt   = "Buy order A-1."
      tools    = [charge, ship, notify, $agent.tools]
      chat_in  = $input.chat
      chat_out = $input.chat
    } -> $reply
    output $reply
  }
}
`

// modelCrashChat is the history of the scenarios: a tool call in it that
// got no result is given one.
func modelCrashChat() []any {
	return []any{
		map[string]any{"role": "user", "content": "Hello."},
		map[string]any{"role": "assistant", "toolCalls": []any{map[string]any{"id": "old_1", "name": "charge", "arguments": `{"order": "Z-9"}`}}},
		map[string]any{"role": "user", "content": "Never mind."},
		map[string]any{"role": "assistant", "content": "What can I do?"},
	}
}

// modelCrashTools are the client's tools of the scenarios.
var modelCrashTools = []any{map[string]any{"name": "confirm", "description": "Ask the user to confirm", "parameters": map[string]any{"type": "object"}}}

// modelCrashScenario is a conversation of modelCrashFlow: the script of
// its model (whose replies a fresh script, as a restarted process has,
// picks again by the tool results the request ends with), and the tool
// results of the client's turns after the first.
type modelCrashScenario struct {
	name   string
	script string
	turns  []map[string]any // each turn's $agent
	// omitted is, for each checkpoint inside the model node, how many
	// messages of chat_in its saved conversation leaves out, for the
	// frame holds them: all of them, but after a resume, which may
	// bring another $agent.
	omitted []int
}

var modelCrashScenarios = []modelCrashScenario{
	{
		name: "two rounds",
		script: `reply after user
tool: charge call_a {"order": "A-1"}
tool: ship call_b {"order": "A-1"}

reply after tool result "/ship/"
tool: notify call_c {"order": "A-1"}

reply after tool result "/notify/"
text: Charged, shipped and told.
`,
		omitted: []int{5, 5, 5},
	},
	{
		name: "a frontend tool beside",
		script: `reply after user
tool: confirm call_f {"order": "A-1"}
tool: charge call_a {"order": "A-1"}

reply after tool result "yes"
tool: ship call_b {"order": "A-1"}

reply after tool result "/ship/"
text: Confirmed, charged and shipped.
`,
		turns: []map[string]any{{
			"tools":    modelCrashTools,
			"messages": []any{map[string]any{"id": "t1", "role": "tool", "toolCallId": "call_f", "content": "yes"}},
		}},
		omitted: []int{5, 0},
	},
}

// modelCrashSaver is a Saver that counts the checkpoints taken inside the
// model node (those whose frame holds its conversation, running) and, at
// the one numbered at, keeps the frame it saves and fails, as a process
// that dies right after that commit: the run stops there.
type modelCrashSaver struct {
	rec     *vmtest.Recorder
	at      int    // the checkpoint to crash after, from 1; 0 for none
	n       int    // the checkpoints inside the node so far
	omitted []int  // the messages of chat_in each leaves out
	frame   []byte // the frame saved at the crash
	events  int    // how many events the run emitted before it
}

func (s *modelCrashSaver) Effect() error { return nil }

func (s *modelCrashSaver) Checkpoint(f *vm.Frame) error {
	st, _ := f.State[f.Node].(map[string]any)
	if st["running"] != true {
		return nil
	}
	s.n++
	omitted, _ := st["omitted"].(int)
	s.omitted = append(s.omitted, omitted)
	if s.n != s.at {
		return nil
	}
	data, err := f.Marshal()
	if err != nil {
		return err
	}
	s.frame, s.events, s.at = data, len(s.rec.Events), 0
	return fmt.Errorf("the process died")
}

// modelCrashPlay is what a conversation of a scenario did.
type modelCrashPlay struct {
	events  string         // every turn's events, as a store keeps them
	outcome string         // the last turn's, or the failure that ended the play
	context string         // the server's URL written <url>
	omitted []int          // the messages of chat_in each checkpoint left out
	calls   map[string]int // the HTTP requests of each path
}

// playModelCrash plays a scenario, crashing after the checkpoint at inside
// the model node (0: never). The crashed run's events are those it
// emitted before that checkpoint; a new machine and script, as a new
// process has, run the saved frame on (after tamper, when not nil, changed
// it) as recovery does, with no resume, and the conversation goes on
// there. A turn that fails ends the play.
func playModelCrash(t *testing.T, sc modelCrashScenario, at int, tamper func(*vm.Frame)) modelCrashPlay {
	t.Helper()
	var mu sync.Mutex
	p := modelCrashPlay{calls: map[string]int{}}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		p.calls[r.URL.Path]++
		mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "ok %s", r.URL.Path)
	}))
	defer api.Close()
	process := func() *vm.Machine {
		script, err := llm.ParseScript([]byte(sc.script))
		if err != nil {
			t.Fatal(err)
		}
		m := vmtest.Machine(t, modelCrashFlow, stdlib.Options{
			Models:       llm.Resolver(map[string]llm.Provider{"script": script}),
			DefaultModel: "script/default",
		})
		m.Deadline = time.Minute // a guard: a test that would wait longer fails
		return m
	}
	m := process()
	f, err := m.NewFrame("w", map[string]any{
		"agent": map[string]any{"tools": modelCrashTools},
		"input": map[string]any{"url": api.URL, "chat": modelCrashChat()},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &modelCrashSaver{at: at}
	var events strings.Builder
	var o vm.Outcome
	for i := 0; i <= len(sc.turns); i++ {
		var resume *vm.Resume
		if i > 0 {
			agent := sc.turns[i-1]
			resume = &vm.Resume{Agent: agent, ToolResults: vm.ToolResults(agent)}
		}
		s.rec = &vmtest.Recorder{}
		o = m.Run(t.Context(), f, resume, vm.Observer{Events: s.rec, Saver: s})
		kept := s.rec.Events
		if s.frame != nil {
			if o.Status != vm.Failed {
				t.Fatalf("turn %d: the run went on after the crash: %s", i+1, o.Status)
			}
			kept = kept[:s.events]
			if f, err = vm.UnmarshalFrame(s.frame); err != nil {
				t.Fatal(err)
			}
			if tamper != nil {
				tamper(f)
			}
			s.frame = nil
			m = process()
			s.rec = &vmtest.Recorder{}
			o = m.Run(t.Context(), f, nil, vm.Observer{Events: s.rec, Saver: s})
			kept = append(kept, s.rec.Events...)
		}
		fmt.Fprintf(&events, "## turn %d\n", i+1)
		for _, e := range kept {
			events.WriteString(vmtest.Format(e) + "\n")
		}
		if o.Status == vm.Failed {
			p.outcome = fmt.Sprintf("turn %d failed: %s", i+1, o.Err.Message)
			return p
		}
	}
	p.events, p.outcome, p.context, p.omitted = events.String(), fmt.Sprintf("%s %s", o.Status, vm.Text(o.Result)), strings.ReplaceAll(vm.Text(f.Context), api.URL, "<url>"), s.omitted
	if st := f.State["answer"]; st != nil {
		t.Errorf("the model node's state is left in the frame: %s", vm.Text(st))
	}
	return p
}

// TestModelToolCallsSurviveACrash: a model node checkpoints after each
// backend tool call. A run that crashes right after any of those
// checkpoints and is run on from the saved frame, with no resume, by a
// new process, calls every tool exactly once, keeps the events the same
// conversation keeps without the crash, and ends the same way. The
// frontend tools the node waits for stay waited for.
func TestModelToolCallsSurviveACrash(t *testing.T) {
	for _, sc := range modelCrashScenarios {
		t.Run(sc.name, func(t *testing.T) {
			want := playModelCrash(t, sc, 0, nil)
			if fmt.Sprint(want.omitted) != fmt.Sprint(sc.omitted) {
				t.Fatalf("the checkpoints inside the model node left out %v messages of chat_in, want %v", want.omitted, sc.omitted)
			}
			for path, n := range want.calls {
				if n != 1 {
					t.Fatalf("without a crash, %s was called %d times", path, n)
				}
			}
			for at := 1; at <= len(sc.omitted); at++ {
				t.Run(fmt.Sprintf("crash after checkpoint %d", at), func(t *testing.T) {
					got := playModelCrash(t, sc, at, nil)
					if fmt.Sprint(got.calls) != fmt.Sprint(want.calls) {
						t.Errorf("the tools' requests %v, want each once: %v", got.calls, want.calls)
					}
					if got.events != want.events {
						t.Errorf("the events\n%s\nwant those without the crash\n%s", got.events, want.events)
					}
					if got.outcome != want.outcome || got.context != want.context {
						t.Errorf("the conversation ended %s with\n%s\nwant %s with\n%s", got.outcome, got.context, want.outcome, want.context)
					}
				})
			}
		})
	}
}

// TestModelChatInChangedSinceTheCheckpoint: the saved conversation of a
// node whose chat_in reads a path leaves the history out, and a run
// recovered from it reads it again from the frame; should the frame hold
// another history, the node fails rather than go on with a conversation
// the model never had.
func TestModelChatInChangedSinceTheCheckpoint(t *testing.T) {
	got := playModelCrash(t, modelCrashScenarios[0], 1, func(f *vm.Frame) {
		f.Context["input"].(map[string]any)["chat"] = []any{map[string]any{"role": "user", "content": "Another story."}}
	})
	if want := "turn 1 failed: the model node's chat_in is not what it was when its conversation was saved"; got.outcome != want {
		t.Errorf("the recovered run ended %q, want %q", got.outcome, want)
	}
}

// TestModelStartsAfreshAfterAFailure: a model node that failed after a
// checkpoint and whose error was caught leaves no conversation behind: its
// next visit starts from its prompt.
func TestModelStartsAfreshAfterAFailure(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "ok %s", r.URL.Path)
	}))
	defer api.Close()
	script, err := llm.ParseScript([]byte(`reply repeat after user
tool: charge {"order": "A-1"}

reply repeat after tool
tool: charge {"order": "A-1"}
`))
	if err != nil {
		t.Fatal(err)
	}
	m := vmtest.Machine(t, `wf 1

workflow w {
  tool charge {
    description = "Charge the card for an order"
    http POST "<<$input.url>>/charge/<<$args.order>>"
  }

  flow {
    for i in [1, 2] {
      try {
        answer: model {
          prompt          = "Buy order A-1."
          tools           = [charge]
          max_tool_rounds = 1
        }
      } catch e {
        say "<<e.message>>"
      }
    }
  }
}
`, stdlib.Options{
		Models:       llm.Resolver(map[string]llm.Provider{"script": script}),
		DefaultModel: "script/default",
	})
	m.Deadline = time.Minute
	f, err := m.NewFrame("w", map[string]any{"input": map[string]any{"url": api.URL}})
	if err != nil {
		t.Fatal(err)
	}
	f.Track()
	s := &modelCrashSaver{rec: &vmtest.Recorder{}}
	o := m.Run(t.Context(), f, nil, vm.Observer{Events: s.rec, Saver: s})
	if o.Status != vm.Finished {
		t.Fatalf("outcome %s: %v", o.Status, o.Err)
	}
	if s.n != 2 {
		t.Errorf("%d checkpoints inside the node, want one a visit", s.n)
	}
	reqs := script.Requests()
	if len(reqs) != 4 || len(reqs[2].Messages) != 1 {
		t.Fatalf("%d requests; the second visit's first has %d messages, want only the prompt", len(reqs), len(reqs[2].Messages))
	}
	if st := f.State["answer"]; st != nil {
		t.Errorf("the model node's state is left in the frame: %s", vm.Text(st))
	}
}
