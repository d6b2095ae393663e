package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
)

// mcpTool is the handler of the tool of workflow wf: it runs one turn of
// the workflow, and while the run stops at interrupts the client can
// answer by elicitation, asks the client and runs the next turn with the
// answers.
func (s *Server) mcpTool(wf *vm.Workflow) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !s.mcpCallBegins() {
			return toolFailure("the server is shutting down"), nil
		}
		defer s.mcpCalls.Done()
		in, err := parseToolInput(wf, req.Params.Arguments)
		if err == nil && (req.Params.RequestState != "" || len(req.Params.InputResponses) > 0) {
			in, err = answered(req.Params.RequestState, req.Params.InputResponses)
		}
		if err != nil {
			return toolFailure(err.Error()), nil
		}
		// The call ends with the client's request, and with the server.
		callCtx, cancel := context.WithCancel(mcpContext(ctx, req.Extra))
		defer cancel()
		defer context.AfterFunc(s.runCtx, cancel)()
		progress := s.progress(callCtx, req)
		for {
			res, err := s.mcpTurn(callCtx, wf, in, progress)
			if err != nil {
				return toolFailure(err.Error()), nil
			}
			// The call's text is what all its turns said.
			res.text = joinText(in.said, res.text)
			asks := elicitations(req, res)
			if asks == nil {
				return res.toolResult(), nil
			}
			if req.ProtocolVersion() >= statelessProtocol {
				// The client asks its user and calls again with the
				// answers (multi round-trip requests); the thread waits.
				return inputRequired(res, asks), nil
			}
			answers, err := elicit(callCtx, req.Session, res.Interrupts, asks)
			switch {
			case err != nil && ctx.Err() != nil:
				return nil, ctx.Err()
			case err != nil:
				s.log.Info("mcp: an elicitation failed; the tool call answers with the interrupts", "workflow", wf.ID, "thread", res.ThreadID, "error", err.Error())
				return res.toolResult(), nil
			}
			in = &toolInput{ThreadID: res.ThreadID, Resume: answers, said: res.text}
		}
	}
}

// mcpCallBegins counts a tool call in, unless the server is shutting
// down: Shutdown waits for the calls it counted.
func (s *Server) mcpCallBegins() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.mcpCalls.Add(1)
	return true
}

// mcpTurn runs one turn of wf for a tool call, as a run request would: a
// continued thread's history and state stand in for what an AG-UI client
// sends again with every request. The error is a request the run routes
// would refuse before any stream (unknown thread, busy thread, a resume
// that does not fit), as its message.
func (s *Server) mcpTurn(ctx context.Context, wf *vm.Workflow, in *toolInput, progress func(string)) (*runResult, error) {
	threadID := in.ThreadID
	state := in.State
	var history []agui.Message
	if threadID == "" {
		threadID = "mcp-" + uuid.NewString()
	} else {
		key := store.Key{Scope: scopeOf(ctx), Workflow: wf.ID, Thread: threadID}
		th, err := s.thread(ctx, key)
		switch {
		case isNotFound(err):
			return nil, fmt.Errorf("workflow %q has no thread %q: leave threadId out to start a new one", wf.ID, threadID)
		case err != nil:
			return nil, err
		}
		if wf.Conversation {
			if st, ok := checkpointState(th); ok && state == nil {
				state = st
			}
		} else {
			// A stateless workflow takes the whole history with every
			// request: the thread's, as its events tell it.
			red, err := s.reduce(ctx, th, all)
			if err != nil {
				return nil, err
			}
			history = red.Messages
			if state == nil {
				state = red.State
			}
		}
	}
	msgs := append(history, in.messages()...)
	ri := &RunAgentInput{ThreadID: threadID, ProtocolVersion: agui.ProtocolVersion, State: state, Resume: in.Resume}
	for _, m := range msgs {
		ri.Messages = append(ri.Messages, Message{m})
	}
	if progress != nil {
		ri.ForwardedProps = map[string]any{"aguic": map[string]any{"nodeEvents": true}}
	}
	rp, err := s.begin(ctx, runRequest{wf: wf, in: ri})
	if err != nil {
		return nil, err
	}
	return s.collect(ctx, rp, newCollector(threadID, state, progress)), nil
}

// progress is the function that sends the client progress notifications,
// when its call asked for them with a progress token; nil otherwise.
func (s *Server) progress(ctx context.Context, req *mcp.CallToolRequest) func(string) {
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	n := 0
	return func(msg string) {
		n++
		// A notification that does not go out changes nothing of the run.
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: msg})
	}
}

// elicitations are the elicitation requests that answer the interrupts a
// run stopped at, by interrupt id; nil when the client cannot elicit, or
// some interrupt cannot be asked by elicitation (its answers are all
// needed at once).
func elicitations(req *mcp.CallToolRequest, res *runResult) map[string]*mcp.ElicitParams {
	if res.Status != statusInterrupted || len(res.Interrupts) == 0 {
		return nil
	}
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil || caps.Elicitation.Form == nil && caps.Elicitation.URL != nil {
		return nil
	}
	asks := map[string]*mcp.ElicitParams{}
	for _, in := range res.Interrupts {
		schema, ok := elicitSchema(in.ResponseSchema)
		if !ok {
			return nil
		}
		msg := in.Message
		if msg == "" {
			msg = fmt.Sprintf("The workflow asks for %s.", in.Reason)
		}
		asks[in.ID] = &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: schema}
	}
	return asks
}

// elicitSchema is the elicitation schema that asks for an answer of the
// response schema rs: a flat object of strings, numbers, integers and
// booleans (MCP elicitation asks for nothing else); no schema is a plain
// confirmation, an object with no properties. False when rs asks for more.
func elicitSchema(rs map[string]any) (map[string]any, bool) {
	out := map[string]any{"type": "object", "properties": map[string]any{}}
	if rs == nil {
		return out, true
	}
	for k, v := range rs {
		switch k {
		case "type":
			if v != "object" {
				return nil, false
			}
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			for _, p := range props {
				if !primitiveSchema(p) {
					return nil, false
				}
			}
			out["properties"] = props
		case "required":
			out["required"] = v
		case "$schema", "title", "description", "additionalProperties":
		default:
			return nil, false
		}
	}
	return out, true
}

// primitiveSchema reports whether a property's schema is one elicitation
// can ask for: a string, a number, an integer or a boolean, with no
// schemas inside.
func primitiveSchema(p any) bool {
	m, ok := p.(map[string]any)
	if !ok {
		return false
	}
	switch m["type"] {
	case "string", "number", "integer", "boolean":
	default:
		return false
	}
	for _, k := range []string{"properties", "items", "allOf", "anyOf", "oneOf", "not", "$ref"} {
		if _, ok := m[k]; ok {
			return false
		}
	}
	return true
}

// elicit asks the client, on its session, for the answer of each
// interrupt, in order, and returns the resume entries they make.
func elicit(ctx context.Context, ss *mcp.ServerSession, ins []agui.Interrupt, asks map[string]*mcp.ElicitParams) ([]ResumeEntry, error) {
	var out []ResumeEntry
	for _, in := range ins {
		res, err := ss.Elicit(ctx, asks[in.ID])
		if err != nil {
			return nil, err
		}
		out = append(out, resumeEntry(in.ID, res))
	}
	return out, nil
}

// resumeEntry is the answer an elicitation result gives an interrupt:
// accepted, resolved with the form's content; declined or cancelled,
// cancelled.
func resumeEntry(id string, res *mcp.ElicitResult) ResumeEntry {
	if res.Action != "accept" {
		return ResumeEntry{InterruptID: id, Status: "cancelled"}
	}
	var payload any
	if res.Content != nil {
		payload = res.Content
	}
	return ResumeEntry{InterruptID: id, Status: "resolved", Payload: payload}
}

// joinText joins the texts of two turns with a blank line.
func joinText(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "\n\n" + b
}

// elicitState is the request state of a result that asks for
// elicitations: the thread that waits for them. The client echoes it
// with the answers. It grants nothing a caller cannot do with resume: the
// thread is read in the scope of the request that answers.
type elicitState struct {
	ThreadID   string   `json:"threadId"`
	Interrupts []string `json:"interrupts"`
	Said       string   `json:"said,omitempty"` // the text of the call so far
}

// inputRequired is the result that asks the client for the elicitations
// asks, which answer the interrupts res stopped at.
func inputRequired(res *runResult, asks map[string]*mcp.ElicitParams) *mcp.CallToolResult {
	st := elicitState{ThreadID: res.ThreadID, Interrupts: slices.Sorted(maps.Keys(asks)), Said: res.text}
	b, _ := json.Marshal(st)
	reqs := mcp.InputRequestMap{}
	for id, p := range asks {
		reqs[id] = p
	}
	return &mcp.CallToolResult{InputRequests: reqs, RequestState: string(b)}
}

// answered is the input of a call that brings the answers to the
// elicitations of inputRequired: the thread of the request state, resumed
// with an answer for each of its interrupts.
func answered(state string, answers mcp.InputResponseMap) (*toolInput, error) {
	var st elicitState
	if err := json.Unmarshal([]byte(state), &st); err != nil || st.ThreadID == "" {
		return nil, errors.New("requestState is not one this server made: call the tool again without inputResponses")
	}
	in := &toolInput{ThreadID: st.ThreadID, said: st.Said}
	for _, id := range st.Interrupts {
		res, ok := answers[id].(*mcp.ElicitResult)
		if !ok {
			return nil, fmt.Errorf("inputResponses has no elicitation result for interrupt %q", id)
		}
		in.Resume = append(in.Resume, resumeEntry(id, res))
	}
	return in, nil
}
