package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// parkWorkflow is the conversation of the parked-conversation measurement:
// a turn says one line and parks the thread at suspend.
const parkWorkflow = `wf 1

workflow park {
  title        = "Park"
  conversation = true

  flow {
    top: say "ok <<$agent.latestUserMessage.content>>"
    wait: suspend
    goto top
  }
}
`

// parkedTarget reads AGUIC_PARKED: the number of conversations to park;
// the measurements skip without it.
func parkedTarget(t *testing.T) int {
	t.Helper()
	v := os.Getenv("AGUIC_PARKED")
	if v == "" {
		t.Skip("set AGUIC_PARKED=100000 to measure the memory of parked conversations (takes minutes)")
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("AGUIC_PARKED=%q: want a positive number", v)
	}
	return n
}

// parkedIdle reads AGUIC_PARKED_IDLE: how long the measurements let the
// server idle before measuring once more (Badger frees its pooled table
// builders after some idle seconds, and Go returns memory to the system
// gradually).
func parkedIdle(t *testing.T) time.Duration {
	v := os.Getenv("AGUIC_PARKED_IDLE")
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("AGUIC_PARKED_IDLE=%q: %v", v, err)
	}
	return d
}

// parkedCheckpoints are the numbers of parked conversations at which the
// measurements report, up to n; n itself is always one.
func parkedCheckpoints(n int) []int {
	var cps []int
	for _, c := range []int{0, 1_000, 10_000, 20_000, 50_000} {
		if c < n {
			cps = append(cps, c)
		}
	}
	return append(cps, n)
}

// TestParkedRSS measures the resident memory of the real aguic serve
// process as conversations park at a suspend node: it builds the binary,
// serves parkWorkflow from a fresh data directory, parks AGUIC_PARKED
// conversations (one turn each, from 16 clients) and prints VmRSS,
// RssAnon and RssFile of the server at 0, 1k, 10k, 20k, 50k and
// AGUIC_PARKED parked conversations, then again after a restart on the
// same data and after one more turn on 1,000 of the parked threads.
//
//	AGUIC_PARKED=100000 go test ./cmd/aguic -run TestParkedRSS -v -timeout 30m
func TestParkedRSS(t *testing.T) {
	n := parkedTarget(t)
	dir := t.TempDir()
	bin := buildAguic(t, dir)
	wfDir := writeWorkflow(t, dir, "park.wf", parkWorkflow)
	data := filepath.Join(dir, "data")

	p := startParkedServer(t, bin, wfDir, data)
	url := p.url + "/agui/workflows/park"
	d := newParkDriver(url)
	report := func(label string) {
		time.Sleep(3 * time.Second) // let the compactors and the GC settle
		t.Logf("%-28s %s  data %s", label, parkedMem(t, p.cmd.Process.Pid), parkedDirSize(data))
		if os.Getenv("AGUIC_PARKED_SMAPS") != "" {
			t.Logf("resident by mapping:\n%s", parkedSmaps(p.cmd.Process.Pid))
		}
	}
	for _, c := range parkedCheckpoints(n) {
		d.park(t, c)
		report(fmt.Sprintf("%d parked", c))
	}
	if idle := parkedIdle(t); idle > 0 {
		// Twice: soon after the burst, then at rest.
		soon := min(idle, 4*time.Second)
		time.Sleep(soon)
		report(fmt.Sprintf("%d parked, idle %s", n, soon+6*time.Second))
		if idle > soon {
			time.Sleep(idle - soon)
			report(fmt.Sprintf("%d parked, idle %s", n, idle+9*time.Second))
		}
	}
	p.stop(t)

	p = startParkedServer(t, bin, wfDir, data)
	report(fmt.Sprintf("restarted, %d parked", n))
	d = newParkDriver(p.url + "/agui/workflows/park")
	d.resume(t, min(n, 1_000))
	report(fmt.Sprintf("%d of them resumed", min(n, 1_000)))
	p.stop(t)
}

// TestParkedHeap is TestParkedRSS in the test's process, where the Go
// heap can be read: at each checkpoint it prints the process's VmRSS and
// the runtime's heap in use, and with AGUIC_PARKED_PROFILE=dir writes a
// heap profile there (heap-N.pprof) for `go tool pprof -top`.
//
//	AGUIC_PARKED=100000 AGUIC_PARKED_PROFILE=/tmp/parked go test ./cmd/aguic -run TestParkedHeap -v -timeout 30m
func TestParkedHeap(t *testing.T) {
	n := parkedTarget(t)
	profiles := os.Getenv("AGUIC_PARKED_PROFILE")
	if profiles != "" {
		if err := os.MkdirAll(profiles, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	wfDir := writeWorkflow(t, dir, "park.wf", parkWorkflow)
	data := filepath.Join(dir, "data")

	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	code := make(chan int, 1)
	o := serveOptions{dir: wfDir, where: where{data: data}, addr: "127.0.0.1:0", basePath: "/agui", deadline: -1, maxSteps: 1000}
	o.ready = func(url string) { urls <- url }
	go func() { code <- serve(ctx, e, o) }()
	var url string
	select {
	case url = <-urls:
	case c := <-code:
		cancel()
		t.Fatalf("serve exited with %d", c)
	}
	defer func() {
		cancel()
		<-code
	}()
	d := newParkDriver(url + "/agui/workflows/park")
	for _, c := range parkedCheckpoints(n) {
		d.park(t, c)
		time.Sleep(3 * time.Second)
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		t.Logf("%-12s %s  heap in use %5.1f MiB, sys %5.1f MiB, goroutines %d, data %s",
			fmt.Sprintf("%d parked", c), parkedMem(t, os.Getpid()),
			parkedMiB(ms.HeapInuse), parkedMiB(ms.Sys), runtime.NumGoroutine(), parkedDirSize(data))
		if profiles != "" {
			f, err := os.Create(filepath.Join(profiles, fmt.Sprintf("heap-%d.pprof", c)))
			if err != nil {
				t.Fatal(err)
			}
			if err := pprof.WriteHeapProfile(f); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
}

func parkedMiB(b uint64) float64 { return float64(b) / (1 << 20) }

// parkedServer is aguic serve running as a process of its own.
type parkedServer struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{} // closed when its standard error is drained
}

// startParkedServer starts bin serve on a free loopback port and returns once it
// listens; its log is read and dropped.
func startParkedServer(t *testing.T, bin, wfDir, data string) *parkedServer {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", data, wfDir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &parkedServer{cmd: cmd, done: make(chan struct{})}
	urls := make(chan string, 1)
	go func() {
		defer close(c.done)
		br := bufio.NewReader(stderr)
		for {
			line, err := br.ReadString('\n')
			if i := strings.Index(line, "msg=serving url="); i >= 0 && c.url == "" {
				u := strings.Fields(line[i+len("msg=serving url="):])[0]
				urls <- strings.TrimSuffix(u, "/agui")
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case c.url = <-urls:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("aguic serve did not listen within a minute")
	}
	return c
}

// stop stops the server as SIGTERM does and waits for it.
func (c *parkedServer) stop(t *testing.T) {
	t.Helper()
	c.cmd.Process.Signal(syscall.SIGTERM)
	<-c.done
	if err := c.cmd.Wait(); err != nil {
		t.Errorf("aguic serve: %v", err)
	}
}

// parkDriver parks conversations on one server: thread i is "park-i".
type parkDriver struct {
	url    string
	hc     *http.Client
	parked int
}

func newParkDriver(url string) *parkDriver {
	return &parkDriver{url: url, hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}}
}

// park parks conversations until upTo of them are parked.
func (d *parkDriver) park(t *testing.T, upTo int) {
	t.Helper()
	d.turns(t, d.parked, upTo, 1)
	d.parked = max(d.parked, upTo)
}

// resume sends a second turn to the threads 0 to n-1, which parks them
// again.
func (d *parkDriver) resume(t *testing.T, n int) { d.turns(t, 0, n, 2) }

// turns sends turn number turn to the threads from, …, to-1, from 16
// clients at once, and fails t unless every stream ends with RUN_FINISHED.
func (d *parkDriver) turns(t *testing.T, from, to, turn int) {
	t.Helper()
	var next atomic.Int64
	next.Store(int64(from))
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			var body bytes.Buffer
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= to {
					return
				}
				body.Reset()
				fmt.Fprintf(&body, `{"threadId":"park-%d","runId":"park-%d-r%d","messages":[{"id":"park-%d-m%d","role":"user","content":"hello %d"}]}`, i, i, turn, i, turn, i)
				req, _ := http.NewRequest(http.MethodPost, d.url, bytes.NewReader(body.Bytes()))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "text/event-stream")
				resp, err := d.hc.Do(req)
				if err != nil {
					failed.Store(true)
					t.Errorf("thread park-%d: %v", i, err)
					return
				}
				out, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"type":"RUN_FINISHED"`)) {
					failed.Store(true)
					t.Errorf("thread park-%d: status %d, %v: %s", i, resp.StatusCode, err, out)
					return
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() {
		t.FailNow()
	}
}

// parkedMem reads the resident memory of process pid from /proc.
func parkedMem(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "(no /proc: " + err.Error() + ")"
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			fields[k] = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB"))
		}
	}
	mb := func(k string) string {
		kb, _ := strconv.Atoi(fields[k])
		return fmt.Sprintf("%s %6.1f MB", k, float64(kb)/1000)
	}
	return mb("VmRSS") + ", " + mb("RssAnon") + ", " + mb("RssFile")
}

// parkedSmaps sums the resident memory of process pid by what is mapped: each
// file by its name, anonymous memory as "[anon]".
func parkedSmaps(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return err.Error()
	}
	rss := map[string]int{}
	name := ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			name = "[anon]"
			if len(f) >= 6 {
				name = filepath.Base(f[5])
			}
		case len(f) >= 2 && f[0] == "Rss:":
			kb, _ := strconv.Atoi(f[1])
			rss[name] += kb
		}
	}
	type entry struct {
		name string
		kb   int
	}
	var list []entry
	for n, kb := range rss {
		if kb >= 512 {
			list = append(list, entry{n, kb})
		}
	}
	slices.SortFunc(list, func(a, b entry) int { return b.kb - a.kb })
	var sb strings.Builder
	for _, e := range list {
		fmt.Fprintf(&sb, "\t%8.1f MB  %s\n", float64(e.kb)/1000, e.name)
	}
	return sb.String()
}

// parkedDirSize is the disk space the files under dir take.
func parkedDirSize(dir string) string {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok {
					n += st.Blocks * 512 // on disk: Badger's files are sparse
				} else {
					n += fi.Size()
				}
			}
		}
		return nil
	})
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}
