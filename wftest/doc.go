// Package wftest runs the tests of workflows: files that sit next to a
// .wf file (chat.wf, chat.wftest), each holding named tests of user turns,
// scripted model replies, frontend tool results, interrupt answers and
// stubbed HTTP and MCP calls in, and expectations on the reply, the state,
// the result, the context, the messages, the events and the outcome out.
//
// Parse reads a test file; Run runs one of its tests against a compiled
// program with the interpreter alone: a fresh frame in memory for each
// test, models answered by the scripted provider, HTTP and MCP calls
// answered by the test's stubs, and a clock that jumps to the end of every
// sleep. Nothing reaches the network. Rewrite applies what Run found to
// the expectations --update may rewrite, leaving every other byte of the
// file as it was.
//
// The format is documented in docs/testing.md.
package wftest
