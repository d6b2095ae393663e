package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
)

// The defaults of aguic serve.
const (
	defaultAddr      = "127.0.0.1:8080"
	defaultServeDir  = "workflows"
	shutdownGrace    = 30 * time.Second // runs in progress may finish within it
	readHeaderLimit  = 10 * time.Second
	recoveryLeaseTTL = time.Minute
)

func serveCommand() *command {
	c := &command{
		name:    "serve",
		args:    "[--addr host:port] [--data dir] [--base-path path] [--deadline duration] [--model-script file] [--keep-events n] [--finished-ttl duration] [--admin-token token] [--node-events] [--tokens file] [--scope-header name] [--cors-origins list] [dir]",
		summary: "serve the workflows as AG-UI agents over HTTP",
		doc: `
Serve compiles the .wf files of dir (default workflows/) and serves every
workflow as an AG-UI 1.0 agent: POST {base}/workflows/{id} runs one and
streams its events (what an AG-UI HttpAgent points at), POST {base} runs
the workflow forwardedProps.aguic.workflowId or .workflowName names, and
GET {base}/workflows lists them with their graphs. The OpenAPI document is
at /openapi.json and /openapi.yaml, a health check at /healthz.

The files are compiled before the server listens: diagnostics go to
standard error, and errors end the command with status 1. Threads live in
the data directory (--data); runs a crash left unfinished resume from their
last saved node in the background once it is opened.

Each flag may also come from the environment: AGUIC_ADDR, AGUIC_DATA,
AGUIC_BASE_PATH, AGUIC_DEADLINE, AGUIC_MODEL_SCRIPT, AGUIC_KEEP_EVENTS,
AGUIC_FINISHED_TTL, AGUIC_ADMIN_TOKEN, AGUIC_NODE_EVENTS (true or false),
AGUIC_TOKENS_FILE, AGUIC_SCOPE_HEADER and AGUIC_CORS_ORIGINS; a flag wins
over its variable. --deadline bounds every run (0 for none).

Authentication is off by default. --tokens names a file of bearer tokens,
one a line, "name token" or "name:token" (blank lines and # comments are
left out); AGUIC_TOKENS may instead hold "name:token" pairs separated by
commas. Every request but /healthz, /openapi.json, /openapi.yaml and
/docs must then carry "Authorization: Bearer <token>" (401 otherwise), and
the token's name is the scope of its threads: one name never sees
another's threads. Without tokens every thread is in the scope "default",
or, with --scope-header, in the scope that request header names (for a
proxy that sets it; it excludes --tokens). --cors-origins lets browser
clients of other origins call the server: a comma-separated list of
origins such as https://app.example.com, or *.

Retention: --keep-events keeps only the last n events of each thread (a
replay cursor before them answers 410), --finished-ttl deletes threads
that finished, failed or were cancelled and stayed idle that long. Both
apply at start-up and every hour; by default nothing is forgotten. The
database's value log is garbage-collected every ten minutes.

--admin-token enables GET {base}/admin/backup: an online backup of the data
directory for a request that carries the token as a bearer token (aguic
backup --from uses it). Without a token that route refuses every request.

--node-events streams, live, each node's start and end as the AG-UI
activity graph.node.lifecycle, so a UI can highlight the node that runs;
they are not stored, so replay and history never show them.

With --model-script, model nodes answer from that script, as with
aguic run; without it a model node fails.

SIGINT or SIGTERM stops the server gracefully: it stops accepting runs,
lets the runs in progress finish for up to 30 seconds, then cancels them
(each ends with its terminal event) and exits with status 0.`,
	}
	c.flags = func(fs *flag.FlagSet) func(*env, []string) int {
		addr := fs.String("addr", "", "listen on `host:port` (default $AGUIC_ADDR, else "+defaultAddr+")")
		data := fs.String("data", "", "the data `dir`ectory (default $AGUIC_DATA, else .aguic)")
		base := fs.String("base-path", "", "the `path` the AG-UI routes start with (default $AGUIC_BASE_PATH, else "+server.DefaultBasePath+")")
		deadline := fs.String("deadline", "", "the longest a run may take, a `duration` such as 10m (default $AGUIC_DEADLINE, else 1h)")
		script := fs.String("model-script", "", "answer model calls from this script `file` (default $AGUIC_MODEL_SCRIPT)")
		keep := fs.String("keep-events", "", "keep the last `n` events of each thread (default $AGUIC_KEEP_EVENTS, else all)")
		ttl := fs.String("finished-ttl", "", "delete finished threads idle this `duration` (default $AGUIC_FINISHED_TTL, else never)")
		admin := fs.String("admin-token", "", "the bearer `token` of the admin backup route (default $AGUIC_ADMIN_TOKEN, else the route is closed)")
		tokens := fs.String("tokens", "", "require a bearer token from this `file` of \"name token\" lines (default $AGUIC_TOKENS_FILE, or the name:token pairs of $AGUIC_TOKENS, else no authentication)")
		scopeHeader := fs.String("scope-header", "", "without tokens, the request header `name` whose value is the scope of the threads (default $AGUIC_SCOPE_HEADER, else every thread is in the scope default)")
		cors := fs.String("cors-origins", "", "the comma-separated `origins` browser clients may call from, or * (default $AGUIC_CORS_ORIGINS, else CORS is off)")
		nodeEvents := fs.Bool("node-events", false, "stream each node's start and end as graph.node.lifecycle activities (default $AGUIC_NODE_EVENTS, else off)")
		return func(e *env, args []string) int {
			if len(args) > 1 {
				return usageError(e, c, "too many arguments: serve takes one directory")
			}
			o := serveOptions{
				dir:      defaultServeDir,
				addr:     setting(*addr, "AGUIC_ADDR", defaultAddr),
				data:     dataDir(*data),
				basePath: setting(*base, "AGUIC_BASE_PATH", server.DefaultBasePath),
				script:   setting(*script, "AGUIC_MODEL_SCRIPT", ""),
				deadline: server.DefaultDeadline,
			}
			if len(args) == 1 {
				o.dir = args[0]
			}
			o.adminToken = setting(*admin, "AGUIC_ADMIN_TOKEN", "")
			toks, err := loadTokens(*tokens)
			if err != nil {
				// One line for each error of the file.
				for _, line := range strings.Split(err.Error(), "\n") {
					e.errorf("%s", line)
				}
				return exitUsage
			}
			o.tokens = toks
			o.scopeHeader = setting(*scopeHeader, "AGUIC_SCOPE_HEADER", "")
			if o.tokens != nil && o.scopeHeader != "" {
				return usageError(e, c, "--scope-header: with --tokens the scope is the token's name; give one of the two")
			}
			for _, origin := range strings.Split(setting(*cors, "AGUIC_CORS_ORIGINS", ""), ",") {
				if origin = strings.TrimSpace(origin); origin == "" {
					continue
				}
				if err := server.CheckOrigin(origin); err != nil {
					return usageError(e, c, "--cors-origins: %v", err)
				}
				o.corsOrigins = append(o.corsOrigins, origin)
			}
			on, err := boolSetting(fs, "node-events", *nodeEvents, "AGUIC_NODE_EVENTS")
			if err != nil {
				return usageError(e, c, "%v", err)
			}
			o.nodeEvents = on
			if k := setting(*keep, "AGUIC_KEEP_EVENTS", ""); k != "" {
				n, err := strconv.Atoi(k)
				if err != nil || n < 1 {
					return usageError(e, c, "--keep-events: %q is not a positive whole number", k)
				}
				o.retention.MaxEvents = n
			}
			if t := setting(*ttl, "AGUIC_FINISHED_TTL", ""); t != "" {
				v, err := time.ParseDuration(t)
				if err != nil || v <= 0 {
					return usageError(e, c, "--finished-ttl: %q is not a positive duration such as 720h", t)
				}
				o.retention.FinishedTTL = v
			}
			if d := setting(*deadline, "AGUIC_DEADLINE", ""); d != "" {
				v, err := time.ParseDuration(d)
				if err != nil || v < 0 {
					return usageError(e, c, "--deadline: %q is not a duration such as 30s, 10m or 1h", d)
				}
				o.deadline = v
				if v == 0 {
					o.deadline = -1 // no deadline
				}
			}
			if !strings.HasPrefix(o.basePath, "/") || strings.Trim(o.basePath, "/") == "" {
				return usageError(e, c, "--base-path: %q must be a path below the root, such as /agui", o.basePath)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serve(ctx, e, o)
		}
	}
	return c
}

// setting is a flag's value, else the environment variable's, else def.
func setting(flagValue, variable, def string) string {
	if flagValue != "" {
		return flagValue
	}
	if v := os.Getenv(variable); v != "" {
		return v
	}
	return def
}

// boolSetting is a boolean flag's value when it was given, else its
// environment variable's (strconv.ParseBool), else false.
func boolSetting(fs *flag.FlagSet, name string, flagValue bool, variable string) (bool, error) {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	if given {
		return flagValue, nil
	}
	v := os.Getenv(variable)
	if v == "" {
		return false, nil
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s: %q is not true or false", variable, v)
	}
	return on, nil
}

// loadTokens reads the bearer tokens of --tokens, else of the file
// AGUIC_TOKENS_FILE names, else of the list AGUIC_TOKENS holds; nil when
// none is given.
func loadTokens(flagFile string) (*server.Tokens, error) {
	file := setting(flagFile, "AGUIC_TOKENS_FILE", "")
	if file == "" {
		list := os.Getenv("AGUIC_TOKENS")
		if list == "" {
			return nil, nil
		}
		return server.TokenList("AGUIC_TOKENS", list)
	}
	if flagFile == "" && os.Getenv("AGUIC_TOKENS") != "" {
		return nil, errors.New("AGUIC_TOKENS_FILE and AGUIC_TOKENS are both set: set one")
	}
	text, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return server.ParseTokens(file, text)
}

// serveOptions is what aguic serve was asked to do.
type serveOptions struct {
	dir, addr, data, basePath, script string
	deadline                          time.Duration // negative: none
	retention                         store.Retention
	adminToken                        string
	nodeEvents                        bool           // stream the node lifecycle
	tokens                            *server.Tokens // nil: no authentication
	scopeHeader                       string         // without tokens, the header that names the scope
	corsOrigins                       []string       // none: CORS off

	// ready, when set, is called with the server's URL once it listens
	// (tests).
	ready func(url string)
}

// auth is the server's Auth: the tokens', or none.
func (o serveOptions) auth() func(*http.Request) (string, error) {
	if o.tokens == nil {
		return nil
	}
	return o.tokens.Auth
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
	if err := checkModels(prog, opts); err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	reg := vm.NewRegistry()
	stdlib.RegisterWith(reg, opts)
	m := &vm.Machine{Program: prog, Registry: reg}
	bundle, _ := compiler.Bundle(srcs)

	st, err := openData(o.data)
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	defer st.Close()
	vers := &versions{st: st, current: m, machine: func(p *vm.Program) *vm.Machine {
		return &vm.Machine{Program: p, Registry: reg}
	}}
	host, _ := os.Hostname()
	owner := fmt.Sprintf("aguic-%s-%d", host, os.Getpid())
	srv, err := server.New(server.Config{
		Machine:  m,
		Bundle:   bundle,
		Store:    st,
		Load:     vers.load,
		BasePath: o.basePath,
		Deadline: o.deadline,
		Owner:    owner,
		Logger:   log,

		NodeLifecycle: o.nodeEvents,

		ScopeHeader: o.scopeHeader,
		CORSOrigins: o.corsOrigins,
		Auth:        o.auth(),
	})
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	mux := http.NewServeMux()
	mux.Handle(strings.TrimSuffix(o.basePath, "/")+server.BackupPath, server.BackupHandler(st, o.adminToken))
	mux.Handle("/", srv.Handler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: readHeaderLimit, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}

	// Retention and value-log GC run until the server stops.
	maintainCtx, stopMaintaining := context.WithCancel(context.Background())
	defer stopMaintaining()
	maintained := store.Maintain(maintainCtx, st, o.retention, time.Hour, log)
	gcDone := st.StartGC(maintainCtx, 10*time.Minute)

	// Runs a crash left unfinished resume beside the new ones.
	recoverCtx, stopRecovery := context.WithCancel(context.Background())
	var recovery sync.WaitGroup
	recovery.Go(func() {
		recovered, err := store.Recover(recoverCtx, st, owner+"/recovery", recoveryLeaseTTL, vers.load)
		if err != nil {
			log.Error("recovery failed", "error", err.Error())
			return
		}
		for _, r := range recovered {
			attrs := []any{"workflow", r.Run.Key.Workflow, "thread", r.Run.Key.Thread, "run", r.Run.ID}
			if r.Err != nil {
				log.Warn("an interrupted run could not resume", append(attrs, "error", r.Err.Error())...)
				continue
			}
			log.Info("resumed an interrupted run", append(attrs, "status", string(r.Outcome.Status))...)
		}
	})

	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	url := "http://" + ln.Addr().String()
	log.Info("serving", "workflows", len(prog.Workflows), "url", url+strings.TrimSuffix(o.basePath, "/"), "openapi", url+"/openapi.json", "data", o.data)
	if o.ready != nil {
		o.ready(url)
	}

	code := exitOK
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err := <-served:
		log.Error("the server stopped", "error", err.Error())
		code = exitUsage
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	var httpDone sync.WaitGroup
	httpDone.Go(func() {
		if err := hs.Shutdown(shutCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			log.Warn("closing connections", "error", err.Error())
		}
	})
	if err := srv.Shutdown(shutCtx); err != nil {
		log.Warn("runs were cancelled at shutdown", "error", err.Error())
	}
	httpDone.Wait()
	hs.Close()
	stopRecovery()
	recovery.Wait()
	stopMaintaining()
	<-maintained
	<-gcDone
	return code
}
