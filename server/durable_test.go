package server_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/vm/store"
)

// syncGate is a store whose syncs, and commits that sync, wait until the
// gate opens: until then nothing a turn wrote is durable.
type syncGate struct {
	store.Store
	gate chan struct{}
}

func (g *syncGate) Commit(ctx context.Context, l store.Lease, c store.Commit) (store.Thread, error) {
	if !c.Lazy {
		<-g.gate
	}
	return g.Store.Commit(ctx, l, c)
}

func (g *syncGate) Sync(ctx context.Context) error {
	<-g.gate
	return g.Store.Sync(ctx)
}

// TestNothingBeforeTheTurnIsDurable: the client hears nothing of a turn,
// not even the response's headers, before the turn's input is durable.
func TestNothingBeforeTheTurnIsDurable(t *testing.T) {
	gate := make(chan struct{})
	e := newEnv(t, func(c *server.Config) { c.Store = &syncGate{Store: c.Store, gate: gate} })
	open := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(open) // before the server shuts down
	answered := make(chan *http.Response, 1)
	go func() {
		answered <- e.post("/agui/workflows/echo", `{"threadId": "t", "runId": "r", "messages": [{"id": "m", "role": "user", "content": "yo"}]}`)
	}()
	select {
	case resp := <-answered:
		resp.Body.Close()
		t.Fatalf("the client was answered (%s) before the turn was durable", resp.Status)
	case <-time.After(200 * time.Millisecond):
	}
	open()
	evs := e.stream(<-answered)
	if got := text(evs); !strings.HasPrefix(got, "You said yo") {
		t.Errorf("text %q", got)
	}
	if o := outcome(t, evs); o["type"] != "success" {
		t.Errorf("outcome %v", o)
	}
}
