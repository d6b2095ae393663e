// Package llm is what the model node talks to: provider-neutral chat
// messages, the Provider interface that model providers implement, and the
// providers themselves.
//
// Chat history lives in the workflow context (conventionally $input.chat in
// conversations, $agent.chat in stateless runs) as a JSON list of Message
// objects: {role, content, name?, toolCalls?, toolCallId?}. FromValue and
// ToValue convert between that JSON and Messages.
//
// Resolver maps the "provider/model" names of model nodes to providers:
// OpenAI, for the chat completions API of OpenAI and of the servers
// compatible with it, and Anthropic, for Anthropic's Messages API (Claude).
// Providers report a failing HTTP status as a *StatusError; IsRetryable
// tells a rate limit or a server error, worth another try, from the rest.
//
// # Scripted provider
//
// Scripted answers requests from a script instead of a model, for tests
// and demos (LoadScript, ParseScript). A script is a text file of replies,
// one `reply` line starting each, with lines `key: value` inside:
//
//	# A line starting with # is a comment; blank lines are ignored.
//	reply
//	reasoning: The user greets me.
//	text: Hello! How can I help?
//	text: This is the second line of the same text.
//
//	reply match "refund"
//	tool: lookup_order {"id": "A-1"}
//	tool: add call_7 {"a": 1, "b": 2}
//
//	reply match /^order \d+$/
//	text: Which order?
//	usage: 120 4
//	delay: 50ms
//
//	reply repeat after tool match "refund" result /^error:/
//	text: I could not look your order up.
//
//	reply repeat after tool match "refund"
//	text: Your order A-1 is on its way.
//
//	reply repeat
//	error: 503 the model is overloaded
//
// The keys of a reply:
//
//   - text: a line of the answer's text; several lines join with newlines.
//   - reasoning: a line of the model's reasoning, likewise.
//   - tool: a tool call: the tool's name, an optional call id (call_1,
//     call_2… counted by the provider when absent) and the arguments, a JSON
//     object on the same line ({} when absent).
//   - error: the call fails with this message after streaming the rest of
//     the reply; a leading status code (429, 503…) makes it a *StatusError,
//     so 429 and 5xx are retryable.
//   - usage: the input and output tokens to report; a count of the words
//     of the request and of the reply when absent.
//   - delay: a duration to wait before each streamed chunk, for demos.
//
// The `reply` line may add `repeat` (the reply is never used up), `after
// tool` or `after user` (the request's last message must be a tool result,
// or must not be: a model's tool round sends the same last user message
// again, with the results after it), a `match`: `match "text"` accepts
// a request whose last user message contains the text, ignoring case;
// `match /regexp/` one whose last user message the Go regular expression
// matches; and a `result`, `result "text"` or `result /regexp/`, which
// accepts a request that ends with tool results when one of them contains
// the text or matches, so that the answer can depend on what a tool gave.
// A /regexp/ must end the line, so only the last of match and result may
// be one.
//
// Each request is answered by the first reply, in script order, that is
// not used up and whose match accepts it; when there is none the call fails
// with an error that says so. The answer streams as the reasoning, then
// the text, both word by word, then each tool call: its id and name, then
// its arguments in pieces of 16 bytes. Requests records every request, for
// tests to inspect.
//
// A malformed script is an error naming each bad line, as "file:line: …"
// from LoadScript and "line N: …" from ParseScript.
package llm
