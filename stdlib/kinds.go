package stdlib

import "github.com/aguic/aguic/vm"

// kinds returns a fresh declaration of every node kind, in the order of the
// language reference.
func kinds() []*vm.KindSpec {
	return []*vm.KindSpec{
		say(), model(), frontendTool(), backendTool(), suspend(), interrupt(),
		stateSync(), stateSnapshot(), stateDelta(),
		activitySync(), activitySnapshot(), activityDelta(),
		emit(), httpKind(), call(), output(),
	}
}

func say() *vm.KindSpec {
	return &vm.KindSpec{
		Name: "say",
		Pure: true,
		Doc:  "Sends a text message to the client as TEXT_MESSAGE_START, TEXT_MESSAGE_CONTENT and TEXT_MESSAGE_END and stores it in the thread's history.",
		Arg:  &vm.ArgSpec{Name: "text", Type: vm.TypeString, Required: true, Doc: "The message text, a template: <<expr>> interpolates."},
		Keys: []vm.KeySpec{
			{Name: "role", Type: vm.TypeString, Default: "assistant", Enum: []string{"assistant", "user", "system"},
				Doc: "Who the message is from: assistant, user or system."},
			{Name: "silent", Type: vm.TypeBool, Default: false,
				Doc: "Store the message in the history without streaming it to the client live."},
			{Name: "hidden", Type: vm.TypeBool, Default: false,
				Doc: "Stream the message live but leave it out of every later replay and history."},
			{Name: "id", Type: vm.TypeString,
				Doc: "The message id; a fresh unique id when absent."},
		},
		Result:  "{id, text}",
		Example: `say "Hello <<$agent.latestUserMessage.content>>"`,
	}
}

func model() *vm.KindSpec {
	return &vm.KindSpec{
		Name: "model",
		Doc:  "Calls a language model with chat_in and the prompt, streams its text, reasoning and tool calls to the client, runs backend tool calls inside the node, and on a call of one of the client's frontend tools ends the run with pendingToolCallIds (a conversation resumes the node when the tool result arrives).",
		Keys: []vm.KeySpec{
			{Name: "model", Type: vm.TypeString,
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

func frontendTool() *vm.KindSpec {
	return &vm.KindSpec{
		Name: "frontend_tool",
		Pure: true,
		Doc:  "Asks the client to run one of its tools (TOOL_CALL_START, TOOL_CALL_ARGS, TOOL_CALL_END) and suspends; on resume the one incoming message is either that call's result, which is emitted as TOOL_CALL_RESULT and stored before `on result` runs, or anything else, which abandons the call before `on other` runs.",
		Arg:  &vm.ArgSpec{Name: "tool name", Type: vm.TypeString, Required: true, Doc: "The name of the client's tool to call."},
		Keys: []vm.KeySpec{
			argsKey(),
			persistKey("none"),
			{Name: "chat", Type: vm.TypePath, Writes: true, Path: "$input.chat",
				Doc: "The chat history persist appends to, and from which an abandoned call's messages are removed; $input.chat when absent and persist is not none."},
			{Name: "hide_after", Type: vm.TypeBool, Default: false,
				Doc: "Once the call is handled, hide its tool-call events from replay so a reloaded client does not ask again."},
		},
		Handlers: []vm.Handler{
			{Name: "result", Required: true,
				Doc: "Runs when the incoming message is this call's tool result, after the result is stored."},
			{Name: "other", Required: true,
				Doc: "Runs when the incoming message is anything else, after the call is abandoned: the chat messages it wrote are removed and its events hidden from replay."},
		},
		Suspend: vm.SuspendAlways,
		Convo:   true,
		Result:  "the tool result message {toolCallId, messageId, content, value?}",
		Example: "confirm: frontend_tool \"confirm_refund\" {\n" +
			"  args = {orderId: $order.id}\n" +
			"  on result { say \"Done.\" }\n" +
			"  on other { say \"Cancelled.\" }\n" +
			"} -> $approval",
	}
}

func backendTool() *vm.KindSpec {
	return &vm.KindSpec{
		Name: "backend_tool",
		Pure: true,
		Doc:  "Emits a whole tool call with its result at once (TOOL_CALL_START, TOOL_CALL_ARGS, TOOL_CALL_END, TOOL_CALL_RESULT) without suspending, so the client renders data the workflow already has as a tool call.",
		Arg:  &vm.ArgSpec{Name: "name", Type: vm.TypeString, Required: true, Doc: "The tool name shown to the client."},
		Keys: []vm.KeySpec{
			argsKey(),
			{Name: "result", Type: vm.TypeAny, Required: true,
				Doc: "The tool's result, sent as the TOOL_CALL_RESULT content: a string as it is, any other value as JSON."},
			persistKey("call_and_result"),
			{Name: "chat", Type: vm.TypePath, Writes: true, Path: "$input.chat",
				Doc: "The chat history persist appends to; $input.chat when absent and persist is not none."},
		},
		Result: "{toolCallId, result}",
		Example: "backend_tool \"lookup_weather\" {\n" +
			"  args   = {city: \"Sydney\"}\n" +
			"  result = \"Sunny\"\n" +
			"} -> $weather",
	}
}

func suspend() *vm.KindSpec {
	return &vm.KindSpec{
		Name: "suspend",
		Pure: true,
		Doc:  "Checkpoints the conversation and ends the run with RUN_FINISHED, emitting nothing else; the thread's next request resumes the flow here with that turn's $agent.",
		Keys: []vm.KeySpec{
			{Name: "merge", Type: vm.TypeObject, Writes: true,
				Doc: "An object merged into the context when the conversation resumes here."},
		},
		Suspend: vm.SuspendAlways,
		Convo:   true,
		Example: "next_turn: suspend",
	}
}

func interrupt() *vm.KindSpec {
	return &vm.KindSpec{
		Name: "interrupt",
		Pure: true,
		Doc:  `Checkpoints the conversation and ends the run with RUN_FINISHED outcome {type: "interrupt", interrupts: [...]}; the next request resumes it with a RunAgentInput.resume entry for this interrupt.`,
		Keys: []vm.KeySpec{
			{Name: "reason", Type: vm.TypeString, Required: true,
				Doc: `Why the run stopped, a short code the client acts on, such as "approval".`},
			{Name: "message", Type: vm.TypeString,
				Doc: "A human-readable explanation for the client to show."},
			{Name: "response_schema", Type: vm.TypeObject,
				Doc: "A JSON Schema the resume payload must match; a payload that does not ends the resumed run with RUN_ERROR."},
			{Name: "expires", Type: vm.TypeDuration,
				Doc: `How long the interrupt stays open, such as "24h"; after that it can only be cancelled (a resume that resolves it ends with RUN_ERROR). It never expires when absent.`},
			{Name: "tool_call_id", Type: vm.TypeString,
				Doc: "The id of the tool call the interrupt is about, sent as its toolCallId."},
			{Name: "metadata", Type: vm.TypeObject,
				Doc: "Extra data sent with the interrupt as its metadata."},
		},
		Suspend: vm.SuspendAlways,
		Convo:   true,
		Result:  "{status, payload}",
		Example: "approve: interrupt {\n" +
			"  reason  = \"approval\"\n" +
			"  message = \"Refund order <<$order.id>>?\"\n" +
			"} -> $decision",
	}
}

func stateSync() *vm.KindSpec {
	return &vm.KindSpec{
		Name: "state sync",
		Pure: true,
		Doc:  "Compares $agent.state with its hidden baseline $agent._hidden.state, emits STATE_DELTA (RFC 6902) when that is smaller and STATE_SNAPSHOT otherwise, then makes $agent.state the new baseline.",
		Keys: []vm.KeySpec{
			{Name: "snapshots_only", Type: vm.TypeBool, Default: false,
				Doc: "Always emit STATE_SNAPSHOT, never STATE_DELTA."},
		},
		Example: "state sync",
	}
}

func stateSnapshot() *vm.KindSpec {
	return &vm.KindSpec{
		Name:    "state snapshot",
		Pure:    true,
		Doc:     "Emits STATE_SNAPSHOT, setting the client's whole state to the given value.",
		Arg:     &vm.ArgSpec{Name: "state", Type: vm.TypeAny, Required: true, Doc: "The client's new state, usually an object."},
		Example: "state snapshot $agent.state",
	}
}

func stateDelta() *vm.KindSpec {
	return &vm.KindSpec{
		Name:    "state delta",
		Pure:    true,
		Doc:     "Emits STATE_DELTA, changing the client's state by the given RFC 6902 JSON Patch operations.",
		Arg:     &vm.ArgSpec{Name: "patch", Type: vm.TypeList, Required: true, Doc: `The RFC 6902 operations, such as [{op: "replace", path: "/mode", value: "review"}].`},
		Example: `state delta [{op: "replace", path: "/mode", value: "review"}]`,
	}
}

func activitySync() *vm.KindSpec {
	return &vm.KindSpec{
		Name: "activity sync",
		Pure: true,
		Doc:  "Compares the value at `from` with the activity's hidden baseline, emits ACTIVITY_DELTA (RFC 6902) when that is smaller and ACTIVITY_SNAPSHOT otherwise, then makes the value the new baseline.",
		Arg:  activityID(),
		Keys: []vm.KeySpec{
			activityType(),
			{Name: "from", Type: vm.TypePath, Required: true,
				Doc: "The context path holding the activity's content, such as $activity.plan."},
			{Name: "replace", Type: vm.TypeBool, Default: true,
				Doc: "Whether the first snapshot of the run replaces an existing activity message with this id; false keeps the existing one and only creates a missing one. Later snapshots always replace the message the run sent."},
			{Name: "snapshots_only", Type: vm.TypeBool, Default: false,
				Doc: "Always emit ACTIVITY_SNAPSHOT, never ACTIVITY_DELTA."},
		},
		Example: "activity sync \"plan-1\" {\n" +
			"  type = \"PLAN\"\n" +
			"  from = $activity.plan\n" +
			"}",
	}
}

func activitySnapshot() *vm.KindSpec {
	return &vm.KindSpec{
		Name: "activity snapshot",
		Pure: true,
		Doc:  "Emits ACTIVITY_SNAPSHOT, creating the activity message or setting its whole content.",
		Arg:  activityID(),
		Keys: []vm.KeySpec{
			activityType(),
			{Name: "content", Type: vm.TypeAny, Required: true,
				Doc: "The activity's whole content, usually an object."},
			replaceKey(),
		},
		Example: "activity snapshot \"plan-1\" {\n" +
			"  type    = \"PLAN\"\n" +
			"  content = {steps: [{title: \"Search\", status: \"in_progress\"}]}\n" +
			"}",
	}
}

func activityDelta() *vm.KindSpec {
	return &vm.KindSpec{
		Name: "activity delta",
		Pure: true,
		Doc:  "Emits ACTIVITY_DELTA, changing the activity's content by the given RFC 6902 JSON Patch operations.",
		Arg:  activityID(),
		Keys: []vm.KeySpec{
			activityType(),
			{Name: "patch", Type: vm.TypeList, Required: true,
				Doc: `The RFC 6902 operations, such as [{op: "replace", path: "/steps/0/status", value: "done"}].`},
		},
		Example: "activity delta \"plan-1\" {\n" +
			"  type  = \"PLAN\"\n" +
			"  patch = [{op: \"replace\", path: \"/steps/0/status\", value: \"done\"}]\n" +
			"}",
	}
}

func emit() *vm.KindSpec {
	return &vm.KindSpec{
		Name: "emit",
		Pure: true,
		Doc:  "Emits an AG-UI CUSTOM event with the given name and value.",
		Arg:  &vm.ArgSpec{Name: "name", Type: vm.TypeString, Required: true, Doc: "The event's name."},
		Keys: []vm.KeySpec{
			{Name: "value", Type: vm.TypeAny,
				Doc: "The event's value, any JSON; null when absent."},
		},
		Example: `emit "weather_progress" { value = {stage: "fetch"} }`,
	}
}

func httpKind() *vm.KindSpec {
	return &vm.KindSpec{
		Name: "http",
		Doc:  "Sends an HTTP request and gives the response's status, headers and body (parsed when it is JSON); a status outside 2xx is a run-time error unless allow_status lists it.",
		Word: &vm.WordSpec{Name: "method", Values: []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}},
		Arg:  &vm.ArgSpec{Name: "url", Type: vm.TypeString, Required: true, Doc: "The URL to request, a template."},
		Keys: []vm.KeySpec{
			{Name: "headers", Type: vm.TypeObject,
				Doc: `The request headers, an object of strings such as {Authorization: "Bearer <<env('TOKEN')>>"}.`},
			{Name: "body", Type: vm.TypeAny,
				Doc: "The request body: a string is sent as it is, any other value as JSON; no body when absent."},
			timeoutKey("one attempt", "30s"),
			retryKey("request", 0),
			backoffKey("1s..8s"),
			{Name: "allow_status", Type: vm.TypeList,
				Doc: "Status codes outside 2xx that are not errors, such as [404, 409]."},
		},
		Result:  "{status, headers, body}",
		Example: `http GET "<<env('ORDERS_URL')>>/orders/<<$order.id>>" -> $response`,
	}
}

func call() *vm.KindSpec {
	return &vm.KindSpec{
		Name: "call",
		Doc:  "Runs another workflow as a sub-workflow between SUBAGENT_STARTED and SUBAGENT_FINISHED and gives the value its output node set.",
		Arg:  &vm.ArgSpec{Name: "workflow", Type: vm.TypeWorkflow, Required: true, Doc: "The id of the workflow to run, a bare identifier."},
		Keys: []vm.KeySpec{
			{Name: "input", Type: vm.TypeAny,
				Doc: "The value the child workflow reads as $input."},
			{Name: "timeout", Type: vm.TypeDuration,
				Doc: `How long the child workflow may run before the node fails, such as "2m"; only the run's deadline applies when absent.`},
			{Name: "retry", Type: vm.TypeInt, Default: 0,
				Doc: "How many times a failed child run is started again before the node fails."},
			{Name: "backoff", Type: vm.TypeBackoff, Default: "1s..8s",
				Doc: `The first and the longest wait between retries, such as "1s..8s"; each wait doubles.`},
		},
		Result:  "the child workflow's output",
		Example: `call summarize { input = {text: $document.text} } -> $summary`,
	}
}

func output() *vm.KindSpec {
	return &vm.KindSpec{
		Name:    "output",
		Pure:    true,
		Doc:     "Sets the run's result, which RUN_FINISHED carries as result and a calling workflow's call node receives.",
		Arg:     &vm.ArgSpec{Name: "value", Type: vm.TypeAny, Required: true, Doc: "The result, any JSON value."},
		Example: "output $reply.text",
	}
}

// The keys and arguments several kinds share.

func argsKey() vm.KeySpec {
	return vm.KeySpec{Name: "args", Type: vm.TypeObject,
		Doc: "The tool call's arguments, streamed as the TOOL_CALL_ARGS JSON; {} when absent."}
}

func persistKey(def string) vm.KeySpec {
	return vm.KeySpec{Name: "persist", Type: vm.TypeString, Default: def, Enum: []string{"none", "call", "call_and_result"},
		Doc: "Which chat messages to append to chat: none; call, the assistant's tool-call message; or call_and_result, that and the tool result message."}
}

// timeoutKey declares timeout; def is a duration string, or nil for none.
func timeoutKey(what string, def any) vm.KeySpec {
	doc := "How long " + what + ` may take before it fails, such as "20s"`
	if def == nil {
		doc += "; only the run's deadline applies when absent."
	} else {
		doc += "."
	}
	return vm.KeySpec{Name: "timeout", Type: vm.TypeDuration, Default: def, Doc: doc}
}

// retryKey declares retry; def is an int, or nil for none.
func retryKey(what string, def any) vm.KeySpec {
	return vm.KeySpec{Name: "retry", Type: vm.TypeInt, Default: def,
		Doc: "How many more times a failed " + what + " is tried; none when absent or 0."}
}

// backoffKey declares backoff; def is a backoff string, or nil for none.
func backoffKey(def any) vm.KeySpec {
	return vm.KeySpec{Name: "backoff", Type: vm.TypeBackoff, Default: def,
		Doc: `The waits between tries as "first..longest", doubling from the first up to the longest, such as "1s..8s".`}
}

func activityID() *vm.ArgSpec {
	return &vm.ArgSpec{Name: "activity id", Type: vm.TypeString, Required: true,
		Doc: "The activity's id; the client's activity message is activity:<id>."}
}

func activityType() vm.KeySpec {
	return vm.KeySpec{Name: "type", Type: vm.TypeString, Required: true,
		Doc: `The activity type the client renders it by, such as "PLAN".`}
}

func replaceKey() vm.KeySpec {
	return vm.KeySpec{Name: "replace", Type: vm.TypeBool, Default: true,
		Doc: "Whether a snapshot replaces an existing activity message with this id; false keeps the existing one and only creates a missing one."}
}
