package server_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/metrics"
	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store/badger"
)

// benchChat is the conversation of the serving benchmarks: a turn says one
// line and suspends, so a turn is mostly the server's own work (HTTP, the
// run, its commits, the stream).
const benchChat = `wf 1

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

// benchClients are the numbers of concurrent clients the serving
// benchmarks measure.
var benchClients = []int{1, 16, 64}

// BenchmarkTurns measures short conversation turns served end to end over
// loopback: the HTTP request, the run, its commits to an on-disk store
// (a turn's start and end synced, as aguic serve does) and the SSE stream read
// to its end. Each client has its own thread and sends its turns back to
// back; b.N is the number of turns of all clients together.
func BenchmarkTurns(b *testing.B) {
	url := benchServer(b, badger.Options{Dir: b.TempDir()})
	for _, n := range benchClients {
		b.Run("clients="+strconv.Itoa(n), func(b *testing.B) {
			benchTurns(b, url+"/agui/workflows/chat", n)
		})
	}
}

// BenchmarkMemoryTurns is BenchmarkTurns on an in-memory store: the
// same work but for the disk, which no commit waits for.
func BenchmarkMemoryTurns(b *testing.B) {
	url := benchServer(b, badger.Options{InMemory: true})
	for _, n := range benchClients {
		b.Run("clients="+strconv.Itoa(n), func(b *testing.B) {
			benchTurns(b, url+"/agui/workflows/chat", n)
		})
	}
}

// BenchmarkBareTurns is the ceiling of BenchmarkTurns: the same clients
// against a bare net/http handler that answers every request with the
// bytes of one real turn's response, and does nothing else.
func BenchmarkBareTurns(b *testing.B) {
	// One real response, captured once.
	url := benchServer(b, badger.Options{InMemory: true})
	c := newBenchClient(url+"/agui/workflows/chat", "capture", nil)
	c.turn(b) // the first turn creates the thread; capture a later one
	c.turn(b)
	body := bytes.Clone(c.buf.Bytes())
	c.close()

	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		w.Write(body)
	}))
	b.Cleanup(bare.Close)
	for _, n := range benchClients {
		b.Run("clients="+strconv.Itoa(n), func(b *testing.B) {
			benchTurns(b, bare.URL+"/agui/workflows/chat", n)
		})
	}
}

// benchServer serves benchChat from the store opts opens on a loopback
// listener, and returns its URL.
func benchServer(b *testing.B, opts badger.Options) string {
	src := compiler.Source{Name: "chat.wf", Text: lang.Clean([]byte(benchChat))}
	return benchServerOf(b, opts, src, stdlib.Options{})
}

// benchServerOf serves src, with the builtins of lib, from the store opts
// opens on a loopback listener, and returns its URL.
func benchServerOf(b *testing.B, opts badger.Options, src compiler.Source, lib stdlib.Options) string {
	return benchServerWith(b, opts, src, lib, nil, nil)
}

// benchServerWith is benchServerOf with the metrics of m wired as aguic
// serve wires them (nil m: no metrics), and the server's Config as edit
// leaves it (nil: as it is).
func benchServerWith(b *testing.B, opts badger.Options, src compiler.Source, lib stdlib.Options, m *metrics.Metrics, edit func(*server.Config)) string {
	b.Helper()
	lib.Models = m.Models(lib.Models)
	lib.ToolCall = m.ToolCall()
	lib.Getenv = func(string) string { return "" }
	reg := vm.NewRegistry()
	stdlib.RegisterWith(reg, lib)
	prog, diags := compiler.Compile(reg, src)
	if diags.HasErrors() {
		b.Fatalf("compile: %v", diags.Err())
	}
	bundle, _ := compiler.Bundle([]compiler.Source{src})
	log := slog.New(slog.DiscardHandler)
	opts.Logger = log
	st, err := badger.Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	m.CountThreads(st, 0, log)
	cfg := server.Config{
		Machine: &vm.Machine{Program: prog, Registry: reg},
		Bundle:  bundle,
		Store:   m.Store(st),
		Logger:  log,
		MCP:     true, // as aguic serve
		Metrics: m,
	}
	if edit != nil {
		edit(&cfg)
	}
	srv, err := server.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(srv.Handler())
	hs.Config.ReadHeaderTimeout = 10 * time.Second // as aguic serve
	hs.Start()
	b.Cleanup(func() {
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			b.Errorf("shutdown: %v", err)
		}
		st.Close()
	})
	return hs.URL
}

// benchTurns runs b.N turns from n concurrent clients against url and
// reports turns per second and the median and 99th percentile latency of
// a turn: from sending the request to the end of its stream.
func benchTurns(b *testing.B, url string, n int) {
	tr := &http.Transport{
		MaxIdleConns:        2 * n,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	// Each invocation has threads of its own; their first turn, which
	// creates the thread, is not measured.
	clients := make([]*benchClient, n)
	for i := range clients {
		clients[i] = newBenchClient(url, fmt.Sprintf("bench-%d", benchThreads.Add(1)), hc)
		clients[i].turn(b)
		clients[i].lat = make([]time.Duration, 0, b.N/n+1)
	}
	var wg sync.WaitGroup
	b.ResetTimer()
	cpu0 := cpuTime()
	start := time.Now()
	for i, c := range clients {
		turns := b.N / n
		if i < b.N%n {
			turns++
		}
		wg.Go(func() {
			for range turns {
				if !c.turn(b) {
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	var lat []time.Duration
	for _, c := range clients {
		lat = append(lat, c.lat...)
	}
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	ms := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "turns/s")
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
	// The CPU time of the process (server and clients) per turn: what a
	// turn costs whatever else the machine runs (0 where cpuTime cannot
	// tell).
	b.ReportMetric(float64(cpu)/float64(len(lat))/float64(time.Microsecond), "cpu-µs/turn")
}

// benchThreads numbers the threads of the benchmarks' clients.
var benchThreads atomic.Int64

// benchClient is one client of a serving benchmark: one thread, one turn
// at a time, as an AG-UI HttpAgent sends them.
type benchClient struct {
	hc     *http.Client
	own    *http.Transport // closed by close, when the client made it
	url    string
	thread string
	n      int             // turns sent
	body   bytes.Buffer    // the request being built
	buf    bytes.Buffer    // the last response
	lat    []time.Duration // of every turn
	failed bool            // the first failure is reported, not the rest
}

func newBenchClient(url, thread string, hc *http.Client) *benchClient {
	c := &benchClient{hc: hc, url: url, thread: thread}
	if hc == nil {
		c.own = &http.Transport{}
		c.hc = &http.Client{Transport: c.own}
	}
	return c
}

func (c *benchClient) close() {
	if c.own != nil {
		c.own.CloseIdleConnections()
	}
}

// turn sends the client's next turn and reads its stream to the end; it
// fails b (and returns false) unless the stream ends with RUN_FINISHED.
func (c *benchClient) turn(b *testing.B) bool {
	c.n++
	c.body.Reset()
	fmt.Fprintf(&c.body, `{"threadId":%q,"runId":"%s-r%d","messages":[{"id":"%s-m%d","role":"user","content":"hello %d"}],"state":{},"tools":[],"context":[],"forwardedProps":{}}`,
		c.thread, c.thread, c.n, c.thread, c.n, c.n)
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(c.body.Bytes()))
	if err != nil {
		return c.fail(b, err.Error())
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	start := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.fail(b, err.Error())
	}
	c.buf.Reset()
	_, err = c.buf.ReadFrom(resp.Body)
	resp.Body.Close()
	c.lat = append(c.lat, time.Since(start))
	switch {
	case err != nil:
		return c.fail(b, err.Error())
	case resp.StatusCode != http.StatusOK:
		return c.fail(b, fmt.Sprintf("status %d: %s", resp.StatusCode, c.buf.Bytes()))
	case !bytes.Contains(c.buf.Bytes(), []byte(`"type":"RUN_FINISHED"`)):
		return c.fail(b, "the stream does not end with RUN_FINISHED: "+c.buf.String())
	}
	return true
}

func (c *benchClient) fail(b *testing.B, msg string) bool {
	if !c.failed {
		c.failed = true
		b.Errorf("thread %s, turn %d: %s", c.thread, c.n, msg)
	}
	return false
}

// benchRelay is the workflow of BenchmarkModelRelay: one model node,
// whose answer the server relays as it streams.
const benchRelay = `wf 1

workflow relay {
  title = "Relay"

  flow {
    answer: model {
      prompt = "hi"
    } -> $reply
  }
}
`

// benchProvider is a model that answers with tokens chunks of text as
// fast as it can, and notes when it sent the first.
type benchProvider struct {
	tokens int
	base   time.Time
	first  atomic.Int64 // since base, in ns
}

func (p *benchProvider) Stream(ctx context.Context, req *llm.Request, on func(llm.Chunk) error) (*llm.Response, error) {
	for i := range p.tokens {
		if i == 0 {
			p.first.Store(int64(time.Since(p.base)))
		}
		if err := on(llm.Chunk{Text: "tok "}); err != nil {
			return nil, err
		}
	}
	return &llm.Response{Text: strings.Repeat("tok ", p.tokens), Usage: llm.Usage{OutputTokens: p.tokens}}, nil
}

// BenchmarkModelRelay measures how a model's answer is relayed to the
// client over loopback, the run persisted on disk as in BenchmarkTurns.
// first-token: from the provider handing the server its first token to
// the client reading the SSE frame that carries it (one run per
// iteration). stream: the tokens per second of one stream of 10,000 tokens,
// from the first token sent to the last token's frame read.
func BenchmarkModelRelay(b *testing.B) {
	p := &benchProvider{base: time.Now()}
	benchModelRelay(b, p, p.base, func(n int) { p.tokens = n }, p.first.Load)
}

// BenchmarkModelRelayHTTP is BenchmarkModelRelay with a model API on
// loopback: an OpenAI-compatible server streams the answer as chat
// completion chunks, flushed one by one, to the server's OpenAI provider.
// first-token runs from the model API flushing its first chunk to the
// client reading the frame that carries it.
func BenchmarkModelRelayHTTP(b *testing.B) {
	api := &benchAPI{base: time.Now()}
	upstream := httptest.NewServer(api)
	b.Cleanup(upstream.Close)
	p := llm.NewOpenAI(llm.OpenAIOptions{APIKey: "bench", BaseURL: upstream.URL})
	benchModelRelay(b, p, api.base, func(n int) { api.tokens.Store(int64(n)) }, api.first.Load)
}

// benchAPI is an OpenAI-compatible chat completions API that streams
// tokens chunks of text and notes when it flushed the first.
type benchAPI struct {
	tokens atomic.Int64
	base   time.Time
	first  atomic.Int64 // since base, in ns
}

func (a *benchAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	f := w.(http.Flusher)
	chunk := []byte(`data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"x","choices":[{"index":0,"delta":{"content":"tok "}}]}` + "\n\n")
	n := int(a.tokens.Load())
	for i := range n {
		w.Write(chunk)
		f.Flush()
		if i == 0 {
			a.first.Store(int64(time.Since(a.base)))
		}
	}
	fmt.Fprintf(w, `data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":%d,"total_tokens":%d}}`+"\n\ndata: [DONE]\n\n", n, n+1)
}

// benchModelRelay runs the sub-benchmarks of the relay benchmarks against
// model, whose tokens setTokens sets and whose first token firstAt tells,
// in ns since base.
func benchModelRelay(b *testing.B, model llm.Provider, base time.Time, setTokens func(int), firstAt func() int64) {
	src := compiler.Source{Name: "relay.wf", Text: lang.Clean([]byte(benchRelay))}
	url := benchServerOf(b, badger.Options{Dir: b.TempDir()}, src, stdlib.Options{
		Models:       llm.Resolver(map[string]llm.Provider{"bench": model}),
		DefaultModel: "bench/x",
	}) + "/agui/workflows/relay"
	hc := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer hc.CloseIdleConnections()
	body := `{"threadId":"t","messages":[{"id":"m","role":"user","content":"hi"}]}`

	// relay runs one stream and returns when the client read the first
	// and the last token's frame, since base.
	relay := func(b *testing.B) (first, last time.Duration) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		br := bufio.NewReaderSize(resp.Body, 64<<10)
		content := []byte(`data: {"type":"TEXT_MESSAGE_CONTENT"`)
		finished := false
		for {
			line, err := br.ReadSlice('\n')
			if bytes.HasPrefix(line, content) {
				last = time.Since(base)
				if first == 0 {
					first = last
				}
			}
			if bytes.Contains(line, []byte(`"type":"RUN_FINISHED"`)) {
				finished = true
			}
			if err == io.EOF {
				break
			}
			if err != nil && err != bufio.ErrBufferFull {
				b.Fatal(err)
			}
		}
		if !finished || first == 0 {
			b.Fatal("the stream did not relay the answer and finish")
		}
		return first, last
	}

	b.Run("first-token", func(b *testing.B) {
		setTokens(10)
		relay(b) // the first run opens the connection
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			first, _ := relay(b)
			lat = append(lat, first-time.Duration(firstAt()))
		}
		b.StopTimer()
		slices.Sort(lat)
		us := func(q float64) float64 {
			return float64(lat[int(q*float64(len(lat)-1))]) / float64(time.Microsecond)
		}
		b.ReportMetric(us(0.50), "p50-µs")
		b.ReportMetric(us(0.99), "p99-µs")
	})
	b.Run("stream", func(b *testing.B) {
		setTokens(10_000)
		var relayed time.Duration
		for range b.N {
			_, last := relay(b)
			relayed += last - time.Duration(firstAt())
		}
		b.ReportMetric(float64(10_000*b.N)/relayed.Seconds(), "tokens/s")
	})
}
