package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/vm/store"
)

// outage is a store whose database goes away while down is set: every
// call fails with store.ErrUnavailable, as the PostgreSQL store's do.
type outage struct {
	store.Store
	down atomic.Bool
}

func (o *outage) fail(what string) error {
	if o.down.Load() {
		return fmt.Errorf("%s: connection refused: %w", what, store.ErrUnavailable)
	}
	return nil
}

func (o *outage) Acquire(ctx context.Context, k store.Key, owner string, ttl time.Duration) (store.Lease, error) {
	if err := o.fail("acquire"); err != nil {
		return store.Lease{}, err
	}
	return o.Store.Acquire(ctx, k, owner, ttl)
}

func (o *outage) Commit(ctx context.Context, l store.Lease, c store.Commit) (store.Thread, error) {
	if err := o.fail("commit"); err != nil {
		return store.Thread{}, err
	}
	return o.Store.Commit(ctx, l, c)
}

func (o *outage) Thread(ctx context.Context, k store.Key) (store.Thread, error) {
	if err := o.fail("thread"); err != nil {
		return store.Thread{}, err
	}
	return o.Store.Thread(ctx, k)
}

// TestStoreUnavailable: while the store is unavailable, requests are
// answered 503 with Retry-After and the reason, and a run in flight ends
// its stream with RUN_ERROR; once it is back, the server serves again.
func TestStoreUnavailable(t *testing.T) {
	var o *outage
	e := newEnv(t, func(c *server.Config) {
		o = &outage{Store: c.Store}
		c.Store = o
	})
	b := newBlocker(t)
	inFlight := e.post("/agui/workflows/slow", slowBody("r1", b.srv.URL))
	<-b.entered
	o.down.Store(true)

	resp := e.post("/agui/workflows/counter", `{"threadId": "c1", "runId": "r1", "messages": [{"id": "m", "role": "user", "content": "hi"}]}`)
	p := e.problem(resp, http.StatusServiceUnavailable)
	if resp.Header.Get("Retry-After") == "" || !strings.Contains(str(p["detail"]), "the store is unavailable") {
		t.Errorf("503 with Retry-After %q, detail %v", resp.Header.Get("Retry-After"), p["detail"])
	}
	e.problem(e.get("/agui/threads/busy/replay"), http.StatusServiceUnavailable)

	b.release() // the run's next save fails: its stream ends with RUN_ERROR
	evs := e.stream(inFlight)
	if end := last(evs); end["type"] != "RUN_ERROR" || end["code"] != "store_unavailable" {
		t.Errorf("the run in flight ended with %v, want RUN_ERROR store_unavailable", end)
	}

	o.down.Store(false)
	evs = e.stream(e.post("/agui/workflows/counter", `{"threadId": "c1", "runId": "r2", "messages": [{"id": "m", "role": "user", "content": "hi"}]}`))
	if got := text(evs); got != "Turn 1: hi\n" {
		t.Errorf("once the store is back the server answered %q", got)
	}
}
