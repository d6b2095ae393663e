package stdlib

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aguic/aguic/vm"
)

// maxResponseBody is the largest response body an http node reads.
const maxResponseBody = 10 << 20

// attachData sets the Exec of the state and activity kinds, http and call.
func attachData(r *vm.Registry, opts Options) {
	p := statePaths{
		state:    vm.ParsePath("$agent.state"),
		hidden:   vm.ParsePath("$agent._hidden"),
		baseline: vm.ParsePath("$agent._hidden.state"),
	}
	attach(r, "state sync", func(ctx context.Context, c *vm.Call) (vm.Step, error) {
		return vm.Step{}, execStateSync(c, p)
	})
	attach(r, "state snapshot", func(ctx context.Context, c *vm.Call) (vm.Step, error) {
		return vm.Step{}, execStateSnapshot(c, p)
	})
	attach(r, "state delta", func(ctx context.Context, c *vm.Call) (vm.Step, error) {
		return vm.Step{}, execStateDelta(c, p)
	})
	attach(r, "activity sync", func(ctx context.Context, c *vm.Call) (vm.Step, error) {
		return vm.Step{}, execActivitySync(c)
	})
	attach(r, "activity snapshot", func(ctx context.Context, c *vm.Call) (vm.Step, error) {
		return vm.Step{}, execActivitySnapshot(c)
	})
	attach(r, "activity delta", func(ctx context.Context, c *vm.Call) (vm.Step, error) {
		return vm.Step{}, execActivityDelta(c)
	})
	client := opts.HTTPClient
	if client == nil {
		// A client of our own: each attempt's timeout comes from its context.
		client = &http.Client{}
		if t, ok := http.DefaultTransport.(*http.Transport); ok {
			client.Transport = t.Clone()
		}
	}
	attach(r, "http", func(ctx context.Context, c *vm.Call) (vm.Step, error) {
		res, err := execHTTP(ctx, c, client)
		return vm.Step{Result: res}, err
	})
	attach(r, "call", func(ctx context.Context, c *vm.Call) (vm.Step, error) {
		res, err := execCall(ctx, c)
		return vm.Step{Result: res}, err
	})
}

// State.

// statePaths are where the client's state and its baseline live: the
// baseline is the member "state" of hidden.
type statePaths struct {
	state, hidden, baseline *vm.Path
}

// execStateSync brings the client's state from the baseline to $agent.state.
func execStateSync(c *vm.Call, p statePaths) error {
	only, err := boolKey(c, "snapshots_only")
	if err != nil {
		return err
	}
	cur, base := c.Get(p.state), c.Get(p.baseline)
	plan, err := diffSync(base, cur, true, only)
	if err != nil {
		return vm.Errorf(vm.ErrNode, "state sync: %v", err)
	}
	if !plan.Changed {
		return nil
	}
	e := vm.Event{Type: vm.StateDelta, Patch: plan.Patch}
	if plan.Snapshot {
		e = vm.Event{Type: vm.StateSnapshot, Value: vm.Copy(cur)}
	}
	if err := c.Emit(e); err != nil {
		return err
	}
	// The new baseline shares what did not change with the old one, which
	// it replaces: written in place, not copied again by Set.
	if hidden, ok := c.Get(p.hidden).(map[string]any); ok {
		hidden["state"] = plan.Base
		c.Wrote(p.baseline)
		return nil
	}
	return setContext(c, "state sync", p.baseline, plan.Base)
}

// execStateSnapshot sends the argument as the client's whole state, which
// becomes $agent.state and its baseline.
func execStateSnapshot(c *vm.Call, p statePaths) error {
	v, err := c.Arg()
	if err != nil {
		return err
	}
	v = vm.Normalize(v)
	if err := c.Emit(vm.Event{Type: vm.StateSnapshot, Value: v}); err != nil {
		return err
	}
	if err := setContext(c, "state snapshot", p.state, v); err != nil {
		return err
	}
	return setContext(c, "state snapshot", p.baseline, v)
}

// execStateDelta applies the argument's operations to $agent.state and sends
// them. The baseline follows; when they do not apply to it, it is dropped,
// so the next state sync sends a snapshot.
func execStateDelta(c *vm.Call, p statePaths) error {
	v, err := c.Arg()
	if err != nil {
		return err
	}
	ops, err := patchOps("state delta", v)
	if err != nil {
		return err
	}
	next, err := applyPatch("state delta", c.Get(p.state), ops)
	if err != nil {
		return err
	}
	if err := c.Emit(vm.Event{Type: vm.StateDelta, Patch: vm.Copy(ops).([]any)}); err != nil {
		return err
	}
	if err := setContext(c, "state delta", p.state, next); err != nil {
		return err
	}
	var base any
	if old := c.Get(p.baseline); old != nil {
		base, err = applyOps(old, ops)
		if err != nil {
			base = nil
		}
	}
	return setContext(c, "state delta", p.baseline, base)
}

func setContext(c *vm.Call, what string, p *vm.Path, v any) error {
	if err := c.Set(p, v); err != nil {
		return vm.Errorf(vm.ErrNode, "%s: %v", what, err)
	}
	return nil
}

// Activities.

// activityBaseline is the hidden baseline of one activity message: what the
// client was last sent.
type activityBaseline struct {
	Type    string
	Content any
}

func activityKey(id string) string { return vm.ActivityPrefix + id }

// loadActivity returns the baseline of activity id; ok is false when the
// run has sent none.
func loadActivity(c *vm.Call, id string) (a activityBaseline, ok bool) {
	m, ok := c.Hidden(activityKey(id)).(map[string]any)
	if !ok {
		return activityBaseline{}, false
	}
	a.Type, _ = m["type"].(string)
	a.Content = m["content"]
	return a, true
}

func saveActivity(c *vm.Call, id string, a activityBaseline) {
	c.SetHidden(activityKey(id), map[string]any{"type": a.Type, "content": a.Content})
}

// activityHead reads what every activity kind has: the id and the type.
func activityHead(c *vm.Call) (id, typ string, err error) {
	what := c.Spec.Name
	v, err := c.Arg()
	if err != nil {
		return "", "", err
	}
	id, ok := v.(string)
	if !ok || id == "" {
		return "", "", vm.Errorf(vm.ErrNode, "%s: the activity id must be a non-empty string, found %s", what, describeValue(v))
	}
	typ, _, err = stringKey(c, "type")
	if err != nil {
		return "", "", err
	}
	if typ == "" {
		return "", "", vm.Errorf(vm.ErrNode, "%s %q: type must be a non-empty string", what, id)
	}
	return id, typ, nil
}

// execActivitySync brings the client's activity message from its baseline
// to the value at from. The first sync of an activity is a snapshot with
// the node's replace; later snapshots (a changed type, snapshots_only, or
// a patch longer than the content) always replace, since the client holds
// the message this run sent.
func execActivitySync(c *vm.Call) error {
	id, typ, err := activityHead(c)
	if err != nil {
		return err
	}
	content, err := activityContent(c, "from")
	if err != nil {
		return err
	}
	replace, err := boolKey(c, "replace")
	if err != nil {
		return err
	}
	only, err := boolKey(c, "snapshots_only")
	if err != nil {
		return err
	}
	base, had := loadActivity(c, id)
	plan, err := diffSync(base.Content, content, had, only || base.Type != typ)
	if err != nil {
		return vm.Errorf(vm.ErrNode, "activity sync %q: %v", id, err)
	}
	if had && base.Type == typ && !plan.Changed {
		return nil
	}
	e := vm.Event{Type: vm.ActivityDelta, MessageID: activityKey(id), ActivityType: typ, Patch: plan.Patch}
	if plan.Snapshot || !plan.Changed {
		if had {
			replace = true
		}
		e = vm.Event{Type: vm.ActivitySnapshot, MessageID: activityKey(id), ActivityType: typ, Value: content, Replace: &replace}
	}
	if err := c.Emit(e); err != nil {
		return err
	}
	saveActivity(c, id, activityBaseline{Type: typ, Content: content})
	return nil
}

// activityContent reads the key holding an activity's content, which must
// be an object (AG-UI 1.0 requires one).
func activityContent(c *vm.Call, key string) (map[string]any, error) {
	v, _, err := c.Key(key)
	if err != nil {
		return nil, err
	}
	content, ok := vm.Normalize(v).(map[string]any)
	if !ok {
		return nil, vm.Errorf(vm.ErrNode, "%s: an activity's content must be an object, found %s", c.Spec.Name, describeValue(v))
	}
	return content, nil
}

// execActivitySnapshot sends an activity's whole content. With replace
// false a client that holds the message keeps it, so a baseline this run
// already has stays.
func execActivitySnapshot(c *vm.Call) error {
	id, typ, err := activityHead(c)
	if err != nil {
		return err
	}
	content, err := activityContent(c, "content")
	if err != nil {
		return err
	}
	replace, err := boolKey(c, "replace")
	if err != nil {
		return err
	}
	if err := c.Emit(vm.Event{Type: vm.ActivitySnapshot, MessageID: activityKey(id), ActivityType: typ, Value: content, Replace: &replace}); err != nil {
		return err
	}
	if _, had := loadActivity(c, id); replace || !had {
		saveActivity(c, id, activityBaseline{Type: typ, Content: content})
	}
	return nil
}

// execActivityDelta sends operations on an activity's content. When the
// run holds the activity's baseline they must apply to it, and it follows.
func execActivityDelta(c *vm.Call) error {
	id, typ, err := activityHead(c)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("activity delta %q", id)
	v, _, err := c.Key("patch")
	if err != nil {
		return err
	}
	ops, err := patchOps(what, v)
	if err != nil {
		return err
	}
	base, had := loadActivity(c, id)
	var next any
	if had {
		if next, err = applyPatch(what, base.Content, ops); err != nil {
			return err
		}
	}
	if err := c.Emit(vm.Event{Type: vm.ActivityDelta, MessageID: activityKey(id), ActivityType: typ, Patch: vm.Copy(ops).([]any)}); err != nil {
		return err
	}
	if had {
		saveActivity(c, id, activityBaseline{Type: typ, Content: next})
	}
	return nil
}

// Keys.

// durationKey reads a positive duration; 0 when the key and its default
// are absent.
func durationKey(c *vm.Call, name string) (time.Duration, error) {
	s, _, err := stringKey(c, name)
	if err != nil || s == "" {
		return 0, err
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, vm.Errorf(vm.ErrNode, "%s expects a positive duration such as \"20s\", found %q", name, s)
	}
	return d, nil
}

// retryPolicyOf reads the retry and backoff keys.
func retryPolicyOf(c *vm.Call) (retryPolicy, error) {
	var b retryPolicy
	v, _, err := c.Key("retry")
	if err != nil {
		return b, err
	}
	if v != nil {
		n, err := intArg(c.Spec.Name, "retry", v)
		if err != nil || n < 0 {
			return b, vm.Errorf(vm.ErrNode, "retry must be a whole number of at least 0, found %s", describeValue(v))
		}
		b.retries = n
	}
	s, _, err := stringKey(c, "backoff")
	if err != nil {
		return b, err
	}
	if s != "" {
		if b.first, b.longest, err = vm.ParseBackoff(s); err != nil {
			return b, vm.Errorf(vm.ErrNode, "backoff: %v", err)
		}
	}
	return b, nil
}

// Retries.

// retryPolicy says how often and how long to wait before trying again.
type retryPolicy struct {
	retries        int           // tries after the first
	first, longest time.Duration // the first wait, doubling up to the longest
}

// delay is the wait before retry n (1 for the first retry): first doubled
// n-1 times, at most longest.
func (b retryPolicy) delay(n int) time.Duration {
	d := b.first
	for i := 1; i < n && d < b.longest; i++ {
		d *= 2
	}
	return min(d, b.longest)
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// runEndedErr turns the end of the run's context into the error that stops
// the run: cancelled, or past its deadline.
func runEndedErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return vm.Errorf(vm.ErrDeadline, "the run's deadline passed")
	}
	return vm.Errorf(vm.ErrCancelled, "the run was cancelled")
}

// HTTP.

// httpRequest is an http node's request, evaluated once for every try.
type httpRequest struct {
	method  string
	url     *url.URL
	where   string // method and the URL without credentials or query, for messages
	header  http.Header
	body    []byte
	hasBody bool
	timeout time.Duration
	allow   map[int]bool
	retry   retryPolicy
}

func execHTTP(ctx context.Context, c *vm.Call, client *http.Client) (any, error) {
	req, err := newHTTPRequest(c)
	if err != nil {
		return nil, err
	}
	for try := 0; ; try++ {
		res, wait, err := req.do(ctx, client, c.Now())
		if err == nil || wait < 0 || try >= req.retry.retries {
			if err != nil && try > 0 {
				var e *vm.Error
				if errors.As(err, &e) && e.Code != vm.ErrCancelled && e.Code != vm.ErrDeadline {
					e.Message += fmt.Sprintf(" (after %d tries)", try+1)
				}
			}
			return res, err
		}
		d := req.retry.delay(try + 1)
		if wait > 0 {
			d = min(wait, req.retry.longest)
		}
		if sleepCtx(ctx, d) != nil {
			return nil, runEndedErr(ctx)
		}
	}
}

// newHTTPRequest evaluates the node's URL and keys.
func newHTTPRequest(c *vm.Call) (*httpRequest, error) {
	r := &httpRequest{method: strings.ToUpper(c.Node.Word), header: http.Header{}}
	if r.method == "" {
		r.method = http.MethodGet
	}
	v, err := c.Arg()
	if err != nil {
		return nil, err
	}
	raw, ok := v.(string)
	if !ok {
		return nil, vm.Errorf(vm.ErrNode, "http %s: the url must be a string, found %s", r.method, describeValue(v))
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, vm.Errorf(vm.ErrNode, "http %s: invalid url %q: expected an absolute http or https url", r.method, redactRawURL(raw))
	}
	r.url = u
	r.where = r.method + " " + redactURL(u)
	if v, _, err = c.Key("headers"); err != nil {
		return nil, err
	}
	if v != nil {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, vm.Errorf(vm.ErrNode, "http %s: headers must be an object of strings, found %s", r.where, describeValue(v))
		}
		for name, hv := range m {
			switch hv := hv.(type) {
			case nil:
			case string:
				r.header.Set(name, hv)
			case bool, int, float64:
				r.header.Set(name, vm.Text(hv))
			default:
				return nil, vm.Errorf(vm.ErrNode, "http %s: header %q must be a string, found %s", r.where, name, describeValue(hv))
			}
		}
	}
	body, hasBody, err := c.Key("body")
	if err != nil {
		return nil, err
	}
	if hasBody && body != nil {
		r.hasBody = true
		contentType := "application/json"
		if s, ok := body.(string); ok {
			r.body, contentType = []byte(s), "text/plain; charset=utf-8"
		} else if r.body, err = appendJSON(nil, vm.Normalize(body), 0); err != nil {
			return nil, vm.Errorf(vm.ErrNode, "http %s: body: %v", r.where, err)
		}
		if r.header.Get("Content-Type") == "" {
			r.header.Set("Content-Type", contentType)
		}
	}
	if r.timeout, err = durationKey(c, "timeout"); err != nil {
		return nil, err
	}
	if r.retry, err = retryPolicyOf(c); err != nil {
		return nil, err
	}
	if v, _, err = c.Key("allow_status"); err != nil {
		return nil, err
	}
	if v != nil {
		list, ok := v.([]any)
		if !ok {
			return nil, vm.Errorf(vm.ErrNode, "http %s: allow_status must be a list of status codes, found %s", r.where, describeValue(v))
		}
		r.allow = make(map[int]bool, len(list))
		for _, s := range list {
			code, err := intArg("http", "status", s)
			if err != nil || code < 100 || code > 999 {
				return nil, vm.Errorf(vm.ErrNode, "http %s: allow_status must hold status codes such as 404, found %s", r.where, describeValue(s))
			}
			r.allow[code] = true
		}
	}
	return r, nil
}

// do sends the request once. wait says whether to try again: -1 never;
// 0 after the backoff; more, after that long (the response's Retry-After).
func (r *httpRequest) do(ctx context.Context, client *http.Client, now time.Time) (res any, wait time.Duration, err error) {
	try := ctx
	if r.timeout > 0 {
		var cancel context.CancelFunc
		try, cancel = context.WithTimeout(ctx, r.timeout)
		defer cancel()
	}
	var body io.Reader
	if r.hasBody {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(try, r.method, r.url.String(), body)
	if err != nil {
		return nil, -1, vm.Errorf(vm.ErrNode, "http %s: %v", r.where, err)
	}
	req.Header = r.header.Clone()
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, r.failed(ctx, try, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody+1))
	if err != nil {
		return nil, 0, r.failed(ctx, try, err)
	}
	if len(data) > maxResponseBody {
		return nil, -1, vm.Errorf(vm.ErrHTTP, "http %s: the response body is larger than %d MiB", r.where, maxResponseBody>>20)
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300 || r.allow[resp.StatusCode]
	if !ok {
		err := vm.Errorf(vm.ErrHTTP, "http %s: status %s%s", r.where, httpStatusText(resp), bodyExcerpt(data))
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
			return nil, retryAfter(resp.Header.Get("Retry-After"), now), err
		}
		return nil, -1, err
	}
	headers := make(map[string]any, len(resp.Header))
	for name, values := range resp.Header {
		headers[strings.ToLower(name)] = strings.Join(values, ", ")
	}
	return map[string]any{
		"status":  resp.StatusCode,
		"headers": headers,
		"body":    responseBody(resp.Header.Get("Content-Type"), data),
	}, 0, nil
}

// failed words a request that got no response: the run ended, the try
// ran out of time, or the connection failed.
func (r *httpRequest) failed(ctx, try context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return runEndedErr(ctx)
	case try.Err() != nil:
		return vm.Errorf(vm.ErrTimeout, "http %s: no response within %s", r.where, r.timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return vm.Errorf(vm.ErrHTTP, "http %s: %v", r.where, err)
}

func httpStatusText(resp *http.Response) string {
	if t := http.StatusText(resp.StatusCode); t != "" {
		return fmt.Sprintf("%d %s", resp.StatusCode, t)
	}
	return strconv.Itoa(resp.StatusCode)
}

// bodyExcerpt is the start of a response body for an error message, its
// white space collapsed.
func bodyExcerpt(data []byte) string {
	const max = 200
	cut := len(data) > 4*max
	s := strings.ToValidUTF8(string(data[:min(len(data), 4*max)]), "")
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		n := max
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s, cut = s[:n], true
	}
	if s == "" {
		return ""
	}
	if cut {
		s += "…"
	}
	return ": " + strconv.Quote(s)
}

// retryAfter reads a Retry-After header: seconds or an HTTP date. 0 means
// none, so the backoff applies.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if n, err := strconv.Atoi(h); err == nil {
		if n <= 0 {
			return time.Nanosecond // at once
		}
		return time.Duration(min(n, 1<<20)) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), time.Nanosecond)
	}
	return 0
}

// responseBody is the body as JSON when the content type says JSON and it
// parses, else as text.
func responseBody(contentType string, data []byte) any {
	if len(data) == 0 {
		return ""
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt == "application/json" || strings.HasSuffix(mt, "+json") {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err == nil && !dec.More() {
			if _, err := dec.Token(); err == io.EOF {
				return vm.Normalize(v)
			}
		}
	}
	return strings.ToValidUTF8(string(data), "\uFFFD")
}

// redactURL renders u for messages without its credentials and query,
// which often hold secrets.
func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	c.Fragment, c.RawFragment = "", ""
	q := c.RawQuery != ""
	c.RawQuery, c.ForceQuery = "", false
	s := c.String()
	if q {
		s += "?…"
	}
	return s
}

func redactRawURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return redactURL(u)
	}
	if i := strings.IndexAny(raw, "?@"); i >= 0 {
		return raw[:i] + "…"
	}
	return raw
}

// Call.

func execCall(ctx context.Context, c *vm.Call) (any, error) {
	v, err := c.Arg()
	if err != nil {
		return nil, err
	}
	id, ok := v.(string)
	if !ok || id == "" {
		return nil, vm.Errorf(vm.ErrNode, "call: expected a workflow id, found %s", describeValue(v))
	}
	input, _, err := c.Key("input")
	if err != nil {
		return nil, err
	}
	timeout, err := durationKey(c, "timeout")
	if err != nil {
		return nil, err
	}
	b, err := retryPolicyOf(c)
	if err != nil {
		return nil, err
	}
	for try := 0; ; try++ {
		out, err := callOnce(ctx, c, id, input, timeout)
		if err == nil {
			return out, nil
		}
		var e *vm.Error
		if ctx.Err() != nil || errors.As(err, &e) && (e.Code == vm.ErrVisits || e.Code == vm.ErrCancelled || e.Code == vm.ErrDeadline || e.Code == vm.ErrInternal) {
			return nil, err
		}
		if try >= b.retries {
			if try > 0 && e != nil {
				e.Message += fmt.Sprintf(" (after %d tries)", try+1)
			}
			return nil, err
		}
		if sleepCtx(ctx, b.delay(try+1)) != nil {
			return nil, runEndedErr(ctx)
		}
	}
}

// callOnce runs the child workflow once within timeout.
func callOnce(ctx context.Context, c *vm.Call, id string, input any, timeout time.Duration) (any, error) {
	try := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		try, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	out, err := c.CallWorkflow(try, id, input)
	switch {
	case err == nil:
		return out, nil
	case ctx.Err() != nil:
		return nil, runEndedErr(ctx)
	case try.Err() != nil:
		return nil, vm.Errorf(vm.ErrTimeout, "call %s: the workflow did not finish within %s", id, timeout)
	}
	return nil, err
}
