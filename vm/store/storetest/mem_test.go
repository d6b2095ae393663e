package storetest_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/badger"
	"github.com/aguic/aguic/vm/store/storetest"
)

// mem is the plainest Store the contract allows: maps behind a mutex,
// written to dir/store.json on Close and read back on open. It exists to
// show the suite is passable and to test the suite itself.
type mem struct {
	mu     sync.Mutex
	dir    string
	closed bool
	now    func() time.Time
	st     state
	bug    string // a deliberate bug, for TestMutants; "" in a correct store
	hub    store.Hub
}

// state is what mem keeps, as saved on disk.
type state struct {
	Sources map[string][]byte    `json:"sources"`
	Threads []*memThread         `json:"threads"`
	Runs    map[string]store.Run `json:"runs"`   // by runName
	Tokens  uint64               `json:"tokens"` // the last token issued, store-wide
}

type memThread struct {
	T      store.Thread  `json:"thread"`
	Events []store.Event `json:"events"`
	Lease  store.Lease   `json:"lease"` // Owner "" when none is held
}

// runName is the key of a run in state.Runs: run ids are their thread's.
func (m *mem) runName(k store.Key, id string) string {
	if m.bug == "global-run-ids" {
		return id
	}
	return runName(k, id)
}

func runName(k store.Key, id string) string {
	return strings.Join([]string{k.Scope, k.Workflow, k.Thread, id}, "\x00")
}

func openMem(t testing.TB, dir string) *mem {
	m := &mem{dir: dir, now: time.Now, st: state{Sources: map[string][]byte{}, Runs: map[string]store.Run{}}}
	if dir == "" {
		return m
	}
	data, err := os.ReadFile(filepath.Join(dir, "store.json"))
	if errors.Is(err, os.ErrNotExist) {
		return m
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &m.st); err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *mem) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil && m.bug != "ignore-ctx" {
		return err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return errors.New("mem: closed")
	}
	return nil
}

func (m *mem) find(k store.Key) (int, *memThread) {
	for i, th := range m.st.Threads {
		if th.T.Key == k {
			return i, th
		}
	}
	return -1, nil
}

func (m *mem) PutSource(ctx context.Context, hash string, src []byte) error {
	if err := m.begin(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if _, ok := m.st.Sources[hash]; !ok || m.bug == "overwrite-source" {
		m.st.Sources[hash] = slices.Clone(src)
	}
	return nil
}

func (m *mem) Source(ctx context.Context, hash string) ([]byte, error) {
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	src, ok := m.st.Sources[hash]
	if !ok {
		return nil, store.ErrNotFound
	}
	return slices.Clone(src), nil
}

func (m *mem) Acquire(ctx context.Context, k store.Key, owner string, ttl time.Duration) (store.Lease, error) {
	if err := m.begin(ctx); err != nil {
		return store.Lease{}, err
	}
	defer m.mu.Unlock()
	now := m.now()
	_, th := m.find(k)
	if th == nil {
		th = &memThread{T: store.Thread{Key: k, Created: now, Updated: now}}
		m.st.Threads = append(m.st.Threads, th)
	}
	return m.grant(th, k, owner, ttl, now)
}

// grant gives the lease of thread th to owner, unless another holds it;
// m.mu is held.
func (m *mem) grant(th *memThread, k store.Key, owner string, ttl time.Duration, now time.Time) (store.Lease, error) {
	held := th.Lease.Owner != "" && now.Before(th.Lease.Expires)
	if m.bug == "release-keeps-lease" {
		held = th.Lease.Token != 0 && now.Before(th.Lease.Expires)
	}
	switch {
	case held && th.Lease.Owner != owner:
		return store.Lease{}, store.ErrBusy
	case held: // the holder again: extend, keep the token
		th.Lease.Expires = now.Add(ttl)
	default:
		m.st.Tokens++
		th.Lease = store.Lease{Key: k, Owner: owner, Token: m.st.Tokens, Expires: now.Add(ttl)}
	}
	l := th.Lease
	l.Version = th.T.Version
	return l, nil
}

func (m *mem) Claim(ctx context.Context, k store.Key, owner string, ttl time.Duration) (store.Lease, []store.Run, error) {
	if err := m.begin(ctx); err != nil {
		return store.Lease{}, nil, err
	}
	defer m.mu.Unlock()
	_, th := m.find(k)
	if th == nil {
		return store.Lease{}, nil, nil
	}
	now := m.now()
	if th.Lease.Owner != "" && th.Lease.Owner != owner && now.Before(th.Lease.Expires) {
		return store.Lease{}, nil, store.ErrBusy
	}
	runs := m.pending(k)
	if len(runs) == 0 && m.bug != "claim-takes-idle" {
		return store.Lease{}, nil, nil
	}
	l, err := m.grant(th, k, owner, ttl, now)
	return l, runs, err
}

// current returns l's thread when l is its current lease.
func (m *mem) current(l store.Lease) (*memThread, error) {
	_, th := m.find(l.Key)
	if m.bug == "no-fencing" && th != nil {
		return th, nil
	}
	if th == nil || th.Lease.Owner == "" || th.Lease.Owner != l.Owner || th.Lease.Token != l.Token {
		return nil, store.ErrLeaseLost
	}
	return th, nil
}

func (m *mem) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	if err := m.begin(ctx); err != nil {
		return store.Lease{}, err
	}
	defer m.mu.Unlock()
	th, err := m.current(l)
	if err != nil {
		return store.Lease{}, err
	}
	th.Lease.Expires = m.now().Add(ttl)
	if m.bug == "renew-new-token" {
		m.st.Tokens++
		th.Lease.Token = m.st.Tokens
	}
	return th.Lease, nil
}

func (m *mem) Release(ctx context.Context, l store.Lease) error {
	if err := m.begin(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	th, err := m.current(l)
	if err != nil {
		return err
	}
	th.Lease.Owner = "" // keep the token: the next one is higher anyway
	m.changed(l.Key)
	return nil
}

func (m *mem) Commit(ctx context.Context, l store.Lease, c store.Commit) (store.Thread, error) {
	if err := m.begin(ctx); err != nil {
		return store.Thread{}, err
	}
	defer m.mu.Unlock()
	th, err := m.current(l)
	if err != nil {
		return store.Thread{}, err
	}
	if m.bug == "burn-seq-on-conflict" {
		th.T.LastSeq += uint64(len(c.Events))
	}
	if c.Expect != 0 && c.Expect != th.T.Version {
		return store.Thread{}, store.ErrConflict
	}
	t := &th.T
	if c.Run != nil && c.NewRun {
		if _, ok := m.st.Runs[m.runName(l.Key, c.Run.ID)]; ok {
			return store.Thread{}, store.ErrRunExists
		}
	}
	if c.Trim && (c.Keep < 0 || c.Keep > len(t.Deltas)) {
		return store.Thread{}, errors.New("keep more deltas than the thread has")
	}
	if cp := c.Checkpoint; cp != nil {
		t.Status, t.Hash, t.Wait, t.RunID, t.WakeAt = cp.Status, cp.Hash, slices.Clone(cp.Wait), cp.RunID, cp.WakeAt
		if cp.Frame != nil {
			t.Frame, t.Deltas = slices.Clone(cp.Frame), nil
		}
	}
	if c.Trim && m.bug != "trim-ignored" {
		t.Deltas = slices.Clip(t.Deltas[:c.Keep])
	}
	if c.Delta != nil {
		t.Deltas = append(t.Deltas, slices.Clone(c.Delta))
	}
	for _, seq := range c.Hide {
		for i := range th.Events {
			if th.Events[i].Seq == seq && m.bug != "ignore-hide" {
				th.Events[i].Hidden = true
			}
		}
	}
	for _, e := range c.Events {
		if m.bug == "racy-seq" { // read, let others in, write
			seq := t.LastSeq
			m.mu.Unlock()
			runtime.Gosched()
			m.mu.Lock()
			t.LastSeq = seq
		}
		t.LastSeq++
		e.Seq = t.LastSeq
		e.Data = slices.Clone(e.Data)
		th.Events = append(th.Events, e)
		if t.FirstSeq == 0 {
			t.FirstSeq = e.Seq
		}
	}
	if c.Run != nil {
		r := *c.Run
		r.Key = l.Key
		r.Input = slices.Clone(r.Input)
		m.st.Runs[m.runName(l.Key, r.ID)] = r
	}
	t.Version++
	t.Updated = m.now()
	if c.Release && m.bug != "release-ignored" {
		th.Lease.Owner = ""
	}
	out := *t
	out.Frame, out.Deltas = nil, nil
	m.changed(l.Key)
	return out, nil
}

// changed wakes the watchers of k, unless the store has the bug that it
// does not.
func (m *mem) changed(k store.Key) {
	if m.bug != "silent-watch" {
		m.hub.Changed(k)
	}
}

func (m *mem) Thread(ctx context.Context, k store.Key) (store.Thread, error) {
	if err := m.begin(ctx); err != nil {
		return store.Thread{}, err
	}
	defer m.mu.Unlock()
	_, th := m.find(k)
	if th == nil {
		return store.Thread{}, store.ErrNotFound
	}
	return th.T, nil
}

func limit(n int) int {
	if n <= 0 {
		return 100
	}
	return n
}

func (m *mem) Threads(ctx context.Context, scope, workflow string, p store.Page) ([]store.Thread, string, error) {
	if err := m.begin(ctx); err != nil {
		return nil, "", err
	}
	defer m.mu.Unlock()
	var all []store.Thread
	for _, th := range m.st.Threads {
		inScope := th.T.Scope == scope
		if m.bug == "scope-prefix" {
			inScope = strings.HasPrefix(th.T.Scope, scope)
		}
		if inScope && (workflow == "" || th.T.Workflow == workflow) {
			t := th.T
			t.Frame, t.Deltas = nil, nil
			all = append(all, t)
		}
	}
	if p.After != "" && !strings.Contains(p.After, "\x00") {
		return nil, "", store.ErrCursor
	}
	cursor := func(t store.Thread) string { return t.Workflow + "\x00" + t.Thread }
	slices.SortFunc(all, func(a, b store.Thread) int { return strings.Compare(cursor(a), cursor(b)) })
	all = slices.DeleteFunc(all, func(t store.Thread) bool { return p.After != "" && cursor(t) <= p.After })
	if n := limit(p.Limit); len(all) > n {
		if m.bug == "cursor-skips" {
			return all[:n], cursor(all[n]), nil
		}
		return all[:n], cursor(all[n-1]), nil
	}
	return all, "", nil
}

func (m *mem) DeleteThread(ctx context.Context, k store.Key) error {
	if err := m.begin(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	m.delete(k)
	m.changed(k)
	return nil
}

func (m *mem) delete(k store.Key) {
	i, _ := m.find(k)
	if i < 0 {
		return
	}
	m.st.Threads = slices.Delete(m.st.Threads, i, i+1)
	for id, r := range m.st.Runs {
		if r.Key == k && m.bug != "delete-keeps-runs" {
			delete(m.st.Runs, id)
		}
	}
}

func (m *mem) Events(ctx context.Context, k store.Key, after uint64, n int) ([]store.Event, error) {
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	_, th := m.find(k)
	if th == nil {
		return nil, store.ErrNotFound
	}
	if after+1 < th.T.FirstSeq || m.bug == "expired-off-by-one" && after < th.T.FirstSeq {
		return nil, store.ErrExpired
	}
	var out []store.Event
	for _, e := range th.Events {
		if e.Seq > after && (n <= 0 || len(out) < n) {
			out = append(out, e)
		}
	}
	return out, nil
}

func (m *mem) LastEvents(ctx context.Context, k store.Key, n int) ([]store.Event, error) {
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	_, th := m.find(k)
	if th == nil {
		return nil, store.ErrNotFound
	}
	return slices.Clone(th.Events[max(len(th.Events)-n, 0):]), nil
}

func (m *mem) Run(ctx context.Context, k store.Key, id string) (store.Run, error) {
	if err := m.begin(ctx); err != nil {
		return store.Run{}, err
	}
	defer m.mu.Unlock()
	r, ok := m.st.Runs[m.runName(k, id)]
	if !ok {
		return store.Run{}, store.ErrNotFound
	}
	return r, nil
}

func (m *mem) Enqueue(ctx context.Context, k store.Key, r store.Run) error {
	if err := m.begin(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if r.Status != store.Queued || r.ID == "" {
		return errors.New("a queued run needs an id and the queued status")
	}
	if _, th := m.find(k); th == nil {
		return store.ErrNotFound
	}
	if _, ok := m.st.Runs[m.runName(k, r.ID)]; ok {
		return store.ErrRunExists
	}
	r.Key, r.Input = k, slices.Clone(r.Input)
	m.st.Runs[m.runName(k, r.ID)] = r
	m.changed(k)
	return nil
}

func (m *mem) Runs(ctx context.Context, status store.Status, p store.Page) ([]store.Run, string, error) {
	if err := m.begin(ctx); err != nil {
		return nil, "", err
	}
	defer m.mu.Unlock()
	if p.After != "" && strings.Count(p.After, "\x00") != 3 {
		return nil, "", store.ErrCursor
	}
	var all []store.Run
	for _, r := range m.st.Runs {
		if r.Status == status && runName(r.Key, r.ID) > p.After {
			all = append(all, r)
		}
	}
	slices.SortFunc(all, func(a, b store.Run) int { return cmp.Compare(runName(a.Key, a.ID), runName(b.Key, b.ID)) })
	if n := limit(p.Limit); len(all) > n {
		return all[:n], runName(all[n-1].Key, all[n-1].ID), nil
	}
	return all, "", nil
}

func (m *mem) ThreadRuns(ctx context.Context, k store.Key, p store.Page) ([]store.Run, string, error) {
	if err := m.begin(ctx); err != nil {
		return nil, "", err
	}
	defer m.mu.Unlock()
	// The cursor is the last run's start, in Unix nanoseconds, and id.
	var afterStarted int64
	var afterID string
	if p.After != "" {
		ns, id, ok := strings.Cut(p.After, "\x00")
		n, err := strconv.ParseInt(ns, 10, 64)
		if !ok || err != nil {
			return nil, "", store.ErrCursor
		}
		afterStarted, afterID = n, id
	}
	newestFirst := func(a, b store.Run) int {
		if m.bug == "runs-oldest-first" {
			a, b = b, a
		}
		return cmp.Or(b.Started.Compare(a.Started), strings.Compare(a.ID, b.ID))
	}
	var all []store.Run
	for _, r := range m.st.Runs {
		if r.Key != k {
			continue
		}
		if p.After != "" && newestFirst(r, store.Run{Started: time.Unix(0, afterStarted), ID: afterID}) <= 0 {
			continue
		}
		r.Input = nil
		all = append(all, r)
	}
	slices.SortFunc(all, newestFirst)
	if n := limit(p.Limit); len(all) > n {
		last := all[n-1]
		return all[:n], strconv.FormatInt(last.Started.UnixNano(), 10) + "\x00" + last.ID, nil
	}
	return all, "", nil
}

func (m *mem) Sweep(ctx context.Context, r store.Retention, now time.Time) (events, threads int, err error) {
	if err := m.begin(ctx); err != nil {
		return 0, 0, err
	}
	defer m.mu.Unlock()
	if r.FinishedTTL > 0 {
		for _, th := range slices.Clone(m.st.Threads) {
			ended := th.T.Status == store.Finished || th.T.Status == store.Failed || th.T.Status == store.Cancelled
			if m.bug == "sweep-running" && th.T.Status == store.Running {
				ended = true
			}
			if ended && now.Sub(th.T.Updated) > r.FinishedTTL {
				m.delete(th.T.Key)
				threads++
			}
		}
	}
	if r.MaxEvents > 0 {
		for _, th := range m.st.Threads {
			if drop := len(th.Events) - r.MaxEvents; drop > 0 {
				th.Events = slices.Delete(th.Events, 0, drop)
				th.T.FirstSeq = th.Events[0].Seq
				events += drop
			}
		}
	}
	return events, threads, nil
}

// Due lists the threads whose wake time has come, earliest first.
func (m *mem) Due(ctx context.Context, now time.Time, limit int) ([]store.Key, error) {
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var due []*memThread
	for _, th := range m.st.Threads {
		if w := th.T.WakeAt; !w.IsZero() && !w.After(now) {
			due = append(due, th)
		}
	}
	slices.SortStableFunc(due, func(a, b *memThread) int { return a.T.WakeAt.Compare(b.T.WakeAt) })
	var keys []store.Key
	for _, th := range due[:min(len(due), limit)] {
		keys = append(keys, th.T.Key)
	}
	return keys, nil
}

// Sync has nothing to do: everything mem keeps is kept as it returns.
func (m *mem) Sync(ctx context.Context) error {
	if err := m.begin(ctx); err != nil {
		return err
	}
	m.mu.Unlock()
	return nil
}

func (m *mem) Pending(ctx context.Context, k store.Key) ([]store.Run, error) {
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	return m.pending(k), nil
}

// pending is Pending; m.mu is held.
func (m *mem) pending(k store.Key) []store.Run {
	var running, queued []store.Run
	for _, r := range m.st.Runs {
		switch {
		case r.Key != k:
		case r.Status == store.Running:
			running = append(running, r)
		case r.Status == store.Queued:
			queued = append(queued, r)
		}
	}
	if m.bug == "pending-unordered" {
		return append(queued, running...)
	}
	return append(running, store.SortQueued(queued)...)
}

func (m *mem) Stranded(ctx context.Context, n int) ([]store.Key, error) {
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	now := m.now()
	var keys []store.Key
	for _, th := range m.st.Threads {
		held := th.Lease.Owner != "" && now.Before(th.Lease.Expires)
		if held && m.bug != "stranded-held" || len(keys) == limit(n) {
			continue
		}
		for _, r := range m.st.Runs {
			if r.Key == th.T.Key && (r.Status == store.Running || r.Status == store.Queued) {
				keys = append(keys, th.T.Key)
				break
			}
		}
	}
	return keys, nil
}

func (m *mem) Watch(k store.Key) (<-chan struct{}, func()) { return m.hub.Watch(k) }

func (m *mem) Cancel(ctx context.Context, k store.Key, runID string) error {
	if err := m.begin(ctx); err != nil {
		return err
	}
	m.mu.Unlock()
	m.hub.Cancelled(k, runID)
	return nil
}

func (m *mem) OnCancel(f func(store.Key, string)) func() { return m.hub.OnCancel(f) }

func (m *mem) TakeTask(ctx context.Context, task string, period time.Duration) (bool, error) {
	if err := m.begin(ctx); err != nil {
		return false, err
	}
	m.mu.Unlock()
	if m.bug == "task-always" {
		return true, nil
	}
	return m.hub.TakeTask(task, period, m.now()), nil
}

func (m *mem) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errors.New("mem: closed twice")
	}
	m.closed = true
	if m.dir == "" || m.bug == "no-persist" {
		return nil
	}
	data, err := json.Marshal(m.st)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(m.dir, "store.json"), data, 0o600)
}

// Dump gives sink everything, in backup order, under the store's mutex:
// a snapshot.
func (m *mem) Dump(ctx context.Context, sink store.Sink) error {
	if err := m.begin(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	for _, h := range slices.Sorted(maps.Keys(m.st.Sources)) {
		if err := sink.Source(h, m.st.Sources[h]); err != nil {
			return err
		}
	}
	threads := slices.Clone(m.st.Threads)
	slices.SortFunc(threads, func(a, b *memThread) int {
		return cmp.Or(strings.Compare(a.T.Scope, b.T.Scope), strings.Compare(a.T.Workflow, b.T.Workflow), strings.Compare(a.T.Thread, b.T.Thread))
	})
	for _, th := range threads {
		if err := sink.Thread(th.T); err != nil {
			return err
		}
		for _, e := range th.Events {
			if err := sink.Event(e); err != nil {
				return err
			}
		}
		var runs []store.Run
		for _, r := range m.st.Runs {
			if r.Key == th.T.Key {
				runs = append(runs, r)
			}
		}
		slices.SortFunc(runs, func(a, b store.Run) int { return strings.Compare(a.ID, b.ID) })
		for _, r := range runs {
			if err := sink.Run(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// Load fills the empty store with what fill gives, all at once when fill
// succeeds. Tokens go on from the store's own.
func (m *mem) Load(ctx context.Context, fill func(store.Sink) error) error {
	if err := m.begin(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if len(m.st.Threads) > 0 || len(m.st.Sources) > 0 {
		return store.ErrNotEmpty
	}
	sink := &memLoad{m: m, st: state{Sources: map[string][]byte{}, Runs: map[string]store.Run{}, Tokens: m.st.Tokens}}
	if m.bug == "load-resets-tokens" {
		sink.st.Tokens = 0
	}
	err := fill(sink)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil && m.bug != "load-keeps-part" {
		return err
	}
	m.st = sink.st
	return err
}

// memLoad is the sink of mem's Load.
type memLoad struct {
	m  *mem
	st state
}

func (l *memLoad) Source(hash string, src []byte) error {
	l.st.Sources[hash] = src
	return nil
}

func (l *memLoad) Thread(t store.Thread) error {
	if l.m.bug == "load-now" {
		t.Updated = l.m.now()
	}
	l.st.Threads = append(l.st.Threads, &memThread{T: t})
	return nil
}

func (l *memLoad) Event(e store.Event) error {
	th := l.st.Threads[len(l.st.Threads)-1]
	th.Events = append(th.Events, e)
	return nil
}

func (l *memLoad) Run(r store.Run) error {
	l.st.Runs[l.m.runName(r.Key, r.ID)] = r
	return nil
}

func TestMem(t *testing.T) {
	bug := os.Getenv(mutantEnv)
	storetest.Run(t, func(t *testing.T) store.Store {
		m := openMem(t, "")
		m.bug = bug
		return m
	})
	// Backups of the reference store restore into Badger, and back.
	storetest.RunBackup(t, func(t *testing.T) store.Store {
		m := openMem(t, "")
		m.bug = bug
		return m
	}, func(t *testing.T) store.Store {
		s, err := badger.Open(badger.Options{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
	storetest.RunReopen(t, func(t *testing.T, dir string) store.Store {
		m := openMem(t, dir)
		m.bug = bug
		return m
	})
}

const mutantEnv = "STORETEST_MUTANT"

// TestMutants runs the suite on stores with one deliberate bug each, in a
// child process, and checks that the check meant to catch the bug fails.
func TestMutants(t *testing.T) {
	if os.Getenv(mutantEnv) != "" {
		t.Skip("in a mutant's run")
	}
	if testing.Short() {
		t.Skip("runs the suite once per mutant")
	}
	for _, m := range []struct{ bug, caughtBy string }{
		{"ignore-ctx", "Context/Cancelled"},
		{"overwrite-source", "Source/PutAgainIsNoOp"},
		{"release-keeps-lease", "Lease/AcquireAfterRelease"},
		{"no-fencing", "Lease/TakeoverAfterExpiry"},
		{"no-fencing", "Delete/FencesFormerLease"},
		{"renew-new-token", "Lease/Renew"},
		{"burn-seq-on-conflict", "Commit/ConflictWritesNothing"},
		{"ignore-hide", "Commit/Hide"},
		{"racy-seq", "Concurrent/SharedLease"},
		{"scope-prefix", "Threads/ScopeIsolation"},
		{"scope-prefix", "Threads/KeysNotConfused"},
		{"cursor-skips", "Threads/OrderAndPaging"},
		{"delete-keeps-runs", "Delete/RemovesEverything"},
		{"expired-off-by-one", "Sweep/MaxEvents"},
		{"sweep-running", "Sweep/FinishedTTL"},
		{"no-persist", "Reopen/Everything"},
		{"global-run-ids", "Runs/IDsPerThread"},
		{"runs-oldest-first", "Runs/ThreadRuns"},
		{"trim-ignored", "Deltas/AppendTrimReplace"},
		{"silent-watch", "Bus/WatchCommit"},
		{"pending-unordered", "Bus/Pending"},
		{"stranded-held", "Bus/Stranded"},
		{"claim-takes-idle", "Bus/Claim"},
		{"task-always", "Bus/TakeTask"},
		{"release-ignored", "Commit/Release"},
		{"load-now", "Backup/RoundTrip"},
		{"load-keeps-part", "Backup/Damaged"},
		{"load-resets-tokens", "Backup/RoundTrip"},
	} {
		t.Run(m.bug+"/"+m.caughtBy, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestMem$/^"+strings.ReplaceAll(m.caughtBy, "/", "$/^")+"$", "-test.v")
			cmd.Env = append(os.Environ(), mutantEnv+"="+m.bug)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a store with the bug %q; %s should have failed:\n%s", m.bug, m.caughtBy, out)
			}
			if !strings.Contains(string(out), "--- FAIL: TestMem/"+m.caughtBy) {
				t.Fatalf("with the bug %q, %s did not fail:\n%s", m.bug, m.caughtBy, out)
			}
		})
	}
}

func BenchmarkMem(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store { return openMem(b, "") })
}
