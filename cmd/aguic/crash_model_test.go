package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolCrashWorkflow is a conversation whose model calls two backend
// tools in one round, each an HTTP request to the test's shop.
const toolCrashWorkflow = `wf 1

workflow buy {
  conversation = true

  tool charge {
    description = "Charge the card for an order"
    parameters  = {type: "object", properties: {order: {type: "string"}}, required: ["order"]}
    http POST "<<env('SHOP_URL')>>/charge/<<$args.order>>"
  }

  tool ship {
    description = "Ship an order"
    parameters  = {type: "object", properties: {order: {type: "string"}}, required: ["order"]}
    http POST "<<env('SHOP_URL')>>/ship/<<$args.order>>"
  }

  flow {
    answer: model {
      prompt   = "<<$agent.latestUserMessage.content>>"
      tools    = [charge, ship]
      chat_out = $input.chat
    } -> $reply
    output $reply.text
  }
}
`

// mcpToolCrashWorkflow is toolCrashWorkflow with the tools of an MCP
// server: the model is offered the shop's tools by the server's name.
const mcpToolCrashWorkflow = `wf 1

mcp shop {
  url = "<<env('SHOP_MCP_URL')>>"
}

workflow buy {
  conversation = true

  flow {
    answer: model {
      prompt   = "<<$agent.latestUserMessage.content>>"
      tools    = [shop]
      chat_out = $input.chat
    } -> $reply
    output $reply.text
  }
}
`

// mcpNodeCrashWorkflow calls the shop's MCP tools directly, one node each.
const mcpNodeCrashWorkflow = `wf 1

mcp shop {
  url = "<<env('SHOP_MCP_URL')>>"
}

workflow buy {
  conversation = true

  flow {
    mcp shop "charge" {
      args = {order: "A-1"}
    }
    mcp shop "ship" {
      args = {order: "A-1"}
    }
    say "Charged and shipped."
  }
}
`

// toolCrashScript answers the first request with both tool calls and a
// request that ends with tool results with the answer, so that the
// script of a restarted server takes up the conversation where it is.
const toolCrashScript = `reply after user
tool: charge call_charge {"order": "A-1"}
tool: ship call_ship {"order": "A-1"}

reply after tool
text: Charged and shipped.
`

// TestKillAfterAToolCall kills the real server with SIGKILL while a
// workflow's second call of a shop is in flight, after the first one's
// result was committed, and starts it again on the same data directory:
// a model node's tool calls, as HTTP tools or as the tools of an MCP
// server, and direct calls of MCP tools, one node each. The recovered run
// goes on where it was: the card is charged once, the call that was in
// flight is made again (at most that one repeats), and the conversation
// ends with the answer, once.
func TestKillAfterAToolCall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kills it")
	}
	dir := t.TempDir()
	bin := buildAguic(t, dir)
	for _, c := range []struct{ name, workflow string }{
		{"http tools", toolCrashWorkflow},
		{"mcp tools", mcpToolCrashWorkflow},
		{"mcp nodes", mcpNodeCrashWorkflow},
	} {
		t.Run(c.name, func(t *testing.T) { killAfterAToolCall(t, bin, c.workflow) })
	}
}

// crashShop counts the calls of a shop's charge and ship, by path, and
// holds the first call of ship until its caller is gone.
type crashShop struct {
	mu       sync.Mutex
	calls    map[string]int
	shipping chan struct{}
}

// call records a call of path and answers it, unless it is the first
// call of ship: then it waits until ctx is done and answers "".
func (s *crashShop) call(ctx context.Context, path string) string {
	s.mu.Lock()
	s.calls[path]++
	first := path == "/ship/A-1" && s.calls[path] == 1
	s.mu.Unlock()
	if first {
		close(s.shipping)
		<-ctx.Done()
		return ""
	}
	return "done " + path
}

// mcpHandler serves the shop as an MCP server with the tools charge and
// ship, over streamable HTTP.
func (s *crashShop) mcpHandler() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1.0.0"}, nil)
	type order struct {
		Order string `json:"order"`
	}
	for _, name := range []string{"charge", "ship"} {
		mcp.AddTool(srv, &mcp.Tool{Name: name, Description: "The shop's " + name + " of an order"},
			func(ctx context.Context, _ *mcp.CallToolRequest, in order) (*mcp.CallToolResult, any, error) {
				text := s.call(ctx, "/"+name+"/"+in.Order)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
			})
	}
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
}

func killAfterAToolCall(t *testing.T, bin, workflow string) {
	dir := t.TempDir()
	wfDir := writeWorkflow(t, dir, "buy.wf", workflow)
	script := filepath.Join(dir, "buy.script")
	if err := os.WriteFile(script, []byte(toolCrashScript), 0o644); err != nil {
		t.Fatal(err)
	}

	// The shop answers at once, except the first request to ship, which
	// it holds until the process that sent it is gone.
	shop := &crashShop{calls: map[string]int{}, shipping: make(chan struct{})}
	shipping := shop.shipping
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		text := shop.call(r.Context(), r.URL.Path)
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, text)
	}))
	t.Cleanup(web.Close)
	mcpShop := httptest.NewServer(shop.mcpHandler())
	t.Cleanup(mcpShop.Close)

	args := []string{"serve", "--data", filepath.Join(dir, "data"), "--addr", "127.0.0.1:0", "--model-script", script, wfDir}
	env := crashEnv("SHOP_URL="+web.URL, "SHOP_MCP_URL="+mcpShop.URL)
	p, err := startCrashProc(bin, args, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.kill() })

	body, _ := json.Marshal(map[string]any{
		"threadId": "t1",
		"runId":    "r1",
		"messages": []map[string]any{{"id": "u1", "role": "user", "content": "Buy order A-1."}},
	})
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	streamed := make(chan []crashEvent, 1)
	go func() {
		var events []crashEvent
		resp, err := client.Post(p.log.url+"/workflows/buy", "application/json", bytes.NewReader(body))
		if err == nil {
			_ = readCrashStream(resp.Body, func(e crashEvent) { events = append(events, e) })
			resp.Body.Close()
		}
		streamed <- events
	}()
	select {
	case <-shipping:
	case <-time.After(time.Minute): // a guard against a hang
		t.Fatalf("the run never called ship:\n%s", p.log.String())
	}
	p.kill()
	if events := <-streamed; len(events) == 0 || events[0].Type != "RUN_STARTED" {
		t.Fatalf("the first server's stream: %s", crashEvents(events))
	}

	p, err = startCrashProc(bin, args, env)
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Status   string         `json:"status"`
		Messages []crashMessage `json:"messages"`
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a guard against a hang
	defer cancel()
	for page.Status == "" || page.Status == "running" {
		page.Status = ""
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.log.url+"/threads/t1/messages?workflowId=buy", nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("the thread's messages: %v\n%s", err, p.log.String())
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal(data, &page); err != nil {
				t.Fatal(err)
			}
		}
		if page.Status == "" || page.Status == "running" {
			select {
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
				t.Fatalf("the thread is still %q: %d %s\n%s", page.Status, resp.StatusCode, data, p.log.String())
			}
		}
	}

	shop.mu.Lock()
	defer shop.mu.Unlock()
	if calls := shop.calls; calls["/charge/A-1"] != 1 || calls["/ship/A-1"] != 2 || len(calls) != 2 {
		t.Errorf("the shop's requests %v; want the card charged once and the ship in flight at the crash sent again", calls)
	}
	var story []string
	answers := 0
	for _, m := range page.Messages {
		story = append(story, m.Role+": "+m.text())
		if m.Role == "assistant" && m.text() == "Charged and shipped." {
			answers++
		}
	}
	if page.Status != "finished" || answers != 1 {
		t.Errorf("the thread is %s with the model's answer %d times; want finished with it once:\n%s\n%s", page.Status, answers, strings.Join(story, "\n"), p.log.String())
	}
	var results []string
	for _, m := range page.Messages {
		if m.Role == "tool" {
			results = append(results, m.text())
		}
	}
	if got := strings.Join(results, ", "); got != "done /charge/A-1, done /ship/A-1" {
		t.Errorf("the tool results %s; want one of each tool:\n%s", got, strings.Join(story, "\n"))
	}
}
