package badger_test

import (
	"testing"

	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/badger"
	"github.com/aguic/aguic/vm/store/storetest"
)

// BenchmarkTurnCommit is the PostgreSQL store's BenchmarkTurnCommit on
// disk, the same commits made the same way (storetest.BenchTurnCommit),
// so that the two compare: synchronous, lazy, and from 8 × GOMAXPROCS
// goroutines at once, whose syncs the store shares.
func BenchmarkTurnCommit(b *testing.B) {
	storetest.BenchTurnCommit(b, func(b *testing.B) store.Store {
		s, err := badger.Open(badger.Options{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}
