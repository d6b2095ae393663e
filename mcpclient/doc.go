// Package mcpclient connects a process to the MCP (Model Context
// Protocol) servers its workflows declare, and calls their tools.
//
// A Pool holds the connections: one per server declaration, made at the
// declaration's first use and shared by every run and thread after it. A
// declaration's values (command, args, env, url, headers) are evaluated
// with vm.EvalConst when it is used, and the evaluated values select the
// connection, so a program version that changes a declaration gets a
// connection of its own while the threads of the older version keep
// theirs.
//
// A stdio server is a child process in a process group of its own: its
// standard input and output carry the protocol, and each line it writes
// to standard error goes to the pool's log with the server's name. A child
// that exits fails the calls in flight at once ("mcp server everything
// exited: …") and is started again at the next call. A server reached by
// URL speaks streamable HTTP, with the declaration's headers on every
// request.
//
// Every call is bounded by the server's timeout (DefaultTimeout when it
// declares none) and by its context, whose end the server learns through
// notifications/cancelled. A call that could not reach the server, or
// whose server died under it, is tried again as many times as the server's
// retry says, waiting its backoff between tries; a tool's own error (a
// result with isError) is a result, never retried.
//
// Tools lists a server's tools, cached per connection until the server
// says its list changed. Lock reports what a lock file records of a
// server; at the first connection to a server its lock entry describes,
// the pool logs how the live tools differ from it (mcplock.Diff). Close
// ends every connection and stops every child process.
package mcpclient
