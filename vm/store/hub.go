package store

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// Hub is what a Store needs to implement Watch, Cancel, OnCancel and
// TakeTask within one process: a store that one process owns uses it
// alone; a store that several processes share passes what it hears from
// the others to its Hub. The zero Hub is ready to use.
type Hub struct {
	mu       sync.Mutex
	watchers map[Key]map[*watcher]struct{}
	handlers map[*cancelHandler]struct{}
	tasks    map[string]time.Time // when each task was last taken
}

type watcher struct{ ch chan struct{} }

type cancelHandler struct{ f func(Key, string) }

// Watch is Store.Watch.
func (h *Hub) Watch(key Key) (<-chan struct{}, func()) {
	w := &watcher{ch: make(chan struct{}, 1)}
	h.mu.Lock()
	if h.watchers == nil {
		h.watchers = map[Key]map[*watcher]struct{}{}
	}
	set := h.watchers[key]
	if set == nil {
		set = map[*watcher]struct{}{}
		h.watchers[key] = set
	}
	set[w] = struct{}{}
	h.mu.Unlock()
	var once sync.Once
	return w.ch, func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if set := h.watchers[key]; set != nil {
				delete(set, w)
				if len(set) == 0 {
					delete(h.watchers, key)
				}
			}
		})
	}
}

// Watched reports whether anyone in this process watches key.
func (h *Hub) Watched(key Key) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.watchers[key]) > 0
}

// Changed wakes the watchers of key.
func (h *Hub) Changed(key Key) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.watchers[key] {
		w.wake()
	}
}

// ChangedAll wakes every watcher: the store may have missed changes.
func (h *Hub) ChangedAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, set := range h.watchers {
		for w := range set {
			w.wake()
		}
	}
}

func (w *watcher) wake() {
	select {
	case w.ch <- struct{}{}:
	default: // a wake is pending already
	}
}

// OnCancel is Store.OnCancel.
func (h *Hub) OnCancel(f func(Key, string)) func() {
	c := &cancelHandler{f: f}
	h.mu.Lock()
	if h.handlers == nil {
		h.handlers = map[*cancelHandler]struct{}{}
	}
	h.handlers[c] = struct{}{}
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.handlers, c)
	}
}

// Cancelled calls every cancel handler with key and runID.
func (h *Hub) Cancelled(key Key, runID string) {
	h.mu.Lock()
	fs := make([]func(Key, string), 0, len(h.handlers))
	for c := range h.handlers {
		fs = append(fs, c.f)
	}
	h.mu.Unlock()
	for _, f := range fs {
		f(key, runID)
	}
}

// TakeTask is Store.TakeTask for the callers of one process, at time now.
func (h *Hub) TakeTask(task string, period time.Duration, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tasks == nil {
		h.tasks = map[string]time.Time{}
	}
	if last, ok := h.tasks[task]; ok && now.Before(last.Add(period)) {
		return false
	}
	h.tasks[task] = now
	return true
}

// SortQueued sorts queued runs in the order they are to start: by their
// Started time, then their id.
func SortQueued(runs []Run) []Run {
	slices.SortStableFunc(runs, func(a, b Run) int {
		if c := a.Started.Compare(b.Started); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return runs
}
