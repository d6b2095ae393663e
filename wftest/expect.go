package wftest

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/aguic/aguic/lang/diag"
)

// Subject is what an expectation looks at.
type Subject string

// The subjects.
const (
	SubjectReply      Subject = "reply"       // the assistant's text of the last turn
	SubjectOutcome    Subject = "outcome"     // how the last turn ended
	SubjectState      Subject = "state"       // the client's shared state
	SubjectResult     Subject = "result"      // what the last turn's output set
	SubjectMessages   Subject = "messages"    // the client's messages
	SubjectContext    Subject = "context"     // a root of the workflow's context ($name)
	SubjectToolCall   Subject = "tool call"   // a tool call of the last turn
	SubjectToolResult Subject = "tool result" // a tool result of the last turn
	SubjectEvent      Subject = "event"       // an AG-UI event of the last turn
)

// Expect is one `expect` line.
type Expect struct {
	Line    int
	Subject Subject
	No      bool   // expect no …: nothing of the kind (tool call, event)
	Name    string // the tool's name, the event's type, or the context's root
	Path    []PathKey
	Target  string // the subject as written: "state.todos[0]", "tool call confirm"
	Match   Matcher
	Outcome *OutcomeSpec // SubjectOutcome
}

// PathKey is one step of a path: .key or [index] (negative from the end).
type PathKey struct {
	Key     string
	Index   int
	IsIndex bool
}

// MatchKind is how a matcher compares.
type MatchKind int

// The kinds of matchers.
const (
	MatchNone     MatchKind = iota // nothing written yet: --update writes the actual value
	MatchEqual                     // "text", a scalar, or = JSON: equal
	MatchSubset                    // a JSON object or list without =: the actual holds it
	MatchContains                  // contains "text"
	MatchRegexp                    // /regexp/
)

// Matcher is what an expectation wants, and where it is written.
type Matcher struct {
	Kind  MatchKind
	Value any            // MatchEqual, MatchSubset
	Text  string         // MatchContains
	Re    *regexp.Regexp // MatchRegexp
	Exact bool           // written with =
	// Start and End are the byte offsets of the matcher in its line: what
	// --update replaces.
	Start, End int
}

// Updatable reports whether --update may rewrite the matcher: an exact
// value, or none yet. Patterns (contains, /regexp/, a subset) say what the
// author chose to check, so they stay.
func (m Matcher) Updatable() bool { return m.Kind == MatchNone || m.Kind == MatchEqual }

// OutcomeSpec is an expected outcome.
type OutcomeSpec struct {
	Status string   // finished, waiting for user, waiting for tools, interrupted, cancelled, failed
	Names  []string // waiting for tools: the tools; interrupted: the reasons
	Code   string   // failed: the error's code; "" for any
	Msg    Matcher  // failed: the message; MatchNone for any
}

// expectError is a problem of an expect line at a column.
type expectError struct {
	col int
	msg string
}

// outcomes are the outcomes an expectation may name.
var outcomes = []string{"finished", "waiting for user", "waiting for tools", "interrupted", "cancelled", "failed"}

// parseExpect reads what follows `expect `, which starts at column col.
func parseExpect(rest string, col int) (*Expect, *expectError) {
	errAt := func(off int, format string, args ...any) *expectError {
		return &expectError{col: col + off, msg: fmt.Sprintf(format, args...)}
	}
	e := &Expect{}
	off := 0 // where s starts in rest
	s := rest
	advance := func(n int) {
		for n < len(s) && s[n] == ' ' {
			n++
		}
		off, s = off+n, s[n:]
	}
	if strings.HasPrefix(s, "no ") {
		e.No = true
		advance(3)
	}
	word, _ := cutWord(s)
	switch {
	case word == "reply":
		e.Subject, e.Target = SubjectReply, "reply"
		advance(len(word))
	case word == "outcome":
		e.Subject, e.Target = SubjectOutcome, "outcome"
		advance(len(word))
		spec, err := parseOutcome(s, col+off-1)
		if err != nil {
			return nil, errAt(off, "%s", err.msg)
		}
		e.Outcome = spec
		e.Match = Matcher{Kind: MatchEqual, Start: col - 1 + off, End: col - 1 + len(rest)}
		if s == "" {
			e.Match.Kind = MatchNone
		}
		return e, e.check(errAt, off)
	case strings.HasPrefix(s, "tool call ") || strings.HasPrefix(s, "tool result "):
		e.Subject = SubjectToolCall
		if strings.HasPrefix(s, "tool result ") {
			e.Subject = SubjectToolResult
		}
		advance(len(e.Subject))
		name, _ := cutWord(s)
		if !isName(name) {
			return nil, errAt(off, "%s: expected a tool's name, found %q", e.Subject, name)
		}
		e.Name, e.Target = name, string(e.Subject)+" "+name
		advance(len(name))
	case word == "event":
		e.Subject = SubjectEvent
		advance(len(word))
		typ, _ := cutWord(s)
		if !eventType.MatchString(typ) {
			return nil, errAt(off, "event: expected an AG-UI event type such as CUSTOM or STEP_STARTED, found %q", typ)
		}
		e.Name, e.Target = typ, "event "+typ
		advance(len(typ))
	case strings.HasPrefix(word, "state"), strings.HasPrefix(word, "result"), strings.HasPrefix(word, "messages"), strings.HasPrefix(word, "$"):
		root, path := word, ""
		if i := strings.IndexAny(word, ".["); i > 0 {
			root, path = word[:i], word[i:]
		}
		switch {
		case root == "state" || root == "result" || root == "messages":
			e.Subject = Subject(root)
		case strings.HasPrefix(root, "$") && isName(root[1:]):
			e.Subject, e.Name = SubjectContext, root[1:]
		default:
			return nil, errAt(off, "expected reply, outcome, state, result, messages, $root, tool call, tool result or event, found %q", word)
		}
		keys, err := parsePath(path)
		if err != nil {
			return nil, errAt(off+len(root), "%v", err)
		}
		e.Path, e.Target = keys, word
		advance(len(word))
	default:
		msg := fmt.Sprintf("expected reply, outcome, state, result, messages, $root, tool call, tool result or event, found %q", word)
		if s := suggestFrom(word, []string{"reply", "outcome", "state", "result", "messages", "tool", "event"}); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return nil, errAt(off, "%s", msg)
	}
	m, err := parseMatcher(s, col-1+off)
	if err != nil {
		return nil, &expectError{col: err.col + 1, msg: err.msg}
	}
	e.Match = m
	return e, e.check(errAt, off)
}

// check rejects the matchers a subject cannot take.
func (e *Expect) check(errAt func(int, string, ...any) *expectError, off int) *expectError {
	switch {
	case e.No && e.Subject != SubjectToolCall && e.Subject != SubjectEvent:
		return errAt(0, "no: only `expect no tool call name` and `expect no event TYPE` exist")
	case e.No && e.Match.Kind != MatchNone && e.Match.Kind != MatchSubset:
		return errAt(off, "%s: expected nothing or a JSON object after the name", e.Target)
	case (e.Subject == SubjectToolCall || e.Subject == SubjectEvent) && e.Match.Kind != MatchNone && e.Match.Kind != MatchSubset:
		if e.Subject == SubjectToolCall {
			return errAt(off, "%s: expected a JSON object of arguments, such as {\"id\": 1}", e.Target)
		}
		return errAt(off, "%s: expected a JSON object of the event's fields, such as {\"name\": \"done\"}", e.Target)
	}
	if e.Subject == SubjectEvent && e.Match.Kind == MatchSubset {
		if _, ok := e.Match.Value.(map[string]any); !ok {
			return errAt(off, "%s: expected a JSON object the event holds", e.Target)
		}
	}
	return nil
}

var eventType = regexp.MustCompile(`^[A-Z][A-Z_]*$`)

// parseMatcher reads a matcher; base is the 0-based offset of s in its line.
func parseMatcher(s string, base int) (Matcher, *expectError) {
	m := Matcher{Start: base, End: base + len(s)}
	switch {
	case s == "":
		m.Kind = MatchNone
	case strings.HasPrefix(s, "contains "):
		v, end, err := parseJSON(s[len("contains "):])
		str, ok := v.(string)
		if err != nil || !ok || end != len(s)-len("contains ") {
			return m, &expectError{col: base + len("contains "), msg: `contains: expected a quoted string, such as contains "order A-17"`}
		}
		m.Kind, m.Text = MatchContains, str
	case strings.HasPrefix(s, "/"):
		if len(s) < 2 || !strings.HasSuffix(s, "/") {
			return m, &expectError{col: base, msg: "a regexp goes between slashes and ends the line: /^Hello/"}
		}
		re, err := regexp.Compile(s[1 : len(s)-1])
		if err != nil {
			return m, &expectError{col: base + 1, msg: fmt.Sprintf("bad regexp: %v", err)}
		}
		m.Kind, m.Re = MatchRegexp, re
	default:
		v := s
		if after, ok := strings.CutPrefix(s, "="); ok {
			m.Exact = true
			v = strings.TrimLeft(after, " ")
		}
		val, end, err := parseJSON(v)
		if err == nil && end != len(v) {
			err = fmt.Errorf("unexpected %q after the value", v[end:])
		}
		if err != nil {
			return m, &expectError{col: base + len(s) - len(v), msg: fmt.Sprintf("expected a JSON value, contains \"text\" or /regexp/: %v", err)}
		}
		m.Value, m.Kind = val, MatchEqual
		switch val.(type) {
		case map[string]any, []any:
			if !m.Exact {
				m.Kind = MatchSubset
			}
		}
	}
	return m, nil
}

// parseOutcome reads an expected outcome; base is the 0-based offset of s
// in its line.
func parseOutcome(s string, base int) (*OutcomeSpec, *expectError) {
	if s == "" {
		return &OutcomeSpec{}, nil
	}
	for _, o := range outcomes {
		rest, ok := strings.CutPrefix(s, o)
		if !ok || rest != "" && rest[0] != ' ' {
			continue
		}
		rest = strings.TrimSpace(rest)
		spec := &OutcomeSpec{Status: o}
		switch o {
		case "waiting for tools", "interrupted":
			for _, n := range strings.FieldsFunc(rest, func(r rune) bool { return r == ' ' || r == ',' }) {
				spec.Names = append(spec.Names, n)
			}
			return spec, nil
		case "failed":
			code, more := cutWord(rest)
			if code != "" && !strings.HasPrefix(code, "\"") && code != "contains" && !strings.HasPrefix(code, "/") {
				spec.Code, rest = code, more
			}
			if rest != "" {
				m, err := parseMatcher(rest, base+len(s)-len(rest))
				if err != nil {
					return nil, err
				}
				if m.Kind == MatchSubset || m.Kind == MatchEqual && !isString(m.Value) {
					return nil, &expectError{col: base + len(s) - len(rest), msg: `outcome failed: expected the message as "text", contains "text" or /regexp/`}
				}
				spec.Msg = m
			}
			return spec, nil
		}
		if rest != "" {
			return nil, &expectError{col: base + len(s) - len(rest), msg: fmt.Sprintf("outcome %s: unexpected %q", o, rest)}
		}
		return spec, nil
	}
	msg := fmt.Sprintf("outcome: expected one of %s, found %q", strings.Join(outcomes, ", "), s)
	if w := suggestFrom(s, outcomes); w != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", w)
	}
	return nil, &expectError{col: base, msg: msg}
}

func isString(v any) bool { _, ok := v.(string); return ok }

// parsePath reads .key and [index] steps.
func parsePath(s string) ([]PathKey, error) {
	var keys []PathKey
	for s != "" {
		switch s[0] {
		case '.':
			end := 1
			for end < len(s) && s[end] != '.' && s[end] != '[' {
				end++
			}
			if end == 1 {
				return nil, fmt.Errorf("expected a key after \".\"")
			}
			keys = append(keys, PathKey{Key: s[1:end]})
			s = s[end:]
		case '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return nil, fmt.Errorf("expected \"]\" after %q", s)
			}
			n, err := strconv.Atoi(s[1:end])
			if err != nil {
				return nil, fmt.Errorf("expected an index such as [0] or [-1], found %q", s[:end+1])
			}
			keys = append(keys, PathKey{Index: n, IsIndex: true})
			s = s[end+1:]
		default:
			return nil, fmt.Errorf("expected .key or [index], found %q", s)
		}
	}
	return keys, nil
}

// suggestFrom is the word of words closest to w, or "".
func suggestFrom(w string, words []string) string {
	best, bestD := "", 3
	for _, c := range words {
		if d := diag.Distance(w, c); d < bestD && d <= len(c)/2 {
			best, bestD = c, d
		}
	}
	return best
}
