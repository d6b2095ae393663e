package stdlib

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/aguic/aguic/vm"
)

func TestKindNames(t *testing.T) {
	r := Registry()
	var got []string
	for _, k := range r.Kinds() {
		got = append(got, k.Name)
	}
	want := []string{
		"say", "model", "frontend_tool", "backend_tool", "suspend", "interrupt", "sleep",
		"state sync", "state snapshot", "state delta",
		"activity sync", "activity snapshot", "activity delta",
		"emit", "http", "call", "mcp", "output",
	}
	slices.Sort(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("kinds = %q\nwant %q", got, want)
	}
	if got, want := r.KindNames(), []string{"activity", "backend_tool", "call", "emit", "frontend_tool", "http", "interrupt", "mcp", "model", "output", "say", "sleep", "state", "suspend"}; !reflect.DeepEqual(got, want) {
		t.Errorf("KindNames = %q, want %q", got, want)
	}
	for _, kind := range []string{"state", "activity"} {
		if got, want := r.Modes(kind), []string{"delta", "snapshot", "sync"}; !reflect.DeepEqual(got, want) {
			t.Errorf("Modes(%q) = %q, want %q", kind, got, want)
		}
	}
}

// TestKindShapes pins what the compiler relies on most: arguments, required
// keys and handlers, suspension and results.
func TestKindShapes(t *testing.T) {
	type shape struct {
		arg      string // the argument's name, "" for none
		required []string
		handlers []string
		suspend  vm.Suspend
		convo    bool
		result   bool
	}
	want := map[string]shape{
		"say":               {arg: "text", result: true},
		"model":             {suspend: vm.SuspendFrontendTools, result: true},
		"frontend_tool":     {arg: "tool name", handlers: []string{"result", "other"}, suspend: vm.SuspendAlways, convo: true, result: true},
		"backend_tool":      {arg: "name", required: []string{"result"}, result: true},
		"suspend":           {suspend: vm.SuspendAlways, convo: true},
		"sleep":             {arg: "duration", suspend: vm.SuspendAlways, convo: true},
		"interrupt":         {required: []string{"reason"}, suspend: vm.SuspendAlways, convo: true, result: true},
		"state sync":        {},
		"state snapshot":    {arg: "state"},
		"state delta":       {arg: "patch"},
		"activity sync":     {arg: "activity id", required: []string{"type", "from"}},
		"activity snapshot": {arg: "activity id", required: []string{"type", "content"}},
		"activity delta":    {arg: "activity id", required: []string{"type", "patch"}},
		"emit":              {arg: "name"},
		"http":              {arg: "url", result: true},
		"call":              {arg: "workflow", result: true},
		"mcp":               {arg: "tool", result: true},
		"output":            {arg: "value"},
	}
	for _, k := range Registry().Kinds() {
		t.Run(k.Name, func(t *testing.T) {
			var got shape
			if k.Arg != nil {
				got.arg = k.Arg.Name
				if !k.Arg.Required {
					t.Errorf("argument %q is not required", k.Arg.Name)
				}
			}
			for _, key := range k.Keys {
				if key.Required {
					got.required = append(got.required, key.Name)
				}
			}
			for _, h := range k.Handlers {
				if !h.Required {
					t.Errorf("handler %q is not required", h.Name)
				}
				got.handlers = append(got.handlers, h.Name)
			}
			got.suspend, got.convo, got.result = k.Suspend, k.Convo, k.Result != ""
			if !reflect.DeepEqual(got, want[k.Name]) {
				t.Errorf("shape = %+v\nwant %+v", got, want[k.Name])
			}
		})
	}
	if w := Registry().Kind("http").Word; w == nil || w.Name != "method" || !reflect.DeepEqual(w.Values, []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}) {
		t.Errorf("http word = %+v", w)
	}
}

var identifier = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func TestKindDocs(t *testing.T) {
	for _, k := range Registry().Kinds() {
		t.Run(k.Name, func(t *testing.T) {
			checkSentence(t, "kind doc", k.Doc)
			if k.Example == "" {
				t.Error("no example")
			}
			if k.Exec == nil {
				t.Error("no Exec: a node of the kind would fail only when it runs")
			}
			if k.Arg != nil {
				checkSentence(t, fmt.Sprintf("argument %q", k.Arg.Name), k.Arg.Doc)
			}
			seen := map[string]bool{}
			for _, key := range k.Keys {
				if !identifier.MatchString(key.Name) || seen[key.Name] {
					t.Errorf("key name %q is not a fresh identifier", key.Name)
				}
				seen[key.Name] = true
				checkSentence(t, fmt.Sprintf("key %q", key.Name), key.Doc)
			}
			for _, h := range k.Handlers {
				if !identifier.MatchString(h.Name) || seen["on "+h.Name] {
					t.Errorf("handler name %q is not a fresh identifier", h.Name)
				}
				seen["on "+h.Name] = true
				checkSentence(t, fmt.Sprintf("handler %q", h.Name), h.Doc)
			}
		})
	}
}

// checkSentence checks that doc is one line that reads as a sentence.
func checkSentence(t *testing.T, what, doc string) {
	t.Helper()
	switch {
	case doc == "":
		t.Errorf("%s: no doc", what)
	case strings.Contains(doc, "\n"):
		t.Errorf("%s: doc is not one line: %q", what, doc)
	case !unicode.IsUpper([]rune(doc)[0]) || !strings.HasSuffix(doc, "."):
		t.Errorf("%s: doc does not start with a capital and end with a period: %q", what, doc)
	}
}

func TestKeyDefaults(t *testing.T) {
	for _, k := range Registry().Kinds() {
		for _, key := range k.Keys {
			if err := checkKey(key); err != nil {
				t.Errorf("%s: key %q: %v", k.Name, key.Name, err)
			}
		}
	}
}

// checkKey checks that a key's Default, Enum and Writes agree with its Type.
func checkKey(k vm.KeySpec) error {
	if k.Required && k.Default != nil {
		return fmt.Errorf("required, yet has default %#v", k.Default)
	}
	if k.Writes && k.Type != vm.TypePath && k.Type != vm.TypeObject {
		return fmt.Errorf("writes, yet is of type %s", k.Type)
	}
	if len(k.Enum) > 0 {
		if k.Type != vm.TypeString {
			return fmt.Errorf("has an enum, yet is of type %s", k.Type)
		}
		if def, _ := k.Default.(string); k.Default != nil && !slices.Contains(k.Enum, def) {
			return fmt.Errorf("default %#v is not one of %q", k.Default, k.Enum)
		}
	}
	if k.Default == nil {
		return nil
	}
	ok := false
	switch k.Type {
	case vm.TypeAny:
		ok = true
	case vm.TypeString:
		_, ok = k.Default.(string)
	case vm.TypeBool:
		_, ok = k.Default.(bool)
	case vm.TypeInt:
		_, ok = k.Default.(int)
	case vm.TypeNumber:
		switch k.Default.(type) {
		case int, float64:
			ok = true
		}
	case vm.TypeObject:
		_, ok = k.Default.(map[string]any)
	case vm.TypeList:
		_, ok = k.Default.([]any)
	case vm.TypeDuration:
		s, _ := k.Default.(string)
		d, err := time.ParseDuration(s)
		ok = err == nil && d > 0
	case vm.TypeBackoff:
		s, _ := k.Default.(string)
		first, longest, found := strings.Cut(s, "..")
		a, err1 := time.ParseDuration(first)
		b, err2 := time.ParseDuration(longest)
		ok = found && err1 == nil && err2 == nil && 0 < a && a <= b
	}
	if !ok {
		return fmt.Errorf("default %#v (%T) is not a valid %s", k.Default, k.Default, k.Type)
	}
	return nil
}

func TestCheckKeyRejects(t *testing.T) {
	bad := []vm.KeySpec{
		{Name: "a", Type: vm.TypeBool, Default: "true"},
		{Name: "b", Type: vm.TypeInt, Default: 8.0},
		{Name: "c", Type: vm.TypeString, Enum: []string{"x", "y"}, Default: "z"},
		{Name: "d", Type: vm.TypeDuration, Default: "30"},
		{Name: "e", Type: vm.TypeBackoff, Default: "8s..1s"},
		{Name: "f", Type: vm.TypeString, Required: true, Default: "x"},
		{Name: "g", Type: vm.TypeString, Writes: true},
		{Name: "h", Type: vm.TypePath, Default: "$input.chat"},
		{Name: "i", Type: vm.TypeBool, Enum: []string{"true"}},
	}
	for _, k := range bad {
		if checkKey(k) == nil {
			t.Errorf("checkKey(%+v) = nil, want an error", k)
		}
	}
}

// TestExamples checks each kind's example against the kind's declaration:
// the statement names the kind, has an argument exactly when one is
// declared, uses only declared keys and handlers, sets every required one,
// and binds a result only when the kind has one.
func TestExamples(t *testing.T) {
	for _, k := range Registry().Kinds() {
		t.Run(k.Name, func(t *testing.T) {
			if err := checkExample(k); err != nil {
				t.Errorf("%v in example:\n%s", err, k.Example)
			}
		})
	}
}

var (
	labelPrefix = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*:\s+`)
	resultPath  = regexp.MustCompile(`\s*->\s*\$[A-Za-z_][A-Za-z0-9_.]*$`)
	keyLine     = regexp.MustCompile(`^([a-z_][a-z0-9_]*)\s*=\s*\S`)
	handlerLine = regexp.MustCompile(`^on\s+([a-z_][a-z0-9_]*)\s*\{`)
	bareIdent   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

func checkExample(k *vm.KindSpec) error {
	s := labelPrefix.ReplaceAllString(strings.TrimSpace(k.Example), "")
	rest, ok := strings.CutPrefix(s, k.Name)
	if !ok || rest != "" && rest[0] != ' ' {
		return fmt.Errorf("does not start with %q", k.Name)
	}
	rest = strings.TrimSpace(rest)
	if k.Word != nil {
		word, after, _ := strings.Cut(rest, " ")
		if k.Word.Servers && !bareIdent.MatchString(word) {
			return fmt.Errorf("%s %q is not a bare identifier", k.Word.Name, word)
		}
		if !k.Word.Servers && !slices.Contains(k.Word.Values, word) {
			return fmt.Errorf("%s %q is not one of %q", k.Word.Name, word, k.Word.Values)
		}
		rest = strings.TrimSpace(after)
	}
	if loc := resultPath.FindStringIndex(rest); loc != nil {
		if k.Result == "" {
			return fmt.Errorf("binds a result, yet %q has none", k.Name)
		}
		rest = rest[:loc[0]]
	}
	arg, body, err := splitBody(rest)
	if err != nil {
		return err
	}
	switch {
	case k.Arg == nil && arg != "":
		return fmt.Errorf("has argument %q, yet none is declared", arg)
	case k.Arg != nil && k.Arg.Required && arg == "":
		return fmt.Errorf("lacks the required %s", k.Arg.Name)
	case k.Arg != nil && (k.Arg.Type == vm.TypeString || k.Arg.Type == vm.TypeServerTool) && arg != "" && !strings.HasPrefix(arg, `"`):
		return fmt.Errorf("%s %s is not a string", k.Arg.Name, arg)
	case k.Arg != nil && k.Arg.Type == vm.TypeWorkflow && !bareIdent.MatchString(arg):
		return fmt.Errorf("%s %s is not a bare identifier", k.Arg.Name, arg)
	}
	used := map[string]bool{}
	for _, stmt := range body {
		if m := keyLine.FindStringSubmatch(stmt); m != nil {
			if k.Key(m[1]) == nil || used[m[1]] {
				return fmt.Errorf("key %q is unknown or set twice", m[1])
			}
			used[m[1]] = true
		} else if m := handlerLine.FindStringSubmatch(stmt); m != nil {
			if k.Handler(m[1]) == nil || used["on "+m[1]] {
				return fmt.Errorf("handler %q is unknown or given twice", m[1])
			}
			used["on "+m[1]] = true
		} else {
			return fmt.Errorf("body statement %q is neither a key nor a handler", stmt)
		}
	}
	for _, key := range k.Keys {
		if key.Required && !used[key.Name] {
			return fmt.Errorf("required key %q is missing", key.Name)
		}
	}
	for _, h := range k.Handlers {
		if h.Required && !used["on "+h.Name] {
			return fmt.Errorf("required handler %q is missing", h.Name)
		}
	}
	return nil
}

// splitBody splits `arg { stmt \n stmt; stmt }` into the argument and the
// body's statements, minding strings and brackets.
func splitBody(s string) (arg string, body []string, err error) {
	depth, inString, open := 0, false, -1
	var stmt strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			if depth == 1 {
				stmt.WriteByte(c)
			}
			switch c {
			case '\\':
				i++
				if depth == 1 && i < len(s) {
					stmt.WriteByte(s[i])
				}
			case '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
		case c == '{' && depth == 0:
			if open >= 0 {
				return "", nil, fmt.Errorf("more than one body")
			}
			open = i
			depth++
			continue
		case c == '}' && depth == 1:
			if st := strings.TrimSpace(stmt.String()); st != "" {
				body = append(body, st)
			}
			if strings.TrimSpace(s[i+1:]) != "" {
				return "", nil, fmt.Errorf("text %q after the body", s[i+1:])
			}
			return strings.TrimSpace(s[:open]), body, nil
		case (c == '\n' || c == ';') && depth == 1:
			if st := strings.TrimSpace(stmt.String()); st != "" {
				body = append(body, st)
			}
			stmt.Reset()
			continue
		case c == '{' || c == '[' || c == '(':
			depth++
		case c == '}' || c == ']' || c == ')':
			depth--
		}
		if depth >= 1 {
			stmt.WriteByte(c)
		}
	}
	if inString || depth != 0 {
		return "", nil, fmt.Errorf("unbalanced brackets or quotes")
	}
	return strings.TrimSpace(s), nil, nil
}

func TestRegistriesShareNothing(t *testing.T) {
	a, b := Registry(), Registry()
	a.Kind("say").Keys[0].Enum[0] = "changed"
	a.Kind("http").Word.Values[0] = "changed"
	if b.Kind("say").Keys[0].Enum[0] != "assistant" || b.Kind("http").Word.Values[0] != "GET" {
		t.Error("two registries share their specs")
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("registering into a filled registry did not panic")
		}
	}()
	Register(Registry())
}

func TestCheckExampleRejects(t *testing.T) {
	r := Registry()
	tests := []struct{ kind, example string }{
		{"say", `say`},
		{"say", `sayx "hi"`},
		{"say", `say "hi" { colour = "red" }`},
		{"say", `say "hi" { role = "user"; role = "system" }`},
		{"say", `say "hi" { on result { say "x" } }`},
		{"suspend", `suspend -> $x`},
		{"suspend", `suspend "now"`},
		{"http", `http FETCH "https://example.com"`},
		{"call", `call "child"`},
		{"mcp", `mcp "everything" "echo"`},
		{"mcp", `mcp everything echo`},
		{"interrupt", `ask: interrupt { message = "Sure?" }`},
		{"frontend_tool", "t: frontend_tool \"confirm\" {\n  on result { say \"a\" }\n}"},
		{"model", `model { prompt = "a" } trailing`},
		{"model", `model { prompt = "unterminated }`},
	}
	for _, tt := range tests {
		k := *r.Kind(tt.kind)
		k.Example = tt.example
		if checkExample(&k) == nil {
			t.Errorf("checkExample accepted %q for %q", tt.example, tt.kind)
		}
	}
}
