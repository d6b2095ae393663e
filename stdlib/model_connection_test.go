package stdlib_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/aguic/aguic/internal/vmtest"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
)

// brokenOnce is a provider whose connection breaks: before anything of
// the answer arrived on its first call, or, when partial, after the first
// chunk; the next call answers.
type brokenOnce struct {
	partial bool
	calls   int
}

func (p *brokenOnce) Stream(ctx context.Context, req *llm.Request, on func(llm.Chunk) error) (*llm.Response, error) {
	p.calls++
	if p.calls == 1 {
		if p.partial {
			if err := on(llm.Chunk{Text: "Hel"}); err != nil {
				return nil, err
			}
		}
		return nil, &llm.ConnectionError{Provider: "test", Err: io.ErrUnexpectedEOF, Broken: true}
	}
	if err := on(llm.Chunk{Text: "Hello"}); err != nil {
		return nil, err
	}
	return &llm.Response{Text: "Hello"}, nil
}

// TestModelBrokenConnection: a connection that breaks before anything of
// the answer was streamed is tried again; one that breaks after the client
// saw part of the answer fails the node, since a second answer would not
// continue the first.
func TestModelBrokenConnection(t *testing.T) {
	for _, c := range []struct {
		partial bool
		status  vm.Status
		calls   int
	}{
		{partial: false, status: vm.Finished, calls: 2},
		{partial: true, status: vm.Failed, calls: 1},
	} {
		synctest.Test(t, func(t *testing.T) {
			p := &brokenOnce{partial: c.partial}
			src := strings.Replace(helloFlow, `prompt = "hello"`, "prompt = \"hello\"\n      retry = 1", 1)
			m := machine(t, src, stdlib.Options{Models: llm.Resolver(map[string]llm.Provider{"test": p}), DefaultModel: "test/x"})
			_, o, _ := vmtest.Run(t, m, "test", nil)
			if o.Status != c.status || p.calls != c.calls {
				t.Errorf("partial %v: outcome %s %v after %d calls, want %s after %d", c.partial, o.Status, o.Err, p.calls, c.status, c.calls)
			}
			if c.partial && (o.Err == nil || !strings.Contains(o.Err.Message, "the connection closed in the middle of the answer")) {
				t.Errorf("error %v, want the broken connection", o.Err)
			}
		})
	}
}
