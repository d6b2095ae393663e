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

// toolCrashScript answers the first request with both tool calls and a
// request that ends with tool results with the answer, so that the
// script of a restarted server takes up the conversation where it is.
const toolCrashScript = `reply after user
tool: charge call_charge {"order": "A-1"}
tool: ship call_ship {"order": "A-1"}

reply after tool
text: Charged and shipped.
`

// TestKillAfterAToolCall kills the real server with SIGKILL while a model
// node's second tool call is in flight, after the first one's result was
// committed, and starts it again on the same data directory. The
// recovered run goes on inside the model node: the card is charged once,
// the call that was in flight is made again (at most that one repeats),
// and the conversation ends with the model's answer, once.
func TestKillAfterAToolCall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kills it")
	}
	dir := t.TempDir()
	bin := buildAguic(t, dir)
	wfDir := writeWorkflow(t, dir, "buy.wf", toolCrashWorkflow)
	script := filepath.Join(dir, "buy.script")
	if err := os.WriteFile(script, []byte(toolCrashScript), 0o644); err != nil {
		t.Fatal(err)
	}

	// The shop answers at once, except the first request to ship, which
	// it holds until the process that sent it is gone.
	var mu sync.Mutex
	calls := map[string]int{}
	shipping := make(chan struct{})
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls[r.URL.Path]++
		first := r.URL.Path == "/ship/A-1" && calls[r.URL.Path] == 1
		mu.Unlock()
		if first {
			close(shipping)
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "done %s", r.URL.Path)
	}))
	t.Cleanup(shop.Close)

	args := []string{"serve", "--data", filepath.Join(dir, "data"), "--addr", "127.0.0.1:0", "--model-script", script, wfDir}
	env := crashEnv("SHOP_URL=" + shop.URL)
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

	mu.Lock()
	defer mu.Unlock()
	if calls["/charge/A-1"] != 1 || calls["/ship/A-1"] != 2 || len(calls) != 2 {
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
