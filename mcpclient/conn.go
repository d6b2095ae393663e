package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aguic/aguic/mcplock"
)

// connectTimeout bounds one attempt to start and initialize a server. It
// is longer than most calls' timeouts: a call that gives up waiting leaves
// the attempt going, for the next call to find the server ready.
const connectTimeout = 2 * time.Minute

// codeRejected is the code of the SDK's "rejected by transport": a
// request that did not reach the server.
const codeRejected = -32005

// exitWait is how long a failed session waits for its process to exit,
// so as to say that it exited and how.
const exitWait = time.Second

// conn is the connection to one server declaration: at most one live
// session at a time, made again when it ends.
type conn struct {
	pool   *Pool
	cfg    *config
	locked *mcplock.Server // compared with the live tools at the first session
	log    *slog.Logger

	mu        sync.Mutex
	live      *session // nil when there is none
	dialing   *attempt // the attempt to connect in progress, or nil
	connected bool     // a session has been made once
	closed    bool
}

// attempt is one attempt to connect, which every caller that needs a
// session meanwhile waits for.
type attempt struct {
	done chan struct{}
	ss   *session // set before done closes
	err  error
}

// session is one MCP session with the server.
type session struct {
	cs   *mcp.ClientSession
	proc *process      // the server's process, for a stdio server
	gone chan struct{} // closed when the session has ended
	once sync.Once     // of close

	mu     sync.Mutex
	tools  []mcplock.Tool // the cached tools/list, when listed
	listed bool
	gen    int // counts the notifications that the list changed
}

// session returns the live session, or waits for one to be made.
func (c *conn) session(ctx context.Context) (*session, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	if ss := c.live; ss != nil && !ss.ended() {
		c.mu.Unlock()
		return ss, nil
	}
	a := c.dialing
	if a == nil {
		a = &attempt{done: make(chan struct{})}
		c.dialing = a
		c.pool.wg.Add(1)
		go c.dial(a)
	}
	c.mu.Unlock()
	select {
	case <-a.done:
		return a.ss, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// dial makes a session and publishes it, or the failure, to a's waiters.
func (c *conn) dial(a *attempt) {
	defer c.pool.wg.Done()
	ctx, cancel := context.WithTimeout(c.pool.ctx, connectTimeout)
	defer cancel()
	ss, err := c.connect(ctx)
	c.mu.Lock()
	first := !c.connected
	c.mu.Unlock()
	if err == nil && first && c.locked != nil {
		c.compareLock(ctx, ss)
	}
	c.mu.Lock()
	c.dialing = nil
	if err == nil && c.closed {
		c.pool.wg.Add(1)
		go func() {
			defer c.pool.wg.Done()
			ss.close()
		}()
		ss, err = nil, ErrClosed
	}
	if err == nil {
		c.live, c.connected = ss, true
	}
	a.ss, a.err = ss, err
	c.mu.Unlock()
	close(a.done)
}

// connect starts the server or reaches its URL, and initializes a session.
func (c *conn) connect(ctx context.Context) (*session, error) {
	ss := &session{gone: make(chan struct{})}
	client := mcp.NewClient(c.pool.impl, &mcp.ClientOptions{
		Logger:       c.log,
		Capabilities: &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			ss.toolsChanged()
			c.log.Debug("mcp server's tools changed")
		},
	})
	var t mcp.Transport
	if c.pool.connect != nil {
		var err error
		if t, err = c.pool.connect(ctx, c.cfg.Name); err != nil {
			return nil, &lostError{fmt.Errorf("mcp server %s: %v", c.cfg.Name, err)}
		}
	} else if c.cfg.stdio() {
		proc, err := startProcess(c.cfg, c.log)
		if err != nil {
			return nil, &lostError{fmt.Errorf("mcp server %s: %v", c.cfg.Name, err)}
		}
		ss.proc = proc
		t = &mcp.IOTransport{Reader: proc.stdout, Writer: proc.stdin}
	} else {
		t = httpTransport(c.cfg)
	}
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			err = &lostError{&timeoutError{fmt.Sprintf("mcp server %s: no answer to initialize within %s", c.cfg.Name, connectTimeout)}}
		} else {
			err = c.describe(ss, "initialize", err)
		}
		if ss.proc != nil {
			ss.proc.stop()
		}
		return nil, err
	}
	ss.cs = cs
	c.pool.wg.Add(1)
	go func() {
		defer c.pool.wg.Done()
		_ = cs.Wait()
		close(ss.gone)
		c.mu.Lock()
		if c.live == ss {
			c.live = nil
		}
		c.mu.Unlock()
		ss.close()
	}()
	return ss, nil
}

// describe turns the failure of a request (what) on a session into the
// error a caller sees: the server exited, or could not be reached.
func (c *conn) describe(ss *session, what string, err error) error {
	name := c.cfg.Name
	if errors.Is(err, ErrClosed) || c.pool.ctx.Err() != nil {
		return ErrClosed
	}
	// An HTTP request that failed says so deep in the SDK's wrapping.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if ss.proc == nil {
		return &lostError{fmt.Errorf("mcp server %s: %s: %s: %v", name, c.cfg.URL, what, err)}
	}
	select {
	case <-ss.proc.exited:
		if ss.proc.quit() {
			return &lostError{fmt.Errorf("mcp server %s exited: %s", name, ss.proc.exitErr())}
		}
	case <-time.After(exitWait):
	}
	return &lostError{fmt.Errorf("mcp server %s: %s: %v", name, what, err)}
}

// try runs f once on a session, within timeout.
func (c *conn) try(ctx context.Context, timeout time.Duration, what string, f func(context.Context, *session) error) error {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ss, err := c.session(tctx)
	if err == nil {
		if err = f(tctx, ss); err == nil {
			return nil
		}
	}
	name := c.cfg.Name
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("mcp server %s: %s: %w", name, what, ctx.Err())
	case tctx.Err() != nil:
		return &timeoutError{fmt.Sprintf("mcp server %s: %s: no answer within %s", name, what, timeout)}
	case ss == nil: // connecting failed: dial said why
		return err
	}
	// The server's answer is an error: the session is fine. (The SDK
	// says a request did not reach an HTTP server with an error of code
	// codeRejected, and a closed connection with errors of its own.)
	var rpc *jsonrpc.Error
	if !errors.Is(err, mcp.ErrConnectionClosed) && errors.As(err, &rpc) && rpc.Code != codeRejected {
		return fmt.Errorf("mcp server %s: %s: %s", name, what, rpc.Message)
	}
	// The session failed under the request: the next request makes
	// another.
	err = c.describe(ss, what, err)
	c.drop(ss)
	return err
}

// drop ends a session that failed, in the background. Once the
// connection is closed, its close ends the sessions instead (and the
// pool's wait group may count no more goroutines).
func (c *conn) drop(ss *session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if c.live == ss {
		c.live = nil
	}
	c.pool.wg.Add(1)
	go func() {
		defer c.pool.wg.Done()
		ss.close()
	}()
}

// close ends the connection for good, with its session.
func (c *conn) close() {
	c.mu.Lock()
	c.closed = true
	ss := c.live
	c.live = nil
	c.mu.Unlock()
	if ss != nil {
		ss.close()
	}
}

// compareLock logs how the server's tools differ from its lock entry.
func (c *conn) compareLock(ctx context.Context, ss *session) {
	tools, err := ss.listTools(ctx, false)
	if err != nil {
		c.log.Warn("mcp server's tools not compared with its lock: tools/list failed", "err", err)
		return
	}
	for _, ch := range mcplock.Diff(c.locked, &mcplock.Server{Tools: tools}) {
		c.log.Warn("mcp server's tools differ from "+mcplock.FileName+"; run `aguic mcp lock`", "change", ch.String())
	}
}

// ended reports whether the session has ended, or its process has
// exited and it is about to.
func (ss *session) ended() bool {
	var exited <-chan struct{}
	if ss.proc != nil {
		exited = ss.proc.exited
	}
	select {
	case <-ss.gone:
		return true
	case <-exited:
		return true
	default:
		return false
	}
}

// close ends the session and stops its process.
func (ss *session) close() {
	ss.once.Do(func() {
		_ = ss.cs.Close()
		if ss.proc != nil {
			ss.proc.stop()
		}
	})
}

// toolsChanged forgets the cached tools.
func (ss *session) toolsChanged() {
	ss.mu.Lock()
	ss.tools, ss.listed = nil, false
	ss.gen++
	ss.mu.Unlock()
}

// listTools returns the cached tools, or lists them when there are none
// or fresh is set.
func (ss *session) listTools(ctx context.Context, fresh bool) ([]mcplock.Tool, error) {
	ss.mu.Lock()
	if ss.listed && !fresh {
		tools := ss.tools
		ss.mu.Unlock()
		return tools, nil
	}
	gen := ss.gen
	ss.mu.Unlock()
	var tools []mcplock.Tool
	for t, err := range ss.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		tools = append(tools, lockTool(t))
	}
	slices.SortFunc(tools, func(a, b mcplock.Tool) int { return strings.Compare(a.Name, b.Name) })
	ss.mu.Lock()
	if ss.gen == gen {
		ss.tools, ss.listed = tools, true
	}
	ss.mu.Unlock()
	return tools, nil
}

// lockTool converts the SDK's tool to the lock's, its schemas as the
// server wrote them.
func lockTool(t *mcp.Tool) mcplock.Tool {
	return mcplock.Tool{
		Name:         t.Name,
		Title:        t.Title,
		Description:  t.Description,
		InputSchema:  object(t.InputSchema),
		OutputSchema: object(t.OutputSchema),
		Annotations:  object(t.Annotations),
	}
}

// object is v as a JSON object with its numbers as written, or nil.
func object(v any) map[string]any {
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil
	}
	return m
}
