package lsp

// What hover and completion say of the words the registry does not
// declare: keywords, attributes, and the context roots and $agent paths
// (docs/language.md is their reference).

// keywordDocs says what each keyword does.
var keywordDocs = map[string]string{
	"wf":       "`wf 1`: the language version, the first line of every file.",
	"workflow": "`workflow id { … }`: a workflow, what a client runs. Its id is unique across the files compiled together.",
	"mcp":      "`mcp name { … }`: an MCP server whose tools the workflows use.",
	"tool":     "`tool name { … }`: a backend tool the workflow's `model` nodes may offer the model (`tools = [name]`).",
	"flow":     "`flow { … }`: the statements the workflow runs. Exactly one per workflow.",
	"set":      "`set $path = value` writes a value at a context path; `set { $a = 1; $b.c = 2 }` writes several.",
	"if":       "`if cond { } else if cond { } else { }`: branch on a boolean.",
	"else":     "`else { }` or `else if cond { }`: on the line of the `}` before it.",
	"switch":   "`switch { case cond { } … default { } }`: the first case whose condition holds; `default` is required and last.",
	"case":     "`case cond { }`: a case of a switch.",
	"default":  "`default { }`: the last case of a switch, run when no case holds.",
	"for":      "`for x in list { }`: run the block for each element, `$x` holding it.",
	"in":       "`for x in list { }`: the list a for loop walks.",
	"while":    "`while cond max N { }`: loop while the condition holds, at most N times.",
	"max":      "`while cond max N { }`: the most times a while loop runs.",
	"goto":     "`goto label`: continue at a label of the same or an enclosing block.",
	"step":     "`step \"name\" { }`: STEP_STARTED and STEP_FINISHED around the block.",
	"parallel": "`parallel { branch a { } branch b { } }`: run branches at the same time and continue when all have ended.",
	"branch":   "`branch name { }`: a branch of a parallel.",
	"try":      "`try { } catch e { }`: run-time errors of the block go to the catch block.",
	"catch":    "`catch e { }`: the block run-time errors of the try block go to, `$e` holding the error.",
	"end":      "`end`: finish the run.",
	"fail":     "`fail \"message\"`: end the run with RUN_ERROR.",
	"on":       "`on name { statements }`: a handler of a node, run when the node ends that way; the flow continues after the node.",
}

// attrDocs says what each attribute of a workflow, a tool and an MCP
// server is, by the spec of its occurrences.
var attrDocs = map[string]map[string]string{
	attrWorkflow: {
		"title":        "A human name; a client may select the workflow by it (`workflowName`). A string literal without `<<…>>`.",
		"description":  "What the workflow does, for listings. A string literal without `<<…>>`.",
		"conversation": "`true`: the thread is a durable conversation that may pause and resume; `false`, the default, makes every request a fresh run.",
		"busy":         "What a request does that arrives while a run of its thread is in progress: `\"reject\"` (the default: 409), `\"enqueue\"` or `\"interrupt\"`.",
	},
	attrTool: {
		"description": "Required: what the model reads to decide to call the tool.",
		"parameters":  "The JSON Schema of the tool's arguments; any object when absent. Inside the tool, `$args` holds them.",
		"result":      "An expression whose value the model gets: the tool's implementation, or beside an `http` or `mcp` node the shape of what it answers.",
	},
	attrServer: {
		"command": "A server aguic starts and speaks to on its standard input and output (stdio): the program.",
		"args":    "With `command`: its arguments, a list of strings.",
		"env":     "With `command`: variables added to its environment, an object of strings.",
		"url":     "A server aguic reaches over streamable HTTP: its endpoint.",
		"headers": "With `url`: headers sent with every request, an object of strings.",
		"tools":   "The tools workflows may use, string literals; every tool the server lists when absent.",
		"timeout": "How long one tool call may take (60s when absent). A string literal.",
		"retry":   "How many more times a call that could not reach the server is tried. A literal number.",
		"backoff": "The waits between those tries, `\"first..longest\"`. A string literal.",
	},
}

// attrValues are the values completion offers after `attr = "` for
// attributes with a fixed list.
var attrValues = map[string]map[string][]string{
	attrWorkflow: {"busy": {"reject", "enqueue", "interrupt"}},
}

// rootDocs says what each context root that exists without being written
// holds.
var rootDocs = map[string]string{
	"agent": "What the client sent in this request. Replaced whole on every request.",
	"input": "The run's input: the `input` of the `call` that started a sub-workflow. In a conversation, the conventional place for what outlives a turn, such as `$input.chat`.",
	"user":  "Who sent this request, as the server's authentication found it: `$user.id`, `$user.claims`; nil when anonymous.",
	"args":  "Inside a tool only: the arguments the model passed.",
}

// contextPaths are the documented paths below the roots, with what they
// hold, in the order completion offers them.
var contextPaths = []struct{ path, doc string }{
	{"agent.latestUserMessage", "The last incoming message when it is a user text message, else nil; `.content` is its text."},
	{"agent.latestUserMessage.content", "The text of the last user message."},
	{"agent.latestUserMessage.images", "The images of the last user message: objects `{url}` or `{data, mimeType}`."},
	{"agent.latestToolResult", "The last incoming message when it is a tool result, else nil; `.value` is its content parsed when that is JSON."},
	{"agent.latestToolResult.value", "The content of the last tool result, parsed when it is JSON."},
	{"agent.messages", "A stateless workflow: every incoming message; a conversation: only the latest."},
	{"agent.chat", "Stateless workflows only: the history as model chat messages, without the latest user text message (that is the prompt)."},
	{"agent.state", "The client's shared state."},
	{"agent.context", "The client's context entries."},
	{"agent.tools", "The client's frontend tools, for a model's `tools`."},
	{"agent.forwardedProps", "The request's `forwardedProps`, when it has them: parameters the client forwards."},
	{"agent._hidden", "What the server keeps for itself between requests."},
	{"agent._hidden.state", "The baseline `state sync` compares the state with."},
	{"user.id", "The user: the name of a static bearer token, or the user claim of a JWT; also the scope of the thread."},
	{"user.claims", "A JWT's claims the server selects with `--jwt-claims`, by name."},
}

// pathDoc returns the documentation of a context path written without its
// $, such as "agent.latestUserMessage".
func pathDoc(path string) (string, bool) {
	for _, p := range contextPaths {
		if p.path == path {
			return p.doc, true
		}
	}
	doc, ok := rootDocs[path]
	return doc, ok
}
