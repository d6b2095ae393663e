package compiler

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/lang/diag"
	"github.com/aguic/aguic/mcplock"
	"github.com/aguic/aguic/vm"
	"github.com/expr-lang/expr/ast"
)

// The attributes of an `mcp name { … }` declaration.
var (
	serverAttrs  = []string{"command", "args", "env", "url", "headers", "tools", "timeout", "retry", "backoff"}
	stdioAttrs   = []string{"args", "env"} // only beside command
	networkAttrs = []string{"headers"}     // only beside url
)

// isLock reports whether a source is a lock file of MCP servers.
func isLock(name string) bool { return filepath.Base(name) == mcplock.FileName }

// lockFile is one lock file, read.
type lockFile struct {
	name string        // the source's name
	file *mcplock.File // nil when it cannot be read
}

// readLocks reads the lock files, keyed by the directory they lock; a
// lock that cannot be read is an error at its file.
func readLocks(srcs []Source) (map[string]*lockFile, diag.List) {
	var diags diag.List
	locks := map[string]*lockFile{}
	for _, s := range srcs {
		l := &lockFile{name: s.Name}
		f, err := mcplock.Parse(s.Text)
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, "aguic mcp lock") {
				msg += "; write it again with `aguic mcp lock`"
			}
			diags.Errorf(lockErrorSpan(s), CodeLockFile, "%s", msg)
		} else {
			l.file = f
		}
		locks[filepath.Dir(s.Name)] = l
	}
	return locks, diags
}

// lockErrorSpan is where a lock file that cannot be read goes wrong: at
// its JSON syntax error, else at its start.
func lockErrorSpan(s Source) diag.Span {
	f := diag.NewFile(s.Name, s.Text)
	var v any
	var syn *json.SyntaxError
	if err := json.Unmarshal(s.Text, &v); errors.As(err, &syn) {
		at := min(max(int(syn.Offset)-1, 0), len(s.Text))
		return f.Span(at, min(at+1, len(s.Text)))
	}
	return f.Span(0, min(1, len(s.Text)))
}

// server returns the entry of the server with the given name, or nil
// when l is nil, cannot be read or has none.
func (l *lockFile) server(name string) *mcplock.Server {
	if l == nil || l.file == nil {
		return nil
	}
	return l.file.Servers[name]
}

// declareServers lowers the MCP server declarations of every parsed file:
// the first of each name is kept, a later one is an error. It returns the
// servers sorted by name and makes them known to every file.
func (sh *shared) declareServers(parsed []*fileCompiler, locks map[string]*lockFile) []*vm.Server {
	sh.servers = map[string]*vm.Server{}
	first := map[string]diag.Span{}
	for _, fc := range parsed {
		if fc.ast == nil {
			continue
		}
		lock := locks[filepath.Dir(fc.file.Name)]
		for _, d := range fc.ast.Servers {
			span := fc.span(d.Name.Pos, d.Name.EndPos)
			if at, dup := first[d.Name.Name]; dup {
				fc.diags.Add(diag.Errorf(span, CodeDuplicateServer, "mcp server %q is already declared", d.Name.Name).WithRelated(at, firstDefined))
				fc.server(d) // checked, not kept
				continue
			}
			first[d.Name.Name] = span
			s, toolSpans := fc.server(d)
			fc.lockServer(s, d, lock, toolSpans)
			sh.servers[s.Name] = s
			sh.serverNames = append(sh.serverNames, s.Name)
		}
	}
	slices.Sort(sh.serverNames)
	out := make([]*vm.Server, len(sh.serverNames))
	for i, name := range sh.serverNames {
		out[i] = sh.servers[name]
	}
	return out
}

// server checks and lowers one `mcp name { … }` declaration. It returns
// the server and the span of each name of its tools.
func (c *fileCompiler) server(d *lang.Server) (*vm.Server, []diag.Span) {
	s := &vm.Server{Name: d.Name.Name, File: c.file.Name, Span: c.span(d.Pos, d.EndPos)}
	attrs := map[string]*lang.Attr{}
	var toolSpans []diag.Span // of the names in tools, in order
	for _, a := range d.Attrs {
		name := a.Name.Name
		nameSpan := c.span(a.Name.Pos, a.Name.EndPos)
		if first, dup := attrs[name]; dup {
			c.diags.Add(diag.Errorf(nameSpan, CodeDuplicate, "attribute %q is already set", name).WithRelated(c.span(first.Name.Pos, first.Name.EndPos), firstSet))
			continue
		}
		if !slices.Contains(serverAttrs, name) {
			c.diags.Errorf(nameSpan, CodeServerDecl, "unknown mcp server attribute %q%s", name, suggest(name, serverAttrs))
			continue
		}
		attrs[name] = a
		e := env{constant: true}
		syn := exprSyntax(a.Value)
		switch name {
		case "command":
			s.Command = c.value(syn, vm.TypeString, nil, e, name)
		case "url":
			s.URL = c.value(syn, vm.TypeString, nil, e, name)
			c.checkURL(s.URL)
		case "args":
			s.Args = c.value(syn, vm.TypeList, nil, e, name)
		case "env":
			s.Env = c.secrets(syn, e, name, false)
		case "headers":
			s.Headers = c.secrets(syn, e, name, true)
		case "tools":
			s.Tools, toolSpans = c.serverTools(a)
		case "timeout":
			if text, ok := c.literalString(a, "an mcp server's timeout"); ok {
				if dur, err := time.ParseDuration(text); err != nil || dur <= 0 {
					c.diags.Errorf(c.span(a.Value.Pos, a.Value.EndPos), CodeWrongType, "timeout expects a positive duration such as \"20s\", found %q", text)
				} else {
					s.Timeout = dur
				}
			}
		case "retry":
			s.Retry = c.literalCount(a)
		case "backoff":
			if text, ok := c.literalString(a, "an mcp server's backoff"); ok {
				if _, _, err := vm.ParseBackoff(text); err != nil {
					c.diags.Errorf(c.span(a.Value.Pos, a.Value.EndPos), CodeWrongType, "backoff expects a backoff such as \"1s..8s\": %v", err)
				} else {
					s.Backoff = text
				}
			}
		}
	}
	c.checkTransport(d, attrs)
	return s, toolSpans
}

// lockServer gives server s, declared by d, its entry of the lock of its
// directory (nil for none), and checks the declaration against it:
// unlocked, stale, or naming tools the server does not list.
func (c *fileCompiler) lockServer(s *vm.Server, d *lang.Server, lock *lockFile, toolSpans []diag.Span) {
	if lock != nil && lock.file == nil {
		return // the lock is an error of its own
	}
	s.Locked = lock.server(s.Name)
	switch {
	case s.Locked == nil:
		c.diags.Warningf(c.span(d.Name.Pos, d.Name.EndPos), CodeNotLocked, "mcp server %q is not locked: tool names and arguments are not checked; run `aguic mcp lock`", s.Name)
	default:
		if changed := s.Locked.From.Changes(s.Origin()); len(changed) > 0 {
			c.diags.Warningf(c.span(d.Name.Pos, d.Name.EndPos), CodeStaleLock, "mcp server %q: its %s changed since %s was written; run `aguic mcp lock`", s.Name, andList(changed), lock.name)
		}
		for i, t := range s.Tools {
			c.checkLockedTool(s, t, toolSpans[i])
		}
	}
}

// checkTransport checks that a declaration has a command or a url, not
// both, and only the attributes of its transport.
func (c *fileCompiler) checkTransport(d *lang.Server, attrs map[string]*lang.Attr) {
	command, url := attrs["command"], attrs["url"]
	switch {
	case command != nil && url != nil:
		c.diags.Errorf(c.span(url.Name.Pos, url.Name.EndPos), CodeServerDecl, "mcp server %q has both command and url: it is either started (command) or reached over HTTP (url)", d.Name.Name)
		return
	case command == nil && url == nil:
		c.diags.Errorf(c.span(d.Name.Pos, d.Name.EndPos), CodeServerDecl, "mcp server %q needs command (a program to start) or url (a streamable HTTP endpoint)", d.Name.Name)
		return
	}
	wrong, is, why := networkAttrs, "started with command", "a server reached at a url"
	if url != nil {
		wrong, is, why = stdioAttrs, "reached at a url", "a server started with command"
	}
	for _, a := range d.Attrs {
		if slices.Contains(wrong, a.Name.Name) && attrs[a.Name.Name] == a {
			c.diags.Errorf(c.span(a.Name.Pos, a.Name.EndPos), CodeServerDecl, "mcp server %q is %s: %s is only for %s", d.Name.Name, is, a.Name.Name, why)
		}
	}
}

// literalCount reads a value that must be a whole number literal of at
// least 0, such as a server's retry.
func (c *fileCompiler) literalCount(a *lang.Attr) int {
	ts := exprSyntax(a.Value).tokens
	if len(ts) == 1 {
		if n, err := strconv.Atoi(ts[0]); err == nil && n >= 0 {
			return n
		}
	}
	c.diags.Errorf(c.span(a.Value.Pos, a.Value.EndPos), CodeWrongType, "%s must be a whole number of at least 0, such as 2", a.Name.Name)
	return 0
}

// serverTools reads a server's `tools = ["a", "b"]`: a list of string
// literals. It returns the names, never nil, and the span of each.
func (c *fileCompiler) serverTools(a *lang.Attr) ([]string, []diag.Span) {
	names, spans := []string{}, []diag.Span(nil)
	bad := func() ([]string, []diag.Span) {
		c.diags.Errorf(c.span(a.Value.Pos, a.Value.EndPos), CodeWrongType, "an mcp server's tools must be a list of tool names as string literals, such as [\"echo\", \"get-sum\"]")
		return nil, nil
	}
	if len(a.Value.Parts) != 1 || a.Value.Parts[0].Group == nil || a.Value.Parts[0].Group.Open != "[" {
		return bad()
	}
	comma := true // a name may come next
	for _, p := range a.Value.Parts[0].Group.Inner {
		switch {
		case p.Token == "," && !comma:
			comma = true
		case p.Str != nil && comma:
			name, ok := p.Str.Literal()
			if !ok {
				return bad()
			}
			span := c.span(p.Pos, p.EndPos)
			if i := slices.Index(names, name); i >= 0 {
				c.diags.Add(diag.Errorf(span, CodeDuplicate, "tool %q is already listed", name).WithRelated(spans[i], "first listed here"))
				continue
			}
			names, spans = append(names, name), append(spans, span)
			comma = false
		default:
			return bad()
		}
	}
	return names, spans
}

// checkLockedTool checks that the locked server s lists tool, written at
// span.
func (c *fileCompiler) checkLockedTool(s *vm.Server, tool string, span diag.Span) bool {
	if s.Locked == nil || s.Locked.Tool(tool) != nil {
		return true
	}
	hint := suggest(tool, s.Locked.ToolNames())
	if hint == "" {
		hint = fmt.Sprintf(" (it has %s)", andList(quoteAll(s.Locked.ToolNames())))
		if len(s.Locked.Tools) == 0 {
			hint = " (it has none)"
		}
	}
	c.diags.Errorf(span, CodeUnknownServerTool, "mcp server %q has no tool %q%s", s.Name, tool, hint)
	return false
}

// andList joins words as "a", "a and b", "a, b and c".
func andList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// secrets compiles the env or headers of a server, an object of strings,
// and warns about every entry whose name looks secret and whose value is
// a string literal: a secret belongs in the environment, not in a file.
func (c *fileCompiler) secrets(s syntax, e env, what string, headers bool) *vm.Value {
	v, src := c.valueSource(s, vm.TypeObject, nil, e, what)
	if v == nil || v.Expr == nil || src == nil {
		return v
	}
	m, ok := v.Expr.Program.Node().(*ast.MapNode)
	if !ok {
		return v
	}
	for _, p := range m.Pairs {
		pair := p.(*ast.PairNode)
		key, kok := pair.Key.(*ast.StringNode)
		lit, vok := pair.Value.(*ast.StringNode)
		if !kok || !vok || lit.Value == "" || !secretName(key.Value) {
			continue
		}
		c.diags.Warningf(c.nodeSpan(src, lit), CodeLiteralSecret, "the %s entry %q holds a secret written in the file: take it from the environment, such as %s", what, key.Value, envExample(key.Value, lit.Value, headers))
	}
	return v
}

// secretWords are the parts of a name that say it holds a secret.
var secretWords = []string{
	"apikey", "auth", "authorization", "cookie", "credential", "credentials", "key", "keys", "passphrase",
	"passwd", "password", "pwd", "secret", "secrets", "token", "tokens",
}

// secretName reports whether an env or header name looks like it holds a
// secret: API_KEY, X-Api-Key, apiKey, Authorization, GITHUB_TOKEN.
func secretName(name string) bool {
	return slices.ContainsFunc(nameWords(name), func(w string) bool { return slices.Contains(secretWords, w) })
}

// nameWords splits a name into its lower-case words at non-letters,
// non-digits and lower-to-upper case changes.
func nameWords(name string) []string {
	var words []string
	var cur []rune
	prevLower := false
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for _, r := range name {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
			prevLower = false
			continue
		case unicode.IsUpper(r) && prevLower:
			flush()
		}
		cur = append(cur, r)
		prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
	}
	flush()
	return words
}

// envExample shows how an entry named key, written as the literal value,
// takes its secret from the environment.
func envExample(key, value string, headers bool) string {
	variable := strings.ToUpper(strings.Join(nameWords(key), "_"))
	if headers {
		if scheme, _, ok := strings.Cut(value, " "); ok && (strings.EqualFold(scheme, "Bearer") || strings.EqualFold(scheme, "Basic")) {
			return fmt.Sprintf(`"%s <<env('TOKEN')>>"`, scheme)
		}
	}
	return fmt.Sprintf(`"<<env('%s')>>"`, variable)
}
