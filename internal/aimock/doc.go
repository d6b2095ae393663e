// Package aimock runs @copilotkit/aimock, a mock of the OpenAI-compatible
// and Anthropic model APIs, for the tests of the model providers and of
// the model node.
//
// Start takes fixtures, Go values that say which requests they match and
// what they answer (text, reasoning, tool calls, an error status, with
// streaming physics and mid-stream disconnects), starts a real aimock
// server on 127.0.0.1 with a free port and returns a *Server: its URL, the
// base URLs an OpenAI client and an Anthropic client take (OpenAIBaseURL,
// AnthropicBaseURL), the journal of the requests it received (Journal,
// ChatRequests, MessagesRequests) and its control API (Add, SetChaos,
// ClearChaos, QueueError). StartFiles loads fixture files in aimock's JSON
// format instead. The server stops when the test ends.
//
// aimock also serves Anthropic's Messages API at /v1/messages: it converts
// each request to a chat completions request, matches the same fixtures
// against it and streams the answer as Messages API events, reasoning as a
// thinking block (for the models it counts as able to think, such as
// claude-sonnet-4-5) and tool calls as tool_use blocks; an error answer is
// {"type": "error", "error": {type, message}}. Its journal keeps the
// converted request, not the one sent.
//
// aimock is a Node package, a devDependency of e2e/package.json: the
// server is node running start.mjs of this directory, which imports it
// from e2e/node_modules. When node or the package is missing, the test is
// skipped with a message that says to run `cd e2e && npm ci`; with the
// environment variable AGUIC_REQUIRE_AIMOCK=1, as `make unit` sets it, it
// fails instead, so that CI never skips these tests silently.
//
// A failing test logs what aimock wrote to its stderr.
package aimock
