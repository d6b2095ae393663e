package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aguic/aguic/internal/pgtest"
)

// This file holds what the process-level benchmarks (BenchmarkReplicas,
// BenchmarkRecovery) share: the binary, aguic serve processes, and the CPU
// time of processes read from /proc.

// buildBench builds the aguic binary into dir and returns its path.
func buildBench(tb testing.TB, dir string) string {
	tb.Helper()
	bin := filepath.Join(dir, "aguic")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		tb.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// writeFiles writes files (name: text) into dir, which it makes.
func writeFiles(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// startReplica starts bin serve with args (the store, the lease TTL) on a
// free loopback port, serving wfDir, and returns once it listens; it is
// stopped as SIGTERM does when tb ends, unless it was killed before.
func startReplica(tb testing.TB, bin, wfDir string, env []string, args ...string) *crashProc {
	tb.Helper()
	args = append(append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), wfDir)
	p, err := startCrashProc(bin, args, append(os.Environ(), env...))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { stopReplica(tb, p) })
	return p
}

// stopReplica stops p as SIGTERM does and waits for it.
func stopReplica(tb testing.TB, p *crashProc) {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		if p.err != nil {
			tb.Errorf("aguic serve: %v\n%s", p.err, crashTail(p.log.String(), 20))
		}
	case <-time.After(time.Minute):
		p.kill()
		tb.Errorf("aguic serve did not stop within a minute of SIGTERM")
	}
}

// pgStoreArg is the --store URL of schema on the test server, its
// connections named app (application_name), so that pg_stat_activity
// tells them apart.
func pgStoreArg(tb testing.TB, schema, app string) string {
	u, err := url.Parse(pgtest.URL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	if app != "" {
		q.Set("application_name", app)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// clockTick is the unit of the CPU times of /proc/PID/stat (USER_HZ,
// 100 on Linux).
const clockTick = 10 * time.Millisecond

// procCPU is the CPU time process pid used so far, user and system, of
// all its threads: fields 14 and 15 of /proc/PID/stat, in clock ticks;
// false when the process is gone (or there is no /proc).
func procCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:])) // from field 3
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * clockTick, true
}

// procSwitches is how many times the threads of process pid were
// switched off a core so far, voluntarily (to wait) or not (preempted):
// the sum over /proc/PID/task/*/status; false when the process is gone.
func procSwitches(pid int) (int64, bool) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, false
	}
	var n int64
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name()))
		if err != nil {
			continue // the thread ended
		}
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && (k == "voluntary_ctxt_switches" || k == "nonvoluntary_ctxt_switches") {
				c, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				n += c
			}
		}
	}
	return n, true
}

// switchesOf is procSwitches of each process of pids that is still there.
func switchesOf(pids []int) map[int]int64 {
	m := make(map[int]int64, len(pids))
	for _, pid := range pids {
		if n, ok := procSwitches(pid); ok {
			m[pid] = n
		}
	}
	return m
}

// switchesSince sums what each process of after switched since before.
func switchesSince(before, after map[int]int64) (n int64) {
	for pid, a := range after {
		n += a - before[pid]
	}
	return n
}

// procsCPU is the CPU time of each process of pids that is still there.
func procsCPU(pids []int) map[int]time.Duration {
	m := make(map[int]time.Duration, len(pids))
	for _, pid := range pids {
		if d, ok := procCPU(pid); ok {
			m[pid] = d
		}
	}
	return m
}

// cpuSince is the CPU time the processes of after used since before: a
// process that started in between counts from zero (all its time is in
// the interval); one that ended in between is lost, and counted in gone.
func cpuSince(before, after map[int]time.Duration) (d time.Duration, gone int) {
	for pid, a := range after {
		d += a - before[pid]
	}
	for pid := range before {
		if _, ok := after[pid]; !ok {
			gone++
		}
	}
	return d, gone
}

// selfCPU is the CPU time of this process so far (the benchmark's
// clients), user and system.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// machineTimes are the machine's CPU times from the first line of
// /proc/stat, in clock ticks: all of them, and the idle ones (idle and
// iowait).
func machineTimes() (total, idle int64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0
	}
	for i, s := range f[1:] {
		n, _ := strconv.ParseInt(s, 10, 64)
		if i < 8 { // user … steal; guest times are in user already
			total += n
		}
		if i == 3 || i == 4 {
			idle += n
		}
	}
	return total, idle
}

// pgProcs finds the PostgreSQL processes whose CPU a benchmark counts,
// through pg_stat_activity on a connection of its own: the backends of
// the connections named app (the replicas'), and the server's own
// processes (checkpointer, background writer, WAL writer, launchers and
// the postmaster, their parent), which work for every client of the
// server.
type pgProcs struct {
	conn *pgx.Conn
	app  string
}

func newPGProcs(tb testing.TB, app string) *pgProcs {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgtest.URL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close(context.Background()) })
	return &pgProcs{conn: conn, app: app}
}

// pids lists the replicas' backends, those of them that listen for
// notifications (whose last statement was LISTEN: one per replica), and
// the server's own processes.
func (p *pgProcs) pids(tb testing.TB) (backends, listeners, server []int) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := p.conn.Query(ctx, `SELECT pid, application_name = $1, query LIKE 'LISTEN %' FROM pg_stat_activity
		WHERE application_name = $1 OR backend_type <> 'client backend'`, p.app)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var pid int
		var ours, listens bool
		if err := rows.Scan(&pid, &ours, &listens); err != nil {
			tb.Fatal(err)
		}
		switch {
		case ours && listens:
			listeners = append(listeners, pid)
			backends = append(backends, pid)
		case ours:
			backends = append(backends, pid)
		default:
			server = append(server, pid)
		}
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	if len(server) > 0 { // the postmaster
		if ppid := parentPID(server[0]); ppid > 1 {
			server = append(server, ppid)
		}
	}
	return backends, listeners, server
}

// parentPID is field 4 of /proc/PID/stat; 0 when unknown.
func parentPID(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}
