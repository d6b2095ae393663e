package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aguic/aguic/internal/pgtest"
)

// replicaChat is the conversation of BenchmarkReplicas, the one of the
// server's BenchmarkTurns: a turn says one line and suspends, waiting for
// the user and nothing else.
const replicaChat = `wf 1

workflow chat {
  title        = "Chat"
  conversation = true

  flow {
    top: say "ok <<$agent.latestUserMessage.content>>"
    wait: suspend
    goto top
  }
}
`

// replicaWorkflows are what BenchmarkReplicas drives: the conversation
// above, and the examples' todo list (workflows/todos.wf), a stateless
// workflow whose turns only compute: each request carries the history so
// far, and "add milk" adds a todo to the state the request carries, syncs
// the state and lists the todos.
//
// chat-sticky is chat with every turn of a conversation sent to the replica
// of its first turn, as a load balancer with session affinity would
// (conversations still start at each replica in turn): the replica then
// has the thread's frame in memory from the turn before. It runs only
// with several replicas.
var replicaWorkflows = []struct {
	name, workflow, message string
	stateless, sticky       bool
}{
	{"chat", "chat", "hello", false, false},
	{"chat-sticky", "chat", "hello", false, true},
	{"todos", "todos", "add milk", true, false},
}

// replicaClients are the numbers of concurrent clients BenchmarkReplicas
// measures.
var replicaClients = []int{16, 64}

// replicaConfigs are the set-ups BenchmarkReplicas compares: Badger, one
// process (the baseline), and 1, 2 and 3 replicas on PostgreSQL.
var replicaConfigs = []struct {
	name     string
	store    string
	replicas int
}{
	{"badger", "badger", 1},
	{"postgres-1", "postgres", 1},
	{"postgres-2", "postgres", 2},
	{"postgres-3", "postgres", 3},
}

// BenchmarkReplicas measures conversations served by real aguic serve
// processes, side by side in one run: Badger (one process, the baseline)
// and PostgreSQL with 1, 2 and 3 replicas (each set-up on a schema of its
// own; skipped without AGUIC_TEST_POSTGRES), each at 16 and 64 concurrent
// clients, for the workflows of replicaWorkflows. Every set-up's processes
// are started first and stay up; the sub-benchmarks then measure, for
// each workflow and number of clients, the set-ups one after the other,
// so that the numbers compared were measured seconds apart. The clients
// are aguic bench's (in this process): conversations of 10 turns, each
// turn to the next replica (round-robin, so two turns in a row of a
// conversation never go to the same replica). b.N is the number of turns
// of all clients together, after a warm-up of three turns per client.
//
// It reports turns/s, the p50 and p99 latency of a turn, and CPU time per
// turn: of the aguic processes (aguic-µs/turn; /proc/PID/stat), of the
// PostgreSQL backends of the replicas' connections (pg-µs/turn; found by
// their application_name in pg_stat_activity, CPU from /proc/PID/stat),
// and of those of them that listen for notifications, one per replica
// (pglisten-µs/turn, a part of pg-µs/turn), the context switches per
// turn of the aguic processes' threads and of those backends (aguic-cs/turn,
// pg-cs/turn: /proc/PID/task/*/status), of the PostgreSQL server's
// own processes (pgserver-µs/turn: WAL writer, checkpointer, background
// writer, postmaster; they serve every client of the server, other
// tests' included), of the clients (client-µs/turn, this process), how
// busy the machine's cores were (busy-%, from /proc/stat, whatever ran),
// and how much of the cores' time went to other processes than those
// (others-%: on a shared machine, what the rest took from the benchmark).
// AGUIC_REPLICAS_ENV adds variables, separated by spaces, to the
// environment of the aguic serve processes (GOMAXPROCS=1, say), and
// AGUIC_REPLICAS_STORE_QUERY parameters to the URL of their --store
// (pool_max_conns=3, say).
//
//	AGUIC_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test go test ./cmd/aguic -run '^$' -bench Replicas -benchtime 4000x -timeout 30m
func BenchmarkReplicas(b *testing.B) {
	dir := b.TempDir()
	bin := buildBench(b, dir)
	wfDir := filepath.Join(dir, "workflows")
	todos, err := os.ReadFile(filepath.Join("..", "..", "workflows", "todos.wf"))
	if err != nil {
		b.Fatal(err)
	}
	writeFiles(b, wfDir, map[string]string{"chat.wf": replicaChat, "todos.wf": string(todos)})

	sets := map[string]*replicaSet{}
	for _, c := range replicaConfigs {
		if c.store == "postgres" && os.Getenv(pgtest.Env) == "" {
			b.Logf("%s: skipped, set %s to measure PostgreSQL", c.name, pgtest.Env)
			continue
		}
		sets[c.name] = startReplicas(b, bin, wfDir, c.store, c.replicas)
	}
	for _, wf := range replicaWorkflows {
		var configs []string // those that apply, that run
		for _, c := range replicaConfigs {
			if sets[c.name] != nil && (!wf.sticky || c.replicas > 1) {
				configs = append(configs, c.name)
			}
		}
		if len(configs) == 0 {
			continue
		}
		b.Run(wf.name, func(b *testing.B) {
			for _, clients := range replicaClients {
				b.Run("clients="+strconv.Itoa(clients), func(b *testing.B) {
					for _, name := range configs {
						b.Run(name, func(b *testing.B) {
							sets[name].measure(b, wf.workflow, wf.message, wf.stateless, wf.sticky, clients)
						})
					}
				})
			}
		})
	}
}

// replicaSet is the aguic serve processes of one configuration.
type replicaSet struct {
	procs []*crashProc
	pg    *pgProcs // nil on Badger
}

// startReplicas starts n serve processes on one store: a fresh Badger
// data directory (n is 1), or a fresh PostgreSQL schema.
func startReplicas(b *testing.B, bin, wfDir, store string, n int) *replicaSet {
	rs := &replicaSet{}
	var args []string
	if store == "badger" {
		args = []string{"--data", filepath.Join(b.TempDir(), "data")}
	} else {
		schema := pgtest.Schema(b)
		app := "aguic-bench-" + randomHex(6)
		rs.pg = newPGProcs(b, app)
		arg := pgStoreArg(b, schema, app)
		if q := os.Getenv("AGUIC_REPLICAS_STORE_QUERY"); q != "" { // such as pool_max_conns=3
			arg += "&" + q
		}
		args = []string{"--store", arg}
	}
	var env []string // AGUIC_REPLICAS_ENV: variables for the processes, such as GOMAXPROCS=1
	if v := os.Getenv("AGUIC_REPLICAS_ENV"); v != "" {
		env = strings.Fields(v)
	}
	for range n {
		rs.procs = append(rs.procs, startReplica(b, bin, wfDir, env, args...))
	}
	return rs
}

// cpuSnapshot is what measure reads before and after the turns.
type cpuSnapshot struct {
	aguic, backends, listeners, server map[int]time.Duration
	aguicSwitches, pgSwitches          map[int]int64
	self                               time.Duration
	total, idle                        int64
}

func (rs *replicaSet) snapshot(b *testing.B) cpuSnapshot {
	var s cpuSnapshot
	pids := make([]int, len(rs.procs))
	for i, p := range rs.procs {
		pids[i] = p.cmd.Process.Pid
	}
	s.aguic, s.aguicSwitches = procsCPU(pids), switchesOf(pids)
	if rs.pg != nil {
		backends, listeners, server := rs.pg.pids(b)
		s.backends, s.listeners, s.server = procsCPU(backends), procsCPU(listeners), procsCPU(server)
		s.pgSwitches = switchesOf(backends)
	}
	s.self = selfCPU()
	s.total, s.idle = machineTimes()
	return s
}

// newBencher returns a bencher of conversations of 10 turns to urls from
// clients clients, over connections of its own; done closes them.
func newBencher(urls []string, clients int, message string, stateless bool) (bn *bencher, done func()) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = clients
	tr.DisableCompression = true
	return &bencher{
		o:      benchOptions{urls: urls, clients: clients, turns: 10, message: message, stateless: stateless},
		client: &http.Client{Transport: tr},
	}, tr.CloseIdleConnections
}

// measure runs b.N turns of workflow wf from clients concurrent clients
// against the replicas, each conversation on one replica if sticky, and
// reports.
func (rs *replicaSet) measure(b *testing.B, wf, message string, stateless, sticky bool, clients int) {
	var urls []string
	for _, p := range rs.procs {
		urls = append(urls, p.log.url+"/workflows/"+wf)
	}
	bn, done := newBencher(urls, clients, message, stateless)
	defer done()
	if _, err := drive(bn, clients, 3*clients, sticky); err != nil {
		b.Fatalf("warm-up: %v", err)
	}

	before := rs.snapshot(b)
	b.ResetTimer()
	start := time.Now()
	lat, err := drive(bn, clients, b.N, sticky)
	elapsed := time.Since(start)
	b.StopTimer()
	after := rs.snapshot(b)
	if err != nil {
		b.Fatal(err)
	}

	turns := float64(len(lat))
	perTurn := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / turns }
	p := percentilesOf(lat)
	b.ReportMetric(turns/elapsed.Seconds(), "turns/s")
	b.ReportMetric(p.P50, "p50-ms")
	b.ReportMetric(p.P99, "p99-ms")
	aguic, gone := cpuSince(before.aguic, after.aguic)
	if gone > 0 {
		b.Fatalf("%d aguic serve processes died", gone)
	}
	b.ReportMetric(perTurn(aguic), "aguic-µs/turn")
	b.ReportMetric(float64(switchesSince(before.aguicSwitches, after.aguicSwitches))/turns, "aguic-cs/turn")
	client := after.self - before.self
	ours := aguic + client
	if rs.pg != nil {
		backends, gone := cpuSince(before.backends, after.backends)
		if gone > 0 {
			b.Logf("%d backends ended during the turns: their CPU time is not counted", gone)
		}
		listeners, _ := cpuSince(before.listeners, after.listeners)
		server, _ := cpuSince(before.server, after.server)
		b.ReportMetric(perTurn(backends), "pg-µs/turn")
		b.ReportMetric(perTurn(listeners), "pglisten-µs/turn")
		b.ReportMetric(float64(switchesSince(before.pgSwitches, after.pgSwitches))/turns, "pg-cs/turn")
		b.ReportMetric(perTurn(server), "pgserver-µs/turn")
		ours += backends + server
	}
	b.ReportMetric(perTurn(client), "client-µs/turn")
	if total := after.total - before.total; total > 0 {
		busy := after.total - after.idle - (before.total - before.idle)
		b.ReportMetric(100*float64(busy)/float64(total), "busy-%")
		// What the rest of the machine took: the busy time that none of
		// the processes above used (other tests, builds, the kernel's own
		// threads), as a share of the cores' time.
		others := time.Duration(busy)*clockTick - ours
		b.ReportMetric(max(0, 100*float64(others)/float64(time.Duration(total)*clockTick)), "others-%")
	}
}

// drive plays total turns from clients concurrent clients, each playing
// conversations of bn.o.turns turns in threads of their own (round-robin
// over the servers, or each on the server of its first turn if sticky),
// and returns the latency of every turn; the first failed turn stops every
// client and is the error.
func drive(bn *bencher, clients, total int, sticky bool) ([]time.Duration, error) {
	bn.prefix = "bench-" + randomHex(4) // new threads at every call
	var (
		next    atomic.Int64
		mu      sync.Mutex
		all     = make([]time.Duration, 0, total)
		failure error
		wg      sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range clients {
		wg.Go(func() {
			var lat []time.Duration
			defer func() {
				mu.Lock()
				all = append(all, lat...)
				mu.Unlock()
			}()
			for n := 0; ; n++ {
				c := &benchConversation{thread: fmt.Sprintf("%s-%d-%d", bn.prefix, i, n), first: int((bn.started.Add(1) - 1) % int64(len(bn.o.urls)))}
				for range bn.o.turns {
					if next.Add(1) > int64(total) {
						return
					}
					var t turnResult
					if sticky {
						t = bn.turnAt(ctx, c, bn.o.urls[c.first])
						t.server = c.first
					} else {
						t = bn.turn(ctx, c)
					}
					if t.interrupted {
						return
					}
					if t.kind != "" {
						mu.Lock()
						if failure == nil {
							failure = fmt.Errorf("turn %d of %s on %s: %s: %s", c.turns, c.thread, bn.o.urls[t.server], t.kind, t.detail)
							cancel()
						}
						mu.Unlock()
						return
					}
					lat = append(lat, t.total)
				}
			}
		})
	}
	wg.Wait()
	return all, failure
}
