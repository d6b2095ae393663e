package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/vm"
)

// toolInput is the arguments of a workflow's tool, checked.
type toolInput struct {
	Message     *string // the user's new message; nil: none
	ThreadID    string  // the thread to continue; "": a new one
	State       any     // the client's state; nil: the thread's
	Resume      []ResumeEntry
	ToolResults []toolResult

	said string // the text of the call's earlier turns, which elicitation answered
}

// toolResult is the result of one frontend tool call.
type toolResult struct {
	ToolCallID string
	Content    string
}

// The statuses of a tool call's structuredContent: how the run ended.
const (
	statusFinished    = "finished"
	statusInterrupted = "interrupted"
	statusTools       = "waiting_for_tools"
	statusCancelled   = "cancelled"
	statusError       = "error"
)

// inputSchema is the input schema of a workflow's tool: a conversation
// takes answers to its interrupts and frontend tool calls too.
func inputSchema(conversation bool) map[string]any {
	props := map[string]any{
		"message": map[string]any{
			"type":        "string",
			"description": "The user's message: the new turn.",
		},
		"threadId": map[string]any{
			"type":        "string",
			"minLength":   1,
			"maxLength":   MaxIDBytes,
			"description": "The thread to continue, as a result returned it; a new thread when absent.",
		},
		"state": map[string]any{
			"type":        "object",
			"description": "The client's state ($agent.state); the thread's last state when absent.",
		},
	}
	if conversation {
		props["resume"] = map[string]any{
			"type":        "array",
			"description": "Answers to every open interrupt of the thread (threadId), one entry each.",
			"items": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"interruptId": map[string]any{"type": "string", "minLength": 1, "maxLength": MaxIDBytes},
					"status":      map[string]any{"type": "string", "enum": []any{"resolved", "cancelled"}},
					"payload":     map[string]any{"description": "The answer, as the interrupt's responseSchema describes it."},
				},
				"required":             []any{"interruptId", "status"},
				"additionalProperties": false,
			},
		}
		props["toolResults"] = map[string]any{
			"type":        "array",
			"description": "The results of the frontend tool calls the thread (threadId) waits for.",
			"items": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"toolCallId": map[string]any{"type": "string", "minLength": 1, "maxLength": MaxIDBytes},
					"content":    map[string]any{"type": "string", "description": "The result, as text (JSON for a structured one)."},
				},
				"required":             []any{"toolCallId", "content"},
				"additionalProperties": false,
			},
		}
	}
	return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
}

// outputSchema is the schema of every tool's structuredContent.
var outputSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"threadId": map[string]any{"type": "string", "description": "The run's thread: pass it to continue."},
		"runId":    map[string]any{"type": "string"},
		"status": map[string]any{
			"type": "string",
			"enum": []any{statusFinished, statusInterrupted, statusTools, statusCancelled, statusError},
		},
		"output": map[string]any{"description": "The value the workflow's output set, when it finished."},
		"state":  map[string]any{"description": "The state ($agent.state) after the run."},
		"interrupts": map[string]any{
			"type":        "array",
			"description": "What the run waits for (status interrupted): answer each with resume.",
			"items": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"id":             map[string]any{"type": "string"},
					"reason":         map[string]any{"type": "string"},
					"message":        map[string]any{"type": "string"},
					"toolCallId":     map[string]any{"type": "string"},
					"responseSchema": map[string]any{"type": "object"},
					"expiresAt":      map[string]any{"type": "string"},
					"metadata":       map[string]any{"type": "object"},
				},
				"required": []any{"id", "reason"},
			},
		},
		"toolCalls": map[string]any{
			"type":        "array",
			"description": "The frontend tool calls the run waits for (status waiting_for_tools): answer with toolResults.",
			"items": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"id":        map[string]any{"type": "string"},
					"name":      map[string]any{"type": "string"},
					"arguments": map[string]any{"description": "The call's arguments: a JSON object, or the text the run sent when it is not JSON."},
				},
				"required": []any{"id", "name", "arguments"},
			},
		},
		"error": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"message": map[string]any{"type": "string"},
				"code":    map[string]any{"type": "string"},
			},
			"required": []any{"message"},
		},
	},
	"required": []any{"threadId", "runId", "status"},
}

// parseToolInput checks the arguments of a call of wf's tool against its
// input schema; the error says which argument is wrong and how.
func parseToolInput(wf *vm.Workflow, raw json.RawMessage) (*toolInput, error) {
	in := &toolInput{}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return in, nil
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, fmt.Errorf("the arguments must be a JSON object, found %s", agui.DescribeJSON(raw))
	}
	known := []string{"message", "threadId", "state"}
	if wf.Conversation {
		known = append(known, "resume", "toolResults")
	}
	for _, k := range slices.Sorted(maps.Keys(args)) {
		if !slices.Contains(known, k) {
			return nil, fmt.Errorf("unknown argument %q: the tool %s takes %s", k, wf.ID, strings.Join(known, ", "))
		}
	}
	if v, ok := args["message"]; ok && !isJSONNull(v) {
		var m string
		if err := json.Unmarshal(v, &m); err != nil {
			return nil, fmt.Errorf("message must be a string, found %s", agui.DescribeJSON(v))
		}
		in.Message = &m
	}
	if v, ok := args["threadId"]; ok && !isJSONNull(v) {
		id, err := idArg("threadId", v)
		if err != nil {
			return nil, err
		}
		in.ThreadID = id
	}
	if v, ok := args["state"]; ok && !isJSONNull(v) {
		var st map[string]any
		if err := json.Unmarshal(v, &st); err != nil {
			return nil, fmt.Errorf("state must be an object, found %s", agui.DescribeJSON(v))
		}
		in.State = vm.Normalize(st)
	}
	err := eachObject(args["resume"], "resume", []string{"interruptId", "status", "payload"}, func(at string, e map[string]json.RawMessage) error {
		id, err := idArg(at+".interruptId", e["interruptId"])
		if err != nil {
			return err
		}
		var status string
		if json.Unmarshal(e["status"], &status) != nil || status != "resolved" && status != "cancelled" {
			return fmt.Errorf(`%s.status must be "resolved" or "cancelled", found %s`, at, describe(e["status"]))
		}
		var payload any
		if p := e["payload"]; p != nil {
			if err := json.Unmarshal(p, &payload); err != nil {
				return fmt.Errorf("%s.payload: %v", at, err)
			}
		}
		in.Resume = append(in.Resume, ResumeEntry{InterruptID: id, Status: status, Payload: payload})
		return nil
	})
	if err == nil {
		err = eachObject(args["toolResults"], "toolResults", []string{"toolCallId", "content"}, func(at string, e map[string]json.RawMessage) error {
			id, err := idArg(at+".toolCallId", e["toolCallId"])
			if err != nil {
				return err
			}
			var content string
			if json.Unmarshal(e["content"], &content) != nil {
				return fmt.Errorf("%s.content must be a string, found %s", at, describe(e["content"]))
			}
			in.ToolResults = append(in.ToolResults, toolResult{ToolCallID: id, Content: content})
			return nil
		})
	}
	if err != nil {
		return nil, err
	}
	switch {
	case in.Message != nil && len(in.ToolResults) > 0:
		return nil, fmt.Errorf("give message or toolResults, not both: a thread that waits for tool results takes them alone")
	case in.ThreadID == "" && (len(in.Resume) > 0 || len(in.ToolResults) > 0):
		return nil, fmt.Errorf("resume and toolResults answer what a thread waits for: give its threadId too")
	}
	return in, nil
}

// messages is what the turn of in adds to the thread: the user's message,
// or the tool results, as AG-UI messages with ids of their own.
func (in *toolInput) messages() []agui.Message {
	var out []agui.Message
	if in.Message != nil {
		out = append(out, agui.Message{ID: "mcp-" + uuid.NewString(), Role: agui.RoleUser, Content: agui.Text(*in.Message)})
	}
	for _, r := range in.ToolResults {
		out = append(out, agui.Message{ID: "mcp-" + uuid.NewString(), Role: agui.RoleTool, ToolCallID: r.ToolCallID, Content: agui.Text(r.Content)})
	}
	return out
}

// eachObject reads the argument name, raw: an array of objects, each
// with only the keys given and at least the first two of them; it calls f
// with each object and its place (name[i]). Absent or null: no objects.
func eachObject(raw json.RawMessage, name string, keys []string, f func(at string, e map[string]json.RawMessage) error) error {
	if raw == nil || isJSONNull(raw) {
		return nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return fmt.Errorf("%s must be an array, found %s", name, agui.DescribeJSON(raw))
	}
	for i, item := range list {
		at := fmt.Sprintf("%s[%d]", name, i)
		var e map[string]json.RawMessage
		if err := json.Unmarshal(item, &e); err != nil || e == nil {
			return fmt.Errorf("%s must be an object, found %s", at, agui.DescribeJSON(item))
		}
		for _, k := range slices.Sorted(maps.Keys(e)) {
			if !slices.Contains(keys, k) {
				return fmt.Errorf("%s: unknown key %q; the keys are %s", at, k, strings.Join(keys, ", "))
			}
		}
		for _, k := range keys[:2] {
			if _, ok := e[k]; !ok {
				return fmt.Errorf("%s has no %s", at, k)
			}
		}
		if err := f(at, e); err != nil {
			return err
		}
	}
	return nil
}

// idArg reads an id: a string of 1 to MaxIDBytes bytes.
func idArg(name string, raw json.RawMessage) (string, error) {
	var id string
	if err := json.Unmarshal(raw, &id); err != nil {
		return "", fmt.Errorf("%s must be a string, found %s", name, agui.DescribeJSON(raw))
	}
	switch {
	case id == "":
		return "", fmt.Errorf("%s is empty", name)
	case len(id) > MaxIDBytes:
		return "", fmt.Errorf("%s is %d bytes long; the limit is %d", name, len(id), MaxIDBytes)
	}
	return id, nil
}

func isJSONNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// describe shows a value that is wrong: a string as it is, else its kind.
func describe(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return fmt.Sprintf("%q", s)
	}
	return agui.DescribeJSON(raw)
}
