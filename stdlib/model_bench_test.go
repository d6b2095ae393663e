package stdlib_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aguic/aguic/internal/vmtest"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/badger"
)

// committed is a Store that counts the bytes its commits carry: the
// frames and deltas, and the events.
type committed struct {
	store.Store
	bytes atomic.Int64
}

func (c *committed) Commit(ctx context.Context, l store.Lease, cm store.Commit) (store.Thread, error) {
	n := len(cm.Delta)
	for _, e := range cm.Events {
		n += len(e.Data)
	}
	if cp := cm.Checkpoint; cp != nil {
		n += len(cp.Frame)
	}
	c.bytes.Add(int64(n))
	return c.Store.Commit(ctx, l, cm)
}

// toolTurnProgram is a conversation whose every turn is a model node that
// calls one backend tool (an HTTP request) once, then answers, after a
// history of the size the first turn sets.
const toolTurnProgram = `wf 1

workflow chat {
  conversation = true

  tool fetch {
    description = "Fetch the weather"
    http GET "<<$input.url>>/weather"
  }

  flow {
    top: model {
      prompt  = "<<$agent.said>>"
      chat_in = $input.history
      tools   = [fetch]
    } -> $reply
    wait: suspend
    goto top
  }
}
`

// BenchmarkModelToolTurn runs turns of a conversation whose model node
// makes one round of one backend tool call (an HTTP GET to a local
// server) and then answers, kept in a Badger store as the server keeps
// them (store.Execute, the frame the last turn left kept in memory),
// after 10 and after 1,000 messages of history in chat_in. In memory the
// time is the CPU's; on disk it adds the two syncs of each turn. It
// reports the bytes each turn commits besides the time.
func BenchmarkModelToolTurn(b *testing.B) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"temp": 18.4, "sky": "clear"}`))
	}))
	b.Cleanup(api.Close)
	for _, where := range []string{"memory", "disk"} {
		for _, history := range []int{10, 1000} {
			b.Run(fmt.Sprintf("%s/history=%d", where, history), func(b *testing.B) {
				opts := badger.Options{InMemory: true}
				if where == "disk" {
					opts = badger.Options{Dir: b.TempDir()}
				}
				benchToolTurns(b, api.URL, opts, history)
			})
		}
	}
}

// benchToolTurns runs the turns of BenchmarkModelToolTurn on a store
// opened with opts, after history messages.
func benchToolTurns(b *testing.B, url string, opts badger.Options, history int) {
	script, err := llm.ParseScript([]byte("reply repeat after user\ntool: fetch {}\n\nreply repeat after tool\ntext: It is clear and 18 degrees.\n"))
	if err != nil {
		b.Fatal(err)
	}
	m := vmtest.Machine(b, toolTurnProgram, stdlib.Options{
		Models:       llm.Resolver(map[string]llm.Provider{"script": script}),
		DefaultModel: "script/default",
	})
	db, err := badger.Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	st := &committed{Store: db}
	frames := store.NewFrames(64 << 20)
	var chat []any
	for i := range history {
		role := []string{"user", "assistant"}[i%2]
		chat = append(chat, map[string]any{"role": role, "content": fmt.Sprintf("message %d of the history, about as long as a short message of a chat is", i)})
	}
	k := store.Key{Scope: "s", Workflow: "chat", Thread: "t"}
	run := 0
	turn := func() {
		run++
		o, _, err := store.Execute(b.Context(), st, store.Request{
			Key: k, Owner: "bench", RunID: fmt.Sprint("run-", run), Machine: m, Frames: frames,
			Context: map[string]any{"input": map[string]any{"url": url, "history": chat}},
			Resume:  &vm.Resume{Agent: map[string]any{"said": fmt.Sprintf("What is the weather, take %d?", run)}},
			Load:    func(context.Context, string) (*vm.Machine, error) { return m, nil },
		})
		if err != nil {
			b.Fatal(err)
		}
		if o.Status != vm.Suspended {
			b.Fatalf("turn %d: %s %v", run, o.Status, o.Err)
		}
	}
	turn() // the history is written with the thread's first frame
	before := st.bytes.Load()
	for b.Loop() {
		turn()
	}
	b.ReportMetric(float64(st.bytes.Load()-before)/float64(b.N), "bytes/turn")
}
