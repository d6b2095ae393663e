package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aguic/aguic/mcplock"
	"github.com/aguic/aguic/vm"
)

// ErrClosed is the error of the methods of a closed Pool.
var ErrClosed = errors.New("mcp: the connections to MCP servers are closed")

// Options configures a Pool.
type Options struct {
	Logger *slog.Logger // where the pool and the servers' stderr write; slog.Default() when nil
	// Version is the version of aguic the pool tells servers it is; "dev"
	// when empty.
	Version string
	// Trace, when set, is told of each tool call (Call): it is called as
	// the call starts, with the server's name and the tool's, and returns
	// the context the call runs in and the function called with the
	// call's error when it ends (a result marked as an error is not one).
	// A tracer traces the call so.
	Trace func(ctx context.Context, server, tool string) (context.Context, func(error))
	// Connect, when set, gives the transport to each server, by its name,
	// instead of starting its command or reaching its URL: tests answer
	// with servers of their own, in memory.
	Connect func(ctx context.Context, server string) (mcp.Transport, error)
}

// Pool holds the connections of a process to MCP servers. It is safe for
// concurrent use.
type Pool struct {
	log  *slog.Logger
	impl *mcp.Implementation
	ctx  context.Context // ends at Close: it bounds every connection attempt
	stop context.CancelFunc
	wg   sync.WaitGroup // connection attempts, session watchers, stops

	mu    sync.Mutex
	conns map[string]*conn // by config.key
	// decls are the connections of the declarations evaluated already,
	// by the value that says which server a declaration is (its command,
	// else its url), which the copies of a vm.Server share: a declaration
	// is evaluated once, at its first use, not at every call.
	decls  map[*vm.Value]*conn
	closed bool

	trace   func(ctx context.Context, server, tool string) (context.Context, func(error)) // Options.Trace
	connect func(ctx context.Context, server string) (mcp.Transport, error)               // Options.Connect

	// beforeCall, when set, is called just before a tool call is sent.
	beforeCall func(server, tool string)
}

// NewPool returns a pool with no connections: each is made at its
// server's first use.
func NewPool(o Options) *Pool {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Pool{
		log:     o.Logger,
		impl:    &mcp.Implementation{Name: "aguic", Version: o.Version},
		ctx:     ctx,
		stop:    stop,
		conns:   map[string]*conn{},
		decls:   map[*vm.Value]*conn{},
		trace:   o.Trace,
		connect: o.Connect,
	}
}

// Close ends every connection and stops every server process the pool
// started: each gets MCP's shutdown (its input closes), then SIGTERM,
// then SIGKILL, and once it has exited, whatever is left of its process
// group gets SIGKILL. It returns when the servers have exited. Calls in
// flight fail; later calls return ErrClosed.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	conns := make([]*conn, 0, len(p.conns))
	for _, c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	p.stop()
	for _, c := range conns {
		c.close()
	}
	p.wg.Wait()
	return nil
}

// Tools lists the tools the server s lists, sorted by name, whether s
// allows them or not (see vm.Server.Allows). The list is cached until the
// server says it changed, or its connection ends. The caller must not
// modify it.
func (p *Pool) Tools(ctx context.Context, s *vm.Server) ([]mcplock.Tool, error) {
	var tools []mcplock.Tool
	err := p.do(ctx, s, "tools/list", func(ctx context.Context, ss *session) error {
		var err error
		tools, err = ss.listTools(ctx, false)
		return err
	})
	return tools, err
}

// Call calls the tool of the server s with args (nil for none), within
// the server's timeout (past it, the error is a context.DeadlineExceeded
// for errors.Is), and tries again as its retry and backoff say when the
// server could not be reached or died during the call. To change the
// timeout or the retries of one call, pass a copy of s with other values:
// they do not select the connection. A tool s does not allow is an error;
// a tool that fails answers a Result with IsError, not an error.
func (p *Pool) Call(ctx context.Context, s *vm.Server, tool string, args map[string]any) (*Result, error) {
	if !s.Allows(tool) {
		return nil, fmt.Errorf("mcp server %s: tool %q is not among its tools %s", s.Name, tool, vm.QuoteList(s.Tools))
	}
	if args == nil {
		args = map[string]any{}
	}
	if p.trace != nil {
		tctx, end := p.trace(ctx, s.Name, tool)
		res, err := p.call(tctx, s, tool, args)
		end(err)
		return res, err
	}
	return p.call(ctx, s, tool, args)
}

// call is Call without the trace.
func (p *Pool) call(ctx context.Context, s *vm.Server, tool string, args map[string]any) (*Result, error) {
	var res *Result
	err := p.do(ctx, s, fmt.Sprintf("tool %q", tool), func(ctx context.Context, ss *session) error {
		if p.beforeCall != nil {
			p.beforeCall(s.Name, tool)
		}
		r, err := ss.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			return err
		}
		res = resultOf(r)
		return nil
	})
	return res, err
}

// Lock connects to the server s and reports what a lock file records of
// it: the declaration's origin, the protocol version and server info of
// the session, and every tool it lists now.
func (p *Pool) Lock(ctx context.Context, s *vm.Server) (*mcplock.Server, error) {
	var out *mcplock.Server
	err := p.do(ctx, s, "tools/list", func(ctx context.Context, ss *session) error {
		tools, err := ss.listTools(ctx, true)
		if err != nil {
			return err
		}
		out = &mcplock.Server{From: s.Origin(), Tools: tools}
		if init := ss.cs.InitializeResult(); init != nil {
			out.Protocol = init.ProtocolVersion
			if init.ServerInfo != nil {
				out.Info = mcplock.Info{Name: init.ServerInfo.Name, Version: init.ServerInfo.Version}
			}
		}
		return nil
	})
	return out, err
}

// conn returns the connection of s's declaration, evaluated and made at
// its first use; declarations that evaluate to the same server share one.
func (p *Pool) conn(s *vm.Server) (*conn, error) {
	decl := s.Command
	if decl == nil {
		decl = s.URL
	}
	p.mu.Lock()
	c, closed := p.decls[decl], p.closed
	p.mu.Unlock()
	switch {
	case closed:
		return nil, ErrClosed
	case c != nil && decl != nil:
		return c, nil
	}
	cfg, err := evalConfig(s)
	if err != nil {
		return nil, err
	}
	key := cfg.key()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	c = p.conns[key]
	if c == nil {
		c = &conn{pool: p, cfg: cfg, locked: s.Locked, log: p.log.With("mcp_server", s.Name)}
		p.conns[key] = c
	}
	if decl != nil {
		p.decls[decl] = c
	}
	return c, nil
}

// do runs f on a session of s's server within the server's timeout, and
// again, as the server's retry and backoff say, while the server cannot
// be reached. what names the request in errors.
func (p *Pool) do(ctx context.Context, s *vm.Server, what string, f func(context.Context, *session) error) error {
	c, err := p.conn(s)
	if err != nil {
		return err
	}
	pol, err := policyOf(s)
	if err != nil {
		return err
	}
	for try := 1; ; try++ {
		err := c.try(ctx, pol.timeout, what, f)
		var lost *lostError
		if err == nil || !errors.As(err, &lost) || try > pol.retries {
			if err != nil && try > 1 {
				err = fmt.Errorf("%w (tried %d times)", err, try)
			}
			return err
		}
		wait := pol.delay(try)
		c.log.Warn("mcp server unreachable; trying again", "request", what, "err", err, "wait", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("mcp server %s: %s: %w", s.Name, what, ctx.Err())
		case <-t.C:
		}
	}
}

// lostError is a failure to reach a server or to keep it: one worth
// trying again.
type lostError struct{ err error }

func (e *lostError) Error() string { return e.err.Error() }
func (e *lostError) Unwrap() error { return e.err }

// timeoutError is a request the server did not answer within its
// timeout. It is a context.DeadlineExceeded (errors.Is), though the
// caller's context may go on.
type timeoutError struct{ msg string }

func (e *timeoutError) Error() string { return e.msg }
func (e *timeoutError) Unwrap() error { return context.DeadlineExceeded }
