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

	"github.com/aguic/aguic/internal/jsonenc"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
)

// httpKind declares the http kind, whose requests client makes.
func httpKind(client *http.Client) *vm.KindSpec {
	return &vm.KindSpec{
		Name: "http",
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			res, err := execHTTP(ctx, c, client)
			return vm.Step{Result: res}, err
		},
		Tool: &vm.ToolSpec{
			Doc:   "The model gets the response's body (parsed when it is JSON), or {status, body} for a status outside 2xx that allow_status lets through; a result = expr beside the node shapes it instead, reading the response as $response: {status, headers, body}.",
			Shape: toolResponse,
			Var:   "response",
		},
		Doc:  "Sends an HTTP request and gives the response's status, headers and body (parsed when it is JSON); a status outside 2xx is a run-time error unless allow_status lists it.",
		Word: &vm.WordSpec{Name: "method", Values: []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}},
		Arg:  &vm.ArgSpec{Name: "url", Type: vm.TypeURL, Required: true, Doc: "The URL to request, a template."},
		Keys: []vm.KeySpec{
			{Name: "headers", Type: vm.TypeObject,
				Doc: `The request headers, an object of strings such as {Authorization: "Bearer <<env('TOKEN')>>"}.`},
			{Name: "body", Type: vm.TypeAny,
				Doc: "The request body: a string is sent as it is, any other value as JSON; no body when absent."},
			timeoutKey("one attempt", "30s"),
			retryKey("request", 0),
			backoffKey("1s..8s"),
			{Name: "allow_status", Type: vm.TypeList,
				Doc: "Status codes outside 2xx that are not errors, such as [404, 409]."},
		},
		Result:  "{status, headers, body}",
		Example: `http GET "<<env('ORDERS_URL')>>/orders/<<$order.id>>" -> $response`,
	}
}

// httpClient is the client of http nodes and tools: opts.HTTPClient, or
// one of its own that keeps idle connections to the hosts it calls often
// (llm.NewHTTPClient), each attempt's timeout coming from its context.
func httpClient(opts Options) *http.Client {
	if opts.HTTPClient != nil {
		return opts.HTTPClient
	}
	return llm.NewHTTPClient()
}

// maxResponseBody is the largest response body an http node reads.
const maxResponseBody = 10 << 20

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
		return nil, vm.Errorf(vm.ErrNode, "http %s: the url must be a string, found %s", r.method, vm.Describe(v))
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, vm.Errorf(vm.ErrNode, "http %s: invalid url %q: expected an absolute http or https url", r.method, redactRawURL(raw))
	}
	r.url = u
	r.where = r.method + " " + redactURL(u)
	var headers, body, allow any
	if err := c.UnpackKeys("headers", &headers, "body", &body, "timeout", &r.timeout, "allow_status", &allow); err != nil {
		return nil, err
	}
	if v := headers; v != nil {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, vm.Errorf(vm.ErrNode, "http %s: headers must be an object of strings, found %s", r.where, vm.Describe(v))
		}
		for name, hv := range m {
			switch hv := hv.(type) {
			case nil:
			case string:
				r.header.Set(name, hv)
			case bool, int, float64:
				r.header.Set(name, vm.Text(hv))
			default:
				return nil, vm.Errorf(vm.ErrNode, "http %s: header %q must be a string, found %s", r.where, name, vm.Describe(hv))
			}
		}
	}
	if body != nil {
		r.hasBody = true
		contentType := "application/json"
		if s, ok := body.(string); ok {
			r.body, contentType = []byte(s), "text/plain; charset=utf-8"
		} else if r.body, err = jsonenc.Append(nil, vm.Normalize(body)); err != nil {
			return nil, vm.Errorf(vm.ErrNode, "http %s: body: %v", r.where, err)
		}
		if r.header.Get("Content-Type") == "" {
			r.header.Set("Content-Type", contentType)
		}
	}
	if r.retry, err = retryPolicyOf(c); err != nil {
		return nil, err
	}
	if v := allow; v != nil {
		list, ok := v.([]any)
		if !ok {
			return nil, vm.Errorf(vm.ErrNode, "http %s: allow_status must be a list of status codes, found %s", r.where, vm.Describe(v))
		}
		r.allow = make(map[int]bool, len(list))
		for _, s := range list {
			code, err := intArg("http", "status", s)
			if err != nil || code < 100 || code > 999 {
				return nil, vm.Errorf(vm.ErrNode, "http %s: allow_status must hold status codes such as 404, found %s", r.where, vm.Describe(s))
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

// toolResponse is what the model gets from the response of a tool's http
// node: the body, with the status beside it when it is not 2xx.
func toolResponse(result any) any {
	res, ok := result.(map[string]any)
	if !ok {
		return result
	}
	if status, _ := res["status"].(int); status >= 200 && status < 300 {
		return res["body"]
	}
	return map[string]any{"status": res["status"], "body": res["body"]}
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
