// Package aimock runs @copilotkit/aimock, a mock of the OpenAI-compatible
// model APIs, for the tests of the model providers and of the model node.
//
// Start takes fixtures, Go values that say which requests they match and
// what they answer (text, reasoning, tool calls, an error status, with
// streaming physics and mid-stream disconnects), starts a real aimock
// server on 127.0.0.1 with a free port and returns a *Server: its URL, the
// base URL an OpenAI client takes (OpenAIBaseURL), the journal of the
// requests it received (Journal, ChatRequests) and its control API
// (Add, SetChaos, ClearChaos, QueueError). StartFiles loads fixture files
// in aimock's JSON format instead. The server stops when the test ends.
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
