package syncbuf_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/aguic/aguic/internal/syncbuf"
)

// TestConcurrentWrites: writers and a reader at once (go test -race), and
// every write is kept.
func TestConcurrentWrites(t *testing.T) {
	var b syncbuf.Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("ab"))
				_ = b.Len()
			}
		})
	}
	wg.Wait()
	if b.Len() != 1600 || b.String() != strings.Repeat("ab", 800) {
		t.Errorf("got %d bytes", b.Len())
	}
}
