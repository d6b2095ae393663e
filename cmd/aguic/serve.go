package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/host"
	"github.com/aguic/aguic/metrics"
	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/studio"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
)

// The defaults of aguic serve.
const (
	defaultAddr     = "127.0.0.1:8080"
	defaultServeDir = "workflows"
	shutdownGrace   = 30 * time.Second // runs in progress may finish within it
)

func serveCommand() *command {
	c := &command{
		name:    "serve",
		args:    "[--addr host:port] [--data dir | --store url] [--lease-ttl duration] [--base-path path] [--deadline duration] [--max-steps n] [--model-script file] [--keep-events n] [--finished-ttl duration] [--admin-token token] [--node-events] [--tokens file] [--jwt-issuer url | --jwt-jwks-url url] [--jwt-audience list] [--jwt-user-claim claim] [--jwt-claims list] [--jwt-leeway duration] [--jwt-algorithms list] [--scope-header name] [--cors-origins list] [--studio=false] [--mcp=false] [--metrics=false] [--metrics-public] [--hook-url url] [--hook-timeout duration] [--hook-headers names] [--hook-secret secret] [--webhook-url url] [--webhook-secret secret] [--request-models list] [dir]",
		summary: "serve the workflows as AG-UI agents over HTTP",
		doc: `
Serve compiles the .wf files of dir (default workflows/) and serves every
workflow as an AG-UI 1.0 agent: POST {base}/workflows/{id} runs one and
streams its events (what an AG-UI HttpAgent points at), POST {base} runs
the workflow forwardedProps.aguic.workflowId or .workflowName names, and
GET {base}/workflows lists them with their graphs. The OpenAPI document is
at /openapi.json and /openapi.yaml ("aguic openapi" prints it), an API
browser at /docs, a health check at /healthz, and the studio, a web UI to
see the workflows, run them and step through their threads, at /studio
(/ links to both). {base}/mcp serves the workflows as the tools of an MCP
server (streamable HTTP).

The files are compiled before the server listens: diagnostics go to
standard error, and errors end the command with status 1. Threads live in
the data directory (--data); runs a crash left unfinished resume from their
last saved node in the background once it is opened. With --store
postgres://…, threads live in that PostgreSQL database instead, and several
aguic serve processes (replicas) may share it behind any load balancer:
each takes any request, one run per thread holds across them, a cancel
reaches the run wherever it executes, and the runs of a replica that died
resume on another once their leases expire (--lease-ttl). Once it listens, the
server logs its URL, the workflows it serves and the URL of its docs on
standard error, then one line per run. --deadline bounds every run (0 for
none).

Authentication is off by default. --tokens names a file of bearer tokens,
one a line, "name token" or "name:token" (blank lines and # comments are
left out); AGUIC_TOKENS may instead hold "name:token" pairs separated by
commas (setting both AGUIC_TOKENS_FILE and AGUIC_TOKENS is an error).
Every request but /healthz, /openapi.json, /openapi.yaml and /docs must
then carry "Authorization: Bearer <token>" (401 otherwise), and the
token's name is the scope of its threads: one name never sees another's
threads. Without tokens every thread is in the scope "default", or, with
--scope-header, in the scope that request header names (for a proxy that
sets it; it excludes --tokens). --cors-origins lets browser clients of
other origins call the server: a comma-separated list of origins such as
https://app.example.com, or *.

JWT bearer tokens: --jwt-issuer names an OpenID Connect issuer, whose
discovery document names the keys that sign its tokens; --jwt-jwks-url
names the key set itself (with --jwt-issuer too, the issuer is checked
and nothing is discovered). --jwt-audience is then required: a token
must name one of its audiences. A token must be signed by a key of the
set with an accepted algorithm (--jwt-algorithms; RS*, PS*, ES* and
EdDSA by default, never none or HS*), carry exp, and be valid at the
server's clock within --jwt-leeway (30s). Its claim --jwt-user-claim (sub)
is the user: the scope of its threads, and $user.id in workflows, beside
the claims --jwt-claims selects ($user.claims). The keys are fetched at
start-up (an issuer or a key set that cannot be reached stops it with
status 2), every 15 minutes, and at once for a key id they lack. With
--tokens too, a token of the file is accepted as before, and any other
goes to the JWT check. A refused token is answered 401 with
WWW-Authenticate: Bearer error="invalid_token" and the reason.

Retention: --keep-events keeps only the last n events of each thread (a
replay cursor before them answers 410), --finished-ttl deletes threads
that finished, failed or were cancelled and stayed idle that long. Both
apply at start-up and every hour; by default nothing is forgotten. The
database's value log is garbage-collected every ten minutes.

--admin-token enables GET {base}/admin/backup: an online backup of the data
directory for a request that carries the token as a bearer token (aguic
backup --from uses it). Without a token that route refuses every request.

--studio=false (AGUIC_STUDIO=false) removes the studio's routes. It is on
by default: its page and files are the same for everyone and need no
token, and the page calls the routes above with the user's own token, so
it shows nothing those routes do not already show to the same
credentials.

--mcp=false (AGUIC_MCP=false) removes {base}/mcp. It is on by default:
every workflow is a tool named by its id, and a tool call runs it like a
run request, behind the same tokens and scopes, with threads the AG-UI
routes and the studio show; a conversation goes on when a call passes the
threadId a result returned.

--metrics=false (AGUIC_METRICS=false) removes GET /metrics. It is on by
default: it serves the process's metrics in the Prometheus text format
(OpenMetrics when the scraper asks), measured at a cost too small to
matter, and, like every route, it needs a token when --tokens is given;
it shows counts across scopes and workflow, model and tool names, never a
thread, a user or a scope. --metrics-public (AGUIC_METRICS_PUBLIC) serves
it without a token, for a Prometheus that has none.

--hook-url calls a webhook before every run (AG-UI and MCP alike) with its
thread, workflow, user, the headers --hook-headers names and its
forwardedProps; its answer refuses the run (RUN_ERROR, code rejected, or a
4xx status it names) or lets it go on, adding to its context and $agent and
setting its scope. A hook that fails, times out (--hook-timeout) or answers
anything else refuses the run, and the log says why. --webhook-url is told,
in the background, when every run ends (its outcome, error, tokens and
duration), retried with backoff; the pending messages have 10 seconds after
the shutdown. --hook-secret and --webhook-secret sign the messages with the
Standard Webhooks scheme. --request-models lists the models a request may
choose in forwardedProps.aguic.model for the model nodes that name none;
each is resolved at start-up.

--node-events streams, live, each node's start and end as the AG-UI
activity graph.node.lifecycle, so a UI can highlight the node that runs;
they are not stored, so replay and history never show them.

With --model-script, model nodes answer from that script, as with
aguic run; without it model nodes use the providers the environment
configures (OPENAI_API_KEY, for one; AGUIC_MODEL names the model of nodes
that name none). Start-up resolves the provider of each model node's
model (the one the node names, else AGUIC_MODEL) from that configuration:
a provider that is not configured, or a node that names no model while
AGUIC_MODEL is not set, stops it with status 2. It does not call the
models: a server that does not answer (a wrong OPENAI_BASE_URL, say)
shows at the first model call, whose run ends with RUN_ERROR.

SIGINT or SIGTERM stops the server gracefully: it stops accepting runs,
lets the runs in progress finish for up to 30 seconds, then cancels them;
each cancelled run still sends its terminal event to its open streams
(they get a few more seconds for it) before the server closes them and
exits with status 0. With --store, the runs still in progress then are not
cancelled but handed over: each stops where it is and another replica goes
on with it from its last save at once; their streams end with RUN_ERROR,
code handed_over, which says where to follow the run. A second signal ends it at once; the runs it cuts
short resume from their last saved node at the next start.`,
		examples: `
# Serve the examples with scripted model answers, on 127.0.0.1:8080.
aguic serve --model-script workflows/scripts/demo.script workflows
# Listen on every interface, with bearer tokens and a data directory.
aguic serve --addr :8080 --tokens tokens.txt --data /var/lib/aguic workflows
# The same, configured from the environment.
AGUIC_ADDR=:8080 AGUIC_TOKENS_FILE=tokens.txt AGUIC_DATA=/var/lib/aguic aguic serve workflows`,
		exit: "0 after a graceful stop, 1 when the sources have errors, 2 on a usage or I/O error (a bad flag, a data directory in use, an address taken).",
		vars: map[string]string{"tokens": "AGUIC_TOKENS_FILE"},
	}
	c.flags = func(fs *flag.FlagSet) func(*env, []string) int {
		o := serveOptions{
			dir:      defaultServeDir,
			basePath: server.DefaultBasePath,
			deadline: server.DefaultDeadline,
			maxSteps: vm.DefaultMaxVisits,
			leaseTTL: server.DefaultLeaseTTL,
		}
		fs.StringVar(&o.addr, "addr", defaultAddr, "listen on `host:port`")
		o.where.define(fs, "")
		checkedVar(fs, &o.leaseTTL, "lease-ttl", "10s", "how long a run's lease on its thread lasts unless renewed; with --store, how soon other replicas take over the runs of one that died (`duration`)", durationAtLeast(time.Second))
		basePathVar(fs, &o.basePath)
		checkedVar(fs, &o.deadline, "deadline", "1h", "the longest a run may take, a `duration` such as 10m; 0 for none", durationAtLeast(0))
		checkedVar(fs, &o.maxSteps, "max-steps", "1000", "the most nodes one run may visit, a guard against a loop that runs away (`n`)", positive)
		fs.StringVar(&o.script, "model-script", "", "answer model calls from this script `file`")
		checkedVar(fs, &o.retention.MaxEvents, "keep-events", "", "keep only the last `n` events of each thread; all by default", positive)
		checkedVar(fs, &o.retention.FinishedTTL, "finished-ttl", "", "delete finished threads idle for this `duration`; never by default", durationAtLeast(1))
		fs.StringVar(&o.adminToken, "admin-token", "", "the bearer `token` of the admin backup route; without it the route is closed")
		tokens := fs.String("tokens", "", "require a bearer token from this `file` of \"name token\" lines; AGUIC_TOKENS may hold name:token pairs instead")
		o.jwtFlags.define(fs)
		fs.StringVar(&o.scopeHeader, "scope-header", "", "without --tokens, the request header `name` whose value is the scope of the threads")
		checkedVar(fs, &o.corsOrigins, "cors-origins", "", "the comma-separated `origins` browser clients may call from, or *", origins)
		fs.BoolVar(&o.nodeEvents, "node-events", false, "stream each node's start and end as graph.node.lifecycle activities")
		fs.BoolVar(&o.studio, "studio", true, "serve the studio, a web UI of the workflows and their threads, at /studio")
		fs.BoolVar(&o.mcp, "mcp", true, "serve the workflows as the tools of an MCP server at {base}/mcp")
		fs.BoolVar(&o.metrics, "metrics", true, "serve the process's metrics in the Prometheus format at /metrics")
		fs.BoolVar(&o.metricsPublic, "metrics-public", false, "serve /metrics without a token")
		o.hooks.define(fs)
		return func(e *env, args []string) int {
			if len(args) > 1 {
				return usageError(e, c, "too many arguments: serve takes one directory")
			}
			if len(args) == 1 {
				o.dir = args[0]
			}
			toks, err := loadTokens(*tokens, os.Getenv)
			if err != nil {
				// One line for each error of the file.
				for _, line := range strings.Split(err.Error(), "\n") {
					e.errorf("%s", line)
				}
				return exitUsage
			}
			o.tokens = toks
			if o.tokens != nil && o.scopeHeader != "" {
				return usageError(e, c, "--scope-header: with --tokens the scope is the token's name; give one of the two")
			}
			if o.metricsPublic && !o.metrics {
				return usageError(e, c, "--metrics-public: the metrics are off (--metrics=false)")
			}
			if err := o.hooks.checkSecrets(c.setting); err != nil {
				return usageError(e, c, "%v", err)
			}
			if o.jwt, err = o.jwtFlags.config(fs); err != nil {
				return usageError(e, c, "%v", err)
			}
			if o.jwt != nil && o.scopeHeader != "" {
				return usageError(e, c, "--scope-header: with JWT bearer tokens the scope is the token's user; give one of the two")
			}
			if o.deadline == 0 {
				o.deadline = -1 // no deadline
			}
			ctx, stop := stopOnSignal()
			defer stop()
			return serve(ctx, e, o)
		}
	}
	return c
}

// stopOnSignal returns a context that SIGINT or SIGTERM cancels, which
// starts the graceful stop; a second signal ends the process at once, as
// if it were not caught. stop lets signals go again.
func stopOnSignal() (ctx context.Context, stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-done:
			return
		}
		select {
		case sig := <-sigs:
			signal.Reset(os.Interrupt, syscall.SIGTERM)
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				p.Signal(sig)
			}
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

// basePathVar defines --base-path, the prefix of the AG-UI routes.
func basePathVar(fs *flag.FlagSet, p *string) {
	checkedVar(fs, p, "base-path", server.DefaultBasePath, "the `path` the AG-UI routes start with", func(s string) (string, error) {
		if !strings.HasPrefix(s, "/") || strings.Trim(s, "/") == "" {
			return "", errors.New("not a path below the root, such as /agui")
		}
		return s, nil
	})
}

// origins parses the list of --cors-origins.
func origins(s string) ([]string, error) {
	var list []string
	for _, o := range strings.Split(s, ",") {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		if err := server.CheckOrigin(o); err != nil {
			return nil, err
		}
		list = append(list, o)
	}
	return list, nil
}

// loadTokens reads the bearer tokens of file (--tokens, or
// AGUIC_TOKENS_FILE), else of the list AGUIC_TOKENS holds; nil when
// neither is given. Setting both variables is an error.
func loadTokens(file string, getenv func(string) string) (*server.Tokens, error) {
	list := getenv("AGUIC_TOKENS")
	if getenv("AGUIC_TOKENS_FILE") != "" && list != "" {
		return nil, errors.New("AGUIC_TOKENS_FILE and AGUIC_TOKENS are both set: set one")
	}
	if file == "" {
		if list == "" {
			return nil, nil
		}
		return server.TokenList("AGUIC_TOKENS", list)
	}
	text, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return server.ParseTokens(file, text)
}

// serveOptions is what aguic serve was asked to do.
type serveOptions struct {
	dir, addr, basePath, script string
	where                       where         // the store
	leaseTTL                    time.Duration // of runs' leases
	deadline                    time.Duration // negative: none
	maxSteps                    int           // node visits per run
	retention                   store.Retention
	adminToken                  string
	nodeEvents                  bool           // stream the node lifecycle
	studio                      bool           // serve the studio at /studio
	mcp                         bool           // serve the workflows as MCP tools at {base}/mcp
	metrics, metricsPublic      bool           // serve /metrics; without a token
	tokens                      *server.Tokens // nil: no static tokens
	scopeHeader                 string         // without tokens, the header that names the scope
	corsOrigins                 []string       // none: CORS off
	hooks                       hookOptions    // the run hook, the completion webhook, request models

	jwtFlags jwtFlags
	jwt      *server.JWTConfig // nil: no JWT bearer tokens

	// ready, when set, is called with the server's URL once it listens
	// (tests).
	ready func(url string)
	// grace, when positive, replaces shutdownGrace (tests).
	grace time.Duration
}

// auth is the server's Auth: the tokens' and the JWTs j verifies, or
// none.
func (o serveOptions) auth(j *server.JWT) func(*http.Request) (server.Identity, error) {
	if o.tokens == nil && j == nil {
		return nil
	}
	return server.BearerAuth(o.tokens, j)
}

// serve runs the server until ctx is done, then shuts it down gracefully.
func serve(ctx context.Context, e *env, o serveOptions) int {
	log := slog.New(slog.NewTextHandler(e.stderr, nil))
	opts, err := modelOptions(o.script, environ)
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	prog, srcs, status := compileSources(e, []string{o.dir})
	if prog == nil {
		return status
	}
	if opts, err = o.hooks.checkRequestModels(opts); err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	if err := checkModels(prog, opts); err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	tracing, err := setupTracing(ctx, &opts, log)
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	defer tracing.Shutdown(context.WithoutCancel(ctx))
	opts.MCP = mcpPool(log, tracing)
	defer opts.MCP.Close()
	var mets *metrics.Metrics
	if o.metrics {
		mets = metrics.New()
		opts.Models = mets.Models(opts.Models)
		opts.ToolCall = opts.ToolCall.And(mets.ToolCall())
	}
	reg := vm.NewRegistry()
	stdlib.RegisterWith(reg, opts)
	m := &vm.Machine{Program: prog, Registry: reg, MaxVisits: o.maxSteps}
	bundle, _ := compiler.Bundle(srcs)

	jwt, err := startJWT(ctx, o.jwt, log)
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	if jwt != nil {
		defer jwt.Close()
	}

	st, err := o.where.open(ctx, log)
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	defer st.Close()
	if c, ok := st.Store.(store.ThreadCounter); ok {
		mets.CountThreads(c, 0, log)
	}
	sc := server.Config{
		BasePath: o.basePath,
		Deadline: o.deadline,
		LeaseTTL: o.leaseTTL,
		// With other replicas on the database, a run still in
		// progress when the grace ends goes on in one of them.
		HandOver: o.where.shared(),

		NodeLifecycle: o.nodeEvents,
		Studio:        o.studio,
		MCP:           o.mcp,

		ScopeHeader: o.scopeHeader,
		CORSOrigins: o.corsOrigins,
		Auth:        o.auth(jwt),

		Metrics:       mets,
		MetricsPublic: o.metricsPublic,

		Tracing: tracing,
	}
	drainHooks, err := o.hooks.wire(&sc, log)
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	// After the host stopped: the runs that ended in its grace deliver.
	defer drainHooks()
	h, err := host.Start(host.Config{
		Machine:       m,
		Bundle:        bundle,
		Store:         mets.Store(st),
		Server:        sc,
		Retention:     o.retention,
		Backup:        st,
		AdminToken:    o.adminToken,
		Maintain:      st.maintain,
		ReleaseMemory: st.release,
		Logger:        log,
	})
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		h.Shutdown(context.Background())
		e.errorf("%v", err)
		return exitUsage
	}
	url := "http://" + ln.Addr().String()
	ids := make([]string, len(prog.Workflows))
	for i, w := range prog.Workflows {
		ids[i] = w.ID
	}
	attrs := []any{"url", url + strings.TrimSuffix(o.basePath, "/"), "workflows", strings.Join(ids, ",")}
	if o.studio {
		attrs = append(attrs, "studio", url+studio.Path)
	}
	if o.mcp {
		attrs = append(attrs, "mcp", url+strings.TrimSuffix(o.basePath, "/")+"/mcp")
	}
	attrs = append(attrs, "docs", url+"/docs", "openapi", url+"/openapi.json", "store", o.where.String())
	attrs = append(attrs, tracing.Describe()...)
	log.Info("serving", attrs...)
	if o.ready != nil {
		o.ready(url)
	}
	grace := shutdownGrace
	if o.grace > 0 {
		grace = o.grace
	}
	code := exitOK
	if err := h.Serve(ctx, ln, grace); err != nil {
		code = exitUsage
	}
	return code
}
