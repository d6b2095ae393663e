package stdlib_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aguic/aguic/internal/aimock"
	"github.com/aguic/aguic/internal/mcptest"
	"github.com/aguic/aguic/internal/vmtest"
	"github.com/aguic/aguic/mcpclient"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
)

// The tests of this file call the tools of the reference MCP server,
// @modelcontextprotocol/server-everything, run by node over stdio or over
// streamable HTTP, from mcp nodes and from model nodes.

// everythingDecl declares the reference server over stdio as a .wf file
// does, with the extra lines (tools, timeout…) given.
func everythingDecl(t *testing.T, extra ...string) string {
	command, args := mcptest.Everything(t)
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf("mcp everything {\n  command = %q\n  args = [%s]\n  %s\n}\n", command, strings.Join(quoted, ", "), strings.Join(extra, "\n  "))
}

// mcpMachine compiles src with a pool that the test closes.
func mcpMachine(t *testing.T, src string, opts stdlib.Options) *vm.Machine {
	t.Helper()
	pool := mcpclient.NewPool(mcpclient.Options{})
	t.Cleanup(func() { pool.Close() })
	opts.MCP = pool
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	return machine(t, src, opts)
}

func TestMCPDirectCall(t *testing.T) {
	src := "wf 1\n\n" + everythingDecl(t) + `
workflow test {
  flow {
    mcp everything "get-sum" {
      args = {a: 2, b: 3}
    } -> $sum
    mcp everything "echo" {
      args   = {message: "hi"}
      stream = false
    } -> $echo
    output {sum: $sum.text, echo: $echo.text, content: $echo.content}
  }
}
`
	m := mcpMachine(t, src, stdlib.Options{})
	_, o, rec := vmtest.Run(t, m, "test", nil)
	if o.Status != vm.Finished {
		t.Fatalf("outcome %s %+v", o.Status, o.Err)
	}
	if got := vm.Text(o.Result); got != `{"content":[{"text":"Echo: hi","type":"text"}],"echo":"Echo: hi","sum":"The sum of 2 and 3 is 5."}` {
		t.Errorf("output %s", got)
	}
	// The first call is shown as a tool call, the second is not.
	want := `TOOL_CALL_START call=call-f1-1 tool=get-sum
TOOL_CALL_ARGS delta="{\"a\":2,\"b\":3}" call=call-f1-1
TOOL_CALL_END call=call-f1-1
TOOL_CALL_RESULT msg=tool:call-f1-1 call=call-f1-1 content="The sum of 2 and 3 is 5."
`
	if got := streamed(rec.Events); got != want {
		t.Errorf("events:\n%s\nwant:\n%s", got, want)
	}
}

// TestMCPStructured: the value of a tool with structured content is that
// content.
func TestMCPStructured(t *testing.T) {
	src := "wf 1\n\n" + everythingDecl(t) + `
workflow test {
  flow {
    mcp everything "get-structured-content" {
      args   = {location: "Chicago"}
      stream = false
    } -> $weather
    output $weather.value
  }
}
`
	_, o, _ := vmtest.Run(t, mcpMachine(t, src, stdlib.Options{}), "test", nil)
	if o.Status != vm.Finished {
		t.Fatalf("outcome %s %+v", o.Status, o.Err)
	}
	w, ok := o.Result.(map[string]any)
	if !ok || w["temperature"] == nil || w["conditions"] == nil {
		t.Errorf("output %s, want the structured weather", vm.Text(o.Result))
	}
}

// TestMCPFailedCallIsCaught: a call the server refuses is an error of the
// node, which try/catch catches with the server and the tool named.
func TestMCPFailedCallIsCaught(t *testing.T) {
	src := "wf 1\n\n" + everythingDecl(t) + `
workflow test {
  flow {
    try {
      mcp everything "get-sum" {
        args   = {a: "two"}
        stream = false
      }
    } catch e {
      output e.message
    }
  }
}
`
	_, o, _ := vmtest.Run(t, mcpMachine(t, src, stdlib.Options{}), "test", nil)
	if o.Status != vm.Finished {
		t.Fatalf("outcome %s %+v", o.Status, o.Err)
	}
	msg, _ := o.Result.(string)
	if !strings.Contains(msg, "everything") || !strings.Contains(msg, `"get-sum"`) {
		t.Errorf("caught %q, want an error naming the server and the tool", msg)
	}
}

// TestMCPModelOffersServerTools: a model whose tools name the server is
// offered the tools its declaration allows, with the server's
// descriptions; the model's call runs on the server and the model gets the
// result, with the same events as any backend tool's.
func TestMCPModelOffersServerTools(t *testing.T) {
	s := aimock.Start(t,
		aimock.Fixture{
			Match:    aimock.Match{HasToolResult: new(false)},
			Response: aimock.Response{ToolCalls: []aimock.ToolCall{{ID: "call_sum", Name: "get-sum", Arguments: `{"a":2,"b":3}`}}},
		},
		aimock.Fixture{
			Match:    aimock.Match{HasToolResult: new(true)},
			Response: aimock.Response{Content: "It is 5."},
		},
	)
	src := "wf 1\n\n" + everythingDecl(t, `tools = ["get-sum", "echo"]`) + `
workflow test {
  flow {
    model {
      model      = "openai/gpt-4o-mini"
      prompt     = "What is 2 + 3?"
      tools      = [everything]
      user_event = false
    } -> $reply
  }
}
`
	m := mcpMachine(t, src, stdlib.Options{Models: llm.Resolver(map[string]llm.Provider{
		"openai": llm.NewOpenAI(llm.OpenAIOptions{APIKey: "sk-aimock-test", BaseURL: s.OpenAIBaseURL()}),
	})})
	runFinished(t, m, `TOOL_CALL_START call=call_sum tool=get-sum
TOOL_CALL_ARGS delta="{\"a\":2,\"b\":3}" call=call_sum
TOOL_CALL_END call=call_sum
TOOL_CALL_RESULT msg=tool:call_sum call=call_sum content="The sum of 2 and 3 is 5."
TEXT_MESSAGE_START msg=msg-f1-1 role=assistant
TEXT_MESSAGE_CONTENT msg=msg-f1-1 delta="It is 5."
TEXT_MESSAGE_END msg=msg-f1-1
`)
	reqs := s.ChatRequests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	var names []string
	for _, tool := range reqs[0].Tools {
		names = append(names, tool.Function.Name)
		if tool.Function.Description == "" || vm.Text(tool.Function.Parameters) == "" {
			t.Errorf("tool %s offered without its description or parameters: %+v", tool.Function.Name, tool)
		}
	}
	if strings.Join(names, ",") != "echo,get-sum" {
		t.Errorf("tools offered %v, want the two the declaration allows", names)
	}
	if msgs := reqs[1].Messages; len(msgs) != 3 || msgs[2].Role != "tool" || msgs[2].Content.Text != "The sum of 2 and 3 is 5." {
		t.Errorf("the second request's messages: %+v", msgs)
	}
}

// TestMCPToolOverHTTP: a workflow tool that renames a tool of a server
// reached over streamable HTTP, its result shaped by result = expr, called
// by a scripted model; the tool's description comes from the server.
func TestMCPToolOverHTTP(t *testing.T) {
	srv := mcptest.EverythingHTTP(t)
	script, err := llm.ParseScript([]byte("reply after user\ntool: add {\"a\": 20, \"b\": 22}\n\nreply after tool\ntext: done\n"))
	if err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`wf 1

mcp remote {
  url = %q
}

workflow test {
  tool add {
    mcp remote "get-sum"
    result = upper($result.text)
  }
  flow {
    model {
      model      = "script/x"
      prompt     = "add"
      tools      = [add]
      user_event = false
    } -> $reply
    output $reply
  }
}
`, srv.URL)
	m := mcpMachine(t, src, stdlib.Options{Models: llm.Resolver(map[string]llm.Provider{"script": script})})
	_, o, rec := vmtest.Run(t, m, "test", nil)
	if o.Status != vm.Finished {
		t.Fatalf("outcome %s %+v", o.Status, o.Err)
	}
	if got := streamed(rec.Events); !strings.Contains(got, `TOOL_CALL_RESULT msg=tool:call_1 call=call_1 content="THE SUM OF 20 AND 22 IS 42."`) {
		t.Errorf("events:\n%s", got)
	}
}

// TestMCPModelGetsToolErrors: a tool the server cannot run gives the model
// "error: …", and the run goes on.
func TestMCPModelGetsToolErrors(t *testing.T) {
	script, err := llm.ParseScript([]byte("reply after user\ntool: get-sum {\"a\": \"x\"}\n\nreply after tool result /^error:/\ntext: it failed\n\nreply after tool\ntext: it worked\n"))
	if err != nil {
		t.Fatal(err)
	}
	src := "wf 1\n\n" + everythingDecl(t, `tools = ["get-sum"]`) + `
workflow test {
  flow {
    model {
      model      = "script/x"
      prompt     = "add"
      tools      = [everything]
      user_event = false
    } -> $reply
    output $reply.text
  }
}
`
	m := mcpMachine(t, src, stdlib.Options{Models: llm.Resolver(map[string]llm.Provider{"script": script})})
	_, o, _ := vmtest.Run(t, m, "test", nil)
	if o.Status != vm.Finished || o.Result != "it failed" {
		t.Fatalf("outcome %s %+v %v", o.Status, o.Err, o.Result)
	}
}
