package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aguic/aguic/metrics"
	"github.com/aguic/aguic/studio"
	"github.com/aguic/aguic/telemetry"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
)

// The defaults of Config.
const (
	DefaultBasePath  = "/agui"
	DefaultDeadline  = time.Hour
	DefaultBodyLimit = 16 << 20 // AG-UI histories grow long
	DefaultOwner     = "aguic"
	DefaultKeepAlive = 15 * time.Second
	defaultReadLimit = time.Minute // reading one request body
	// DefaultLeaseTTL is how long a run's lease on its thread lasts
	// unless renewed; the run renews it every third of it. A process that
	// dies leaves its runs to others once their leases expire.
	DefaultLeaseTTL = 10 * time.Second
)

// Version is the version the OpenAPI document announces.
const Version = "0.1.0"

// defaultScope is the tenancy scope of the threads of requests that carry
// no identity.
const defaultScope = "default"

// DefaultFrameCache is the default of Config.FrameCache: 8 MiB.
const DefaultFrameCache = 8 << 20

// Config configures a Server. Machine, Store are required; the rest has
// defaults.
type Config struct {
	// Machine runs the current program: its workflows are the ones served.
	Machine *vm.Machine
	// Bundle is the program's sources (compiler.Bundle), stored with the
	// threads that run on it so they can resume after the files change.
	Bundle []byte
	// Store keeps threads, their events and leases.
	Store store.Store
	// Load returns the machine of another program version, for threads
	// pinned to one; nil serves only threads of the current version. A
	// program that embeds the server runs it with package host, which
	// loads the versions its store keeps and resumes the runs a crash cut.
	Load store.Loader

	BasePath  string        // the prefix of the AG-UI routes; default "/agui"
	Deadline  time.Duration // the longest a run may take; default 1h, negative for none
	BodyLimit int64         // the largest request body in bytes; default 16 MiB
	KeepAlive time.Duration // the interval of SSE keep-alive comments; default 15s
	// FrameCache is how many bytes of frames the server keeps in memory,
	// so that the next turn of a conversation that ran lately does not
	// read its frame again; 0 means DefaultFrameCache, a negative number
	// none.
	FrameCache int
	Owner      string // the prefix of lease owners; default "aguic"
	// LeaseTTL is how long a run's lease on its thread lasts unless
	// renewed (every third of it, while the run lasts); default
	// DefaultLeaseTTL. Among processes that share a store, the runs of a
	// process that died are taken over once their leases expire.
	LeaseTTL time.Duration
	Logger   *slog.Logger // default slog.Default()
	Now      func() time.Time
	// HandOver: at the end of Shutdown's grace, the runs still in progress
	// are handed over to the other processes that share the store, not
	// cancelled: each stops where it is, as in a crash, and another
	// process resumes it from its last save at once (its thread's lease
	// is released). Their streams end with RUN_ERROR, code "handed_over",
	// whose message says where to follow the run. For a store several
	// processes share; with one process, the runs would wait for the next
	// start.
	HandOver bool
	// NodeLifecycle streams the lifecycle of every node of a run's main
	// flow as the activity "graph.node.lifecycle", so a UI can highlight
	// the node that runs; live only, never stored. Off by default.
	NodeLifecycle bool

	// RequestModels are the models ("provider/model") a request may
	// choose, in forwardedProps.aguic.model, for the model nodes that name
	// none; a node whose model key names one keeps it. A request that
	// names another is answered 400 with this list; none: a request that
	// names one is answered 400. Every entry must resolve to a provider
	// (the embedding program checks, as aguic serve does at start-up).
	RequestModels []string

	// Hook, when set, sees every run request before anything runs: its
	// body, its headers, its thread, its workflow and whether that is a
	// conversation, and its scope. It may
	// add to the run's context and to $agent, and set the thread's scope
	// (HookRequest); an error refuses the request: the stream is
	// RUN_STARTED, then RUN_ERROR with the error's message (code
	// "rejected"), or, when the error wraps a huma.StatusError, the answer
	// is that status before any stream; nothing runs or is stored. It must
	// store derived claims only, never a bearer token. WebhookHook makes
	// one that asks a webhook.
	Hook func(ctx context.Context, r *HookRequest) error

	// OnRunEnd, when set, is called when a run this server executes ends
	// (not one handed over to another process): after its terminal event
	// went out, in the run's goroutine, so it must return at once
	// (Notifier.RunEnded does). A host calls it too for the runs it
	// recovers and the threads it wakes.
	OnRunEnd func(RunEnd)

	// Auth, when set, authenticates every request but those of /healthz,
	// the OpenAPI document, /docs, / and the studio's files, before
	// anything else sees it. It
	// returns who the request comes from: its ID is the request's scope,
	// the tenant its threads belong to ("" is the scope "default"), and
	// with its claims $user of the request's runs. An error is the
	// answer 401 problem+json with a bearer challenge (error="invalid_token"
	// for a TokenError), or the status of a huma.StatusError the error
	// wraps. Tokens.Auth, JWT.Auth and BearerAuth's are some. nil: no
	// authentication.
	Auth func(r *http.Request) (Identity, error)
	// ScopeHeader, without Auth, names the request header that holds the
	// scope (printable ASCII, at most 256 bytes); a request without it is
	// in the scope "default". Only for a server behind a proxy that sets
	// the header itself: a client could name any scope. With Auth it must
	// be "".
	ScopeHeader string
	// CORSOrigins are the origins of the browser clients that may call
	// the server: "*" for any, or origins such as https://app.example.com.
	// None: CORS is off, and browsers refuse other origins' requests.
	CORSOrigins []string
	// Studio serves the studio (package studio), a web UI to see, run and
	// debug the workflows, at /studio. Its files need no token, as /docs:
	// the page then calls the routes above with the user's own token, and
	// sees what that token may see. Off in the zero Config.
	Studio bool
	// MCP serves the workflows as the tools of an MCP server at
	// {base}/mcp (streamable HTTP), behind the same authentication and
	// scopes as the AG-UI routes: a tool call is a run, stored in its
	// thread like the runs of the AG-UI routes. Off in the zero Config.
	MCP bool

	// Metrics, when set, measures the server's runs and serves every
	// metric of it at GET /metrics, in the Prometheus text format (or
	// OpenMetrics when the scraper asks for it), behind Auth like every
	// route unless MetricsPublic. nil: no /metrics, nothing measured.
	Metrics *metrics.Metrics
	// MetricsPublic serves /metrics without authentication, for a
	// Prometheus that scrapes without the AG-UI tokens; the metrics
	// hold no thread, user or scope, only workflow, model and tool names
	// and counts across every scope.
	MetricsPublic bool
	// Tracing, when not nil, traces every run the server executes (its
	// nodes, and what they call through providers and clients it wraps)
	// and continues the trace a request's traceparent header names.
	Tracing *telemetry.Tracing
}

// Server serves AG-UI runs of the workflows of one program.
type Server struct {
	cfg     Config
	base    string
	mux     *http.ServeMux
	handler http.Handler // mux, behind CORS and authentication
	api     huma.API
	log     *slog.Logger
	now     func() time.Time
	byTitle map[string][]*vm.Workflow

	// runCtx is the parent of every run; stop cancels it (Shutdown at its
	// deadline).
	runCtx context.Context
	stop   context.CancelFunc
	// handing is cancelled, before runCtx, when Shutdown hands the runs in
	// progress over to the other processes (Config.HandOver).
	handing  context.Context
	handOver context.CancelFunc

	frames  *store.Frames     // the frames of the threads that ran last
	sources map[string]string // the current program's source files, by name

	stopCancels func() // stops taking the store's cancel requests

	mcpServer *mcp.Server    // the MCP server of {base}/mcp; nil without Config.MCP
	mcpCalls  sync.WaitGroup // the MCP tool calls in progress; counted under mu

	mu      sync.Mutex
	closing bool
	runs    map[store.Key]*run
	queues  map[store.Key][]*run // runs queued behind the one in runs, in order
	wg      sync.WaitGroup
}

// New returns a server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Machine == nil || cfg.Machine.Program == nil {
		return nil, errors.New("server: no program to serve")
	}
	if cfg.Store == nil {
		return nil, errors.New("server: no store")
	}
	// The program's sources are stored once, for the conversations that
	// will be pinned to this version; runs do not store them again.
	if len(cfg.Bundle) > 0 {
		if err := cfg.Store.PutSource(context.Background(), cfg.Machine.Program.Hash, cfg.Bundle); err != nil {
			return nil, fmt.Errorf("server: store the program: %w", err)
		}
	}
	if cfg.BasePath == "" {
		cfg.BasePath = DefaultBasePath
	}
	base := "/" + strings.Trim(cfg.BasePath, "/")
	if base == "/" {
		return nil, errors.New("server: the base path must not be the root")
	}
	if public(base, cfg.Studio) || public(base+"/", cfg.Studio) {
		return nil, fmt.Errorf("server: the base path %q is taken by a public route", base)
	}
	if cfg.Metrics != nil && (base == metricsPath || strings.HasPrefix(metricsPath, base+"/")) {
		return nil, fmt.Errorf("server: the base path %q is taken by %s", base, metricsPath)
	}
	if cfg.MetricsPublic && cfg.Metrics == nil {
		return nil, errors.New("server: MetricsPublic without Metrics")
	}
	if cfg.Auth != nil && cfg.ScopeHeader != "" {
		return nil, errors.New("server: Auth and ScopeHeader exclude each other: with Auth the scope is the identity's")
	}
	if cfg.ScopeHeader != "" && !validHeaderName(cfg.ScopeHeader) {
		return nil, fmt.Errorf("server: the scope header %q is not a header name", cfg.ScopeHeader)
	}
	cors, err := newCORS(cfg.CORSOrigins, cfg.ScopeHeader)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if cfg.Deadline == 0 {
		cfg.Deadline = DefaultDeadline
	}
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = DefaultBodyLimit
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = DefaultKeepAlive
	}
	var frames *store.Frames
	switch {
	case cfg.FrameCache == 0:
		frames = store.NewFrames(DefaultFrameCache)
	case cfg.FrameCache > 0:
		frames = store.NewFrames(cfg.FrameCache)
	}
	if cfg.Owner == "" {
		cfg.Owner = DefaultOwner
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Load == nil {
		cur := cfg.Machine
		cfg.Load = func(_ context.Context, hash string) (*vm.Machine, error) {
			if hash == "" || hash == cur.Program.Hash {
				return cur, nil
			}
			return nil, fmt.Errorf("version %s of the workflows is not loaded", hash)
		}
	}
	sources, err := sourceFiles(cfg.Bundle)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s := &Server{
		cfg:     cfg,
		frames:  frames,
		sources: sources,
		base:    base,
		mux:     http.NewServeMux(),
		log:     cfg.Logger,
		now:     cfg.Now,
		byTitle: map[string][]*vm.Workflow{},
		runs:    map[store.Key]*run{},
		queues:  map[store.Key][]*run{},
	}
	for _, w := range cfg.Machine.Program.Workflows {
		if w.Title != "" {
			s.byTitle[w.Title] = append(s.byTitle[w.Title], w)
		}
	}
	s.runCtx, s.stop = context.WithCancel(context.Background())
	s.handing, s.handOver = context.WithCancel(context.Background())
	// A cancel request may come from another process that shares the
	// store: it cancels the run if this process executes it.
	s.stopCancels = cfg.Store.OnCancel(s.cancelLocal)
	s.api = humago.New(s.mux, s.humaConfig())
	s.api.UseMiddleware(badRequests)
	s.register()
	docs := DocsHandler("aguic API", "/openapi.json", "/docs")
	s.mux.Handle("GET /docs", docs)
	s.mux.Handle("GET /docs/", docs)
	if cfg.Studio {
		h, err := studio.Handler(base)
		if err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		h = problems(h)
		s.mux.Handle("GET "+studio.Path, h)
		s.mux.Handle("GET "+studio.Path+"/", h)
	}
	if cfg.MCP {
		s.mux.Handle(base+mcpPath, s.mcpHandler())
	}
	if cfg.Metrics != nil {
		s.mux.Handle("GET "+metricsPath, cfg.Metrics.Handler())
	}
	s.mux.Handle("GET /{$}", home(cfg.Studio))
	s.handler = cfg.Tracing.Handler(cors.wrap(s.identify(s.misses(s.mux))))
	return s, nil
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Shutdown stops accepting runs and waits until the runs in progress end
// or ctx is done; then it cancels them, so each ends with its terminal
// event, and waits for them to save their outcome (with Config.HandOver,
// it hands them over to the other processes instead). Then it waits for
// the MCP tool calls to answer and ends the MCP sessions. It returns
// ctx.Err() when it had to stop runs.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	defer s.stopCancels()
	var err error
	select {
	case <-done:
		s.stop()
	case <-ctx.Done():
		if s.cfg.HandOver {
			s.handOver()
		}
		s.stop()
		<-done
		err = ctx.Err()
	}
	s.mcpCalls.Wait()
	s.closeMCP()
	return err
}

// cancelLocal cancels run runID of the thread key if this process executes
// it: a cancel request the store carried.
func (s *Server) cancelLocal(key store.Key, runID string) {
	s.mu.Lock()
	r := s.runs[key]
	s.mu.Unlock()
	if r != nil && r.id == runID {
		r.cancel()
	}
}

func (s *Server) humaConfig() huma.Config {
	c := huma.DefaultConfig("aguic", Version)
	c.Info.Description = "Workflows compiled from .wf files, served as AG-UI 1.0 agents."
	c.OpenAPIPath = "/openapi"
	c.DocsPath = ""    // the built-in renderers load from a CDN
	c.SchemasPath = "" // schemas are in the OpenAPI document
	c.CreateHooks = nil
	c.Transformers = append(c.Transformers, badRequestBody)
	c.OnAddOperation = append(c.OnAddOperation, s.secure, func(_ *huma.OpenAPI, op *huma.Operation) {
		// A busy thread's 409 says when to try again.
		if r := op.Responses["409"]; r != nil {
			if r.Headers == nil {
				r.Headers = map[string]*huma.Param{}
			}
			r.Headers["Retry-After"] = &huma.Param{
				Description: "When a run holds the thread: the seconds to wait before sending the request again.",
				Schema:      &huma.Schema{Type: huma.TypeInteger},
			}
		}
		// badRequests answers 400 where Huma answers 422.
		if r := op.Responses["422"]; r != nil {
			delete(op.Responses, "422")
			if op.Responses["400"] == nil {
				op.Responses["400"] = r
				r.Description = http.StatusText(http.StatusBadRequest)
			}
		}
	})
	return c
}

// badRequests answers 400 instead of Huma's 422 to a request whose body
// does not validate: AG-UI and its servers say 400 for every request that
// is not well formed.
func badRequests(ctx huma.Context, next func(huma.Context)) {
	next(status400{ctx})
}

// humaContext names huma.Context for embedding: a field named Context
// would hide its Context method.
type humaContext = huma.Context

type status400 struct{ humaContext }

func (c status400) SetStatus(code int) {
	if code == http.StatusUnprocessableEntity {
		code = http.StatusBadRequest
	}
	c.humaContext.SetStatus(code)
}

func (c status400) Unwrap() huma.Context { return c.humaContext }

// badRequestBody is the transformer that goes with badRequests: the
// problem's status and title say 400 too.
func badRequestBody(_ huma.Context, status string, v any) (any, error) {
	if e, ok := v.(*huma.ErrorModel); ok && e.Status == http.StatusUnprocessableEntity {
		e.Status = http.StatusBadRequest
		e.Title = http.StatusText(http.StatusBadRequest)
	}
	return v, nil
}

// validHeaderName reports whether name is a header field name (an RFC 9110
// token).
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// misses answers the requests no route takes as problem documents, like
// every other error: 404 for a path no route has, 405 (with the mux's
// Allow header) for a method the path's routes do not take. Requests a
// route takes, and the mux's redirects, pass untouched.
func (s *Server) misses(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(&missWriter{ResponseWriter: w, r: r}, r)
	})
}

// problems wraps a handler of files: its 404 and 405 are answered as
// problem documents, as misses answers them.
func problems(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&missWriter{ResponseWriter: w, r: r}, r)
	})
}

// missWriter turns the mux's plain-text 404 and 405 into problem
// documents.
type missWriter struct {
	http.ResponseWriter
	r       *http.Request
	written bool // a problem was written: the mux's own body is dropped
}

func (w *missWriter) WriteHeader(code int) {
	var detail string
	switch code {
	case http.StatusNotFound:
		detail = fmt.Sprintf("no route has the path %s", w.r.URL.Path)
	case http.StatusMethodNotAllowed:
		detail = fmt.Sprintf("the routes of %s do not take %s; they take %s", w.r.URL.Path, w.r.Method, w.Header().Get("Allow"))
	default:
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.written = true
	problem(w.ResponseWriter, code, detail)
}

func (w *missWriter) Write(b []byte) (int, error) {
	if w.written {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}
