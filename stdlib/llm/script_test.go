package llm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// collect streams req from s and returns the chunks and the answer.
func collect(t *testing.T, s *Scripted, last string) ([]Chunk, *Response, error) {
	t.Helper()
	var chunks []Chunk
	req := &Request{Messages: []Message{{Role: RoleSystem, Content: "be brief"}, {Role: RoleUser, Content: last}}}
	resp, err := s.Stream(context.Background(), req, func(c Chunk) error {
		chunks = append(chunks, c)
		return nil
	})
	return chunks, resp, err
}

func TestScriptStream(t *testing.T) {
	s, err := ParseScript([]byte(`# a greeting
reply
reasoning: The user   greets me.
text: Hello there,
text:   friend!
tool: add {"a": 1, "b": 22222222222222}
tool: lookup my_id
usage: 7 9
`))
	if err != nil {
		t.Fatal(err)
	}
	chunks, resp, err := collect(t, s, "hi")
	if err != nil {
		t.Fatal(err)
	}
	want := []Chunk{
		{Reasoning: "The"}, {Reasoning: " user"}, {Reasoning: "   greets"}, {Reasoning: " me."},
		{Text: "Hello"}, {Text: " there,"}, {Text: "\n  friend!"},
		{ToolCall: &ToolCallDelta{Index: 0, ID: "call_1", Name: "add"}},
		{ToolCall: &ToolCallDelta{Index: 0, Arguments: `{"a":1,"b":22222`}},
		{ToolCall: &ToolCallDelta{Index: 0, Arguments: `222222222}`}},
		{ToolCall: &ToolCallDelta{Index: 1, ID: "my_id", Name: "lookup"}},
		{ToolCall: &ToolCallDelta{Index: 1, Arguments: `{}`}},
	}
	if !reflect.DeepEqual(chunks, want) {
		t.Errorf("chunks:\n got %s\nwant %s", show(chunks), show(want))
	}
	wantResp := &Response{
		Text:      "Hello there,\n  friend!",
		Reasoning: "The user   greets me.",
		ToolCalls: []ToolCall{{ID: "call_1", Name: "add", Arguments: `{"a":1,"b":22222222222222}`}, {ID: "my_id", Name: "lookup", Arguments: "{}"}},
		Usage:     Usage{InputTokens: 7, OutputTokens: 9},
	}
	if !reflect.DeepEqual(resp, wantResp) {
		t.Errorf("response:\n got %+v\nwant %+v", resp, wantResp)
	}
	if got := s.Requests(); len(got) != 1 || got[0].Messages[1].Content != "hi" {
		t.Errorf("requests = %+v", got)
	}
	_, _, err = collect(t, s, "again")
	if err == nil || err.Error() != "scripted model: no reply left for request 2: the script's only reply is used up" {
		t.Errorf("exhausted: %v", err)
	}
}

func show(cs []Chunk) string {
	var b strings.Builder
	for _, c := range cs {
		if c.ToolCall != nil {
			fmt.Fprintf(&b, "%+v ", *c.ToolCall)
			continue
		}
		fmt.Fprintf(&b, "%q/%q ", c.Reasoning, c.Text)
	}
	return b.String()
}

func TestScriptMatch(t *testing.T) {
	s, err := ParseScript([]byte(`
reply match "REFUND"
text: refund
reply repeat match /^order \d+$/
text: order
reply
text: anything
`))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct{ last, want string }{
		{"order 12", "order"},
		{"hello", "anything"},
		{"order 13", "order"},
		{"I want a Refund now", "refund"},
		{"order 14", "order"},
	} {
		_, resp, err := collect(t, s, c.last)
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		if resp.Text != c.want {
			t.Errorf("request %d (%q): got %q, want %q", i+1, c.last, resp.Text, c.want)
		}
	}
	_, _, err = collect(t, s, "hello")
	want := `scripted model: no reply left for request 6: none of the 1 unused reply matches the last user message "hello"`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

func TestScriptErrors(t *testing.T) {
	s, err := ParseScript([]byte(`
reply
text: partial answer
error: 503 overloaded
reply
error: 400 bad request
reply
error: plain failure
`))
	if err != nil {
		t.Fatal(err)
	}
	chunks, _, err := collect(t, s, "x")
	var se *StatusError
	if len(chunks) != 2 || !errors.As(err, &se) || se.StatusCode != 503 || !IsRetryable(err) || err.Error() != "model API status 503: overloaded" {
		t.Errorf("503: chunks %d, err %v", len(chunks), err)
	}
	_, _, err = collect(t, s, "x")
	if !errors.As(err, &se) || se.StatusCode != 400 || IsRetryable(err) {
		t.Errorf("400: %v", err)
	}
	_, _, err = collect(t, s, "x")
	if err == nil || err.Error() != "plain failure" || IsRetryable(err) {
		t.Errorf("plain: %v", err)
	}
}

func TestScriptCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := ParseScript([]byte("reply\ndelay: 1s\ntext: one two three four\n"))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		start := time.Now()
		_, err = s.Stream(ctx, &Request{}, func(c Chunk) error {
			n++
			if n == 2 {
				cancel()
			}
			return nil
		})
		if !errors.Is(err, context.Canceled) || n != 2 {
			t.Errorf("got %v after %d chunks", err, n)
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("took %v, want 2s of delays", d)
		}
	})
}

func TestScriptAfter(t *testing.T) {
	// A tool round sends the same last user message again, with the tool
	// result after it: after tool and after user tell the two apart, so a
	// repeated tool call does not loop.
	s, err := ParseScript([]byte(`
reply repeat after user match "weather"
tool: get_weather {"city": "Paris"}
reply repeat after tool match "weather"
text: sunny
`))
	if err != nil {
		t.Fatal(err)
	}
	ask := []Message{{Role: RoleUser, Content: "the weather?"}}
	answered := append(slices.Clone(ask),
		Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "get_weather", Arguments: "{}"}}},
		Message{Role: RoleTool, ToolCallID: "c1", Content: "sun"})
	for round := range 2 {
		for _, c := range []struct {
			msgs  []Message
			tools int
			text  string
		}{{ask, 1, ""}, {answered, 0, "sunny"}} {
			resp, err := s.Stream(context.Background(), &Request{Messages: c.msgs}, func(Chunk) error { return nil })
			if err != nil {
				t.Fatalf("round %d: %v", round+1, err)
			}
			if len(resp.ToolCalls) != c.tools || resp.Text != c.text {
				t.Errorf("round %d, last message %s: got %d tool calls and %q, want %d and %q", round+1, c.msgs[len(c.msgs)-1].Role, len(resp.ToolCalls), resp.Text, c.tools, c.text)
			}
		}
	}
}

// TestScriptResult: a reply with a result answers only a request that ends
// with tool results, one of which holds what the result asks for; so the
// answer can depend on whether a tool failed.
func TestScriptResult(t *testing.T) {
	s, err := ParseScript([]byte(`
reply repeat after user match "weather"
tool: get_weather {"city": "Paris"}
reply repeat match "weather" result /^error:/
text: the weather service cannot be reached
reply repeat after tool match "weather" result "SUN"
text: sunny
reply repeat after tool
text: no idea
`))
	if err != nil {
		t.Fatal(err)
	}
	ask := []Message{{Role: RoleUser, Content: "the weather?"}}
	call := Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "get_weather", Arguments: "{}"}, {ID: "c2", Name: "f", Arguments: "{}"}}}
	results := func(contents ...string) []Message {
		msgs := append(slices.Clone(ask), call)
		for i, c := range contents {
			msgs = append(msgs, Message{Role: RoleTool, ToolCallID: "c" + strconv.Itoa(i+1), Content: c})
		}
		return msgs
	}
	for _, c := range []struct {
		name string
		msgs []Message
		want string
	}{
		{"asked", ask, ""},
		{"failed", results("error: http GET https://example.com: no such host"), "the weather service cannot be reached"},
		{"failed second", results("done", "error: timeout"), "the weather service cannot be reached"},
		{"answered", results(`{"sky": "sunny"}`), "sunny"},
		{"other result", results("rain"), "no idea"},
		{"an earlier result", append(results("sunny"), Message{Role: RoleAssistant, Content: "more?"}, Message{Role: RoleUser, Content: "the weather?"}), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, err := s.Stream(context.Background(), &Request{Messages: c.msgs}, func(Chunk) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != c.want {
				t.Errorf("got %q, want %q", resp.Text, c.want)
			}
		})
	}
}

// TestScriptAfterNoReply: when no reply accepts a request and a reply
// says after tool or after user, the error says whether the request ends
// with a tool result, the reason the reply may not answer it.
func TestScriptAfterNoReply(t *testing.T) {
	ask := []Message{{Role: RoleUser, Content: "hi"}}
	answered := append(slices.Clone(ask),
		Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}},
		Message{Role: RoleTool, ToolCallID: "c1", Content: "done"})
	for _, c := range []struct {
		name, src string
		msgs      []Message
		want      string
	}{
		{"after tool, asked", "reply after tool\ntext: x\n", ask, `the last user message "hi" (the request does not end with a tool result)`},
		{"after user, answered", "reply after user\ntext: x\n", answered, `the last user message "hi" (the request ends with a tool result)`},
		{"no after", "reply match \"bye\"\ntext: x\n", answered, `the last user message "hi"`},
		{"result, answered", "reply result \"sunny\"\ntext: x\n", answered, `the last user message "hi" (the request ends with a tool result)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseScript([]byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Stream(context.Background(), &Request{Messages: c.msgs}, func(Chunk) error { return nil })
			if err == nil || !strings.HasSuffix(err.Error(), c.want) {
				t.Errorf("got %v, want an error that ends with %s", err, c.want)
			}
		})
	}
}

func TestParseScriptErrors(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"empty", "# nothing\n", "line 1: the script has no replies: start one with a line `reply`"},
		{"before reply", "text: hi\nreply\ntext: x\n", "line 1: text: comes before the first reply: start the script with a line `reply`"},
		{"unknown key", "reply\ntxt: hi\n", `line 2: expected a reply line or one of text:, reasoning:, tool:, error:, usage:, delay:, found "txt: hi"`},
		{"no colon", "reply\nhello\n", `line 2: expected a reply line or one of text:, reasoning:, tool:, error:, usage:, delay:, found "hello"`},
		{"empty reply", "reply\nreply\ntext: x\n", "line 1: reply has nothing to answer: give it text:, reasoning:, tool: or error: lines"},
		{"tool args", "reply\ntool: add {\"a\": }\n", `line 2: tool: the arguments of "add" must be a JSON object on the same line: invalid character '}' looking for beginning of value`},
		{"tool array", "reply\ntool: add [1]\n", `line 2: tool: the arguments of "add" must be a JSON object, found [1]`},
		{"tool no name", "reply\ntool: {}\n", "line 2: tool: expected a tool name, then an optional call id and the JSON arguments, such as `tool: add {\"a\": 1}`"},
		{"usage", "reply\ntext: x\nusage: 1\n", `line 3: usage: expected two whole numbers, the input and the output tokens, found "1"`},
		{"delay", "reply\ntext: x\ndelay: soon\n", `line 3: delay: expected a duration such as 20ms, found "soon"`},
		{"twice", "reply\ntext: x\nusage: 1 2\nusage: 1 2\n", "line 4: usage: is given twice in one reply"},
		{"match", "reply match refund\ntext: x\n", `line 1: reply: match needs "text" or /regexp/, found "refund"`},
		{"regexp", "reply match /a(/\ntext: x\n", "line 1: reply: match: error parsing regexp: missing closing ): `a(`"},
		{"regexp end", "reply match /a/ repeat\ntext: x\n", "line 1: reply: match: a /regexp/ must end with / and end the line, found /a/ repeat"},
		{"head", "reply now\ntext: x\n", `line 1: reply: expected repeat, after tool, after user, match or result, found "now"`},
		{"result", "reply result error\ntext: x\n", `line 1: reply: result needs "text" or /regexp/, found "error"`},
		{"result empty", "reply result \"\"\ntext: x\n", `line 1: reply: result "" matches everything: leave result out`},
		{"result twice", "reply result \"a\" result \"b\"\ntext: x\n", "line 1: reply: result is given twice"},
		{"result regexp end", "reply result /^error:/ match \"x\"\ntext: x\n", `line 1: reply: result: a /regexp/ must end with / and end the line, found /^error:/ match "x"`},
		{"result after user", "reply after user result \"x\"\ntext: x\n", "line 1: reply: result asks for a request that ends with tool results, after user for one that does not"},
		{"after", "reply after model\ntext: x\n", `line 1: reply: after needs tool or user, found "model"`},
		{"after twice", "reply after tool after user\ntext: x\n", "line 1: reply: after is given twice"},
		{"several", "reply\ntxt: a\nreply\nusage: x y\nreply\n", "line 2: expected a reply line or one of text:, reasoning:, tool:, error:, usage:, delay:, found \"txt: a\"\n" +
			"line 4: usage: expected two whole numbers, the input and the output tokens, found \"x y\"\n" +
			"line 5: reply has nothing to answer: give it text:, reasoning:, tool: or error: lines"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseScript([]byte(c.src))
			if err == nil || err.Error() != c.want {
				t.Errorf("got  %v\nwant %s", err, c.want)
			}
		})
	}
}

func TestParseScriptTooManyErrors(t *testing.T) {
	src := "reply\ntext: x\n" + strings.Repeat("bad\n", 12)
	_, err := ParseScript([]byte(src))
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 11 || lines[10] != "(and 2 more errors)" {
		t.Errorf("got %d lines, last %q", len(lines), lines[len(lines)-1])
	}
}

func TestLoadScript(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.txt")
	if err := os.WriteFile(path, []byte("reply\ntext: hi\nreply\nbad\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	_, err := LoadScript(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+":4: expected a reply line") {
		t.Errorf("got %v", err)
	}
	if err := os.WriteFile(path, []byte("reply\ntext: hi\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	s, err := LoadScript(path)
	if err != nil {
		t.Fatal(err)
	}
	collect(t, s, "x")
	_, _, err = collect(t, s, "x")
	if want := "scripted model " + path + ": no reply left for request 2"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v, want %s…", err, want)
	}
	if _, err := LoadScript(filepath.Join(dir, "missing.txt")); err == nil || !strings.HasPrefix(err.Error(), "load script: ") {
		t.Errorf("missing file: %v", err)
	}
}

func TestScriptDefaultUsage(t *testing.T) {
	s, _ := ParseScript([]byte("reply\ntext: one two three\n"))
	_, resp, err := collect(t, s, "a b")
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage != (Usage{InputTokens: 4, OutputTokens: 3}) {
		t.Errorf("usage = %+v", resp.Usage)
	}
}

func TestWordsAndPieces(t *testing.T) {
	if got := Words(" a  b\nc "); !reflect.DeepEqual(got, []string{" a", "  b", "\nc", " "}) {
		t.Errorf("words = %q", got)
	}
	if got := pieces("ééé", 3); !reflect.DeepEqual(got, []string{"é", "é", "é"}) {
		t.Errorf("pieces = %q", got)
	}
}

// FuzzParseScript: any text parses into a script or an error naming lines,
// never a panic, and a parsed script answers a request without panicking.
func FuzzParseScript(f *testing.F) {
	for _, seed := range []string{
		"reply\ntext: hi\n",
		"reply repeat after user match \"weather\"\ntool: get_weather {\"city\": \"Paris\"}\n",
		"reply after tool match \"weather\" result /^error:/\ntext: down\n",
		"reply result \"sun\" match /^w/\ntext: x\nusage: 1 2\ndelay: 0s\nerror: 503 busy\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := ParseScript([]byte(src))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") {
				t.Fatalf("the error names no line: %v", err)
			}
			return
		}
		for _, r := range s.replies {
			r.delay = 0 // a long delay would only wait
		}
		msgs := []Message{
			{Role: RoleUser, Content: "the weather?"},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "get_weather", Arguments: "{}"}}},
			{Role: RoleTool, ToolCallID: "c1", Content: "error: down"},
		}
		s.Stream(context.Background(), &Request{Messages: msgs}, func(Chunk) error { return nil })
	})
}
