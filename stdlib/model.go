package stdlib

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/aguic/aguic/mcpclient"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// model declares the model kind; opts.Models resolves its models.
//
// A model node builds its request from system, chat_in and prompt, emits
// the prompt as a silent user text message (unless user_event = false),
// and streams the provider's answer: reasoning as REASONING_* events under
// "reason:<id>", text as one TEXT_MESSAGE_* lifecycle per stretch of text
// with a fresh message id, tool calls as TOOL_CALL_* events whose
// parentMessageId is the text message before them. stream,
// stream_reasoning and stream_tool_calls = false drop those categories,
// except that calls of the client's frontend tools are always streamed:
// the client has to see them to run them.
//
// Tool calls loop: each backend tool call runs inside the node (vm.Call's
// RunTool), its result is emitted as TOOL_CALL_RESULT and sent back to the
// model, which is called again, for at most max_tool_rounds rounds. After
// each backend tool call the node saves its conversation in its state,
// marked running, and checkpoints the run (vm.Call.Checkpoint): a run
// recovered after a crash starts at the node with that state and goes on
// from it, with the round's other calls and then the model, without
// running the calls that have a result again. A backend tool that fails,
// an unknown tool or arguments that are not a JSON object matching the
// tool's parameters give the model the result "error: <message>" so it
// can react; only cancellation and internal errors stop the node. A call
// of a frontend tool (a tools entry that is an object {name, description,
// parameters}, such as $agent.tools gives) saves the conversation in the
// node's state and suspends the run waiting for those tool call ids; on
// resume their results come with the resume (vm.Resume.ToolResults: the
// turn's tool messages), emitted as TOOL_CALL_RESULT and sent to the
// model, and the loop goes on once every call has its result: a request
// that brings some of them leaves the node waiting for the others. A
// frontend call whose arguments are not an object matching the tool's
// parameters is not left to the client: the model gets an "error: …"
// result, streamed as TOOL_CALL_RESULT.
//
// The model API refuses a history with a tool call that has no result, so
// such calls of chat_in get the result "error: the tool call got no
// result", in the request and in chat_out. The exception is a stateless
// follow-up that answers only some of the frontend calls of its last
// answer: when the node has no prompt and no images, the calls of its
// frontend tools left open at the end of chat_in are waited for again.
//
// Each provider call has the node's timeout; a call that fails with a
// retryable error (llm.IsRetryable: 429, 5xx) or times out before it
// streamed anything is tried again up to retry more times, waiting as
// backoff says ("1s..8s" when absent).
//
// At the end chat_out, when given, receives chat_in, the prompt, the
// model's replies with their tool calls and the tool results (without the
// calls and results of this node when drop_tool_calls); output_schema
// parses the last reply's text as JSON (a surrounding ``` fence is
// allowed), validates it and stores it as the result's value. The result
// is {text, value?, tool_calls: [{id, name, arguments}], usage:
// {inputTokens, outputTokens}}, where text is the last reply's text,
// tool_calls every tool call of the node, arguments parsed when they are
// JSON, and usage the sum over all provider calls.
func model(opts Options) *vm.KindSpec {
	return &vm.KindSpec{
		Name: "model",
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			m, err := newModelRun(ctx, c, opts)
			if err != nil {
				return vm.Step{}, err
			}
			return m.exec(ctx)
		},
		Gives:  modelGives,
		Model:  modelName,
		Detail: func(n *vm.Node) string { return keySource(n, "model") },
		Doc:    "Calls a language model with chat_in and the prompt, streams its text, reasoning and tool calls to the client, runs backend tool calls inside the node, and on a call of one of the client's frontend tools ends the run with pendingToolCallIds (a conversation resumes the node when the tool result arrives).",
		Keys: []vm.KeySpec{
			{Name: "model", Type: vm.TypeModel, Providers: llm.Providers,
				Doc: `The model as "provider/model", such as "openai/gpt-4o-mini"; the server's default model when absent.`},
			{Name: "system", Type: vm.TypeString,
				Doc: "The system prompt, a template."},
			{Name: "prompt", Type: vm.TypeString,
				Doc: "The user prompt, a template, sent after chat_in as a user message; none when absent."},
			{Name: "images", Type: vm.TypeList,
				Doc: "Images sent with the prompt, for models that accept them: URLs, or objects {url} or {data, mimeType} with base64 data, such as $agent.latestUserMessage.images."},
			{Name: "chat_in", Type: vm.TypeList,
				Doc: "The chat history sent before the prompt: provider-neutral chat messages, usually $input.chat in a conversation and $agent.chat in a stateless workflow."},
			{Name: "chat_out", Type: vm.TypePath, Writes: true,
				Doc: "Where to write, after the call, chat_in followed by the prompt, the model's replies and (unless drop_tool_calls) its tool calls and their results; nothing is written when absent."},
			{Name: "tools", Type: vm.TypeTools,
				Doc: "The tools the model may call: names of backend tools declared with `tool` in this workflow, and $agent.tools for the client's frontend tools."},
			{Name: "output_schema", Type: vm.TypeObject,
				Doc: "A JSON Schema the reply must follow (structured output); the reply is parsed into the result's value."},
			{Name: "temperature", Type: vm.TypeNumber,
				Doc: "The sampling temperature; the provider's default when absent."},
			{Name: "max_tokens", Type: vm.TypeInt,
				Doc: "The most tokens the reply may have; the provider's default when absent."},
			{Name: "stream", Type: vm.TypeBool, Default: true,
				Doc: "Stream the reply's text to the client; false keeps this call's text from the user."},
			{Name: "stream_reasoning", Type: vm.TypeBool, Default: true,
				Doc: "Stream the model's reasoning to the client as REASONING_* events."},
			{Name: "stream_tool_calls", Type: vm.TypeBool, Default: true,
				Doc: "Stream the model's calls of backend tools and their results to the client as TOOL_CALL_* events; calls of the client's frontend tools are always streamed, since the client runs them."},
			{Name: "user_event", Type: vm.TypeBool, Default: true,
				Doc: "Store the resolved prompt as a silent user text message before the call, so the history shows what was asked."},
			{Name: "drop_tool_calls", Type: vm.TypeBool, Default: false,
				Doc: "Leave the model's tool calls and their results out of the history written to chat_out."},
			{Name: "max_tool_rounds", Type: vm.TypeInt, Default: 8,
				Doc: "The most rounds of tool calls the node runs, backend and frontend; a model that asks for one more fails the node, a guard against endless tool loops."},
			paceKey("the pause comes before each chunk of text, reasoning or tool-call arguments after the first, as the provider streams them; the pauses count toward timeout"),
			predictKey("tools", "The client's state keys that the arguments of the model's tool calls predict while they stream, each mapped to tool.argument, such as {document: \"write_document.document\"}: a PredictState CUSTOM event before each call of that tool tells the client. The workflow's own state does not change."),
			timeoutKey("one model call", nil),
			retryKey("model call", nil),
			backoffKey("1s..8s"),
		},
		Suspend: vm.SuspendFrontendTools,
		Result:  "{text, value?, tool_calls, usage}",
		Example: "answer: model {\n" +
			"  prompt   = \"<<$agent.latestUserMessage.content>>\"\n" +
			"  chat_in  = $input.chat\n" +
			"  chat_out = $input.chat\n" +
			"} -> $reply",
	}
}

// modelGives: a model node streams the reasoning the provider sends unless
// it sets stream_reasoning = false, calls the tools it is given, asks for
// structured output with output_schema and sends images with images.
func modelGives(n *vm.Node) vm.Gives {
	var g vm.Gives
	g.Reasoning = keySource(n, "stream_reasoning") != "false"
	if t := n.Keys["tools"]; t != nil {
		g.Tools, g.ClientTools = true, t.Frontend
	}
	g.Structured = n.Keys["output_schema"] != nil
	g.Images = n.Keys["images"] != nil
	return g
}

// modelName is the model a model node calls, as its model key writes it.
func modelName(n *vm.Node) (name string, computed, ok bool) {
	v := n.Keys["model"]
	if v == nil {
		return "", false, true
	}
	if t := v.Template; t == nil || len(t.Parts) != 1 || t.Parts[0].Expr != nil {
		return "", true, true
	}
	return v.Template.Parts[0].Text, false, true
}

// modelStateVersion is the version of the modelState a suspended model
// node keeps in the frame.
const modelStateVersion = 1

// modelState is the conversation of a model node: what it saves in the
// frame while it waits for frontend tool results, and after each backend
// tool call, marked Running, so that a run recovered from that save goes
// on with the conversation instead of calling the tools again.
type modelState struct {
	V        int           `json:"v"`
	Messages []llm.Message `json:"messages"` // the whole request, system message first
	History  int           `json:"history"`  // where chat_out's messages begin: after the system message
	Replies  int           `json:"replies"`  // where this node's replies begin: after chat_in and the prompt
	Round    int           `json:"round"`    // tool rounds so far
	// Pending are the frontend tool calls the node waits for; when
	// Running, those of the last reply left to the client so far.
	Pending []string `json:"pending,omitempty"`
	// Running marks a conversation saved in the middle of a tool round:
	// the calls of the last reply that have neither a result after it nor
	// a place in Pending are still to run.
	Running bool `json:"running,omitempty"`
	// Omitted, in a conversation saved while Running, is how many
	// messages of chat_in Messages leaves out at History: chat_in reads a
	// path of the frame, which holds them, and ChatSum is their digest.
	Omitted int       `json:"omitted,omitempty"`
	ChatSum string    `json:"chatSum,omitempty"`
	Calls   []any     `json:"calls"` // the result's tool_calls so far
	Usage   llm.Usage `json:"usage"`
}

// modelRun is one execution of a model node.
type modelRun struct {
	c        *vm.Call
	name     string // "provider/model"
	provider llm.Provider
	req      llm.Request // everything but the messages

	stream, streamReasoning, streamTools, userEvent, drop bool

	maxRounds      int
	timeout        time.Duration
	pace           time.Duration    // the pause between streamed chunks
	predict        map[string][]any // PredictState entries by tool name
	retries        int
	first, longest time.Duration // the backoff

	schema   *jsonschema.Schema // output_schema compiled, or nil
	backend  map[string]*vm.Tool
	mcp      map[string]mcpTool // the MCP servers' tools offered by the servers' names
	pool     *mcpclient.Pool
	observe  ToolCallObserver // Options.ToolCall
	frontend map[string]bool
	params   map[string]any                // tool parameters, evaluated
	compiled map[string]*jsonschema.Schema // parameters compiled; nil for a frontend tool's schema that does not compile

	st modelState
	// chatIn is how many messages of st.Messages, from st.History, came
	// from chat_in as the frame holds it now; 0 when unknown (the
	// conversation was restored from a wait, whose chat_in may have
	// changed since). chatSum is their digest, once a checkpoint made it.
	chatIn  int
	chatSum string
}

// agentRoot is the path of $agent, where the model a request chose is
// recorded (vm.RequestModel).
var agentRoot = &vm.Path{Root: "agent"}

// newModelRun reads the node's keys, resolves the provider and gathers
// the tools.
func newModelRun(ctx context.Context, c *vm.Call, opts Options) (*modelRun, error) {
	m := &modelRun{
		c:        c,
		pool:     opts.MCP,
		observe:  opts.ToolCall,
		mcp:      map[string]mcpTool{},
		backend:  map[string]*vm.Tool{},
		frontend: map[string]bool{},
		params:   map[string]any{},
		compiled: map[string]*jsonschema.Schema{},
	}
	var name, schema, tools any
	var backoff string
	temperature := math.NaN()
	if err := c.UnpackKeys("model", &name, "stream", &m.stream, "stream_reasoning", &m.streamReasoning,
		"stream_tool_calls", &m.streamTools, "user_event", &m.userEvent, "drop_tool_calls", &m.drop,
		"timeout", &m.timeout, "pace", &m.pace, "max_tool_rounds", &m.maxRounds, "retry", &m.retries,
		"max_tokens", &m.req.MaxTokens, "temperature", &temperature, "backoff", &backoff,
		"output_schema", &schema, "tools", &tools); err != nil {
		return nil, err
	}
	m.name = modelText(name)
	for _, k := range []struct {
		name string
		n    int
	}{{"max_tool_rounds", m.maxRounds}, {"retry", m.retries}, {"max_tokens", m.req.MaxTokens}} {
		if k.n < 0 {
			return nil, vm.Errorf(vm.ErrNode, "%s must not be negative, found %d", k.name, k.n)
		}
	}
	if !math.IsNaN(temperature) {
		m.req.Temperature = &temperature
	}
	m.first, m.longest = time.Second, 8*time.Second
	if backoff != "" {
		first, longest, err := vm.ParseBackoff(backoff)
		if err != nil {
			return nil, vm.Errorf(vm.ErrNode, "%v", err)
		}
		m.first, m.longest = first, longest
	}
	if schema != nil {
		sch, err := compileSchema(schema)
		if err != nil {
			return nil, vm.Errorf(vm.ErrNode, "output_schema is not a valid JSON Schema: %s", schemaError(err))
		}
		m.schema, m.req.Schema = sch, schema
	}
	if err := m.gatherTools(ctx, tools); err != nil {
		return nil, err
	}
	var err error
	if m.predict, err = modelPredictions(c); err != nil {
		return nil, err
	}

	if m.name == "" {
		agent, _ := c.Get(agentRoot).(map[string]any)
		m.name = cmp.Or(vm.RequestModel(agent), opts.DefaultModel)
	}
	switch {
	case opts.Models == nil:
		return nil, vm.Errorf(vm.ErrNode, "no model providers are configured")
	case m.name == "":
		return nil, vm.Errorf(vm.ErrNode, "the node names no model and no default model is set: set its model key, such as model = \"openai/gpt-4o-mini\", or the default model (AGUIC_MODEL)")
	}
	p, err := opts.Models(m.name)
	if err != nil {
		return nil, vm.Errorf(vm.ErrNode, "model %q: %v", m.name, err)
	}
	if p == nil {
		return nil, vm.Errorf(vm.ErrNode, "model %q: no provider serves it", m.name)
	}
	m.provider = p
	m.req.Model = m.name
	if _, model, ok := llm.SplitModel(m.name); ok {
		m.req.Model = model
	}
	return m, nil
}

// gatherTools lists the backend tools the tools key names, the tools of
// the MCP servers it names, and the frontend tools its value, val, holds.
func (m *modelRun) gatherTools(ctx context.Context, val any) error {
	v := m.c.Node.Keys["tools"]
	if v == nil {
		return nil
	}
	for _, name := range v.Tools {
		t := m.c.Workflow().Tool(name)
		if t == nil {
			return vm.Errorf(vm.ErrInternal, "tools: the workflow has no tool %q", name)
		}
		params, err := m.c.Eval(t.Parameters)
		if err != nil {
			return err
		}
		desc := t.Description
		if params == nil || desc == "" {
			if live, err := m.liveMCPTool(ctx, t); err != nil {
				return err
			} else if live != nil {
				params = cmp.Or(params, any(live.InputSchema))
				desc = cmp.Or(desc, live.Description)
			}
		}
		if params == nil {
			params = map[string]any{"type": "object"}
		}
		m.backend[name] = t
		m.params[name] = params
		m.req.Tools = append(m.req.Tools, llm.Tool{Name: name, Description: desc, Parameters: params})
	}
	for _, name := range v.Servers {
		if err := m.addServer(ctx, name); err != nil {
			return err
		}
	}
	return m.addFrontend(val)
}

// addFrontend adds the frontend tools of an evaluated tools value: lists
// are flattened, nil (a backend tool's name) skipped, objects are tools.
func (m *modelRun) addFrontend(v any) error {
	switch x := v.(type) {
	case nil:
	case []any:
		for _, e := range x {
			if err := m.addFrontend(e); err != nil {
				return err
			}
		}
	case string:
		if m.backend[x] == nil && m.c.Server(x) == nil {
			return vm.Errorf(vm.ErrNode, "tools: %q is not a tool of this workflow", x)
		}
	case map[string]any:
		name, _ := x["name"].(string)
		if name == "" {
			return vm.Errorf(vm.ErrNode, "tools: a frontend tool needs a name, found %s", vm.Text(x))
		}
		if m.backend[name] != nil || m.frontend[name] {
			return nil // a backend tool of the same name wins
		}
		desc, _ := x["description"].(string)
		params := x["parameters"]
		if params == nil {
			params = map[string]any{"type": "object"}
		}
		m.frontend[name] = true
		m.params[name] = params
		m.req.Tools = append(m.req.Tools, llm.Tool{Name: name, Description: desc, Parameters: params})
	default:
		return vm.Errorf(vm.ErrNode, "tools: expected tool names and {name, description, parameters} objects, found %s", modelDescribe(v))
	}
	return nil
}

// exec starts the conversation, continues it with frontend tool results,
// or goes on with the one a checkpoint saved in the middle of a tool round,
// and runs the tool loop.
func (m *modelRun) exec(ctx context.Context) (vm.Step, error) {
	var todo []llm.ToolCall
	var wait []string
	var err error
	switch {
	case m.c.Resume != nil:
		wait, err = m.resume()
	case m.c.State() != nil:
		todo, wait, err = m.goOn()
	default:
		wait, err = m.start()
	}
	if err != nil {
		return vm.Step{}, err
	}
	step, err := m.loop(ctx, todo, wait)
	if err != nil && m.c.State() != nil {
		// A conversation saved in the middle of the loop is over: a later
		// visit of the node starts afresh.
		m.c.SetState(nil)
	}
	return step, err
}

// wait saves the conversation and ends the run waiting for the results
// of the frontend tool calls ids.
func (m *modelRun) wait(ids []string) vm.Step {
	m.st.Pending = ids
	m.c.SetState(m.st)
	return vm.Step{Wait: &vm.Wait{Kind: vm.WaitTool, ToolCallIDs: ids}}
}

// start builds the first request and emits the prompt as a silent user
// message. A tool call of chat_in without a result gets an error result,
// except the calls of this node's frontend tools left open at the end of
// chat_in when the node has no prompt and no images (a stateless request
// that answers some of them): start returns their ids to wait for.
func (m *modelRun) start() ([]string, error) {
	var systemV, chatIn, promptV, imagesV any
	if err := m.c.UnpackKeys("system", &systemV, "chat_in", &chatIn, "prompt", &promptV, "images", &imagesV); err != nil {
		return nil, err
	}
	system, prompt := modelText(systemV), modelText(promptV)
	images, err := modelImages(imagesV)
	if err != nil {
		return nil, vm.Errorf(vm.ErrNode, "images: %v", err)
	}
	m.st = modelState{V: modelStateVersion, Calls: []any{}}
	if system != "" {
		m.st.Messages = append(m.st.Messages, llm.Message{Role: llm.RoleSystem, Content: system})
	}
	m.st.History = len(m.st.Messages)
	hist, open, err := modelHistory(chatIn)
	if err != nil {
		return nil, err
	}
	var wait []string
	for _, tc := range open {
		if prompt == "" && len(images) == 0 && m.frontend[tc.Name] {
			wait = append(wait, tc.ID)
			continue
		}
		hist = append(hist, llm.Message{Role: llm.RoleTool, Content: modelNoResult, ToolCallID: tc.ID})
	}
	m.st.Messages = append(m.st.Messages, hist...)
	m.chatIn = len(hist)
	if len(wait) > 0 {
		m.st.Replies = len(m.st.Messages)
		return wait, nil
	}
	if prompt != "" || len(images) > 0 {
		m.st.Messages = append(m.st.Messages, llm.Message{Role: llm.RoleUser, Content: prompt, Images: images})
	}
	if prompt != "" {
		if m.userEvent {
			id := m.c.NextID("msg")
			for _, e := range []vm.Event{
				{Type: vm.TextStart, MessageID: id, Role: llm.RoleUser},
				{Type: vm.TextContent, MessageID: id, Delta: prompt},
				{Type: vm.TextEnd, MessageID: id},
			} {
				e.Silent = true
				if err := m.c.Emit(e); err != nil {
					return nil, err
				}
			}
		}
	}
	m.st.Replies = len(m.st.Messages)
	return nil, nil
}

// modelNoResult is the result a tool call of the history that never got
// one is given, so that the model API takes the history.
const modelNoResult = "error: the tool call got no result"

// modelHistory reads chat_in's value: its messages, each tool call that
// lost its answer given modelNoResult (modelAnswerLost), and the calls of
// its last reply left without a result.
func modelHistory(chatIn any) ([]llm.Message, []llm.ToolCall, error) {
	hist, err := llm.FromValue(chatIn)
	if err != nil {
		return nil, nil, vm.Errorf(vm.ErrNode, "chat_in: %v", err)
	}
	hist, open := modelAnswerLost(hist)
	return hist, open, nil
}

// modelAnswerLost gives each tool call of hist whose message is followed
// by another message, but not by a result for it, the result
// modelNoResult after the results that message did get. The calls of the
// last message with tool calls, when only tool results follow it, are
// left unanswered and returned.
func modelAnswerLost(hist []llm.Message) (out []llm.Message, open []llm.ToolCall) {
	out = make([]llm.Message, 0, len(hist))
	for i := 0; i < len(hist); {
		msg := hist[i]
		out = append(out, msg)
		i++
		if msg.Role != llm.RoleAssistant || len(msg.ToolCalls) == 0 {
			continue
		}
		answered := map[string]bool{}
		for ; i < len(hist) && hist[i].Role == llm.RoleTool; i++ {
			answered[hist[i].ToolCallID] = true
			out = append(out, hist[i])
		}
		var lost []llm.ToolCall
		for _, tc := range msg.ToolCalls {
			if !answered[tc.ID] {
				lost = append(lost, tc)
			}
		}
		if i == len(hist) {
			return out, lost
		}
		for _, tc := range lost {
			out = append(out, llm.Message{Role: llm.RoleTool, Content: modelNoResult, ToolCallID: tc.ID})
		}
	}
	return out, nil
}

// restore reads the conversation the node saved in the frame.
func (m *modelRun) restore() error {
	saved := m.c.State()
	if saved == nil {
		return vm.Errorf(vm.ErrInternal, "the model node resumes without a saved conversation")
	}
	data, err := json.Marshal(saved)
	if err == nil {
		err = json.Unmarshal(data, &m.st)
	}
	if err != nil {
		return vm.Errorf(vm.ErrInternal, "the model node's saved conversation: %v", err)
	}
	if m.st.V != modelStateVersion {
		return vm.Errorf(vm.ErrInternal, "the model node's saved conversation has version %d, want %d", m.st.V, modelStateVersion)
	}
	return nil
}

// goOn restores the conversation a checkpoint saved in the middle of a
// tool round (a run recovered after a crash starts at the node with it)
// and returns the calls of the last reply still to run and the frontend
// calls of that reply left to the client so far. The calls that have a
// result are not run again.
func (m *modelRun) goOn() (todo []llm.ToolCall, pending []string, err error) {
	if err := m.restore(); err != nil {
		return nil, nil, err
	}
	if !m.st.Running {
		return nil, nil, vm.Errorf(vm.ErrInternal, "the model node starts with a saved conversation that waits for tool results, and no resume")
	}
	last := len(m.st.Messages) - 1
	for last >= 0 && m.st.Messages[last].Role == llm.RoleTool {
		last--
	}
	done := len(m.st.Messages) - 1 - last + len(m.st.Pending)
	if last < 0 || m.st.Messages[last].Role != llm.RoleAssistant || done > len(m.st.Messages[last].ToolCalls) {
		return nil, nil, vm.Errorf(vm.ErrInternal, "the model node's saved conversation does not end in a tool round")
	}
	todo, pending = m.st.Messages[last].ToolCalls[done:], m.st.Pending
	m.st.Pending, m.st.Running = nil, false
	if m.st.Omitted > 0 {
		if err := m.rereadChat(); err != nil {
			return nil, nil, err
		}
	}
	return todo, pending, nil
}

// rereadChat puts back the messages of chat_in that a checkpoint left out
// of the saved conversation (modelRun.checkpoint), from chat_in as the
// frame holds it, which must give the same messages.
func (m *modelRun) rereadChat() error {
	var chatIn any
	if err := m.c.UnpackKeys("chat_in", &chatIn); err != nil {
		return err
	}
	hist, open, err := modelHistory(chatIn)
	if err != nil {
		return err
	}
	for _, tc := range open {
		hist = append(hist, llm.Message{Role: llm.RoleTool, Content: modelNoResult, ToolCallID: tc.ID})
	}
	if len(hist) != m.st.Omitted || modelChatSum(hist) != m.st.ChatSum {
		return vm.Errorf(vm.ErrInternal, "the model node's chat_in is not what it was when its conversation was saved")
	}
	h := m.st.History
	m.st.Messages = slices.Concat(m.st.Messages[:h], hist, m.st.Messages[h:])
	m.chatIn, m.chatSum = m.st.Omitted, m.st.ChatSum
	m.st.Omitted, m.st.ChatSum = 0, ""
	return nil
}

// modelPlainPath matches an expression that only reads a path of the
// context, such as $input.chat: it gives the same value again as long as
// the context has not changed.
var modelPlainPath = regexp.MustCompile(`^\$[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// modelChatSum is a digest of messages.
func modelChatSum(msgs []llm.Message) string {
	data, _ := json.Marshal(msgs)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

// resume restores the saved conversation and adds the results of the
// frontend tool calls it waits for, from the resume's tool results. A request
// may answer some of them: it returns the ids still to wait for.
func (m *modelRun) resume() ([]string, error) {
	if err := m.restore(); err != nil {
		return nil, err
	}
	var msgs []llm.Message
	var missing []string
	for _, id := range m.st.Pending {
		r, ok := m.c.Resume.ToolResult(id)
		if !ok {
			missing = append(missing, id)
			continue
		}
		content, ok := modelMessageText(r.Content)
		if !ok {
			return nil, vm.Errorf(vm.ErrResume, "the result of tool call %q has content that is not text: %s", id, vm.Text(r.Content))
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleTool, Content: content, ToolCallID: id})
	}
	if len(msgs) == 0 {
		return nil, vm.Errorf(vm.ErrResume, "the model waits for the result of %s, and the request has no tool message for it", modelCallIDs(missing))
	}
	for _, msg := range msgs {
		if err := m.c.Emit(vm.Event{Type: vm.ToolCallResult, MessageID: vm.ToolPrefix + msg.ToolCallID, ToolCallID: msg.ToolCallID, Content: msg.Content}); err != nil {
			return nil, err
		}
	}
	m.st.Messages = append(m.st.Messages, msgs...)
	m.st.Pending = nil
	m.c.SetState(nil)
	return missing, nil
}

// modelCallIDs names tool calls for a message: tool call "a", or tool
// calls "a" and "b".
func modelCallIDs(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = fmt.Sprintf("%q", id)
	}
	if len(q) == 1 {
		return "tool call " + q[0]
	}
	return "tool calls " + strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}

// modelImages reads the images key: nil, or a list of URLs and of
// {url} or {data, mimeType} objects.
func modelImages(v any) ([]llm.Image, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want a list of images, found %s", modelDescribe(v))
	}
	images := make([]llm.Image, 0, len(list))
	for i, e := range list {
		var img llm.Image
		switch x := e.(type) {
		case string:
			img.URL = x
		case map[string]any:
			img.URL, _ = x["url"].(string)
			img.Data, _ = x["data"].(string)
			img.MimeType, _ = x["mimeType"].(string)
		}
		if (img.URL == "") == (img.Data == "") {
			return nil, fmt.Errorf("image %d: want a URL or an object with url or base64 data, found %s", i+1, modelDescribe(e))
		}
		images = append(images, img)
	}
	return images, nil
}

// modelMessageText reads a message's content: a string, or a list of parts
// whose text parts it joins.
func modelMessageText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case nil:
		return "", true
	case []any:
		var b strings.Builder
		for _, p := range x {
			part, _ := p.(map[string]any)
			if part == nil || part["type"] != "text" {
				return "", false
			}
			s, _ := part["text"].(string)
			b.WriteString(s)
		}
		return b.String(), true
	}
	return "", false
}

// loop handles the tool calls todo of the model's last reply, then calls
// the model until it answers without tool calls, handling the calls of
// each reply in between: it runs backend tool calls and suspends on
// frontend tool calls, once the round's other calls are handled. pending
// are the frontend calls of the last reply already left to the client.
// After each backend tool call the conversation is saved and the run
// checkpointed, so that a crash repeats at most the call in flight.
func (m *modelRun) loop(ctx context.Context, todo []llm.ToolCall, pending []string) (vm.Step, error) {
	for {
		for _, tc := range todo {
			m.st.Calls = append(m.st.Calls, map[string]any{"id": tc.ID, "name": tc.Name, "arguments": modelArguments(tc.Arguments)})
			var content string
			var err error
			if m.frontend[tc.Name] {
				// The client runs only a call it can: one whose
				// arguments fit the tool. The model hears of the others.
				_, content, err = m.toolArgs(tc)
				if err != nil {
					return vm.Step{}, err
				}
				if content == "" {
					pending = append(pending, tc.ID)
					continue
				}
				if err := m.c.Emit(vm.Event{Type: vm.ToolCallResult, MessageID: vm.ToolPrefix + tc.ID, ToolCallID: tc.ID, Content: content}); err != nil {
					return vm.Step{}, err
				}
				m.st.Messages = append(m.st.Messages, llm.Message{Role: llm.RoleTool, Content: content, ToolCallID: tc.ID})
				continue
			}
			content, err = m.runTool(ctx, tc)
			if err != nil {
				return vm.Step{}, err
			}
			if m.streamTools {
				if err := m.c.Emit(vm.Event{Type: vm.ToolCallResult, MessageID: vm.ToolPrefix + tc.ID, ToolCallID: tc.ID, Content: content}); err != nil {
					return vm.Step{}, err
				}
			}
			m.st.Messages = append(m.st.Messages, llm.Message{Role: llm.RoleTool, Content: content, ToolCallID: tc.ID})
			if err := m.checkpoint(pending); err != nil {
				return vm.Step{}, err
			}
		}
		if len(pending) > 0 {
			return m.wait(pending), nil
		}
		resp, err := m.call(ctx)
		if err != nil {
			return vm.Step{}, err
		}
		m.st.Usage.InputTokens += resp.Usage.InputTokens
		m.st.Usage.OutputTokens += resp.Usage.OutputTokens
		if u := resp.Usage; u.InputTokens != 0 || u.OutputTokens != 0 {
			e := vm.Event{Type: vm.Usage, Name: m.name, Value: vm.UsageValue{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}}
			if err := m.c.Emit(e); err != nil {
				return vm.Step{}, err
			}
		}
		if resp.Text != "" || len(resp.ToolCalls) > 0 {
			m.st.Messages = append(m.st.Messages, llm.Message{Role: llm.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls})
		}
		if len(resp.ToolCalls) == 0 {
			return m.finish(resp.Text)
		}
		m.st.Round++
		if m.st.Round > m.maxRounds {
			return vm.Step{}, vm.Errorf(vm.ErrNode, "the model asked for tool round %d, more than max_tool_rounds (%d) allows", m.st.Round, m.maxRounds)
		}
		todo = resp.ToolCalls
	}
}

// checkpoint saves the conversation in the node's state, marked Running
// with the frontend calls of the round left to the client so far, and
// checkpoints the run (see vm.Call.Checkpoint): a run recovered from there
// goes on with the round's other calls (goOn). When chat_in only reads
// a path (or is absent), the saved conversation leaves its messages out,
// since the frame holds them: what a checkpoint writes grows with what
// the node added, not with the length of the history.
func (m *modelRun) checkpoint(pending []string) error {
	if !m.c.CanCheckpoint() {
		return nil
	}
	st := m.st
	st.Pending, st.Running = pending, true
	if v := m.c.Node.Keys["chat_in"]; m.chatIn > 0 && (v == nil || modelPlainPath.MatchString(strings.TrimSpace(v.Source))) {
		h, n := m.st.History, m.chatIn
		if m.chatSum == "" {
			m.chatSum = modelChatSum(m.st.Messages[h : h+n])
		}
		st.Messages = slices.Concat(m.st.Messages[:h], m.st.Messages[h+n:])
		st.Omitted, st.ChatSum = n, m.chatSum
	}
	m.c.SetState(st)
	return m.c.Checkpoint()
}

// finish parses structured output, writes chat_out and makes the result.
func (m *modelRun) finish(text string) (vm.Step, error) {
	if m.c.State() != nil {
		m.c.SetState(nil) // the conversation a checkpoint saved
	}
	res := map[string]any{
		"text":       text,
		"tool_calls": m.st.Calls,
		"usage":      map[string]any{"inputTokens": m.st.Usage.InputTokens, "outputTokens": m.st.Usage.OutputTokens},
	}
	if m.schema != nil {
		v, err := parseModelJSON(text)
		if err != nil {
			return vm.Step{}, vm.Errorf(vm.ErrNode, "the model's reply is not the JSON output_schema asks for: %v", err)
		}
		if err := m.schema.Validate(v); err != nil {
			return vm.Step{}, vm.Errorf(vm.ErrNode, "the model's reply does not match output_schema: %s", schemaError(err))
		}
		res["value"] = v
	}
	if p := m.c.KeyPath("chat_out"); p != nil {
		var out []llm.Message
		for i, msg := range m.st.Messages[m.st.History:] {
			if m.drop && m.st.History+i >= m.st.Replies {
				if msg.Role == llm.RoleTool {
					continue
				}
				msg.ToolCalls = nil
				if msg.Role == llm.RoleAssistant && msg.Content == "" {
					continue
				}
			}
			out = append(out, msg)
		}
		if err := m.c.Set(p, llm.ToValue(out)); err != nil {
			return vm.Step{}, vm.Errorf(vm.ErrNode, "chat_out: %v", err)
		}
	}
	return vm.Step{Result: res}, nil
}

// runTool runs a backend tool call and returns the content sent back to
// the model. Failures the model can react to become "error: …" content.
func (m *modelRun) runTool(ctx context.Context, tc llm.ToolCall) (string, error) {
	t := m.backend[tc.Name]
	mt, isMCP := m.mcp[tc.Name]
	if t == nil && !isMCP {
		return fmt.Sprintf("error: there is no tool %q", tc.Name), nil
	}
	args, problem, err := m.toolArgs(tc)
	if err != nil || problem != "" {
		return problem, err
	}
	if isMCP {
		t = nil // a server's tool goes before the workflow's of its name
	}
	out, err := m.callTool(ctx, tc, t, mt, args)
	if err != nil {
		if ctx.Err() != nil {
			return "", err
		}
		msg := err.Error()
		var ve *vm.Error
		if errors.As(err, &ve) {
			if ve.Code == vm.ErrInternal || ve.Code == vm.ErrCancelled || ve.Code == vm.ErrDeadline {
				return "", err
			}
			msg = ve.Message
		}
		return "error: " + msg, nil
	}
	if out == nil {
		return "null", nil
	}
	return vm.Text(out), nil
}

// callTool runs a backend tool, t of the workflow or else mt of an MCP
// server, and tells Options.ToolCall.
func (m *modelRun) callTool(ctx context.Context, tc llm.ToolCall, t *vm.Tool, mt mcpTool, args map[string]any) (any, error) {
	end := func(error) {}
	if m.observe != nil {
		kind := "mcp"
		switch {
		case t == nil:
		case t.Impl != nil:
			kind = t.Impl.Kind
		default:
			kind = "expr"
		}
		ctx, end = m.observe(ctx, ToolCallInfo{Kind: kind, Name: tc.Name, ID: tc.ID})
	}
	var out any
	var err error
	if t == nil {
		out, err = mt.run(ctx, m.pool, args)
	} else {
		out, err = m.c.RunTool(ctx, t, args)
	}
	end(err)
	return out, err
}

// toolArgs parses the arguments of a call and checks them against the
// tool's parameters. Arguments the tool cannot take give the result that
// tells the model why, as problem.
func (m *modelRun) toolArgs(tc llm.ToolCall) (args map[string]any, problem string, err error) {
	args, ok := modelArguments(tc.Arguments).(map[string]any)
	if !ok {
		return nil, fmt.Sprintf("error: the arguments must be a JSON object, found %s", tc.Arguments), nil
	}
	sch, err := m.paramSchema(tc.Name)
	if err != nil {
		return nil, "", err
	}
	if sch != nil {
		if err := sch.Validate(args); err != nil {
			return nil, "error: invalid arguments: " + schemaError(err), nil
		}
	}
	return args, "", nil
}

// paramSchema compiles the parameters of a tool once per run. The
// parameters of a frontend tool come from the client: when they are not a
// schema the node can compile, the client's tool checks its arguments
// itself and paramSchema returns nil.
func (m *modelRun) paramSchema(name string) (*jsonschema.Schema, error) {
	if s, ok := m.compiled[name]; ok {
		return s, nil
	}
	s, err := compileSchema(m.params[name])
	if err != nil {
		if m.frontend[name] {
			s = nil
		} else {
			return nil, vm.Errorf(vm.ErrNode, "tool %q: parameters is not a valid JSON Schema: %s", name, schemaError(err))
		}
	}
	m.compiled[name] = s
	return s, nil
}

// call sends the conversation to the provider, streaming the answer, with
// the node's timeout per try and its retries.
func (m *modelRun) call(ctx context.Context) (*llm.Response, error) {
	req := m.req
	req.Messages = m.st.Messages
	for try := 1; ; try++ {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if m.timeout > 0 {
			actx, cancel = context.WithTimeout(ctx, m.timeout)
		}
		s := &modelStream{m: m, ctx: actx, pace: &pacer{every: m.pace}}
		resp, err := m.provider.Stream(actx, &req, s.chunk)
		cancel()
		if err == nil && s.emitErr == nil {
			return s.finish(resp)
		}
		if err := s.abort(); err != nil && s.emitErr == nil {
			s.emitErr = err
		}
		switch {
		case ctx.Err() != nil:
			return nil, runEndedErr(ctx)
		case s.emitErr != nil:
			return nil, s.emitErr
		}
		code := vm.ErrNode
		if m.timeout > 0 && errors.Is(err, context.DeadlineExceeded) {
			code, err = vm.ErrTimeout, fmt.Errorf("no answer within the timeout of %s", m.timeout)
		}
		if s.emitted || !(code == vm.ErrTimeout || llm.IsRetryable(err)) || try > m.retries {
			if try > 1 {
				return nil, vm.Errorf(code, "model %q failed after %d tries: %v", m.name, try, err)
			}
			return nil, vm.Errorf(code, "model %q: %v", m.name, err)
		}
		wait := m.first << (try - 1)
		if wait > m.longest || wait <= 0 {
			wait = m.longest
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, runEndedErr(ctx)
		case <-t.C:
		}
	}
}

// modelArguments decodes tool call arguments; text that is not JSON stays
// text. Empty arguments are an empty object.
func modelArguments(s string) any {
	if strings.TrimSpace(s) == "" {
		return map[string]any{}
	}
	v, err := decodeModelJSON(s)
	if err != nil {
		return s
	}
	return v
}

// parseModelJSON decodes a reply that should be JSON, allowing a
// surrounding ``` fence.
func parseModelJSON(text string) (any, error) {
	s := strings.TrimSpace(text)
	if rest, ok := strings.CutPrefix(s, "```"); ok {
		if _, body, ok := strings.Cut(rest, "\n"); ok {
			s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(body), "```"))
		}
	}
	if s == "" {
		return nil, errors.New("the reply is empty")
	}
	return decodeModelJSON(s)
}

// decodeModelJSON decodes one JSON value and nothing after it.
func decodeModelJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("text follows the JSON value")
	}
	return vm.Normalize(v), nil
}

// modelText reads a text key's value: nil is "", other values their text.
func modelText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		return vm.Text(v)
	}
}

// modelDescribe names a value for a message: its JSON, shortened.
func modelDescribe(v any) string {
	var s string
	switch x := vm.Normalize(v).(type) {
	case nil:
		s = "null"
	case string:
		s = fmt.Sprintf("%q", x)
	default:
		s = vm.Text(x)
	}
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}
