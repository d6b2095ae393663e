// Package host runs workflows durably in a process: it serves them as
// AG-UI agents on a store, resumes the runs a crash left unfinished, runs
// the threads pinned to an older version of the workflows on that version,
// wakes the conversations whose sleep has come, applies retention, gives
// memory back when the process idles, and shuts down gracefully. `aguic serve` is a host; so is a Go program that embeds
// aguic:
//
//	h, err := host.Start(host.Config{Machine: m, Bundle: bundle, Store: st})
//	...
//	err = h.Serve(ctx, listener, 30*time.Second)
//
// or, to mount the routes on a server of its own, h.Handler(), then
// h.Shutdown(ctx) before the store is closed.
package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aguic/aguic/internal/every"
	"github.com/aguic/aguic/metrics"
	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/telemetry"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
)

// Defaults of a Host.
const (
	// DefaultRecoveryWorkers is how many interrupted runs resume at once
	// after a crash.
	DefaultRecoveryWorkers = 8
	// recoverEvery is how often the host looks for runs that no process
	// executes any more (a process that shared the store died, or a run
	// could not write its end while the store was unavailable) and
	// resumes them.
	recoverEvery = 2 * time.Second
	// sweepEvery is how often retention is applied.
	sweepEvery = time.Hour
	// drainAtLeast is how long the streams of the runs a shutdown
	// cancelled have, at least, to send their terminal event.
	drainAtLeast = 5 * time.Second
	// readHeaderLimit bounds the time a client takes to send its headers.
	readHeaderLimit = 10 * time.Second
	// wakeEvery is how often the host looks for threads whose timer (a
	// sleep node) has come, and wakeBatch how many it wakes at most at a
	// time.
	wakeEvery = time.Second
	wakeBatch = 100
)

// Config is what a Host runs.
type Config struct {
	// Machine runs the current version of the workflows, the one new
	// threads start on.
	Machine *vm.Machine
	// Bundle is the current version's sources (compiler.Bundle), stored so
	// that its threads still run on it after the workflows change.
	Bundle []byte
	// Store keeps the threads. The host does not close it.
	Store store.Store
	// Server is the rest of the server's configuration (base path,
	// deadline, authentication, CORS…). Its Machine, Bundle, Store, Load,
	// Owner and Logger are the host's.
	Server server.Config
	// Owner names this process in the leases it takes; default
	// "aguic-HOSTNAME-PID".
	Owner string
	// Retention is applied at start and every hour.
	Retention store.Retention
	// Backup, with AdminToken, serves backups of the store at
	// {base}/admin/backup to the bearer of AdminToken
	// (server.BackupHandler).
	Backup     server.Backuper
	AdminToken string
	// Maintain are the store's own background tasks (such as Badger's
	// value-log GC): each runs until its context is done and closes the
	// channel it returns when it has stopped.
	Maintain []func(context.Context) <-chan struct{}
	// ReleaseMemory, when set, gives the store's memory back to the
	// system (such as the pages of its files mapped in the process); the
	// host calls it when the process idles after a burst of work.
	ReleaseMemory func() error
	// RecoveryWorkers is how many interrupted runs resume at once; default
	// DefaultRecoveryWorkers.
	RecoveryWorkers int
	Logger          *slog.Logger // default slog.Default()
}

// Host serves workflows on a store and keeps them durable; see the package
// comment.
type Host struct {
	cfg      Config
	log      *slog.Logger
	versions *Versions
	srv      *server.Server
	handler  http.Handler
	recovery *store.Recovery

	stopRecovery context.CancelFunc
	recovering   sync.WaitGroup
	// resuming are the recoveries in progress: a cancel request for a run
	// they resume reaches it through them.
	resumingMu   sync.Mutex
	resuming     map[*store.Recovery]bool
	traced       sync.Map // the spans of the runs recovering, by run id, when tracing is on
	stopCancels  func()
	stopMaintain context.CancelFunc
	maintained   []<-chan struct{}
	shutdown     sync.Once
	shutdownErr  error
}

// Start opens a host on cfg.Store. Before it returns, it claims the threads
// of the runs a crash left unfinished, so that a request on one of them is
// answered 409 until its runs have resumed; then it resumes them in the
// background, beside new requests, and starts the store's maintenance.
func Start(cfg Config) (*Host, error) {
	if cfg.Machine == nil || cfg.Store == nil {
		return nil, errors.New("host: a Machine and a Store are needed")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Owner == "" {
		name, _ := os.Hostname()
		cfg.Owner = fmt.Sprintf("aguic-%s-%d", name, os.Getpid())
	}
	if cfg.RecoveryWorkers <= 0 {
		cfg.RecoveryWorkers = DefaultRecoveryWorkers
	}
	h := &Host{cfg: cfg, log: cfg.Logger, versions: NewVersions(cfg.Store, cfg.Machine)}
	if cfg.Server.LeaseTTL <= 0 {
		cfg.Server.LeaseTTL = server.DefaultLeaseTTL
	}
	h.cfg = cfg
	sc := cfg.Server
	sc.Machine, sc.Bundle, sc.Store, sc.Load, sc.Owner, sc.Logger = cfg.Machine, cfg.Bundle, cfg.Store, h.versions.Load, cfg.Owner, cfg.Logger
	srv, err := server.New(sc)
	if err != nil {
		return nil, err
	}
	h.srv = srv
	h.handler = srv.Handler()
	if cfg.Backup != nil {
		mux := http.NewServeMux()
		mux.Handle(strings.TrimSuffix(sc.BasePath, "/")+server.BackupPath, server.BackupHandler(cfg.Backup, cfg.AdminToken))
		mux.Handle("/", srv.Handler())
		h.handler = mux
	}

	// The threads of interrupted runs are claimed before anything is
	// served, so that no request starts a run on them.
	if h.recovery, err = store.Claim(context.Background(), cfg.Store, cfg.Owner+"/recovery", cfg.Server.LeaseTTL); err != nil {
		return nil, err
	}
	if n := len(h.recovery.Runs()); n > 0 {
		h.log.Info("resuming interrupted runs", "runs", n)
	}
	h.resuming = map[*store.Recovery]bool{}
	h.stopCancels = cfg.Store.OnCancel(h.cancelResumed)
	var recoverCtx context.Context
	recoverCtx, h.stopRecovery = context.WithCancel(context.Background())
	h.recovering.Go(func() {
		defer h.recovery.Release(context.Background())
		h.resume(recoverCtx, h.recovery)
	})

	var maintainCtx context.Context
	maintainCtx, h.stopMaintain = context.WithCancel(context.Background())
	h.maintained = append(h.maintained, store.Maintain(maintainCtx, cfg.Store, cfg.Retention, sweepEvery, h.log))
	for _, task := range cfg.Maintain {
		h.maintained = append(h.maintained, task(maintainCtx))
	}
	h.maintained = append(h.maintained, processMemory(cfg.ReleaseMemory, h.log).start(maintainCtx))
	h.maintained = append(h.maintained, every.Run(maintainCtx, wakeEvery, func() { h.wakeDue(maintainCtx) }))
	h.maintained = append(h.maintained, every.Run(maintainCtx, recoverEvery, func() { h.recoverStranded(maintainCtx) }))
	return h, nil
}

// recoverStranded resumes the runs that no process executes any more:
// those of a process that shared the store and died, once their leases
// expired, and those whose end could not be written while the store was
// unavailable. It returns once they have ended (or ctx is done).
func (h *Host) recoverStranded(ctx context.Context) {
	rec, err := store.Claim(ctx, h.cfg.Store, h.cfg.Owner+"/recovery", h.cfg.Server.LeaseTTL)
	if err != nil {
		if ctx.Err() == nil {
			h.log.Warn("looking for runs to recover", "error", err.Error())
		}
		return
	}
	defer rec.Release(context.WithoutCancel(ctx))
	if n := len(rec.Runs()); n > 0 {
		h.log.Info("resuming runs no process executes", "runs", n)
	}
	h.resume(ctx, rec)
}

// resume resumes the runs rec claimed, where a cancel request reaches
// them.
func (h *Host) resume(ctx context.Context, rec *store.Recovery) {
	if len(rec.Runs()) == 0 {
		return
	}
	h.resumingMu.Lock()
	h.resuming[rec] = true
	h.resumingMu.Unlock()
	defer func() {
		h.resumingMu.Lock()
		delete(h.resuming, rec)
		h.resumingMu.Unlock()
	}()
	h.cfg.Server.Metrics.Claimed(len(rec.Runs()))
	if tracing := h.cfg.Server.Tracing; tracing != nil {
		rec.Start = func(ctx context.Context, r store.Run) (context.Context, store.Live) {
			tr := tracing.StartRun(ctx, telemetry.RunInfo{Workflow: r.Key.Workflow, Thread: r.Key.Thread, RunID: r.ID, Trigger: "recovery"})
			h.traced.Store(r.ID, tr)
			return tr.Context(ctx), store.Live{Nodes: tr.Nodes(nil)}
		}
	}
	rec.Resume(ctx, h.versions.Load, h.cfg.RecoveryWorkers, h.logRecovered)
}

// cancelResumed cancels run runID of the thread if a recovery of this
// host resumes it: a cancel request the store carried.
func (h *Host) cancelResumed(key store.Key, runID string) {
	h.resumingMu.Lock()
	defer h.resumingMu.Unlock()
	for rec := range h.resuming {
		rec.Cancel(key, runID)
	}
}

// wakeDue runs the threads whose timer has come (vm.WaitTimer, a sleep
// node): each goes on in a run of its own, whose events its clients read
// from the thread's history. A thread a request runs on now is left for
// the next look; one a wake could not run stays due and is tried again.
func (h *Host) wakeDue(ctx context.Context) {
	keys, err := h.cfg.Store.Due(ctx, time.Now(), wakeBatch)
	if err != nil {
		if ctx.Err() == nil {
			h.log.Warn("looking for threads to wake", "error", err.Error())
		}
		return
	}
	for _, k := range keys {
		if ctx.Err() != nil {
			return
		}
		o, woke, err := h.wake(ctx, k)
		attrs := []any{"workflow", k.Workflow, "thread", k.Thread}
		switch {
		case errors.Is(err, store.ErrBusy):
		case err != nil:
			h.log.Warn("a sleeping thread could not wake", append(attrs, "error", err.Error())...)
		case woke:
			h.log.Info("woke a sleeping thread", append(attrs, "status", string(o.Status))...)
		}
	}
}

// wake runs thread k, whose timer has come, under its lease: once the
// lease is held it reads the thread again, since another process that
// shares the store may have woken it meanwhile (woke is then false).
func (h *Host) wake(ctx context.Context, k store.Key) (o vm.Outcome, woke bool, err error) {
	st := h.cfg.Store
	l, err := st.Acquire(ctx, k, h.cfg.Owner+"/timer", h.cfg.Server.LeaseTTL)
	if err != nil {
		return o, false, err
	}
	defer st.Release(context.WithoutCancel(ctx), l)
	th, err := st.Thread(ctx, k)
	if err != nil || th.WakeAt.IsZero() || th.WakeAt.After(time.Now()) {
		return o, false, err
	}
	started := time.Now()
	runID := fmt.Sprintf("wake-%d", started.UnixNano())
	tr := h.cfg.Server.Tracing.StartRun(ctx, telemetry.RunInfo{Workflow: k.Workflow, Thread: k.Thread, RunID: runID, Trigger: "wake"})
	t, err := store.Begin(ctx, st, store.Request{
		Key: k, Lease: &l, TTL: h.cfg.Server.LeaseTTL, RunID: runID,
		Machine: h.cfg.Machine, Load: h.versions.Load, Resume: &vm.Resume{},
		Live: store.Live{Nodes: tr.Nodes(nil)},
	})
	if err != nil {
		tr.End(o, err)
		return o, false, err
	}
	tr.Chain(t.Frame())
	m, start := h.cfg.Server.Metrics, time.Now()
	m.TurnStarted()
	o, _, err = t.Run(tr.Context(ctx))
	tr.End(o, err)
	outcome := string(o.Status)
	if err != nil {
		outcome = string(vm.Failed)
	}
	m.TurnEnded(k.Workflow, outcome, metrics.OriginWake, time.Since(start))
	h.ended(k, runID, o, err, server.TriggerTimer, started)
	return o, err == nil, err
}

// logRecovered logs and counts how a run's recovery ended, and tells
// Config.Server.OnRunEnd.
func (h *Host) logRecovered(r store.Recovered) {
	if tr, ok := h.traced.LoadAndDelete(r.Run.ID); ok {
		tr.(*telemetry.Run).End(r.Outcome, r.Err)
	}
	h.ended(r.Run.Key, r.Run.ID, r.Outcome, r.Err, server.TriggerRecovery, r.Run.Started)
	attrs := []any{"workflow", r.Run.Key.Workflow, "thread", r.Run.Key.Thread, "run", r.Run.ID}
	outcome := string(r.Outcome.Status)
	if r.Err != nil {
		outcome = string(vm.Failed)
	}
	h.cfg.Server.Metrics.Recovered(r.Run.Key.Workflow, outcome)
	if r.Err != nil {
		h.log.Warn("an interrupted run could not resume", append(attrs, "error", r.Err.Error())...)
		return
	}
	h.log.Info("resumed an interrupted run", append(attrs, "status", string(r.Outcome.Status))...)
}

// ended tells Config.Server.OnRunEnd, when it is set, that a run the host
// executed ended: one it recovered or a timer woke.
func (h *Host) ended(key store.Key, runID string, o vm.Outcome, err error, trigger string, started time.Time) {
	if h.cfg.Server.OnRunEnd == nil {
		return
	}
	e := server.EndOf(key, runID, o, err, started, time.Now())
	e.Trigger = trigger
	h.cfg.Server.OnRunEnd(e)
}

// Handler serves the AG-UI routes, the OpenAPI document and /docs (and the
// backups, with Config.Backup).
func (h *Host) Handler() http.Handler { return h.handler }

// Shutdown stops taking runs and waits for the runs in progress until ctx
// is done; then it cancels them, and each ends with its terminal event and
// saves its outcome. Then it stops the recovery and the maintenance. It
// returns ctx.Err() when it had to cancel runs. It does not close the store
// and is safe to call more than once.
func (h *Host) Shutdown(ctx context.Context) error {
	h.shutdown.Do(func() {
		h.shutdownErr = h.srv.Shutdown(ctx)
		h.stopRecovery()
		h.recovering.Wait()
		h.stopMaintain()
		for _, done := range h.maintained {
			<-done
		}
		h.stopCancels()
	})
	return h.shutdownErr
}

// Serve serves Handler on ln until ctx is done or the listener fails, then
// shuts down: runs in progress have grace to end, after which they are
// cancelled; their streams then have what remains of grace (at least five
// seconds) to send their terminal event before the connections close.
func (h *Host) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	hs := &http.Server{Handler: h.handler, ReadHeaderTimeout: readHeaderLimit, ErrorLog: slog.NewLogLogger(h.log.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
		h.log.Info("shutting down")
	case err = <-served:
		h.log.Error("the server stopped", "error", err.Error())
	}
	deadline := time.Now().Add(grace)
	graceCtx, cancelGrace := context.WithDeadline(context.Background(), deadline)
	defer cancelGrace()
	// The connections outlive the grace: a run cancelled at its end still
	// writes its terminal event to the streams that follow it.
	connCtx, closeConns := context.WithCancel(context.Background())
	defer closeConns()
	var httpDone sync.WaitGroup
	httpDone.Go(func() {
		if err := hs.Shutdown(connCtx); errors.Is(err, context.Canceled) {
			h.log.Warn("connections still open at the end of the shutdown were closed")
		} else if err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.log.Warn("closing connections", "error", err.Error())
		}
	})
	if err := h.Shutdown(graceCtx); err != nil {
		h.log.Warn("runs were cancelled at shutdown", "error", err.Error())
	}
	// Every run has ended and handed its terminal event to its streams;
	// they get what remains of the grace, and at least drainAtLeast, to
	// send it.
	drain := time.AfterFunc(max(time.Until(deadline), drainAtLeast), closeConns)
	httpDone.Wait()
	drain.Stop()
	hs.Close()
	return err
}
