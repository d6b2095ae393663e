package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/aguic/aguic/vm"
)

// DefaultHookTimeout is how long WebhookHook waits for the run hook's
// answer unless told otherwise.
const DefaultHookTimeout = 5 * time.Second

// maxHookAnswer is the largest answer of a run hook aguic reads.
const maxHookAnswer = 1 << 20

// The types of the webhook messages aguic sends (the "type" of their
// envelope).
const (
	TypeRunRequested = "run.requested"
	TypeRunEnded     = "run.ended"
)

// WebhookMessage is the envelope of every webhook message aguic sends, as
// Standard Webhooks suggests: what happened, when, and its data.
type WebhookMessage[T any] struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      T         `json:"data"`
}

// signer signs webhook messages with the Standard Webhooks scheme: an HMAC
// of "id.timestamp.body" with the shared secret, in webhook-signature.
type signer struct{ wh *standardwebhooks.Webhook }

// newSigner reads a Standard Webhooks secret: base64, with or without
// the "whsec_" prefix; nil for "": messages are then sent unsigned.
func newSigner(secret string) (*signer, error) {
	if secret == "" {
		return nil, nil
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return nil, errors.New(`not base64, with or without the "whsec_" prefix (make one with: echo "whsec_$(openssl rand -base64 32)")`)
	}
	if key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_")); len(key) < 16 {
		return nil, errors.New("too short: give at least 16 bytes, base64")
	}
	return &signer{wh: wh}, nil
}

// CheckWebhookSecret checks secret as WebhookOptions.Secret and
// NotifierOptions.Secret take it: a Standard Webhooks secret, base64 of
// at least 16 bytes, with or without the "whsec_" prefix; "" (unsigned)
// passes. The error says what is wrong and never quotes the secret.
func CheckWebhookSecret(secret string) error {
	_, err := newSigner(secret)
	return err
}

// endpoint is a webhook aguic calls: where, and how its messages are
// signed, sent and logged.
type endpoint struct {
	url    string
	sg     *signer
	client *http.Client
	log    *slog.Logger
	now    func() time.Time
}

// newEndpoint checks the URL and the secret of a webhook (what names it
// in errors) and fills in the defaults: a client of its own,
// slog.Default(), time.Now.
func newEndpoint(what, url, secret string, client *http.Client, log *slog.Logger, now func() time.Time) (*endpoint, error) {
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return nil, fmt.Errorf("the %s URL %q is not an http or https URL", what, url)
	}
	sg, err := newSigner(secret)
	if err != nil {
		return nil, fmt.Errorf("the %s secret: %w", what, err)
	}
	if now == nil {
		now = time.Now
	}
	return &endpoint{url: url, sg: sg, client: cmp.Or(client, &http.Client{}), log: cmp.Or(log, slog.Default()), now: now}, nil
}

// message is the JSON of a message of type typ with data.
func message[T any](ep *endpoint, typ string, data T) ([]byte, error) {
	return json.Marshal(WebhookMessage[T]{Type: typ, Timestamp: ep.now().UTC(), Data: data})
}

// post sends one message, body, under the webhook-id id: the webhook-id
// and webhook-timestamp headers always, webhook-signature with a secret.
// It returns the answer's status and body (at most maxHookAnswer bytes).
func (ep *endpoint) post(ctx context.Context, id string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	now := ep.now()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "aguic/"+Version)
	req.Header.Set(standardwebhooks.HeaderWebhookID, id)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, fmt.Sprint(now.Unix()))
	if ep.sg != nil {
		sig, err := ep.sg.wh.Sign(id, now, body)
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	}
	resp, err := ep.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxHookAnswer+1))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("reading the answer: %w", err)
	}
	if len(answer) > maxHookAnswer {
		return resp.StatusCode, nil, fmt.Errorf("the answer is longer than %d bytes", maxHookAnswer)
	}
	return resp.StatusCode, answer, nil
}

// WebhookOptions configures WebhookHook.
type WebhookOptions struct {
	// Timeout bounds one call of the hook, answer included; default
	// DefaultHookTimeout. A hook that does not answer in time refuses the
	// run.
	Timeout time.Duration
	// Headers names the request headers the hook sees (such as
	// X-Tenant); no others are sent. Authorization is never sent unless
	// named here.
	Headers []string
	// Secret signs each call with the Standard Webhooks scheme (base64,
	// with or without "whsec_"); "": unsigned.
	Secret string
	// Client sends the calls; default a client of its own.
	Client *http.Client
	// Logger logs why a call failed; default slog.Default().
	Logger *slog.Logger
	// Now is the clock of the messages' timestamps; default time.Now.
	Now func() time.Time
}

// HookCall is the data of the message the run hook receives
// (type "run.requested").
type HookCall struct {
	ThreadID     string            `json:"threadId"`
	RunID        string            `json:"runId"`
	WorkflowID   string            `json:"workflowId"`
	Conversation bool              `json:"conversation"`
	Scope        string            `json:"scope"`
	User         map[string]any    `json:"user"`    // who asks, {id, …}; null without authentication
	Headers      map[string]string `json:"headers"` // the headers WebhookOptions.Headers names that the request has, lower-case
	// ForwardedProps are the request's forwardedProps; null when it has
	// none.
	ForwardedProps any `json:"forwardedProps"`
	State          any `json:"state,omitempty"` // the request's state, when it has one
}

// HookAnswer is what the run hook answers, a JSON object; a key it does
// not name makes the answer malformed.
type HookAnswer struct {
	// Allow is required: true lets the run go on, false refuses it.
	Allow *bool `json:"allow"`
	// Reason says why the run is refused; the client sees it.
	Reason string `json:"reason,omitempty"`
	// Status, with allow false, answers the request with this 4xx status
	// and the reason before any stream; without it the client gets the
	// stream RUN_STARTED, RUN_ERROR (code "rejected").
	Status int `json:"status,omitempty"`
	// Context is added to the run's context, key by key: each key is a
	// root the workflow reads ($tenant for "tenant").
	Context map[string]any `json:"context,omitempty"`
	// Agent is added to the run's $agent, key by key.
	Agent map[string]any `json:"agent,omitempty"`
	// Scope, when set, is the scope of the run's thread instead of the
	// request's (printable ASCII, at most 256 bytes).
	Scope string `json:"scope,omitempty"`
}

// errHookFailed is what the client learns of a hook that failed: the
// cause is logged, not shown.
var errHookFailed = errors.New("the run hook did not answer as it should; the run is refused")

// WebhookHook returns a Config.Hook that POSTs every run request to url as
// a Standard Webhooks message of type "run.requested" whose data is a
// HookCall, and applies its HookAnswer: it refuses the run, or lets it go
// on, adding to its context and $agent and setting its scope. It fails
// closed: a timeout, a network error, a status other than 2xx or an
// answer that is not a HookAnswer refuses the run, and the cause is
// logged.
func WebhookHook(url string, opts WebhookOptions) (func(context.Context, *HookRequest) error, error) {
	ep, err := newEndpoint("hook", url, opts.Secret, opts.Client, opts.Logger, opts.Now)
	if err != nil {
		return nil, err
	}
	for _, h := range opts.Headers {
		if !validHeaderName(h) {
			return nil, fmt.Errorf("the hook header %q is not a header name", h)
		}
	}
	timeout := cmp.Or(max(opts.Timeout, 0), DefaultHookTimeout)
	return func(ctx context.Context, hr *HookRequest) error {
		body, err := message(ep, TypeRunRequested, hookCall(ctx, hr, opts.Headers))
		if err != nil {
			return fmt.Errorf("encoding the run hook's message: %w", err)
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		a, err := ep.callHook(ctx, body)
		if err != nil {
			ep.log.Warn("the run hook failed: the run is refused", "url", url, "workflow", hr.WorkflowID, "thread", hr.ThreadID, "run", hr.Request.RunID, "error", err.Error())
			return errHookFailed
		}
		return apply(hr, a)
	}, nil
}

// hookCall is the HookCall of hr.
func hookCall(ctx context.Context, hr *HookRequest, names []string) HookCall {
	c := HookCall{
		ThreadID:       hr.ThreadID,
		RunID:          hr.Request.RunID,
		WorkflowID:     hr.WorkflowID,
		Conversation:   hr.Conversation,
		Scope:          hr.Scope,
		User:           userOf(ctx),
		Headers:        map[string]string{},
		ForwardedProps: hr.Request.ForwardedProps,
		State:          hr.Request.State,
	}
	for _, name := range names {
		if v := hr.Headers.Values(name); len(v) > 0 {
			c.Headers[strings.ToLower(name)] = strings.Join(v, ", ")
		}
	}
	return c
}

// callHook sends one call and reads its answer: any failure is an error.
func (ep *endpoint) callHook(ctx context.Context, body []byte) (*HookAnswer, error) {
	status, answer, err := ep.post(ctx, "msg_"+uuid.NewString(), body)
	switch {
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return nil, fmt.Errorf("no answer within the hook's timeout: %w", cmp.Or(err, ctx.Err()))
	case err != nil:
		return nil, err
	case status < 200 || status > 299:
		return nil, fmt.Errorf("status %d: %s", status, clip(answer))
	}
	var a HookAnswer
	dec := json.NewDecoder(bytes.NewReader(answer))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("the answer is not a hook answer: %v: %s", err, clip(answer))
	}
	if dec.More() {
		return nil, fmt.Errorf("the answer holds more than one JSON value: %s", clip(answer))
	}
	switch {
	case a.Allow == nil:
		return nil, fmt.Errorf(`the answer has no "allow": %s`, clip(answer))
	case a.Status != 0 && (*a.Allow || a.Status < 400 || a.Status > 499):
		return nil, fmt.Errorf(`"status" %d: only a refusal (allow false) takes one, from 400 to 499`, a.Status)
	case a.Agent["_hidden"] != nil:
		return nil, errors.New(`the answer's "agent" sets _hidden, which only aguic sets`)
	}
	if a.Scope != "" {
		if err := checkScope(a.Scope); err != nil {
			return nil, fmt.Errorf(`"scope": %v`, err)
		}
	}
	return &a, nil
}

// apply applies a hook's answer to the request: an error refuses it.
func apply(hr *HookRequest, a *HookAnswer) error {
	if !*a.Allow {
		reason := a.Reason
		if reason == "" {
			reason = "the run hook refused the run"
		}
		if a.Status != 0 {
			return huma.NewError(a.Status, reason)
		}
		return errors.New(reason)
	}
	for k, v := range a.Context {
		hr.Context[k] = vm.Normalize(v)
	}
	if hr.Agent == nil && len(a.Agent) > 0 {
		hr.Agent = map[string]any{}
	}
	for k, v := range a.Agent {
		hr.Agent[k] = vm.Normalize(v)
	}
	if a.Scope != "" {
		hr.Scope = a.Scope
	}
	return nil
}

// clip is a short excerpt of an answer, for a log line.
func clip(b []byte) string {
	const most = 200
	s := strings.TrimSpace(string(b))
	if len(s) > most {
		s = s[:most] + "…"
	}
	if s == "" {
		s = "(empty)"
	}
	return s
}
