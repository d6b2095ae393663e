package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aguic/aguic/server/agui"
)

func benchCommand() *command {
	c := &command{
		name:    "bench",
		args:    "--url url[,url…] [--clients n] [--turns n] [--duration duration] [--message text] [--token token] [--stateless] [--json]",
		summary: "load a running server with concurrent AG-UI conversations",
		doc: `
Bench drives concurrent AG-UI conversations against a running server and
measures them: --url is the endpoint of one workflow, such as
http://127.0.0.1:8080/agui/workflows/chat, and each of the --clients
clients plays conversations of --turns turns against it, one after the
other, each in a thread of its own. A turn posts a user message (--message)
and reads the event stream to its terminal event. Without --duration each
client plays one conversation; with it, the clients start new
conversations until that much time has passed, and the turns in progress
then finish. SIGINT stops the clients at once and reports what was
measured.

Several servers that share one store (replicas of aguic serve --store)
are named by repeating --url, or by separating the URLs with commas: the
turns then go to the servers in turn, round-robin, each conversation
starting at the server after the one the conversation before it started
at, so that two turns in a row of one conversation never go to the same
server (unless a URL is given twice), as a load balancer that does not
pin threads to servers may send them.

A conversation workflow keeps the conversation in its thread: each turn
sends only the new message, as its clients do. With --stateless each turn
sends the whole history instead, the user messages and the assistant's
answers so far, as the clients of a stateless workflow do. Bench first
describes the workflow (a GET of the URL) and warns when the mode does not
fit it; a URL it cannot reach, or a workflow the server does not have, is
an error before any turn. With several URLs, bench describes each.

A turn succeeds when its stream ends with RUN_FINISHED. Failed turns are
counted by kind: an HTTP status other than 200 (401 without a valid
--token, 409 when the thread is busy), RUN_ERROR, a stream that breaks off
or is not AG-UI, a connection that fails. A failed turn ends its
conversation; a client whose connection fails stops. A turn whose run ends
waiting for frontend tool results or interrupt answers succeeds, and the
report counts it as waiting: bench sends neither, so its next turn of that
conversation is a new user message.

The report gives the turns that succeeded, their rate, the failures, and
the latency percentiles (p50, p90, p99 and the maximum) of the successful
turns: the whole turn, from sending the request to reading the terminal
event; the first event; and the first text delta (TEXT_MESSAGE_CONTENT).
With several URLs it also gives the turns and failures of each server.
It is a table on standard output, or with --json one object (durations in
milliseconds). The clients run in this process: on the server's machine
they take their share of its CPU.`,
		examples: `
# Sixteen clients for ten seconds against the stateless example chat.
aguic bench --url http://127.0.0.1:8080/agui/workflows/chat --stateless --clients 16 --duration 10s
# One conversation of 50 turns with a bearer token, the report as JSON.
aguic bench --url http://127.0.0.1:8080/agui/workflows/support_chat --turns 50 --token "$TOKEN" --json
# Two replicas on one PostgreSQL database, the turns of each conversation alternating between them.
aguic bench --url http://10.0.0.1:8080/agui/workflows/support_chat,http://10.0.0.2:8080/agui/workflows/support_chat --clients 16 --duration 10s`,
		exit: "0 when every turn succeeded, 1 when some failed, 2 on a usage error or when the server cannot be reached.",
		vars: map[string]string{"json": ""},
	}
	c.flags = func(fs *flag.FlagSet) func(*env, []string) int {
		o := benchOptions{clients: 1, turns: 10, message: "hello"}
		fs.Var((*urlList)(&o.urls), "url", "the `url` of the workflow to run, {base}/workflows/{id}; repeated or comma-separated for several servers, which the turns go to in turn")
		checkedVar(fs, &o.clients, "clients", "1", "the `n`umber of concurrent clients, at most 10000", atMost(maxBenchClients))
		checkedVar(fs, &o.turns, "turns", "10", "the `n`umber of turns of each conversation", positive)
		checkedVar(fs, &o.duration, "duration", "", "keep starting conversations for this `duration`; one per client by default", durationAtLeast(1))
		fs.StringVar(&o.message, "message", o.message, "the `text` of every user message")
		fs.StringVar(&o.token, "token", "", "send this bearer `token`")
		fs.BoolVar(&o.stateless, "stateless", false, "send the whole history every turn, as the clients of a stateless workflow do")
		asJSON := fs.Bool("json", false, "print the report as a JSON object")
		return func(e *env, args []string) int {
			if len(args) > 0 {
				return usageError(e, c, "unexpected arguments: give the URL with --url")
			}
			if len(o.urls) == 0 {
				return usageError(e, c, "--url is required: the URL of a workflow, such as http://127.0.0.1:8080/agui/workflows/chat")
			}
			for _, s := range o.urls {
				if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return usageError(e, c, "--url: %q is not an http or https URL", s)
				}
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return benchmark(ctx, e, o, *asJSON)
		}
	}
	return c
}

// benchOptions is what aguic bench was asked to do.
type benchOptions struct {
	urls      []string // the turns go to them in turn
	clients   int
	turns     int           // per conversation
	duration  time.Duration // 0: one conversation per client
	message   string
	token     string
	stateless bool
}

// urlList is the flag --url: each value, given once or repeated, is one
// URL or several separated by commas, appended in order; empty parts are
// left out. The URLs are checked once the flags are parsed.
type urlList []string

func (l *urlList) Set(s string) error {
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*l = append(*l, part)
		}
	}
	return nil
}

func (l *urlList) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

// benchmark runs the clients and reports; the result is the exit status.
func benchmark(ctx context.Context, e *env, o benchOptions, asJSON bool) int {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = o.clients // keep every client's connection to each server
	tr.DisableCompression = true
	b := &bencher{o: o, client: &http.Client{Transport: tr}, prefix: "bench-" + randomHex(4)}
	defer tr.CloseIdleConnections()

	if err := b.describe(ctx, e); err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	mode := "conversation"
	if o.stateless {
		mode = "stateless"
	}
	span := fmt.Sprintf("%d %s", o.turns, plural(o.turns, "turn"))
	if o.duration > 0 {
		span = "conversations of " + span + " for " + o.duration.String()
	} else {
		span = "one conversation of " + span + " each"
	}
	against := o.urls[0]
	if len(o.urls) > 1 {
		against = fmt.Sprintf("%d servers in turn: %s", len(o.urls), strings.Join(o.urls, ", "))
	}
	fmt.Fprintf(e.stderr, "aguic bench: %d %s, %s mode, %s, against %s\n", o.clients, plural(o.clients, "client"), mode, span, against)

	start := time.Now()
	if o.duration > 0 {
		b.deadline = start.Add(o.duration)
	}
	results := make(chan *benchStats, o.clients)
	for i := range o.clients {
		go func() { results <- b.play(ctx, i) }()
	}
	total := &benchStats{}
	for range o.clients {
		total.merge(<-results)
	}
	r := b.report(total, time.Since(start), ctx.Err() != nil)
	if asJSON {
		out, _ := json.MarshalIndent(r, "", "  ")
		fmt.Fprintf(e.stdout, "%s\n", out)
	} else {
		r.write(e.stdout)
	}
	if r.ErrorCount > 0 {
		return exitFound
	}
	return exitOK
}

// bencher holds what the clients share; only the clients' own statistics
// change while they run.
type bencher struct {
	o        benchOptions
	client   *http.Client
	prefix   string       // of the thread ids, different at every run
	deadline time.Time    // when to start no more conversations; zero: none
	started  atomic.Int64 // conversations started: the next starts at server started % len(urls)
}

// maxBenchClients is the most clients one bench runs: each is a
// goroutine and a connection, and one machine opens only so many.
const maxBenchClients = 10000

// describe GETs each workflow URL before any turn: a server that cannot
// be reached, or that has no such workflow (404), is an error, and a mode
// that does not fit the workflow a warning (once for each workflow id).
// Other answers will do: a 401 shows in the turns.
func (b *bencher) describe(ctx context.Context, e *env) error {
	warned := map[string]bool{}
	for _, u := range b.o.urls {
		if err := b.describeOne(ctx, e, u, warned); err != nil {
			return err
		}
	}
	return nil
}

func (b *bencher) describeOne(ctx context.Context, e *env, u string, warned map[string]bool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	b.authorize(req)
	resp, err := b.client.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach %s: %v", u, unwrapURLError(err))
	}
	defer resp.Body.Close()
	var info struct {
		ID           string `json:"id"`
		Conversation *bool  `json:"conversation"`
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode == http.StatusNotFound {
		detail := problemDetail(body)
		if detail == "" {
			detail = resp.Status
		}
		return fmt.Errorf("%s: %s", u, detail)
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &info) != nil || info.Conversation == nil || warned[info.ID] {
		return nil
	}
	warned[info.ID] = true
	switch {
	case *info.Conversation && b.o.stateless:
		e.errorf("warning: %s is a conversation workflow: its clients send only the new message; leave out --stateless to do as they do", info.ID)
	case !*info.Conversation && !b.o.stateless:
		e.errorf("warning: %s is a stateless workflow: its clients send the whole history; add --stateless to do as they do", info.ID)
	}
	return nil
}

func (b *bencher) authorize(req *http.Request) {
	if b.o.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.o.token)
	}
}

// stopping reports whether a client should start nothing more.
func (b *bencher) stopping(ctx context.Context) bool {
	return ctx.Err() != nil || (!b.deadline.IsZero() && !time.Now().Before(b.deadline))
}

// play is one client: conversations one after the other, until one is
// played (without a duration) or the time is up.
func (b *bencher) play(ctx context.Context, client int) *benchStats {
	s := &benchStats{}
	for n := 0; !b.stopping(ctx); n++ {
		c := &benchConversation{thread: fmt.Sprintf("%s-%d-%d", b.prefix, client, n), first: int((b.started.Add(1) - 1) % int64(len(b.o.urls)))}
		s.conversations++
		for range b.o.turns {
			t := b.turn(ctx, c)
			if t.interrupted {
				return s
			}
			s.add(t)
			if t.kind == "connection" {
				return s
			}
			if t.kind != "" || b.stopping(ctx) {
				break
			}
		}
		if b.deadline.IsZero() {
			break
		}
	}
	return s
}

// benchConversation is one thread as its client sees it.
type benchConversation struct {
	thread  string
	first   int // the index of the server of its first turn
	turns   int
	history []agui.Message // with --stateless: every message so far
}

// turnResult is what one turn measured. kind is "" for a turn that ended
// with RUN_FINISHED, else the kind of its failure, and detail says more.
type turnResult struct {
	kind, detail string
	interrupted  bool // the run was stopped by SIGINT: not a result
	waiting      bool // it ended waiting for frontend tool results or interrupt answers
	server       int  // the index of the URL it went to

	total, firstEvent, firstText time.Duration // firstText is 0 without text
}

// turn plays one turn of c: it posts the user message to the next server
// of c's round and reads the stream to its end.
func (b *bencher) turn(ctx context.Context, c *benchConversation) turnResult {
	server := (c.first + c.turns) % len(b.o.urls)
	t := b.turnAt(ctx, c, b.o.urls[server])
	t.server = server
	return t
}

// turnAt is turn against the workflow URL u.
func (b *bencher) turnAt(ctx context.Context, c *benchConversation, u string) turnResult {
	c.turns++
	msg := agui.Message{ID: fmt.Sprintf("%s-user-%d", c.thread, c.turns), Role: agui.RoleUser, Content: agui.Text(b.o.message)}
	msgs := []agui.Message{msg}
	if b.o.stateless {
		msgs = append(c.history, msg)
	}
	body, err := json.Marshal(map[string]any{
		"threadId":        c.thread,
		"runId":           fmt.Sprintf("%s-run-%d", c.thread, c.turns),
		"protocolVersion": agui.ProtocolVersion,
		"messages":        msgs,
		"state":           map[string]any{},
		"tools":           []any{},
		"context":         []any{},
		"forwardedProps":  map[string]any{},
	})
	if err != nil {
		return turnResult{kind: "request", detail: err.Error()}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return turnResult{kind: "request", detail: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	b.authorize(req)

	start := time.Now()
	resp, err := b.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return turnResult{interrupted: true}
		}
		return turnResult{kind: "connection", detail: unwrapURLError(err).Error()}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		detail := problemDetail(body)
		if detail == "" {
			detail = strings.TrimSpace(string(body))
		}
		return turnResult{kind: "HTTP " + resp.Status, detail: detail}
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return turnResult{kind: "stream", detail: fmt.Sprintf("the answer is %q, not an event stream", ct)}
	}

	var (
		t        turnResult
		terminal string
		answers  []agui.Message // the assistant's text messages, in order
		events   int
	)
	fail := func(detail string) turnResult {
		if ctx.Err() != nil {
			return turnResult{interrupted: true}
		}
		return turnResult{kind: "stream", detail: detail}
	}
	for f, err := range agui.ReadSSE(resp.Body) {
		if err != nil {
			return fail(err.Error())
		}
		now := time.Since(start)
		events++
		if events == 1 {
			t.firstEvent = now
		}
		var ev struct {
			Type      string `json:"type"`
			MessageID string `json:"messageId"`
			Role      string `json:"role"`
			Delta     string `json:"delta"`
			Message   string `json:"message"`
			Outcome   *struct {
				Type               string   `json:"type"`
				PendingToolCallIDs []string `json:"pendingToolCallIds"`
			} `json:"outcome"`
		}
		if err := json.Unmarshal(f.Data, &ev); err != nil {
			return fail(fmt.Sprintf("event %d is not JSON: %v", events, err))
		}
		switch {
		case terminal != "":
			return fail(fmt.Sprintf("%s after %s", ev.Type, terminal))
		case events == 1 && ev.Type != agui.TypeRunStarted:
			return fail(fmt.Sprintf("the first event is %s, not RUN_STARTED", ev.Type))
		}
		switch ev.Type {
		case agui.TypeTextMessageStart, agui.TypeTextMessageContent, agui.TypeTextMessageChunk:
			if ev.Delta != "" && t.firstText == 0 {
				t.firstText = now
			}
			if b.o.stateless {
				answers = appendText(answers, ev.MessageID, ev.Role, ev.Delta)
			}
		case agui.TypeRunFinished:
			terminal, t.total = ev.Type, now
			if o := ev.Outcome; o != nil {
				t.waiting = o.Type == agui.OutcomeInterrupt || len(o.PendingToolCallIDs) > 0
			}
		case agui.TypeRunError:
			terminal, t.total = ev.Type, now
			t.kind, t.detail = "RUN_ERROR", ev.Message
		}
	}
	if terminal == "" {
		return fail("the stream ends before RUN_FINISHED or RUN_ERROR")
	}
	if t.kind == "" && b.o.stateless {
		c.history = append(msgs, answers...)
	}
	return t
}

// appendText adds a text event to the messages it builds: a new message
// for an id not seen yet (assistant unless role says otherwise), the delta
// to the text of one seen.
func appendText(msgs []agui.Message, id, role, delta string) []agui.Message {
	for i := range msgs {
		if msgs[i].ID == id {
			msgs[i].Content.Text += delta
			return msgs
		}
	}
	if role == "" {
		role = agui.RoleAssistant
	}
	return append(msgs, agui.Message{ID: id, Role: role, Content: agui.Text(delta)})
}

// problemDetail is the detail of a problem+json body (RFC 9457); "" when
// body is not one or says nothing more than its status.
func problemDetail(body []byte) string {
	var p struct {
		Detail string `json:"detail"`
	}
	if json.Unmarshal(body, &p) != nil {
		return ""
	}
	return p.Detail
}

// unwrapURLError drops the "Post \"url\": " of a client error: the report
// names the URL once.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// benchStats are the measurements of one client, then of all.
type benchStats struct {
	conversations               int
	turn, firstEvent, firstText []time.Duration // of the turns that succeeded
	waiting                     int             // the turns that succeeded waiting for the client
	failures                    map[string]*benchFailure
	failureOrder                []string
	servers                     []benchServerStats // by the index of the URL
}

// benchServerStats are the turns of one server.
type benchServerStats struct {
	turns, errors int // that succeeded, that failed
}

// server returns the statistics of server i.
func (s *benchStats) server(i int) *benchServerStats {
	for len(s.servers) <= i {
		s.servers = append(s.servers, benchServerStats{})
	}
	return &s.servers[i]
}

type benchFailure struct {
	count int
	first string
}

func (s *benchStats) add(t turnResult) {
	if t.kind == "" {
		s.server(t.server).turns++
		if t.waiting {
			s.waiting++
		}
		s.turn = append(s.turn, t.total)
		s.firstEvent = append(s.firstEvent, t.firstEvent)
		if t.firstText > 0 {
			s.firstText = append(s.firstText, t.firstText)
		}
		return
	}
	s.server(t.server).errors++
	s.addFailure(t.kind, t.detail, 1)
}

// addFailure counts n failures of a kind, whose first says detail.
func (s *benchStats) addFailure(kind, detail string, n int) {
	if s.failures == nil {
		s.failures = map[string]*benchFailure{}
	}
	f := s.failures[kind]
	if f == nil {
		f = &benchFailure{first: detail}
		s.failures[kind] = f
		s.failureOrder = append(s.failureOrder, kind)
	}
	f.count += n
}

func (s *benchStats) merge(o *benchStats) {
	s.conversations += o.conversations
	s.waiting += o.waiting
	s.turn = append(s.turn, o.turn...)
	s.firstEvent = append(s.firstEvent, o.firstEvent...)
	s.firstText = append(s.firstText, o.firstText...)
	for _, kind := range o.failureOrder {
		f := o.failures[kind]
		s.addFailure(kind, f.first, f.count)
	}
	for i, o := range o.servers {
		c := s.server(i)
		c.turns += o.turns
		c.errors += o.errors
	}
}

// benchReport is the report, as --json prints it.
type benchReport struct {
	URL                  string         `json:"url"`  // the first of URLs
	URLs                 []string       `json:"urls"` // every server's, in the order the turns go to them
	Mode                 string         `json:"mode"` // "conversation" or "stateless"
	Clients              int            `json:"clients"`
	TurnsPerConversation int            `json:"turnsPerConversation"`
	Seconds              float64        `json:"seconds"`
	Interrupted          bool           `json:"interrupted"`
	Conversations        int            `json:"conversations"`
	Turns                int            `json:"turns"`   // that ended with RUN_FINISHED
	Waiting              int            `json:"waiting"` // of those, the turns that ended waiting for frontend tool results or interrupt answers, which bench does not send
	TurnsPerSecond       float64        `json:"turnsPerSecond"`
	ErrorCount           int            `json:"errorCount"`
	Errors               []benchError   `json:"errors"`
	LatencyMs            benchLatencies `json:"latencyMs"`
	Servers              []benchServer  `json:"servers"` // by URL, in the order of URLs
}

// benchServer is what one URL of several served.
type benchServer struct {
	URL        string `json:"url"`
	Turns      int    `json:"turns"`      // that ended with RUN_FINISHED
	ErrorCount int    `json:"errorCount"` // that failed
}

type benchError struct {
	Kind  string `json:"kind"` // "HTTP 409 Conflict", "RUN_ERROR", "stream", "connection"
	Count int    `json:"count"`
	First string `json:"first"` // the first one's message
}

type benchLatencies struct {
	Turn       *percentiles `json:"turn"`
	FirstEvent *percentiles `json:"firstEvent"`
	FirstText  *percentiles `json:"firstText"` // null when no turn streamed text
}

// percentiles of a sample, in milliseconds.
type percentiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// percentilesOf sorts ds and returns its nearest-rank percentiles; nil
// for no sample.
func percentilesOf(ds []time.Duration) *percentiles {
	if len(ds) == 0 {
		return nil
	}
	slices.Sort(ds)
	at := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(ds)))) - 1
		return ms(ds[max(i, 0)])
	}
	return &percentiles{P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: ms(ds[len(ds)-1])}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (b *bencher) report(s *benchStats, elapsed time.Duration, interrupted bool) *benchReport {
	r := &benchReport{
		URL:                  b.o.urls[0],
		URLs:                 b.o.urls,
		Mode:                 "conversation",
		Clients:              b.o.clients,
		TurnsPerConversation: b.o.turns,
		Seconds:              elapsed.Seconds(),
		Interrupted:          interrupted,
		Conversations:        s.conversations,
		Turns:                len(s.turn),
		Waiting:              s.waiting,
		Errors:               []benchError{},
		LatencyMs: benchLatencies{
			Turn:       percentilesOf(s.turn),
			FirstEvent: percentilesOf(s.firstEvent),
			FirstText:  percentilesOf(s.firstText),
		},
	}
	if b.o.stateless {
		r.Mode = "stateless"
	}
	if elapsed > 0 {
		r.TurnsPerSecond = float64(r.Turns) / elapsed.Seconds()
	}
	for _, kind := range s.failureOrder {
		f := s.failures[kind]
		r.Errors = append(r.Errors, benchError{Kind: kind, Count: f.count, First: f.first})
		r.ErrorCount += f.count
	}
	for i, u := range b.o.urls {
		c := s.server(i)
		r.Servers = append(r.Servers, benchServer{URL: u, Turns: c.turns, ErrorCount: c.errors})
	}
	return r
}

// write prints the report as a table.
func (r *benchReport) write(w io.Writer) {
	var b strings.Builder
	end := ""
	if r.Interrupted {
		end = ", interrupted"
	}
	elapsed := time.Duration(r.Seconds * float64(time.Second)).Round(time.Millisecond)
	fmt.Fprintf(&b, "turns          %d in %v%s: %.1f turns/s\n", r.Turns, elapsed, end, r.TurnsPerSecond)
	fmt.Fprintf(&b, "conversations  %d, %d %s, %s mode\n", r.Conversations, r.Clients, plural(r.Clients, "client"), r.Mode)
	if r.Waiting > 0 {
		fmt.Fprintf(&b, "waiting        %d %s ended waiting for frontend tool results or interrupt answers, which bench does not send\n", r.Waiting, plural(r.Waiting, "turn"))
	}
	fmt.Fprintf(&b, "errors         %d\n", r.ErrorCount)
	for _, e := range r.Errors {
		fmt.Fprintf(&b, "  %s: %d, the first: %s\n", e.Kind, e.Count, e.First)
	}
	if len(r.Servers) > 1 {
		fmt.Fprintf(&b, "servers        %d, the turns of each conversation in turn\n", len(r.Servers))
		for _, s := range r.Servers {
			fmt.Fprintf(&b, "  %s: %d %s, %d %s\n", s.URL, s.Turns, plural(s.Turns, "turn"), s.ErrorCount, plural(s.ErrorCount, "error"))
		}
	}
	fmt.Fprintf(&b, "\n%-12s %8s %8s %8s %8s\n", "latency", "p50", "p90", "p99", "max")
	for _, row := range []struct {
		name string
		p    *percentiles
	}{{"turn", r.LatencyMs.Turn}, {"first event", r.LatencyMs.FirstEvent}, {"first text", r.LatencyMs.FirstText}} {
		if row.p == nil {
			fmt.Fprintf(&b, "%-12s %8s %8s %8s %8s\n", row.name, "-", "-", "-", "-")
			continue
		}
		fmt.Fprintf(&b, "%-12s %8s %8s %8s %8s\n", row.name, msText(row.p.P50), msText(row.p.P90), msText(row.p.P99), msText(row.p.Max))
	}
	io.WriteString(w, b.String())
}

// msText writes milliseconds with two or three significant digits.
func msText(v float64) string {
	switch {
	case v < 10:
		return fmt.Sprintf("%.2fms", v)
	case v < 100:
		return fmt.Sprintf("%.1fms", v)
	}
	return fmt.Sprintf("%.0fms", v)
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
