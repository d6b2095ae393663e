package agui

import (
	"encoding/json"
	"fmt"

	"github.com/aguic/aguic/internal/jsonenc"
)

// The message roles of AG-UI 1.0.
const (
	RoleDeveloper = "developer"
	RoleSystem    = "system"
	RoleAssistant = "assistant"
	RoleUser      = "user"
	RoleTool      = "tool"
	RoleActivity  = "activity"
	RoleReasoning = "reasoning"
)

// Message is one AG-UI 1.0 message of any of the seven roles. The fields a
// role uses:
//
//	developer, system  Content (text), Name
//	assistant          Content (text, optional), Name, ToolCalls
//	user               Content (text or parts), Name
//	tool               Content (text or parts), ToolCallID, Error
//	activity           ActivityType, ActivityContent
//	reasoning          Content (text)
//
// and any of them EncryptedValue, SubagentRunID and Metadata. Empty fields
// are left out of the JSON; keys this type does not know are kept in Extra
// and written back, so a message marshals to the JSON it was read from.
type Message struct {
	ID   string
	Role string

	// Content is the message's text or, in user and tool messages, a list
	// of parts; nil when the message has none (an assistant message that
	// only calls tools).
	Content *Content

	Name       string
	ToolCalls  []ToolCall // assistant; an empty, non-nil list is written as []
	ToolCallID string     // tool: the call this result answers
	Error      string     // tool: why the tool failed

	ActivityType    string // activity: what renders it, such as "PLAN"
	ActivityContent any    // activity: the structured content, a JSON object

	EncryptedValue string
	SubagentRunID  string
	Metadata       json.RawMessage // a JSON object; nil when absent

	Extra map[string]json.RawMessage // keys of newer protocol versions, as read
}

// Content is a message's content: a string, or a list of parts. Parts is
// nil for a string; a list, even an empty one, is never nil.
type Content struct {
	Text  string
	Parts []Part
}

// Text returns the content of a message that is just text.
func Text(s string) *Content { return &Content{Text: s} }

// IsText reports whether c is a string (and not absent or a list of parts).
func (c *Content) IsText() bool { return c != nil && c.Parts == nil }

// MarshalJSON writes the string or the list of parts.
func (c Content) MarshalJSON() ([]byte, error) {
	if c.Parts != nil {
		return json.Marshal(c.Parts)
	}
	return jsonenc.AppendString(nil, c.Text), nil
}

// UnmarshalJSON reads a string or a list of parts.
func (c *Content) UnmarshalJSON(data []byte) error {
	switch DescribeJSON(data) {
	case "a string":
		*c = Content{}
		return json.Unmarshal(data, &c.Text)
	case "a list":
		var parts []Part
		if err := json.Unmarshal(data, &parts); err != nil {
			return err
		}
		if parts == nil {
			parts = []Part{}
		}
		*c = Content{Parts: parts}
		return nil
	}
	return fmt.Errorf("content must be a string or a list of parts, found %s", DescribeJSON(data))
}

// Part is one part of a user or tool message's content: "text" with Text,
// or "image", "audio", "video" or "document" with a Source.
type Part struct {
	Type     string
	ID       string
	Text     string  // text parts
	Source   *Source // media parts
	Metadata json.RawMessage
	Extra    map[string]json.RawMessage
}

// The content part types.
const (
	PartText     = "text"
	PartImage    = "image"
	PartAudio    = "audio"
	PartVideo    = "video"
	PartDocument = "document"
)

// MarshalJSON writes the part's fields, text always for a text part.
func (p Part) MarshalJSON() ([]byte, error) {
	var o object
	o.str("type", p.Type)
	o.optStr("id", p.ID)
	if p.Type == PartText || p.Text != "" {
		o.str("text", p.Text)
	}
	if p.Source != nil {
		o.marshal("source", p.Source)
	}
	if p.Metadata != nil {
		o.raw("metadata", p.Metadata)
	}
	o.extra(p.Extra)
	return o.bytes()
}

// UnmarshalJSON reads a part, keeping unknown keys.
func (p *Part) UnmarshalJSON(data []byte) error {
	f, err := readFields(data, "a content part")
	if err != nil {
		return err
	}
	var q Part
	for _, err := range []error{
		f.takeString("type", &q.Type),
		f.takeString("id", &q.ID),
		f.takeString("text", &q.Text),
		f.take("source", &q.Source),
	} {
		if err != nil {
			return fmt.Errorf("content part: %w", err)
		}
	}
	if q.Type == "" {
		return fmt.Errorf("content part has no type")
	}
	q.Metadata = f.takeRaw("metadata")
	q.Extra = f.rest()
	*p = q
	return nil
}

// Source is where a media part's bytes are: "data" (inline, base64, with a
// MimeType), "url", or "file" (a handle a Provider issued).
type Source struct {
	Type     string
	Value    string
	MimeType string
	Provider string
	Extra    map[string]json.RawMessage
}

// The source types of media parts.
const (
	SourceData = "data"
	SourceURL  = "url"
	SourceFile = "file"
)

// MarshalJSON writes the source's fields.
func (s Source) MarshalJSON() ([]byte, error) {
	var o object
	o.str("type", s.Type)
	o.str("value", s.Value)
	o.optStr("mimeType", s.MimeType)
	o.optStr("provider", s.Provider)
	o.extra(s.Extra)
	return o.bytes()
}

// UnmarshalJSON reads a source, keeping unknown keys.
func (s *Source) UnmarshalJSON(data []byte) error {
	f, err := readFields(data, "a source")
	if err != nil {
		return err
	}
	var q Source
	for _, err := range []error{
		f.takeString("type", &q.Type),
		f.takeString("value", &q.Value),
		f.takeString("mimeType", &q.MimeType),
		f.takeString("provider", &q.Provider),
	} {
		if err != nil {
			return fmt.Errorf("source: %w", err)
		}
	}
	q.Extra = f.rest()
	*s = q
	return nil
}

// ToolCall is a call an assistant message makes: Type is "function".
type ToolCall struct {
	ID             string
	Type           string // "function"; empty is written as "function"
	Function       FunctionCall
	EncryptedValue string
	Metadata       json.RawMessage
	Extra          map[string]json.RawMessage
}

// FunctionCall is the tool's name and its arguments, a JSON object as text.
type FunctionCall struct {
	Name      string
	Arguments string
	Extra     map[string]json.RawMessage
}

// MarshalJSON writes the call's fields.
func (t ToolCall) MarshalJSON() ([]byte, error) {
	typ := t.Type
	if typ == "" {
		typ = "function"
	}
	var o object
	o.str("id", t.ID)
	o.str("type", typ)
	o.marshal("function", t.Function)
	o.optStr("encryptedValue", t.EncryptedValue)
	if t.Metadata != nil {
		o.raw("metadata", t.Metadata)
	}
	o.extra(t.Extra)
	return o.bytes()
}

// UnmarshalJSON reads a tool call, keeping unknown keys.
func (t *ToolCall) UnmarshalJSON(data []byte) error {
	f, err := readFields(data, "a tool call")
	if err != nil {
		return err
	}
	var q ToolCall
	for _, err := range []error{
		f.takeString("id", &q.ID),
		f.takeString("type", &q.Type),
		f.take("function", &q.Function),
		f.takeString("encryptedValue", &q.EncryptedValue),
	} {
		if err != nil {
			return fmt.Errorf("tool call: %w", err)
		}
	}
	q.Metadata = f.takeRaw("metadata")
	q.Extra = f.rest()
	*t = q
	return nil
}

// MarshalJSON writes name and arguments, both always.
func (fc FunctionCall) MarshalJSON() ([]byte, error) {
	var o object
	o.str("name", fc.Name)
	o.str("arguments", fc.Arguments)
	o.extra(fc.Extra)
	return o.bytes()
}

// UnmarshalJSON reads a function call, keeping unknown keys.
func (fc *FunctionCall) UnmarshalJSON(data []byte) error {
	f, err := readFields(data, "a function")
	if err != nil {
		return err
	}
	var q FunctionCall
	if err := f.takeString("name", &q.Name); err != nil {
		return err
	}
	if err := f.takeString("arguments", &q.Arguments); err != nil {
		return err
	}
	q.Extra = f.rest()
	*fc = q
	return nil
}

// MarshalJSON writes the message: id and role always, every other field
// only when set.
func (m Message) MarshalJSON() ([]byte, error) {
	var o object
	o.str("id", m.ID)
	o.str("role", m.Role)
	switch {
	case m.Role == RoleActivity && m.ActivityContent != nil:
		o.field("content", m.ActivityContent)
	case m.Content != nil:
		o.marshal("content", m.Content)
	}
	o.optStr("name", m.Name)
	o.optStr("toolCallId", m.ToolCallID)
	if m.ToolCalls != nil {
		list(&o, "toolCalls", m.ToolCalls)
	}
	o.optStr("error", m.Error)
	o.optStr("activityType", m.ActivityType)
	o.optStr("encryptedValue", m.EncryptedValue)
	o.optStr("subagentRunId", m.SubagentRunID)
	if m.Metadata != nil {
		o.raw("metadata", m.Metadata)
	}
	o.extra(m.Extra)
	return o.bytes()
}

// UnmarshalJSON reads a message of any role, keeping unknown keys. It
// checks the shape of each field, not what the role requires.
func (m *Message) UnmarshalJSON(data []byte) error {
	f, err := readFields(data, "a message")
	if err != nil {
		return err
	}
	var q Message
	for _, err := range []error{
		f.takeString("id", &q.ID),
		f.takeString("role", &q.Role),
		f.takeString("name", &q.Name),
		f.take("toolCalls", &q.ToolCalls),
		f.takeString("toolCallId", &q.ToolCallID),
		f.takeString("error", &q.Error),
		f.takeString("activityType", &q.ActivityType),
		f.takeString("encryptedValue", &q.EncryptedValue),
		f.takeString("subagentRunId", &q.SubagentRunID),
	} {
		if err != nil {
			return messageError(q, err)
		}
	}
	if q.Role == RoleActivity {
		if q.ActivityContent, err = f.takeAny("content"); err != nil {
			return messageError(q, err)
		}
	} else if raw := f.takeRaw("content"); raw != nil {
		q.Content = new(Content)
		if err := q.Content.UnmarshalJSON(raw); err != nil {
			return messageError(q, err)
		}
	}
	q.Metadata = f.takeRaw("metadata")
	q.Extra = f.rest()
	*m = q
	return nil
}

func messageError(m Message, err error) error {
	if m.ID != "" {
		return fmt.Errorf("message %q: %w", m.ID, err)
	}
	return fmt.Errorf("message: %w", err)
}

// Context is one entry of a request's context: a description and a value.
type Context struct {
	Description string `json:"description"`
	Value       string `json:"value"`
}

// Tool is one of the client's tools, which a model may call and the client
// runs.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"` // JSON Schema
	Metadata    json.RawMessage `json:"metadata,omitempty"`
}
