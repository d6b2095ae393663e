package wftest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aguic/aguic/lang/diag"
	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
)

// Ext is the extension of test files: chat.wftest holds the tests of
// chat.wf.
const Ext = ".wftest"

// File is a parsed test file.
type File struct {
	Path  string   // as given to Parse
	Lines []string // the file's lines, without their ends
	Setup Setup    // the lines before the first test: shared by every test
	Tests []*Test
}

// Test is one named test.
type Test struct {
	Name  string
	Line  int
	Setup Setup  // its own setup lines, added to the file's
	Steps []Step // its turns and expectations, in order
}

// Setup is what a test starts with.
type Setup struct {
	Workflow     string // the workflow's id; "" for the file's default
	WorkflowLine int
	Models       string // a script file of model replies, relative to the test file
	ModelsLine   int
	Replies      []int // the lines of the inline reply blocks' lines
	State        any   // the client's initial state; nil when not given
	HasState     bool
	Tools        []agui.Tool // the client's frontend tools
	HasTools     bool
	Forwarded    any // the requests' forwardedProps
	Env          map[string]string
	HTTP         []*HTTPStub
	MCP          []*MCPStub
}

// HTTPStub answers the requests whose method and URL match.
type HTTPStub struct {
	Line    int
	Method  string
	Pattern string         // the URL, * matching any run of characters
	re      *regexp.Regexp // Pattern compiled
	Status  int
	Body    []byte // the response's body
	JSON    bool   // the body is JSON
	Err     string // a failure instead of a response: the connection failed
}

// MCPStub answers the calls of one tool of an MCP server.
type MCPStub struct {
	Line   int
	Server string
	Tool   string
	Result any  // a string is the text of the result; any other value is its structured content
	IsErr  bool // the result is an error result
}

// StepKind says what a step does.
type StepKind int

// The kinds of steps.
const (
	StepUser       StepKind = iota // > text: a user turn
	StepToolResult                 // tool result name: content
	StepAnswer                     // answer json | answer cancel
	StepExpect                     // expect …
)

// Step is one line of a test after its setup.
type Step struct {
	Kind    StepKind
	Line    int
	Text    string // StepUser: the message; StepToolResult: the content
	Tool    string // StepToolResult: the tool's name
	Cancel  bool   // StepAnswer: cancel the interrupt
	Payload any    // StepAnswer: the answer
	Expect  *Expect
}

// Error is a problem in a test file, at a line and a column (1-based).
type Error struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg) }

// ErrorList is every problem of a file.
type ErrorList []*Error

func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// replyKeys are the lines of a reply block of the scripted model.
var replyKeys = []string{"text:", "reasoning:", "tool:", "error:", "usage:", "delay:"}

// parser reads one file.
type parser struct {
	f    *File
	errs ErrorList
}

func (p *parser) errorf(line, col int, format string, args ...any) {
	p.errs = append(p.errs, &Error{File: p.f.Path, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)})
}

// Parse reads a test file. A file with problems gives them all, as an
// ErrorList, and no File.
func Parse(path string, data []byte) (*File, error) {
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	f := &File{Path: path, Lines: strings.Split(text, "\n")}
	p := &parser{f: f}
	setup := &f.Setup
	var cur *Test
	inReply := false // the lines after a reply line belong to it
	names := map[string]int{}
	for i, raw := range f.Lines {
		n := i + 1
		line := strings.TrimRight(raw, " \t")
		trimmed := strings.TrimLeft(line, " \t")
		col := len(line) - len(trimmed) + 1
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if inReply && hasAnyPrefix(trimmed, replyKeys) {
			setup.Replies = append(setup.Replies, n)
			continue
		}
		inReply = false
		word, rest := cutWord(trimmed)
		restCol := col + len(trimmed) - len(rest)
		started := cur != nil && len(cur.Steps) > 0
		if isSetup(word) && started {
			p.errorf(n, col, "%s: setup lines come before the test's first turn or expectation", word)
			continue
		}
		switch word {
		case "test":
			if rest == "" {
				p.errorf(n, col, "test: expected a name, such as `test greets the user`")
				continue
			}
			if first, ok := names[rest]; ok {
				p.errorf(n, restCol, "test %q is defined twice (first at line %d)", rest, first)
			}
			names[rest] = n
			cur = &Test{Name: rest, Line: n}
			f.Tests = append(f.Tests, cur)
			setup = &cur.Setup
		case "workflow":
			if !isName(rest) {
				p.errorf(n, restCol, "workflow: expected a workflow id, found %q", rest)
				continue
			}
			setup.Workflow, setup.WorkflowLine = rest, n
		case "models":
			if rest == "" {
				p.errorf(n, col, "models: expected a script file, such as `models scripts/demo.script`")
				continue
			}
			setup.Models, setup.ModelsLine = rest, n
		case "reply":
			setup.Replies = append(setup.Replies, n)
			inReply = true
		case "state", "forwarded":
			v, end, err := parseJSON(rest)
			if err == nil && end != len(rest) {
				err = fmt.Errorf("unexpected %q after the value", rest[end:])
			}
			if err != nil {
				p.errorf(n, restCol, "%s: %v", word, err)
				continue
			}
			if word == "state" {
				setup.State, setup.HasState = v, true
			} else {
				setup.Forwarded = v
			}
		case "tools":
			var tools []agui.Tool
			if err := json.Unmarshal([]byte(rest), &tools); err != nil || tools == nil {
				p.errorf(n, restCol, "tools: expected a JSON list of {name, description, parameters}")
				continue
			}
			setup.Tools, setup.HasTools = tools, true
		case "env":
			name, value, ok := strings.Cut(rest, "=")
			if !ok || !isEnvName(name) {
				p.errorf(n, restCol, "env: expected NAME=value, found %q", rest)
				continue
			}
			if setup.Env == nil {
				setup.Env = map[string]string{}
			}
			setup.Env[name] = value
		case "http":
			if s := p.httpStub(n, restCol, rest); s != nil {
				setup.HTTP = append(setup.HTTP, s)
			}
		case "mcp":
			if s := p.mcpStub(n, restCol, rest); s != nil {
				setup.MCP = append(setup.MCP, s)
			}
		case ">":
			p.step(cur, n, col, Step{Kind: StepUser, Line: n, Text: rest})
		case "tool":
			after, ok := strings.CutPrefix(rest, "result ")
			name, content, ok2 := strings.Cut(after, ":")
			if !ok || !ok2 || !isName(strings.TrimSpace(name)) {
				p.errorf(n, col, "expected `tool result name: content`, found %q", trimmed)
				continue
			}
			p.step(cur, n, col, Step{Kind: StepToolResult, Line: n, Tool: strings.TrimSpace(name), Text: strings.TrimPrefix(content, " ")})
		case "answer":
			s := Step{Kind: StepAnswer, Line: n}
			if rest == "cancel" {
				s.Cancel = true
			} else {
				v, end, err := parseJSON(rest)
				if err == nil && end != len(rest) {
					err = fmt.Errorf("unexpected %q after the value", rest[end:])
				}
				if err != nil {
					p.errorf(n, restCol, "answer: expected a JSON value or cancel: %v", err)
					continue
				}
				s.Payload = v
			}
			p.step(cur, n, col, s)
		case "expect":
			e, err := parseExpect(rest, restCol)
			if err != nil {
				p.errorf(n, err.col, "expect: %s", err.msg)
				continue
			}
			e.Line = n
			p.step(cur, n, col, Step{Kind: StepExpect, Line: n, Expect: e})
		default:
			msg := fmt.Sprintf("expected a test line, found %q", trimmed)
			if s := suggest(word); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			if hasAnyPrefix(trimmed, replyKeys) {
				msg = fmt.Sprintf("%q belongs to a reply: put it under a `reply` line", trimmed)
			}
			p.errorf(n, col, "%s", msg)
		}
	}
	p.checkReplies(&f.Setup)
	for _, t := range f.Tests {
		p.checkReplies(&t.Setup)
	}
	if len(f.Tests) == 0 && len(p.errs) == 0 {
		p.errorf(1, 1, "the file holds no test: start one with a line `test name`")
	}
	if len(p.errs) > 0 {
		slices.SortStableFunc(p.errs, func(a, b *Error) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Col - b.Col
		})
		return nil, p.errs
	}
	return f, nil
}

// step adds s to the current test.
func (p *parser) step(t *Test, line, col int, s Step) {
	if t == nil {
		p.errorf(line, col, "turns and expectations belong to a test: start one with a line `test name` above")
		return
	}
	t.Steps = append(t.Steps, s)
}

// setupWords are the words of the lines that set up a test.
var setupWords = []string{"workflow", "models", "reply", "state", "forwarded", "tools", "env", "http", "mcp"}

// lineWords are every word a line may start with.
var lineWords = append([]string{"test", ">", "tool", "answer", "expect"}, setupWords...)

func isSetup(word string) bool { return slices.Contains(setupWords, word) }

// checkReplies parses the inline replies of s with the scripted model's
// parser, so that a bad reply line is an error of the test file.
func (p *parser) checkReplies(s *Setup) {
	if len(s.Replies) == 0 {
		return
	}
	_, err := llm.ParseScript(p.f.replyText(s.Replies))
	if err == nil {
		return
	}
	for _, msg := range strings.Split(err.Error(), "\n") {
		m := scriptLine.FindStringSubmatch(msg)
		if m == nil {
			p.errorf(s.Replies[0], 1, "%s", msg)
			continue
		}
		n, _ := strconv.Atoi(m[1])
		p.errorf(n, 1, "%s", m[2])
	}
}

// scriptLine reads the line of an error of the scripted model's parser.
var scriptLine = regexp.MustCompile(`^line (\d+): (.*)$`)

// replyText is the text of the reply lines given, every other line of the
// file left blank so that the line numbers stay the file's. delay: lines
// are blanked too when fast is set.
func (f *File) replyText(lines []int) []byte {
	return f.replyTextOf(lines, false)
}

func (f *File) replyTextOf(lines []int, fast bool) []byte {
	var b bytes.Buffer
	next := 1
	for _, n := range lines {
		for ; next < n; next++ {
			b.WriteByte('\n')
		}
		line := strings.TrimSpace(f.Lines[n-1])
		if fast && strings.HasPrefix(line, "delay:") {
			line = ""
		}
		b.WriteString(line + "\n")
		next = n + 1
	}
	return b.Bytes()
}

// httpStub reads `METHOD url => status body` or `METHOD url => error message`.
func (p *parser) httpStub(n, col int, rest string) *HTTPStub {
	const usage = "http: expected `METHOD url => status [body]` or `METHOD url => error message`"
	head, answer, ok := strings.Cut(rest, "=>")
	method, url := cutWord(strings.TrimSpace(head))
	if !ok || method == "" || url == "" || strings.ContainsAny(url, " \t") {
		p.errorf(n, col, "%s", usage)
		return nil
	}
	s := &HTTPStub{Line: n, Method: method, Pattern: url}
	if method != strings.ToUpper(method) || !slices.Contains(httpMethods, method) {
		p.errorf(n, col, "http: unknown method %q (the methods are %s)", method, strings.Join(httpMethods, ", "))
		return nil
	}
	if !utf8.ValidString(url) { // the one thing that fails the quoted pattern
		p.errorf(n, col, "http: the URL %q is not valid UTF-8 text", url)
		return nil
	}
	s.re = regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(url), `\*`, ".*") + "$")
	answer = strings.TrimSpace(answer)
	acol := col + strings.Index(rest, "=>") + 3
	if msg, ok := strings.CutPrefix(answer, "error"); ok && (msg == "" || msg[0] == ' ') {
		s.Err = strings.TrimSpace(msg)
		if s.Err == "" {
			s.Err = "connection refused"
		}
		return s
	}
	status, body := cutWord(answer)
	code, err := strconv.Atoi(status)
	if err != nil || code < 100 || code > 999 {
		p.errorf(n, acol, "http: expected a status such as 200 or `error message` after =>, found %q", status)
		return nil
	}
	s.Status = code
	if body == "" {
		return s
	}
	v, end, err := parseJSON(body)
	if err == nil && end != len(body) {
		err = fmt.Errorf("unexpected %q after the value", body[end:])
	}
	if err != nil {
		p.errorf(n, acol+len(answer)-len(body), "http: the body must be a JSON value (a string for a text body): %v", err)
		return nil
	}
	if str, ok := v.(string); ok {
		s.Body = []byte(str)
	} else {
		s.Body, s.JSON = []byte(body), true
	}
	return s
}

// httpMethods are the methods http nodes send.
var httpMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions}

// mcpStub reads `server tool => result` or `server tool => error message`.
func (p *parser) mcpStub(n, col int, rest string) *MCPStub {
	const usage = "mcp: expected `server tool => result` or `server tool => error message`"
	head, answer, ok := strings.Cut(rest, "=>")
	fields := strings.Fields(head)
	if !ok || len(fields) != 2 {
		p.errorf(n, col, "%s", usage)
		return nil
	}
	s := &MCPStub{Line: n, Server: fields[0], Tool: fields[1]}
	answer = strings.TrimSpace(answer)
	acol := col + strings.Index(rest, "=>") + 3
	if msg, ok := strings.CutPrefix(answer, "error "); ok {
		s.Result, s.IsErr = strings.TrimSpace(msg), true
		return s
	}
	v, end, err := parseJSON(answer)
	if err == nil && end != len(answer) {
		err = fmt.Errorf("unexpected %q after the value", answer[end:])
	}
	if err != nil {
		p.errorf(n, acol, "mcp: the result must be a JSON value (a string for a text result): %v", err)
		return nil
	}
	s.Result = v
	return s
}

// parseJSON reads one JSON value at the start of s and returns it as the
// context holds values, and the offset after it.
func parseJSON(s string) (any, int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, 0, fmt.Errorf("expected a JSON value")
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if err == io.ErrUnexpectedEOF {
			return nil, 0, fmt.Errorf("the JSON value is not closed")
		}
		return nil, 0, fmt.Errorf("not JSON: %v", err)
	}
	end := int(dec.InputOffset())
	for end < len(s) && (s[end] == ' ' || s[end] == '\t') {
		end++
	}
	return vm.Normalize(v), end, nil
}

// cutWord splits s at its first space: the word, then the rest trimmed.
func cutWord(s string) (word, rest string) {
	word, rest, _ = strings.Cut(s, " ")
	return word, strings.TrimSpace(rest)
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

var namePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func isName(s string) bool { return namePattern.MatchString(s) }

var envPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func isEnvName(s string) bool { return envPattern.MatchString(s) }

// suggest is the line word closest to word, or "" when none is close.
func suggest(word string) string {
	best, bestD := "", 3
	for _, w := range lineWords {
		if d := diag.Distance(strings.ToLower(word), w); d < bestD && d <= len(w)/2 {
			best, bestD = w, d
		}
	}
	return best
}
