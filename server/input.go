package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/vm"
)

// RunAgentInput is the body of an AG-UI run request. Keys it does not
// name are accepted and ignored, as AG-UI requires of newer clients.
type RunAgentInput struct {
	_ struct{} `json:"-" additionalProperties:"true"`

	ThreadID        string         `json:"threadId" minLength:"1" doc:"The thread: the conversation of a conversation workflow, a label for a stateless one. At most 256 bytes."`
	RunID           string         `json:"runId,omitempty" nullable:"true" doc:"The run's id, new on its thread; the server makes one when it is empty. At most 256 bytes."`
	ParentRunID     string         `json:"parentRunId,omitempty" nullable:"true" doc:"The run this one follows, echoed in RUN_STARTED. At most 256 bytes."`
	ProtocolVersion string         `json:"protocolVersion,omitempty" nullable:"true" doc:"The AG-UI version of the answer: 1.0 (what clients of AG-UI 1.0 send) or later gets AG-UI 1.0; none, as the clients before 1.0 send, or a version before 1.0 gets the shapes those clients accept."`
	Messages        []Message      `json:"messages,omitempty" doc:"The whole history for a stateless workflow; only the new turn for a conversation."`
	State           any            `json:"state,omitempty" doc:"The client's state, $agent.state."`
	Tools           []Tool         `json:"tools,omitempty" doc:"The client's frontend tools, $agent.tools."`
	Context         []ContextEntry `json:"context,omitempty" doc:"Context entries, $agent.context."`
	ForwardedProps  any            `json:"forwardedProps,omitempty" doc:"On POST {base}, forwardedProps.aguic.workflowId or .workflowName (or either directly under forwardedProps) picks the workflow."`
	Resume          []ResumeEntry  `json:"resume,omitempty" doc:"Answers to every open interrupt of the thread."`
}

// Message is an AG-UI message of any role, kept as it was read.
type Message struct{ agui.Message }

// Schema describes a message: a role and the fields of that role.
func (Message) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{
		Type:        huma.TypeObject,
		Description: "An AG-UI message: developer, system, assistant, user, tool, activity or reasoning.",
		Properties: map[string]*huma.Schema{
			"id":   {Type: huma.TypeString, Description: "At most 256 bytes."},
			"role": {Type: huma.TypeString, Enum: []any{agui.RoleDeveloper, agui.RoleSystem, agui.RoleAssistant, agui.RoleUser, agui.RoleTool, agui.RoleActivity, agui.RoleReasoning}},
			"content": {
				Description: "Text, or for user and tool messages a list of parts (text, image, audio, video, document); any JSON for activity messages.",
			},
			"name":         {Type: huma.TypeString},
			"toolCalls":    {Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeObject, AdditionalProperties: true}, Description: "Each call's id is at most 256 bytes."},
			"toolCallId":   {Type: huma.TypeString, Description: "At most 256 bytes."},
			"activityType": {Type: huma.TypeString},
		},
		Required:             []string{"role"},
		AdditionalProperties: true,
	}
}

// Tool is one of the client's tools.
type Tool struct {
	_ struct{} `json:"-" additionalProperties:"true"`
	agui.Tool
}

// ContextEntry is one entry of the request's context.
type ContextEntry struct {
	_ struct{} `json:"-" additionalProperties:"true"`
	agui.Context
}

// ResumeEntry answers one open interrupt.
type ResumeEntry struct {
	_           struct{} `json:"-" additionalProperties:"true"`
	InterruptID string   `json:"interruptId" minLength:"1" doc:"At most 256 bytes."`
	Status      string   `json:"status" enum:"resolved,cancelled"`
	Payload     any      `json:"payload,omitempty"`
}

// input is what BuildAgent reads of the request.
func (in *RunAgentInput) input() agui.Input {
	out := agui.Input{State: in.State, ForwardedProps: in.ForwardedProps}
	if in.Messages != nil {
		out.Messages = make([]agui.Message, len(in.Messages))
		for i, m := range in.Messages {
			out.Messages[i] = m.Message
		}
	}
	if in.Tools != nil {
		out.Tools = make([]agui.Tool, len(in.Tools))
		for i, t := range in.Tools {
			out.Tools[i] = t.Tool
		}
	}
	if in.Context != nil {
		out.Context = make([]agui.Context, len(in.Context))
		for i, c := range in.Context {
			out.Context[i] = c.Context
		}
	}
	return out
}

// resume is the request's answers to interrupts.
func (in *RunAgentInput) resume() []vm.ResumeEntry {
	if len(in.Resume) == 0 {
		return nil
	}
	out := make([]vm.ResumeEntry, len(in.Resume))
	for i, r := range in.Resume {
		out[i] = vm.ResumeEntry{InterruptID: r.InterruptID, Status: r.Status, Payload: vm.Normalize(r.Payload)}
	}
	return out
}

// selector picks a workflow by id or by title.
type selector struct {
	id, name string
}

// selectorOf reads the workflow selector of forwardedProps: the aguic
// object's workflowId or workflowName, else the same keys directly under
// forwardedProps. Exactly one of the two must be given.
func selectorOf(props any) (selector, error) {
	if props == nil {
		return selector{}, badRequest("forwardedProps.aguic.workflowId or forwardedProps.aguic.workflowName must name the workflow to run")
	}
	obj, ok := props.(map[string]any)
	if !ok {
		return selector{}, badRequest("forwardedProps must be an object")
	}
	where := "forwardedProps"
	if nested, ok := obj["aguic"]; ok && nested != nil {
		n, ok := nested.(map[string]any)
		if !ok {
			return selector{}, badRequest("forwardedProps.aguic must be an object")
		}
		if hasSelector(n) {
			obj, where = n, "forwardedProps.aguic"
		}
	}
	var sel selector
	for key, dst := range map[string]*string{"workflowId": &sel.id, "workflowName": &sel.name} {
		v, ok := obj[key]
		if !ok || v == nil {
			continue
		}
		s, ok := v.(string)
		if !ok || s == "" {
			return selector{}, badRequest(fmt.Sprintf("%s.%s must be a non-empty string", where, key))
		}
		*dst = s
	}
	switch {
	case sel.id != "" && sel.name != "":
		return selector{}, badRequest(fmt.Sprintf("%s names the workflow twice: give workflowId or workflowName, not both", where))
	case sel.id == "" && sel.name == "":
		return selector{}, badRequest("forwardedProps.aguic.workflowId or forwardedProps.aguic.workflowName must name the workflow to run")
	}
	return sel, nil
}

// optionalSelector reads the workflow selector of forwardedProps on the
// routes where it is optional (a run on a thread, cancel): forwardedProps
// that are not an object, or that have neither a selector key nor an
// aguic key that is not an object or holds one, select nothing (ok
// false); otherwise the selector must be valid, as selectorOf reads it,
// and its errors are the same 400s.
func optionalSelector(props any) (sel selector, ok bool, err error) {
	obj, isObj := props.(map[string]any)
	if !isObj {
		return selector{}, false, nil
	}
	nested, isNested := obj["aguic"].(map[string]any)
	if !hasSelector(obj) && (obj["aguic"] == nil || isNested && !hasSelector(nested)) {
		return selector{}, false, nil
	}
	if sel, err = selectorOf(props); err != nil {
		return selector{}, false, err
	}
	return sel, true, nil
}

// nodeEventsOf reads forwardedProps.aguic.nodeEvents: whether the run's
// stream carries the lifecycle of its nodes. Absent, null, or
// forwardedProps or aguic that are not objects: false.
func nodeEventsOf(props any) (bool, error) {
	obj, _ := props.(map[string]any)
	nested, _ := obj["aguic"].(map[string]any)
	switch v := nested["nodeEvents"].(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	}
	return false, badRequest("forwardedProps.aguic.nodeEvents must be true or false")
}

// requestModel reads forwardedProps.aguic.model: the model the request
// chooses for the model nodes that name none, one of Config.RequestModels
// (400 otherwise, with the list); "" when it chooses none.
func (s *Server) requestModel(props any) (string, error) {
	obj, _ := props.(map[string]any)
	nested, _ := obj["aguic"].(map[string]any)
	v, ok := nested["model"]
	if !ok || v == nil {
		return "", nil
	}
	name, ok := v.(string)
	switch {
	case !ok:
		return "", badRequest("forwardedProps.aguic.model must be a string naming a model, such as \"openai/gpt-4o-mini\"")
	case len(s.cfg.RequestModels) == 0:
		return "", badRequest(fmt.Sprintf("forwardedProps.aguic.model: this server does not let a request choose the model (asked for %q)", name))
	case !slices.Contains(s.cfg.RequestModels, name):
		return "", badRequest(fmt.Sprintf("forwardedProps.aguic.model: %q is not a model a request may choose; allowed: %s", name, strings.Join(s.cfg.RequestModels, ", ")))
	}
	return name, nil
}

func hasSelector(obj map[string]any) bool {
	_, id := obj["workflowId"]
	_, name := obj["workflowName"]
	return id || name
}

// workflow resolves a selector: 404 for an unknown id or name, 400 for a
// name several workflows have.
func (s *Server) workflow(sel selector) (*vm.Workflow, error) {
	if sel.id != "" {
		w := s.cfg.Machine.Program.Workflow(sel.id)
		if w == nil {
			return nil, huma.Error404NotFound(fmt.Sprintf("no workflow has the id %q", sel.id))
		}
		return w, nil
	}
	ws := s.byTitle[sel.name]
	switch len(ws) {
	case 0:
		return nil, huma.Error404NotFound(fmt.Sprintf("no workflow has the name %q", sel.name))
	case 1:
		return ws[0], nil
	}
	ids := make([]string, len(ws))
	for i, w := range ws {
		ids[i] = w.ID
	}
	return nil, badRequest(fmt.Sprintf("%d workflows have the name %q (ids %q): name one by its workflowId", len(ws), sel.name, ids))
}

func badRequest(msg string) error { return huma.NewError(http.StatusBadRequest, msg) }
