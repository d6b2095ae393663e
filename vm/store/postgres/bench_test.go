package postgres_test

import (
	"testing"

	"github.com/aguic/aguic/internal/pgtest"
	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/storetest"
)

// BenchmarkStore runs the suite's benchmarks: 100 events of 200 bytes per
// commit, a 4 KiB checkpoint, the last 100 of 100,000 events.
func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store { return open(b, pgtest.Schema(b)) })
}

// BenchmarkTurnCommit measures the commit that ends a turn, as the
// embedded store's benchmark of the name does (storetest.BenchTurnCommit):
// synchronous, lazy, and from 8 × GOMAXPROCS goroutines at once, whose
// flushes PostgreSQL shares.
func BenchmarkTurnCommit(b *testing.B) {
	storetest.BenchTurnCommit(b, func(b *testing.B) store.Store { return open(b, pgtest.Schema(b)) })
}
