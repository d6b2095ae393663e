package metrics

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/aguic/aguic/vm/store"
)

// Store returns st with its commits and syncs timed; everything else
// passes through. A nil *Metrics returns st itself.
func (m *Metrics) Store(st store.Store) store.Store {
	if m == nil {
		return st
	}
	return &timedStore{Store: st, m: m}
}

// timedStore is the store Metrics.Store returns.
type timedStore struct {
	store.Store
	m *Metrics
}

// Commit times the store's Commit, by mode.
func (s *timedStore) Commit(ctx context.Context, l store.Lease, c store.Commit) (store.Thread, error) {
	start := time.Now()
	th, err := s.Store.Commit(ctx, l, c)
	mode := "synced"
	if c.Lazy {
		mode = "lazy"
	}
	s.m.commitTime.WithLabelValues(mode).Observe(time.Since(start).Seconds())
	return th, err
}

// Sync times the store's Sync.
func (s *timedStore) Sync(ctx context.Context) error {
	start := time.Now()
	err := s.Store.Sync(ctx)
	s.m.syncTime.Observe(time.Since(start).Seconds())
	return err
}

// The defaults of CountThreads.
const (
	// DefaultThreadsEvery is how long a count of the threads serves the
	// scrapes after it.
	DefaultThreadsEvery = 30 * time.Second
	// threadsTimeout bounds one count, so a scrape never hangs on the
	// store.
	threadsTimeout = 5 * time.Second
)

// CountThreads adds the gauge aguic_threads{status}: the threads of c by
// status, across scopes. The count is taken at a scrape, and serves the
// scrapes of the next interval (DefaultThreadsEvery when every is 0)
// without asking the store again, so however often Prometheus scrapes,
// the store counts at most once an interval. A count that fails is
// logged, and the last one served until one succeeds.
func (m *Metrics) CountThreads(c store.ThreadCounter, every time.Duration, log *slog.Logger) {
	if m == nil {
		return
	}
	if every <= 0 {
		every = DefaultThreadsEvery
	}
	if log == nil {
		log = slog.Default()
	}
	m.reg.MustRegister(&threadsCollector{c: c, every: every, log: log, desc: prometheus.NewDesc(
		namespace+"_threads", "Threads of the store by status (running, suspended, finished, failed, cancelled, queued), across scopes; counted at most once every "+every.String()+".",
		[]string{"status"}, nil)})
}

// threadsCollector is the collector of aguic_threads.
type threadsCollector struct {
	c     store.ThreadCounter
	every time.Duration
	log   *slog.Logger
	desc  *prometheus.Desc

	mu     sync.Mutex
	at     time.Time // when counts was taken; zero before the first
	counts map[store.Status]int
}

// Describe sends the gauge's description.
func (t *threadsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- t.desc }

// Collect sends the counts, counting again when the last count is older
// than the interval. Concurrent scrapes wait for one count.
func (t *threadsCollector) Collect(ch chan<- prometheus.Metric) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.at.IsZero() || time.Since(t.at) >= t.every {
		ctx, cancel := context.WithTimeout(context.Background(), threadsTimeout)
		counts, err := t.c.CountThreads(ctx)
		cancel()
		if err != nil {
			t.log.Error("counting the threads for /metrics failed", "error", err.Error())
		} else {
			t.counts = counts
		}
		// A failed count is tried again an interval later, not at every
		// scrape: a store in trouble is not asked more.
		t.at = time.Now()
	}
	for _, s := range statuses {
		if t.counts == nil {
			return
		}
		ch <- prometheus.MustNewConstMetric(t.desc, prometheus.GaugeValue, float64(t.counts[s]), string(s))
	}
}

// statuses are the statuses aguic_threads reports, each even at 0, so a
// query sees the series from the first scrape on.
var statuses = []store.Status{store.Running, store.Suspended, store.Finished, store.Failed, store.Cancelled, store.Queued}
