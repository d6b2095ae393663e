package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
)

// The defaults of NotifierOptions.
const (
	DefaultNotifyAttempts = 6                // the first delivery and five retries
	DefaultNotifyBackoff  = time.Second      // before the first retry; doubled each time
	DefaultNotifyLongest  = 5 * time.Minute  // the longest wait between two attempts
	DefaultNotifyTimeout  = 10 * time.Second // one attempt, answer included
	DefaultNotifyPending  = 10000            // deliveries waiting at most
)

// How a run came to end, in RunEnd.Trigger.
const (
	TriggerRequest  = "request"  // a run request (AG-UI or MCP) started it
	TriggerRecovery = "recovery" // it resumed after a crash or in another process
	TriggerTimer    = "timer"    // a sleeping thread woke
)

// RunEnd is how a run ended: the data of a completion webhook's message
// (type "run.ended"), and what Config.OnRunEnd receives.
type RunEnd struct {
	ThreadID   string `json:"threadId"`
	RunID      string `json:"runId"`
	WorkflowID string `json:"workflowId"`
	Scope      string `json:"scope"`
	// Outcome is the run's status: finished, suspended (it waits for an
	// approval, a tool result or a timer), failed or cancelled.
	Outcome string `json:"outcome"`
	// Error is why it failed or was cancelled.
	Error *RunEndError `json:"error,omitempty"`
	// Usage is the tokens its model calls used, by model; only for runs
	// a request started.
	Usage []agui.TokenUsage `json:"usage,omitempty"`
	// StartedAt and EndedAt bound the run in this process; DurationMs is
	// their difference.
	StartedAt  time.Time `json:"startedAt"`
	EndedAt    time.Time `json:"endedAt"`
	DurationMs int64     `json:"durationMs"`
	Trigger    string    `json:"trigger"` // request, recovery or timer
}

// RunEndError is the error of a run that failed or was cancelled.
type RunEndError struct {
	Message string `json:"message"`
	Code    string `json:"code,omitempty"`
}

// NotifierOptions configures a Notifier.
type NotifierOptions struct {
	// Secret signs every message with the Standard Webhooks scheme
	// (base64, with or without "whsec_"); "": unsigned.
	Secret string
	// Attempts is how many times a message is sent at most; default
	// DefaultNotifyAttempts.
	Attempts int
	// Backoff is the wait before the first retry, doubled before each
	// next one up to Longest; defaults DefaultNotifyBackoff and
	// DefaultNotifyLongest.
	Backoff, Longest time.Duration
	// Timeout bounds one attempt; default DefaultNotifyTimeout.
	Timeout time.Duration
	// Pending is how many messages may wait for delivery at once; more
	// are dropped, and logged. Default DefaultNotifyPending.
	Pending int
	Client  *http.Client     // default a client of its own
	Logger  *slog.Logger     // default slog.Default()
	Now     func() time.Time // default time.Now
}

// Notifier delivers the end of every run to a completion webhook: a
// Standard Webhooks message of type "run.ended" whose data is a RunEnd,
// POSTed in the background, so that no run or stream waits for it. A
// delivery that fails (a network error, a timeout, a status other than
// 2xx) is retried with exponential backoff, under the same webhook-id, up
// to Attempts times; then it is dropped and logged. Close drains it.
type Notifier struct {
	ep   *endpoint
	opts NotifierOptions

	ctx    context.Context // cancelled when Close gives up waiting
	cancel context.CancelFunc

	mu      sync.Mutex
	closed  bool
	pending int
	wg      sync.WaitGroup
}

// NewNotifier returns a Notifier that delivers to url.
func NewNotifier(url string, opts NotifierOptions) (*Notifier, error) {
	ep, err := newEndpoint("webhook", url, opts.Secret, opts.Client, opts.Logger, opts.Now)
	if err != nil {
		return nil, err
	}
	if opts.Attempts <= 0 {
		opts.Attempts = DefaultNotifyAttempts
	}
	if opts.Backoff <= 0 {
		opts.Backoff = DefaultNotifyBackoff
	}
	if opts.Longest <= 0 {
		opts.Longest = DefaultNotifyLongest
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultNotifyTimeout
	}
	if opts.Pending <= 0 {
		opts.Pending = DefaultNotifyPending
	}
	n := &Notifier{ep: ep, opts: opts}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	return n, nil
}

// RunEnded queues the delivery of e and returns at once. After Close, or
// with Pending messages waiting already, e is dropped and logged.
func (n *Notifier) RunEnded(e RunEnd) {
	attrs := []any{"url", n.ep.url, "workflow", e.WorkflowID, "thread", e.ThreadID, "run", e.RunID}
	body, err := message(n.ep, TypeRunEnded, e)
	if err != nil {
		n.ep.log.Error("the completion webhook's message could not be encoded", append(attrs, "error", err.Error())...)
		return
	}
	n.mu.Lock()
	switch {
	case n.closed:
		n.mu.Unlock()
		n.ep.log.Warn("the completion webhook is closed: the run's end is not delivered", attrs...)
		return
	case n.pending >= n.opts.Pending:
		n.mu.Unlock()
		n.ep.log.Warn("too many completion webhook messages wait: the run's end is not delivered", append(attrs, "pending", n.opts.Pending)...)
		return
	}
	n.pending++
	n.wg.Add(1)
	n.mu.Unlock()
	go func() {
		defer n.wg.Done()
		defer func() {
			n.mu.Lock()
			n.pending--
			n.mu.Unlock()
		}()
		n.deliver("msg_"+uuid.NewString(), body, attrs)
	}()
}

// deliver sends one message until an attempt succeeds, the attempts run
// out or Close gives up.
func (n *Notifier) deliver(id string, body []byte, attrs []any) {
	wait := n.opts.Backoff
	var err error
	for attempt := 1; attempt <= n.opts.Attempts; attempt++ {
		if err = n.attempt(id, body); err == nil {
			return
		}
		if attempt == n.opts.Attempts {
			break
		}
		n.ep.log.Info("the completion webhook failed: retrying", append(attrs, "attempt", attempt, "retry in", wait.String(), "error", err.Error())...)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-n.ctx.Done():
			t.Stop()
			n.ep.log.Warn("the completion webhook was not delivered before the shutdown", append(attrs, "attempts", attempt, "error", err.Error())...)
			return
		}
		wait = min(2*wait, n.opts.Longest)
	}
	n.ep.log.Warn("the completion webhook was not delivered", append(attrs, "attempts", n.opts.Attempts, "error", err.Error())...)
}

// attempt sends the message once.
func (n *Notifier) attempt(id string, body []byte) error {
	ctx, cancel := context.WithTimeout(n.ctx, n.opts.Timeout)
	defer cancel()
	status, answer, err := n.ep.post(ctx, id, body)
	switch {
	case err != nil:
		return err
	case status < 200 || status > 299:
		return fmt.Errorf("status %d: %s", status, clip(answer))
	}
	return nil
}

// Close stops taking messages and waits until the ones pending are
// delivered (or have used their attempts) or ctx is done; then it stops
// them and returns ctx's error. The messages it stops are logged.
func (n *Notifier) Close(ctx context.Context) error {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	done := make(chan struct{})
	go func() {
		n.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		n.cancel()
		return nil
	case <-ctx.Done():
		n.cancel()
		<-done
		return ctx.Err()
	}
}

// EndOf is the RunEnd of run runID on the thread key that ran from
// started to ended and ended with o, or with err when it could not run to
// its end (it then failed); the caller adds the trigger and the usage.
func EndOf(key store.Key, runID string, o vm.Outcome, err error, started, ended time.Time) RunEnd {
	e := RunEnd{
		ThreadID: key.Thread, RunID: runID, WorkflowID: key.Workflow, Scope: key.Scope, Outcome: string(o.Status),
		StartedAt: started.UTC(), EndedAt: ended.UTC(), DurationMs: ended.Sub(started).Milliseconds(),
	}
	switch {
	case err != nil:
		e.Outcome = string(vm.Failed)
		e.Error = &RunEndError{Message: err.Error(), Code: errCode(err)}
	case o.Err != nil:
		e.Error = &RunEndError{Message: o.Err.Message, Code: o.Err.Code}
	}
	return e
}
