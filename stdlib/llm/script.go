package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Scripted is a Provider that answers each request with the next reply of
// a script (see the package documentation for the format). It is safe for
// concurrent use; each Scripted keeps its own place in the script.
type Scripted struct {
	name    string // the script file, for messages; "" when parsed from bytes
	replies []*reply

	mu       sync.Mutex
	used     []bool
	calls    int // tool call ids made so far
	requests []Request
}

// reply is one `reply` block of a script.
type reply struct {
	line      int
	repeat    bool
	after     string  // "tool" or "user": the role the request's last message must have; "" for any
	match     matcher // what the last user message must hold
	result    matcher // what one of the tool results the request ends with must hold
	text      []string
	reasoning []string
	tools     []ToolCall // ID "" means one is made when the reply is used
	status    int        // the error's HTTP status; 0 for a plain error
	errMsg    string
	hasErr    bool
	usage     *Usage
	delay     time.Duration
}

// scriptArgChunk is how many bytes of tool call arguments one chunk holds.
const scriptArgChunk = 16

// maxScriptErrors is how many parse errors a script reports at most.
const maxScriptErrors = 10

// LoadScript reads and parses the script file at path; errors name the
// file and the line.
func LoadScript(path string) (*Scripted, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load script: %w", err)
	}
	return parseScript(path, data)
}

// ParseScript parses a script; errors name the line.
func ParseScript(data []byte) (*Scripted, error) { return parseScript("", data) }

func parseScript(name string, data []byte) (*Scripted, error) {
	s := &Scripted{name: name}
	type lineError struct {
		line int
		msg  string
	}
	var errs []lineError
	var cur *reply
	bad := false              // cur has a bad line
	seen := map[string]bool{} // the single-valued keys of cur already given
	fail := func(line int, format string, args ...any) {
		errs = append(errs, lineError{line, fmt.Sprintf(format, args...)})
		bad = true
	}
	closeReply := func() {
		if cur != nil && !bad && len(cur.text) == 0 && len(cur.reasoning) == 0 && len(cur.tools) == 0 && !cur.hasErr {
			fail(cur.line, "reply has nothing to answer: give it text:, reasoning:, tool: or error: lines")
		}
	}
	lines := strings.Split(string(data), "\n")
	for i, raw := range lines {
		n := i + 1
		line := strings.TrimRight(raw, " \t\r")
		trimmed := strings.TrimLeft(line, " \t")
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if word, rest, _ := strings.Cut(trimmed, " "); word == "reply" {
			closeReply()
			cur = &reply{line: n}
			seen, bad = map[string]bool{}, false
			s.replies = append(s.replies, cur)
			if err := cur.parseHead(strings.TrimSpace(rest)); err != nil {
				fail(n, "%v", err)
			}
			continue
		}
		key, value, ok := strings.Cut(trimmed, ":")
		key = strings.TrimSpace(key)
		if !ok || !slices.Contains(scriptKeys, key) {
			fail(n, "expected a reply line or one of %s, found %q", strings.Join(quoteKeys(), ", "), trimmed)
			continue
		}
		if cur == nil {
			fail(n, "%s: comes before the first reply: start the script with a line `reply`", key)
			continue
		}
		value = strings.TrimPrefix(value, " ")
		switch key {
		case "error", "usage", "delay":
			if seen[key] {
				fail(n, "%s: is given twice in one reply", key)
				continue
			}
			seen[key] = true
		}
		var err error
		switch key {
		case "text":
			cur.text = append(cur.text, value)
		case "reasoning":
			cur.reasoning = append(cur.reasoning, value)
		case "tool":
			err = cur.parseTool(strings.TrimSpace(value))
		case "error":
			cur.parseError(strings.TrimSpace(value))
		case "usage":
			err = cur.parseUsage(strings.TrimSpace(value))
		case "delay":
			cur.delay, err = time.ParseDuration(strings.TrimSpace(value))
			if err == nil && cur.delay < 0 {
				err = errors.New("must not be negative")
			}
			if err != nil {
				err = fmt.Errorf("delay: expected a duration such as 20ms, found %q", strings.TrimSpace(value))
			}
		}
		if err != nil {
			fail(n, "%v", err)
		}
	}
	closeReply()
	if len(s.replies) == 0 && len(errs) == 0 {
		fail(1, "the script has no replies: start one with a line `reply`")
	}
	if len(errs) > 0 {
		slices.SortStableFunc(errs, func(a, b lineError) int { return a.line - b.line })
		var msgs []string
		for _, e := range errs[:min(len(errs), maxScriptErrors)] {
			where := fmt.Sprintf("line %d", e.line)
			if name != "" {
				where = fmt.Sprintf("%s:%d", name, e.line)
			}
			msgs = append(msgs, where+": "+e.msg)
		}
		if more := len(errs) - maxScriptErrors; more > 0 {
			msgs = append(msgs, fmt.Sprintf("(and %d more %s)", more, plural(more, "error", "errors")))
		}
		return nil, errors.New(strings.Join(msgs, "\n"))
	}
	s.used = make([]bool, len(s.replies))
	return s, nil
}

// scriptKeys are the keys of the lines inside a reply.
var scriptKeys = []string{"text", "reasoning", "tool", "error", "usage", "delay"}

func quoteKeys() []string {
	out := make([]string, len(scriptKeys))
	for i, k := range scriptKeys {
		out[i] = k + ":"
	}
	return out
}

// matcher is a `match` or `result` of a reply head: a lower-cased
// substring a text must contain, or a regular expression it must match;
// the zero matcher accepts any text.
type matcher struct {
	text string
	re   *regexp.Regexp
}

// set reports whether the head gave the matcher.
func (m matcher) set() bool { return m.text != "" || m.re != nil }

// accepts reports whether s holds what the matcher asks for.
func (m matcher) accepts(s string) bool {
	switch {
	case m.re != nil:
		return m.re.MatchString(s)
	case m.text != "":
		return strings.Contains(strings.ToLower(s), m.text)
	}
	return true
}

// parseMatcher reads the "text" or /regexp/ after the word match or
// result at the start of v, and returns the rest of the line.
func parseMatcher(word, v string) (m matcher, rest string, err error) {
	switch {
	case strings.HasPrefix(v, `"`):
		q, err := strconv.QuotedPrefix(v)
		if err != nil {
			return m, "", fmt.Errorf("reply: %s: unterminated or malformed string %s", word, v)
		}
		text, _ := strconv.Unquote(q)
		if text == "" {
			return m, "", fmt.Errorf(`reply: %s "" matches everything: leave %s out`, word, word)
		}
		return matcher{text: strings.ToLower(text)}, strings.TrimSpace(v[len(q):]), nil
	case strings.HasPrefix(v, "/"):
		if len(v) < 2 || !strings.HasSuffix(v, "/") {
			return m, "", fmt.Errorf("reply: %s: a /regexp/ must end with / and end the line, found %s", word, v)
		}
		re, err := regexp.Compile(v[1 : len(v)-1])
		if err != nil {
			return m, "", fmt.Errorf("reply: %s: %v", word, err)
		}
		return matcher{re: re}, "", nil
	}
	return m, "", fmt.Errorf(`reply: %s needs "text" or /regexp/, found %q`, word, v)
}

// parseHead reads what follows `reply`: `repeat`, `after tool` or `after
// user`, `match "text"` or `match /regexp/`, and `result "text"` or
// `result /regexp/`, a /regexp/ last.
func (r *reply) parseHead(rest string) error {
	for rest != "" {
		word, after, _ := strings.Cut(rest, " ")
		switch word {
		case "repeat":
			if r.repeat {
				return errors.New("reply: repeat is given twice")
			}
			r.repeat = true
			rest = strings.TrimSpace(after)
		case "after":
			if r.after != "" {
				return errors.New("reply: after is given twice")
			}
			role, after2, _ := strings.Cut(strings.TrimSpace(after), " ")
			if role != RoleTool && role != RoleUser {
				return fmt.Errorf(`reply: after needs tool or user, found %q`, role)
			}
			r.after = role
			rest = strings.TrimSpace(after2)
		case "match", "result":
			m := &r.match
			if word == "result" {
				m = &r.result
			}
			if m.set() {
				return fmt.Errorf("reply: %s is given twice", word)
			}
			var err error
			if *m, rest, err = parseMatcher(word, strings.TrimSpace(after)); err != nil {
				return err
			}
		default:
			return fmt.Errorf(`reply: expected repeat, after tool, after user, match or result, found %q`, rest)
		}
	}
	if r.result.set() && r.after == RoleUser {
		return errors.New("reply: result asks for a request that ends with tool results, after user for one that does not")
	}
	return nil
}

// parseTool reads `NAME [ID] [JSON object]`.
func (r *reply) parseTool(v string) error {
	if v == "" || strings.HasPrefix(v, "{") {
		return errors.New("tool: expected a tool name, then an optional call id and the JSON arguments, such as `tool: add {\"a\": 1}`")
	}
	name, rest, _ := strings.Cut(v, " ")
	rest = strings.TrimSpace(rest)
	var id string
	if word, after, _ := strings.Cut(rest, " "); isScriptID(word) {
		id, rest = word, strings.TrimSpace(after)
	}
	if rest == "" {
		rest = "{}"
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(rest)); err != nil {
		return fmt.Errorf("tool: the arguments of %q must be a JSON object on the same line: %v", name, err)
	}
	if !strings.HasPrefix(rest, "{") {
		return fmt.Errorf("tool: the arguments of %q must be a JSON object, found %s", name, rest)
	}
	r.tools = append(r.tools, ToolCall{ID: id, Name: name, Arguments: buf.String()})
	return nil
}

// isScriptID reports whether s can be a tool call id: letters, digits and
// _ . : -.
func isScriptID(s string) bool {
	for _, r := range s {
		if !(r == '_' || r == '.' || r == ':' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// parseError reads `[STATUS] message`.
func (r *reply) parseError(v string) {
	r.hasErr = true
	if word, rest, _ := strings.Cut(v, " "); len(word) == 3 {
		if code, err := strconv.Atoi(word); err == nil && code >= 100 && code <= 599 {
			r.status = code
			v = strings.TrimSpace(rest)
		}
	}
	r.errMsg = v
}

// parseUsage reads `INPUT OUTPUT`.
func (r *reply) parseUsage(v string) error {
	f := strings.Fields(v)
	if len(f) == 2 {
		in, err1 := strconv.Atoi(f[0])
		out, err2 := strconv.Atoi(f[1])
		if err1 == nil && err2 == nil && in >= 0 && out >= 0 {
			r.usage = &Usage{InputTokens: in, OutputTokens: out}
			return nil
		}
	}
	return fmt.Errorf("usage: expected two whole numbers, the input and the output tokens, found %q", v)
}

// accepts reports whether the reply may answer a request whose last user
// message is last and which ends with the tool results results (none when
// its last message is not a tool result).
func (r *reply) accepts(last string, results []string) bool {
	if r.after != "" && (r.after == RoleTool) != (len(results) > 0) {
		return false
	}
	if r.result.set() && !slices.ContainsFunc(results, r.result.accepts) {
		return false
	}
	return r.match.accepts(last)
}

// Requests returns a copy of every request answered or refused so far, in
// order.
func (s *Scripted) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Stream answers req with the next reply: the first, in script order, that
// is not used up and whose match accepts the request's last user message.
// It streams reasoning, then text, word by word, then each tool call (its
// id and name, then its arguments in pieces), and returns the reply's
// error after that when it has one.
func (s *Scripted) Stream(ctx context.Context, req *Request, on func(Chunk) error) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, calls, err := s.next(req)
	if err != nil {
		return nil, err
	}
	resp := &Response{
		Text:      strings.Join(r.text, "\n"),
		Reasoning: strings.Join(r.reasoning, "\n"),
		ToolCalls: calls,
	}
	send := func(c Chunk) error {
		if r.delay > 0 {
			t := time.NewTimer(r.delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		return on(c)
	}
	for _, w := range Words(resp.Reasoning) {
		if err := send(Chunk{Reasoning: w}); err != nil {
			return nil, err
		}
	}
	for _, w := range Words(resp.Text) {
		if err := send(Chunk{Text: w}); err != nil {
			return nil, err
		}
	}
	for i, tc := range calls {
		if err := send(Chunk{ToolCall: &ToolCallDelta{Index: i, ID: tc.ID, Name: tc.Name}}); err != nil {
			return nil, err
		}
		for _, p := range pieces(tc.Arguments, scriptArgChunk) {
			if err := send(Chunk{ToolCall: &ToolCallDelta{Index: i, Arguments: p}}); err != nil {
				return nil, err
			}
		}
	}
	if r.hasErr {
		msg := r.errMsg
		if msg == "" {
			msg = "scripted error"
		}
		if r.status != 0 {
			return nil, &StatusError{StatusCode: r.status, Message: msg}
		}
		return nil, errors.New(msg)
	}
	if r.usage != nil {
		resp.Usage = *r.usage
	} else {
		resp.Usage = Usage{InputTokens: countWords(req), OutputTokens: countReply(resp)}
	}
	return resp, nil
}

// next picks the reply for req and makes its tool call ids.
func (s *Scripted) next(req *Request) (*reply, []ToolCall, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp := *req
	cp.Messages = slices.Clone(req.Messages)
	cp.Tools = slices.Clone(req.Tools)
	s.requests = append(s.requests, cp)
	last, hasUser := lastUser(req.Messages)
	results := lastResults(req.Messages)
	afterTool := len(results) > 0
	unused, after := 0, false // after: an unused reply says after tool or after user, or gives a result
	for i, r := range s.replies {
		if s.used[i] {
			continue
		}
		unused++
		after = after || r.after != "" || r.result.set()
		if !r.accepts(last, results) {
			continue
		}
		if !r.repeat {
			s.used[i] = true
		}
		calls := slices.Clone(r.tools)
		for j := range calls {
			if calls[j].ID == "" {
				s.calls++
				calls[j].ID = "call_" + strconv.Itoa(s.calls)
			}
		}
		return r, calls, nil
	}
	who := "scripted model"
	if s.name != "" {
		who += " " + s.name
	}
	n := len(s.requests)
	if unused == 0 {
		what := fmt.Sprintf("all %d replies of the script are used up", len(s.replies))
		if len(s.replies) == 1 {
			what = "the script's only reply is used up"
		}
		return nil, nil, fmt.Errorf("%s: no reply left for request %d: %s", who, n, what)
	}
	what := "the request has no user message"
	if hasUser {
		what = fmt.Sprintf("the last user message %q", last)
	}
	switch {
	case after && afterTool:
		what += " (the request ends with a tool result)"
	case after:
		what += " (the request does not end with a tool result)"
	}
	return nil, nil, fmt.Errorf("%s: no reply left for request %d: none of the %d unused %s matches %s", who, n, unused, plural(unused, "reply", "replies"), what)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// lastUser returns the content of the last user message.
func lastUser(msgs []Message) (string, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleUser {
			return msgs[i].Content, true
		}
	}
	return "", false
}

// lastResults returns the contents of the tool results the messages end
// with: none when the last message is not a tool result.
func lastResults(msgs []Message) []string {
	var out []string
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role == RoleTool; i-- {
		out = append(out, msgs[i].Content)
	}
	return out
}

// Words splits s before every run of white space, so that each piece but
// the first starts with the space that precedes its word: the pieces a
// scripted answer streams, and those a paced node sends. Joined, they are
// s again.
func Words(s string) []string {
	var out []string
	start := 0
	for i := 1; i < len(s); i++ {
		if isSpace(s[i]) && !isSpace(s[i-1]) {
			out = append(out, s[start:i])
			start = i
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// pieces splits s into pieces of at most n bytes without splitting a rune.
func pieces(s string, n int) []string {
	var out []string
	for len(s) > n {
		i := n
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		if i == 0 {
			i = n
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// countWords is the scripted input token count: the words of the request.
func countWords(req *Request) int {
	n := 0
	for _, m := range req.Messages {
		n += len(strings.Fields(m.Content))
		for _, tc := range m.ToolCalls {
			n += len(strings.Fields(tc.Arguments))
		}
	}
	return n
}

// countReply is the scripted output token count: the words of the answer.
func countReply(r *Response) int {
	n := len(strings.Fields(r.Text)) + len(strings.Fields(r.Reasoning))
	for _, tc := range r.ToolCalls {
		n += 1 + len(strings.Fields(tc.Arguments))
	}
	return n
}
