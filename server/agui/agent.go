package agui

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
)

// Input is what BuildAgent reads of an AG-UI request (RunAgentInput).
type Input struct {
	Messages []Message
	State    any // the client's state, a JSON tree; nil when the request has none
	Context  []Context
	Tools    []Tool
	// ForwardedProps is the request's forwardedProps, a JSON tree; nil
	// when the request has none.
	ForwardedProps any
}

// BuildAgent returns the $agent object of one AG-UI request, as
// docs/agui.md describes it:
//
//   - latestUserMessage: the final message, only when it is a user message
//     whose content is a string, or parts that are text and images; its
//     content is then the text parts joined, and images lists the images
//     as llm.Image objects ({url} or {data, mimeType}), ready for a model
//     node's images key;
//   - latestToolResult: the final message, only when it is a tool message;
//     its value holds the content parsed when that is non-empty JSON;
//   - messages: every message of a stateless request; in a conversation
//     only the turn's new input: the latest message, or, when it is a tool
//     result, every tool result after the last assistant message (a client
//     that answers several tool calls at once sends them together);
//   - chat: stateless only, the provider-neutral chat history (llm.Message
//     objects) rebuilt from the messages, without the message exposed as
//     latestUserMessage;
//   - state, context, tools and forwardedProps: as the request has them,
//     when it has them;
//   - _hidden.state: a copy of state, the baseline of state sync; absent
//     when the request has no state.
//
// Rebuilding chat fails on a message chat cannot hold: an unsupported role,
// content that is not a string, a tool message without toolCallId, or an
// assistant tool call without a name or whose arguments are not a JSON
// object. The server answers such a request with RUN_ERROR.
func BuildAgent(in Input, conversation bool) (map[string]any, error) {
	agent := map[string]any{}
	msgs := in.Messages
	var last *Message
	if len(msgs) > 0 {
		last = &msgs[len(msgs)-1]
	}
	userLatest := false
	if last != nil && last.Role == RoleUser && last.Content != nil {
		if text, images, err := userContent(last.Content); err == nil {
			userLatest = true
			latest := tree(*last).(map[string]any)
			if !last.Content.IsText() {
				latest["content"] = text
				if len(images) > 0 {
					latest["images"] = vm.Normalize(imageValues(images))
				}
			}
			agent["latestUserMessage"] = latest
		}
	}
	if last != nil && last.Role == RoleTool {
		r := tree(*last).(map[string]any)
		if last.Content.IsText() {
			if v, ok := parseJSON(last.Content.Text); ok {
				r["value"] = v
			}
		}
		agent["latestToolResult"] = r
	}
	shown := msgs
	if conversation && len(msgs) > 1 {
		start := len(msgs) - 1
		for start > 0 && msgs[start].Role == RoleTool && msgs[start-1].Role == RoleTool {
			start--
		}
		shown = msgs[start:]
	}
	list := make([]any, len(shown))
	for i, m := range shown {
		list[i] = tree(m)
	}
	agent["messages"] = list
	if !conversation {
		history := msgs
		if userLatest {
			history = msgs[:len(msgs)-1]
		}
		chat, err := Chat(history)
		if err != nil {
			return nil, err
		}
		agent["chat"] = vm.Normalize(llm.ToValue(chat))
	}
	if in.State != nil {
		state := vm.Normalize(in.State)
		agent["state"] = state
		agent["_hidden"] = map[string]any{"state": vm.Copy(state)}
	}
	if in.Context != nil {
		agent["context"] = vm.Normalize(in.Context)
	}
	if in.Tools != nil {
		agent["tools"] = vm.Normalize(in.Tools)
	}
	if in.ForwardedProps != nil {
		agent["forwardedProps"] = vm.Normalize(in.ForwardedProps)
	}
	return agent, nil
}

// Chat converts AG-UI messages into provider-neutral chat history: system stays system and developer
// becomes system with its name kept; user and tool messages need string
// content (and a tool message its toolCallId); an assistant message keeps
// its text and its tool calls, and is skipped when it has neither;
// reasoning and activity messages are left out. Any other role, and
// content that is not a string, is an error.
//
// An assistant tool call needs a name, and arguments that are a JSON
// object; empty arguments are read as {} (a client that saw a call without
// TOOL_CALL_ARGS holds "").
func Chat(msgs []Message) ([]llm.Message, error) {
	var out []llm.Message
	for i, m := range msgs {
		fail := func(format string, args ...any) error {
			where := fmt.Sprintf("message %d", i+1)
			if m.ID != "" {
				where += fmt.Sprintf(" (id %q)", m.ID)
			}
			return fmt.Errorf("%s: %s", where, fmt.Sprintf(format, args...))
		}
		text := func() (string, error) {
			switch {
			case m.Content == nil:
				return "", fail("%s message has no content", m.Role)
			case !m.Content.IsText():
				return "", fail("%s message content must be a string: multimodal content is not supported in chat history", m.Role)
			}
			return m.Content.Text, nil
		}
		switch m.Role {
		case RoleUser:
			if m.Content == nil {
				return nil, fail("user message has no content")
			}
			s, images, err := userContent(m.Content)
			if err != nil {
				return nil, fail("%v", err)
			}
			out = append(out, llm.Message{Role: llm.RoleUser, Content: s, Images: images})
		case RoleSystem, RoleDeveloper:
			s, err := text()
			if err != nil {
				return nil, err
			}
			role := m.Role
			c := llm.Message{Role: role, Content: s}
			if role == RoleDeveloper {
				c.Role, c.Name = llm.RoleSystem, m.Name
			}
			out = append(out, c)
		case RoleTool:
			s, err := text()
			if err != nil {
				return nil, err
			}
			if m.ToolCallID == "" {
				return nil, fail("tool message has no toolCallId")
			}
			out = append(out, llm.Message{Role: llm.RoleTool, Content: s, ToolCallID: m.ToolCallID})
		case RoleAssistant:
			var s string
			if m.Content != nil {
				if !m.Content.IsText() {
					return nil, fail("assistant message content must be a string")
				}
				s = m.Content.Text
			}
			c := llm.Message{Role: llm.RoleAssistant, Content: s}
			for j, tc := range m.ToolCalls {
				if tc.Function.Name == "" {
					return nil, fail("tool call %d has no function name", j+1)
				}
				args := strings.TrimSpace(tc.Function.Arguments)
				if args == "" {
					args = "{}"
				}
				var obj map[string]any
				if err := json.Unmarshal([]byte(args), &obj); err != nil || obj == nil {
					return nil, fail("tool call %d (%s): arguments must be a JSON object as a string, found %q", j+1, tc.Function.Name, tc.Function.Arguments)
				}
				c.ToolCalls = append(c.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
			}
			if s == "" && len(c.ToolCalls) == 0 {
				continue
			}
			out = append(out, c)
		case RoleReasoning, RoleActivity:
		default:
			return nil, fail("unsupported role %q (want developer, system, user, assistant, tool, reasoning or activity)", m.Role)
		}
	}
	return out, nil
}

// userContent reads a user message's content: a string, or parts that are
// text, joined, and images. Audio, video and documents, and images whose
// source is a provider's file id, are errors: no provider takes them here.
func userContent(c *Content) (string, []llm.Image, error) {
	if c.IsText() {
		return c.Text, nil, nil
	}
	var text strings.Builder
	var images []llm.Image
	for i, p := range c.Parts {
		switch p.Type {
		case PartText:
			text.WriteString(p.Text)
		case PartImage:
			if p.Source == nil {
				return "", nil, fmt.Errorf("content part %d: the image has no source", i+1)
			}
			switch p.Source.Type {
			case SourceURL:
				images = append(images, llm.Image{URL: p.Source.Value, MimeType: p.Source.MimeType})
			case SourceData:
				images = append(images, llm.Image{Data: p.Source.Value, MimeType: p.Source.MimeType})
			default:
				return "", nil, fmt.Errorf("content part %d: an image source of type %q is not supported; send a url or base64 data", i+1, p.Source.Type)
			}
		default:
			return "", nil, fmt.Errorf("content part %d: %s content is not supported in chat history; user messages may hold text and images", i+1, p.Type)
		}
	}
	return text.String(), images, nil
}

// imageValues converts images into the JSON tree the context holds.
func imageValues(images []llm.Image) []any {
	out := make([]any, len(images))
	for i, img := range images {
		m := map[string]any{}
		if img.URL != "" {
			m["url"] = img.URL
		}
		if img.Data != "" {
			m["data"] = img.Data
		}
		if img.MimeType != "" {
			m["mimeType"] = img.MimeType
		}
		out[i] = m
	}
	return out
}

// tree converts a message into the JSON tree the context holds.
func tree(m Message) any {
	if t, ok := plainTree(m); ok {
		return t
	}
	data, err := json.Marshal(m)
	if err != nil {
		return vm.Normalize(map[string]any{"id": m.ID, "role": m.Role})
	}
	v, err := decodeAny(data)
	if err != nil {
		return nil
	}
	return vm.Normalize(v)
}

// plainTree is tree for a message whose fields are all strings (text
// content, no tool calls, metadata or keys of newer protocol versions),
// built without going through JSON; ok is false for other messages.
func plainTree(m Message) (t map[string]any, ok bool) {
	if m.ToolCalls != nil || m.Metadata != nil || len(m.Extra) > 0 || m.Role == RoleActivity ||
		m.Content != nil && !m.Content.IsText() {
		return nil, false
	}
	t = map[string]any{"id": m.ID, "role": m.Role}
	if m.Content != nil {
		t["content"] = m.Content.Text
	}
	for _, f := range [...]struct{ key, value string }{
		{"name", m.Name}, {"toolCallId", m.ToolCallID}, {"error", m.Error}, {"activityType", m.ActivityType},
		{"encryptedValue", m.EncryptedValue}, {"subagentRunId", m.SubagentRunID},
	} {
		if f.value != "" {
			t[f.key] = f.value
		}
	}
	return t, true
}

// parseJSON parses s when it is non-empty JSON.
func parseJSON(s string) (any, bool) {
	if strings.TrimSpace(s) == "" {
		return nil, false
	}
	v, err := decodeAny([]byte(s))
	if err != nil {
		return nil, false
	}
	return vm.Normalize(v), true
}
