package stdlib

import (
	"context"
	"time"

	"github.com/aguic/aguic/vm"
)

// paceKey declares the pace key of a kind that streams; what says what
// the node streams in pieces and how it splits it.
func paceKey(what string) vm.KeySpec {
	return vm.KeySpec{Name: "pace", Type: vm.TypeDuration,
		Doc: "A pause between two pieces the node streams, such as \"40ms\", for demos and tests: " + what + ". A cancelled run stops waiting at once."}
}

// pacer spaces out the pieces a node streams: it waits its pace before
// every piece but the first. A pacer with no pace never waits.
type pacer struct {
	every time.Duration
	begun bool
}

// newPacer reads the node's pace key.
func newPacer(c *vm.Call) (*pacer, error) {
	p := &pacer{}
	if err := c.UnpackKeys("pace", &p.every); err != nil {
		return nil, err
	}
	return p, nil
}

// on reports whether the node streams in paced pieces.
func (p *pacer) on() bool { return p != nil && p.every > 0 }

// next waits before a piece: not before the first, then the pace each
// time. It holds no lock and gives up with ctx's error once ctx is done,
// so a cancelled run stops waiting at once.
func (p *pacer) next(ctx context.Context) error {
	if !p.on() {
		return nil
	}
	if !p.begun {
		p.begun = true
		return ctx.Err()
	}
	return sleepCtx(ctx, p.every)
}
