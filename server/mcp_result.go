package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/vm"
)

// runResult is what a tool call reports of one run: what an AG-UI client
// of the same run would have shown, read from the run's frames.
type runResult struct {
	ThreadID   string            `json:"threadId"`
	RunID      string            `json:"runId"`
	Status     string            `json:"status"`
	Output     any               `json:"output,omitempty"`
	State      any               `json:"state,omitempty"`
	Interrupts []agui.Interrupt  `json:"interrupts,omitempty"`
	ToolCalls  []pendingToolCall `json:"toolCalls,omitempty"`
	Error      *runError         `json:"error,omitempty"`

	text string // the assistant's text, its messages joined by a blank line
}

// pendingToolCall is a frontend tool call a run waits for.
type pendingToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments any    `json:"arguments"`
}

// runError is why a run failed.
type runError struct {
	Message string `json:"message"`
	Code    string `json:"code,omitempty"`
}

// wireEvent is the part of an AG-UI event's JSON a tool call reads.
type wireEvent struct {
	Type            string          `json:"type"`
	ThreadID        string          `json:"threadId"`
	RunID           string          `json:"runId"`
	MessageID       string          `json:"messageId"`
	Role            string          `json:"role"`
	Delta           json.RawMessage `json:"delta"` // text, or the operations of STATE_DELTA
	ToolCallID      string          `json:"toolCallId"`
	ToolCallName    string          `json:"toolCallName"`
	ParentMessageID string          `json:"parentMessageId"`
	Content         json.RawMessage `json:"content"`
	Snapshot        any             `json:"snapshot"`
	Messages        []agui.Message  `json:"messages"`
	ActivityType    string          `json:"activityType"`
	Patch           []struct {
		Value struct {
			NodeID string `json:"nodeId"`
			Label  string `json:"label"`
			Text   string `json:"text"`
			Phase  string `json:"phase"`
		} `json:"value"`
	} `json:"patch"`
	Result  any           `json:"result"`
	Outcome *agui.Outcome `json:"outcome"`
	Message string        `json:"message"`
	Code    string        `json:"code"`
}

// collector folds the frames of a run into its result, as an AG-UI client
// reading the run's stream folds its events.
type collector struct {
	res      runResult
	red      agui.Reducer
	texts    []string // the ids of the assistant's text messages, in order
	hasState bool
	progress func(message string) // nil: the caller asked for no progress
}

func newCollector(threadID string, state any, progress func(string)) *collector {
	c := &collector{progress: progress, red: agui.Reducer{Live: true, State: state}, hasState: state != nil}
	c.res.ThreadID = threadID
	return c
}

// add folds one frame.
func (c *collector) add(f frame) {
	data, ok := f.enc.In(agui.V1)
	if !ok {
		return
	}
	var e wireEvent
	if json.Unmarshal(data, &e) != nil {
		return
	}
	if f.node {
		c.node(e)
		return
	}
	ev := vm.Event{Type: vm.EventType(e.Type), MessageID: e.MessageID, Role: e.Role, ToolCallID: e.ToolCallID, ToolCallName: e.ToolCallName, ParentMessageID: e.ParentMessageID}
	switch e.Type {
	case agui.TypeRunStarted:
		c.res.RunID = e.RunID
		return
	case agui.TypeTextMessageStart:
		if e.Role == "" || e.Role == agui.RoleAssistant {
			c.texts = append(c.texts, e.MessageID)
		}
	case agui.TypeTextMessageContent, agui.TypeToolCallArgs:
		json.Unmarshal(e.Delta, &ev.Delta)
		if c.progress != nil && e.Type == agui.TypeTextMessageContent && ev.Delta != "" && slices.Contains(c.texts, e.MessageID) {
			c.progress(ev.Delta)
		}
	case agui.TypeToolCallResult:
		json.Unmarshal(e.Content, &ev.Content)
	case agui.TypeStateSnapshot:
		ev.Value = e.Snapshot
		c.hasState = c.hasState || e.Snapshot != nil
	case agui.TypeStateDelta:
		json.Unmarshal(e.Delta, &ev.Patch)
		c.hasState = true
	case agui.TypeMessagesSnapshot:
		c.red.Messages = e.Messages
		return
	case agui.TypeRunFinished:
		c.finished(e)
		return
	case agui.TypeRunError:
		c.res.Status = statusError
		c.res.Error = &runError{Message: e.Message, Code: e.Code}
		return
	}
	c.red.Add(ev)
}

// node reports a node's start as progress.
func (c *collector) node(e wireEvent) {
	if c.progress == nil {
		return
	}
	var st nodeState
	switch {
	case e.Type == agui.TypeActivitySnapshot:
		var content lifecycleContent
		if json.Unmarshal(e.Content, &content) != nil {
			return
		}
		st = content.Node
	case len(e.Patch) == 1:
		v := e.Patch[0].Value
		st = nodeState{NodeID: v.NodeID, Label: v.Label, Text: v.Text, Phase: v.Phase}
	}
	if st.Phase != phaseStart {
		return
	}
	name := st.NodeID
	if st.Label != "" {
		name = st.Label
	}
	c.progress(fmt.Sprintf("node %s: %s", name, st.Text))
}

// finished reads RUN_FINISHED: how the run ended, what it waits for.
func (c *collector) finished(e wireEvent) {
	c.res.Status = statusFinished
	c.res.Output = e.Result
	if e.Outcome == nil {
		return
	}
	switch e.Outcome.Type {
	case agui.OutcomeInterrupt:
		c.res.Status, c.res.Interrupts = statusInterrupted, e.Outcome.Interrupts
	case agui.OutcomeCancelled:
		c.res.Status = statusCancelled
	}
	if len(e.Outcome.PendingToolCallIDs) > 0 {
		c.res.Status = statusTools
		for _, id := range e.Outcome.PendingToolCallIDs {
			call := pendingToolCall{ID: id, Arguments: map[string]any{}}
			if tc := c.red.ToolCall(id); tc != nil {
				call.Name = tc.Function.Name
				if args := strings.TrimSpace(tc.Function.Arguments); args != "" {
					call.Arguments = args
					var v any
					if json.Unmarshal([]byte(args), &v) == nil {
						call.Arguments = v
					}
				}
			}
			c.res.ToolCalls = append(c.res.ToolCalls, call)
		}
	}
}

// result is the run's result once its frames are read.
func (c *collector) result() *runResult {
	res := c.res
	var texts []string
	for _, id := range c.texts {
		if m := c.red.Message(id); m != nil && m.Content.IsText() && m.Content.Text != "" {
			texts = append(texts, m.Content.Text)
		}
	}
	res.text = strings.Join(texts, "\n\n")
	if c.hasState {
		res.State = c.red.State
	}
	if res.Status == "" {
		// The frames ended without a terminal event: the server stopped
		// while a restore followed a run of another process.
		res.Status = statusError
		res.Error = &runError{Message: "the server stopped before the run ended; call again with the threadId to see where it stands", Code: "shutting_down"}
	}
	return &res
}

// collect reads rp's frames into the run's result, to the run's end. When
// ctx ends first (the client cancelled the call, or the server stops), the
// run the call started is cancelled, and the frames are read on to its end;
// a run the call only follows is left alone.
func (s *Server) collect(ctx context.Context, rp reply, c *collector) *runResult {
	r := rp.run
	if rp.produce != nil {
		pctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			rp.produce(pctx)
			if pctx.Err() != nil {
				r.end()
			}
		}()
	}
	done := ctx.Done()
	for i := 0; ; {
		frames, ended, wake := r.next(i)
		for _, f := range frames {
			if f.node && !rp.nodes {
				continue
			}
			c.add(f)
		}
		if ended {
			return c.result()
		}
		i += len(frames)
		select {
		case <-wake:
		case <-done:
			done = nil
			if rp.produce == nil {
				r.cancel()
			}
		}
	}
}

// toolResult is the tool's result of a run: its text first (the assistant's
// text, else the output as JSON, else a sentence on how it ended), and the
// run's result as structuredContent.
func (res *runResult) toolResult() *mcp.CallToolResult {
	text := res.text
	note := ""
	switch res.Status {
	case statusFinished:
		if text == "" && res.Output != nil {
			if b, err := json.Marshal(res.Output); err == nil {
				text = string(b)
			}
		}
		if text == "" {
			note = "The workflow finished."
		}
	case statusInterrupted:
		note = fmt.Sprintf("The workflow waits for an answer to each of its interrupts; call the tool again with threadId %q and resume, one entry per interrupt:", res.ThreadID)
		for _, in := range res.Interrupts {
			note += fmt.Sprintf("\n- %s (%s)", in.ID, in.Reason)
			if in.Message != "" {
				note += ": " + in.Message
			}
		}
	case statusTools:
		note = fmt.Sprintf("The workflow waits for the results of its tool calls; call the tool again with threadId %q and toolResults:", res.ThreadID)
		for _, tc := range res.ToolCalls {
			args, _ := json.Marshal(tc.Arguments)
			note += fmt.Sprintf("\n- %s %s(%s)", tc.ID, tc.Name, args)
		}
	case statusCancelled:
		note = "The run was cancelled."
	case statusError:
		note = "The run failed: " + res.Error.Message
		if res.Error.Code != "" {
			note += " (" + res.Error.Code + ")"
		}
	}
	if note != "" {
		if text != "" {
			text += "\n\n"
		}
		text += note
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: res,
		IsError:           res.Status == statusError || res.Status == statusCancelled,
	}
}

// toolFailure is the result of a call that ran nothing: its arguments, or
// the thread they name, do not fit.
func toolFailure(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: msg}}, IsError: true}
}
