package metrics_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/aguic/aguic/metrics"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/badger"
)

// openStore opens an in-memory Badger store, closed when the test ends.
func openStore(t *testing.T) *badger.Store {
	t.Helper()
	st, err := badger.Open(badger.Options{InMemory: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// create makes thread id of st with status, through st (timed by m when
// st is m.Store's).
func create(t *testing.T, st store.Store, id string, status store.Status) {
	t.Helper()
	ctx := context.Background()
	k := store.Key{Scope: "s", Workflow: "w", Thread: id}
	l, err := st.Acquire(ctx, k, "test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Commit(ctx, l, store.Commit{Checkpoint: &store.Thread{Status: status}, Release: true}); err != nil {
		t.Fatal(err)
	}
}

// value is the value (a histogram's count) of family name, with label=want
// when label is not "", in m's registry; -1 when there is none.
func value(t *testing.T, m *metrics.Metrics, name, label, want string) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, mt := range f.Metric {
			if label != "" && !hasLabel(mt, label, want) {
				continue
			}
			switch {
			case mt.Gauge != nil:
				return mt.Gauge.GetValue()
			case mt.Histogram != nil:
				return float64(mt.Histogram.GetSampleCount())
			}
		}
	}
	return -1
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue() == value
		}
	}
	return false
}

// TestThreadsCountedOncePerInterval: aguic_threads counts the store's
// threads at the first scrape, and the scrapes within the interval get
// that count without asking the store again.
func TestThreadsCountedOncePerInterval(t *testing.T) {
	st := openStore(t)
	m := metrics.New()
	m.CountThreads(st, time.Hour, nil)
	create(t, st, "t1", store.Finished)
	create(t, st, "t2", store.Suspended)
	if got := value(t, m, "aguic_threads", "status", "finished"); got != 1 {
		t.Errorf("aguic_threads{finished} = %v, want 1", got)
	}
	if got := value(t, m, "aguic_threads", "status", "running"); got != 0 {
		t.Errorf("aguic_threads{running} = %v, want 0: every status is reported", got)
	}
	create(t, st, "t3", store.Finished)
	if got := value(t, m, "aguic_threads", "status", "finished"); got != 1 {
		t.Errorf("aguic_threads{finished} within the interval = %v, want the first count, 1", got)
	}
}

// TestStoreTimesCommits: the store Store returns times each commit by
// mode, and each sync.
func TestStoreTimesCommits(t *testing.T) {
	m := metrics.New()
	st := m.Store(openStore(t))
	create(t, st, "t1", store.Finished)
	if err := st.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := value(t, m, "aguic_store_commit_duration_seconds", "mode", "synced"); got != 1 {
		t.Errorf("synced commits timed: %v, want 1", got)
	}
	if got := value(t, m, "aguic_store_sync_duration_seconds", "", ""); got != 1 {
		t.Errorf("syncs timed: %v, want 1", got)
	}
}

// TestNilMeasuresNothing: a nil *Metrics hands back what it is given and
// every method does nothing, so callers need no check.
func TestNilMeasuresNothing(t *testing.T) {
	var m *metrics.Metrics
	st := openStore(t)
	if m.Store(st) != store.Store(st) {
		t.Errorf("a nil Metrics wraps the store")
	}
	if m.Models(nil) != nil || m.ToolCall() != nil {
		t.Errorf("a nil Metrics returns a resolver or a tool observer")
	}
	resolve := llm.Resolver(map[string]llm.Provider{})
	if m.Models(resolve) == nil {
		t.Errorf("a nil Metrics drops the resolver")
	}
	m.TurnStarted()
	m.TurnEnded("w", "finished", metrics.OriginRequest, time.Second)
	m.RunEnded("w", "finished")
	m.FirstEvent("w", time.Second)
	m.Recovered("w", "failed")
	m.Claimed(1)
	m.MCPToolCall("w", "ok")
	m.CountThreads(st, 0, nil)
}
