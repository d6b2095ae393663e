// Package agui holds the AG-UI 1.0 wire: its message types, the events
// aguic sends (mapped from the interpreter's in one place), their shapes
// for the clients before 1.0, their SSE framing, and the mapping from an
// AG-UI request to a workflow's $agent.
// Package server serves workflows with it.
//
// What goes in: the messages, state, context and tools of a RunAgentInput
// (Input), and the semantic events of runs (vm.Event). What comes out:
// BuildAgent turns a request into the $agent object a workflow reads —
// latestUserMessage, latestToolResult, messages, chat, state, context,
// tools and _hidden.state — by the rules docs/agui.md gives for stateless
// and conversation workflows; a Reducer folds a run's events into AG-UI
// messages and state the way a client does (live) or the way a history
// replay does; FromVM maps each semantic event to the AG-UI event the
// server sends, which an SSEWriter frames. A Dialect says how a stream
// sends its events: as AG-UI 1.0, or as the clients before 1.0 take them
// (Translate); Encode writes an event in each at once.
//
// What stays true: Message and its parts marshal back to the JSON they
// were read from, unknown keys and exact numbers included (known fields in
// a fixed order, unknown keys after them, sorted); optional fields are
// omitted when empty and never written as null (a null read is an absent
// field). Events marshal as the doc of Event says, without reflection for
// the values a run holds. The values BuildAgent returns are JSON trees as
// vm.Normalize makes them, sharing nothing with its input. The package holds no
// mutable state.
package agui
