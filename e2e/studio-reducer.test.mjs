// The studio's pure modules, run in Node: JSON Patch (RFC 6902) and the
// AG-UI reducer that the run view and the thread log stepper share.

import { test } from "node:test";
import assert from "node:assert/strict";
import { applyPatch, parsePointer, pointer, PatchError } from "../studio/web/js/jsonpatch.js";
import { Reducer, LIFECYCLE } from "../studio/web/js/reducer.js";

test("JSON Patch: the operations of RFC 6902, and the paths they touch", () => {
  const cases = [
    // [document, patch, result, touched]
    [{ foo: "bar" }, [{ op: "add", path: "/baz", value: "qux" }], { foo: "bar", baz: "qux" }, ["/baz"]],
    [{ foo: ["bar", "baz"] }, [{ op: "add", path: "/foo/1", value: "qux" }], { foo: ["bar", "qux", "baz"] }, ["/foo/1"]],
    [{ foo: ["bar"] }, [{ op: "add", path: "/foo/-", value: "x" }], { foo: ["bar", "x"] }, ["/foo/1"]],
    [{ baz: "qux", foo: "bar" }, [{ op: "remove", path: "/baz" }], { foo: "bar" }, [""]],
    [{ foo: ["bar", "qux", "baz"] }, [{ op: "remove", path: "/foo/1" }], { foo: ["bar", "baz"] }, ["/foo"]],
    [{ baz: "qux", foo: "bar" }, [{ op: "replace", path: "/baz", value: "boo" }], { baz: "boo", foo: "bar" }, ["/baz"]],
    [{ foo: { bar: "baz", waldo: "fred" }, qux: { corge: "grault" } }, [{ op: "move", from: "/foo/waldo", path: "/qux/thud" }],
      { foo: { bar: "baz" }, qux: { corge: "grault", thud: "fred" } }, ["/foo", "/qux/thud"]],
    [{ foo: ["all", "grass", "cows", "eat"] }, [{ op: "move", from: "/foo/1", path: "/foo/3" }], { foo: ["all", "cows", "eat", "grass"] }, ["/foo", "/foo/3"]],
    [{ a: { b: 1 } }, [{ op: "copy", from: "/a", path: "/c" }], { a: { b: 1 }, c: { b: 1 } }, ["/c"]],
    [{ baz: "qux", foo: ["a", 2, "c"] }, [{ op: "test", path: "/baz", value: "qux" }, { op: "test", path: "/foo/1", value: 2 }], { baz: "qux", foo: ["a", 2, "c"] }, []],
    [{ "a/b": 1, "m~n": 2 }, [{ op: "replace", path: "/a~1b", value: 3 }, { op: "replace", path: "/m~0n", value: 4 }], { "a/b": 3, "m~n": 4 }, ["/a~1b", "/m~0n"]],
    [{ foo: "bar" }, [{ op: "replace", path: "", value: [1] }], [1], [""]],
  ];
  for (const [doc, patch, want, touched] of cases) {
    const before = structuredClone(doc);
    const got = applyPatch(doc, patch);
    assert.deepEqual(got.doc, want, JSON.stringify(patch));
    assert.deepEqual(got.touched, touched, JSON.stringify(patch));
    assert.deepEqual(doc, before, "the document given is left as it was");
  }
  // Key order stays as it was on a replace.
  assert.deepEqual(Object.keys(applyPatch({ a: 1, b: 2 }, [{ op: "replace", path: "/a", value: 0 }]).doc), ["a", "b"]);
});

test("JSON Patch: operations that do not apply say which and why", () => {
  const cases = [
    [{ foo: "bar" }, [{ op: "remove", path: "/nope" }], /operation 0 \(remove \/nope\): no value at \/nope/],
    [{ foo: [1] }, [{ op: "add", path: "/foo/5", value: 2 }], /"5" is not an index of the array \(0 to 1\)/],
    [{ foo: [1] }, [{ op: "replace", path: "/foo/01", value: 2 }], /"01" is not an index/],
    [{ baz: "qux" }, [{ op: "test", path: "/baz", value: "bar" }], /the value is not the one the test expects/],
    [{ a: { b: 1 } }, [{ op: "move", from: "/a", path: "/a/b/c" }], /cannot move a value into itself/],
    [{ a: 1 }, [{ op: "add", path: "/a/b", value: 1 }], /\/a is not an object or an array/],
    [{ a: 1 }, [{ op: "frob", path: "/a" }], /unknown operation "frob"/],
    [{ a: 1 }, [{ op: "add", path: "a", value: 1 }], /is not a JSON Pointer/],
    [{ a: 1 }, { op: "add" }, /a patch must be an array/],
  ];
  for (const [doc, patch, want] of cases) {
    assert.throws(() => applyPatch(doc, patch), (err) => err instanceof PatchError && want.test(err.message), JSON.stringify(patch));
  }
  assert.deepEqual(parsePointer("/a~1b/~0/0"), ["a/b", "~", "0"]);
  assert.equal(pointer(["a/b", "~", "0"]), "/a~1b/~0/0");
});

// fold applies events to a new reducer.
function fold(events, init) {
  const r = new Reducer(init);
  for (const e of events) r.apply(e);
  return r;
}

test("the reducer: text, reasoning, tool calls and results, as a client shows them", () => {
  const r = fold([
    { type: "RUN_STARTED", threadId: "t1", runId: "r1" },
    { type: "REASONING_START", messageId: "reason:m1" },
    { type: "REASONING_MESSAGE_START", messageId: "reason:m1", role: "reasoning" },
    { type: "REASONING_MESSAGE_CONTENT", messageId: "reason:m1", delta: "They want" },
    { type: "REASONING_MESSAGE_CONTENT", messageId: "reason:m1", delta: " the weather." },
    { type: "REASONING_MESSAGE_END", messageId: "reason:m1" },
    { type: "REASONING_END", messageId: "reason:m1" },
    { type: "TEXT_MESSAGE_START", messageId: "m2", role: "assistant" },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "m2", delta: "Let me" },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "m2", delta: " check." },
    { type: "TEXT_MESSAGE_END", messageId: "m2" },
    { type: "TOOL_CALL_START", toolCallId: "c1", toolCallName: "get_weather", parentMessageId: "m2" },
    { type: "TOOL_CALL_ARGS", toolCallId: "c1", delta: '{"city":' },
    { type: "TOOL_CALL_ARGS", toolCallId: "c1", delta: '"Paris"}' },
    { type: "TOOL_CALL_END", toolCallId: "c1" },
    { type: "TOOL_CALL_RESULT", messageId: "tool:c1", toolCallId: "c1", content: "Sunny", role: "tool" },
    { type: "TOOL_CALL_START", toolCallId: "c2", toolCallName: "confirm" },
    { type: "TOOL_CALL_ARGS", toolCallId: "c2", delta: "{}" },
    { type: "TOOL_CALL_END", toolCallId: "c2" },
    { type: "RUN_FINISHED", threadId: "t1", runId: "r1", outcome: { type: "success", pendingToolCallIds: ["c2"] } },
  ], { messages: [{ id: "u1", role: "user", content: "Weather in Paris?" }] });
  assert.deepEqual(r.messages, [
    { id: "u1", role: "user", content: "Weather in Paris?" },
    { id: "reason:m1", role: "reasoning", content: "They want the weather." },
    { id: "m2", role: "assistant", content: "Let me check.", toolCalls: [{ id: "c1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
    { id: "tool:c1", role: "tool", toolCallId: "c1", content: "Sunny" },
    { id: "c2", role: "assistant", toolCalls: [{ id: "c2", type: "function", function: { name: "confirm", arguments: "{}" } }] },
  ]);
  assert.deepEqual(r.run, { threadId: "t1", runId: "r1", status: "finished", outcome: { type: "success", pendingToolCallIds: ["c2"] }, result: undefined });
  assert.deepEqual(r.pending(), { toolCalls: [{ id: "c2", name: "confirm", arguments: "{}", args: {} }], interrupts: [] });
  // Once the client answered, nothing is pending.
  r.messages.push({ id: "t2", role: "tool", toolCallId: "c2", content: "yes" });
  assert.deepEqual(r.pending().toolCalls, []);
  assert.deepEqual(r.problems, []);
});

test("the reducer: state snapshots and deltas with what they touched, activities, interrupts, errors", () => {
  const r = fold([
    { type: "RUN_STARTED", threadId: "t1", runId: "r1" },
    { type: "STATE_SNAPSHOT", snapshot: { todos: [{ title: "milk", done: false }] } },
    { type: "STATE_DELTA", delta: [{ op: "replace", path: "/todos/0/done", value: true }, { op: "add", path: "/todos/-", value: { title: "tea", done: false } }] },
    { type: "ACTIVITY_SNAPSHOT", messageId: "activity:plan", activityType: "PLAN", content: { steps: [{ title: "a", status: "pending" }] }, replace: true },
    { type: "ACTIVITY_DELTA", messageId: "activity:plan", activityType: "PLAN", patch: [{ op: "replace", path: "/steps/0/status", value: "done" }] },
    { type: "ACTIVITY_SNAPSHOT", messageId: "activity:plan", activityType: "PLAN", content: { steps: [] }, replace: false },
    { type: "ACTIVITY_SNAPSHOT", messageId: "activity:lifecycle-r1", activityType: LIFECYCLE, content: { node: { nodeId: "1", phase: "start" } } },
    { type: "ACTIVITY_DELTA", messageId: "activity:lifecycle-r1", activityType: LIFECYCLE, patch: [{ op: "add", path: "/node", value: { nodeId: "1", phase: "complete", next: "2" } }] },
    { type: "STEP_STARTED", stepName: "Review" },
    { type: "CUSTOM", name: "refund_issued", value: { ok: true } },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "nope", delta: "x" },
    { type: "STATE_DELTA", delta: [{ op: "remove", path: "/missing" }] },
    { type: "RUN_FINISHED", threadId: "t1", runId: "r1", outcome: { type: "interrupt", interrupts: [{ id: "i1", reason: "approve" }] } },
  ]);
  assert.deepEqual(r.state, { todos: [{ title: "milk", done: true }, { title: "tea", done: false }] });
  assert.deepEqual(r.touched, ["/todos/0/done", "/todos/1"], "a delta that does not apply leaves the state and its marks");
  assert.deepEqual(r.message("activity:plan").content, { steps: [{ title: "a", status: "done" }] }, "replace: false keeps the activity");
  assert.deepEqual(r.node("r1"), { nodeId: "1", phase: "complete", next: "2" });
  assert.deepEqual(r.steps, ["Review"]);
  assert.deepEqual(r.custom, [{ name: "refund_issued", value: { ok: true } }]);
  assert.equal(r.problems.length, 2);
  assert.match(r.problems[0], /TEXT_MESSAGE_CONTENT: no message "nope"/);
  assert.match(r.problems[1], /STATE_DELTA: operation 0 \(remove \/missing\): no value at \/missing/);
  assert.deepEqual(r.pending(), { toolCalls: [], interrupts: [{ id: "i1", reason: "approve" }] });
  // A snapshot touches everything; an error ends the run.
  r.apply({ type: "STATE_SNAPSHOT", snapshot: { todos: [] } });
  assert.deepEqual(r.touched, [""]);
  r.apply({ type: "RUN_ERROR", message: "boom", code: "node" });
  assert.equal(r.run.status, "error");
  assert.deepEqual(r.pending(), { toolCalls: [], interrupts: [] });
});

test("the reducer: MESSAGES_SNAPSHOT replaces the messages; chunks open what they name", () => {
  const r = fold([
    { type: "MESSAGES_SNAPSHOT", messages: [{ id: "a", role: "user", content: "hi" }] },
    { type: "TEXT_MESSAGE_CHUNK", messageId: "b", role: "assistant", delta: "Hel" },
    { type: "TEXT_MESSAGE_CHUNK", messageId: "b", delta: "lo" },
    { type: "TOOL_CALL_CHUNK", toolCallId: "c", toolCallName: "f", parentMessageId: "b", delta: "{" },
    { type: "TOOL_CALL_CHUNK", toolCallId: "c", delta: "}" },
  ]);
  assert.deepEqual(r.messages, [
    { id: "a", role: "user", content: "hi" },
    { id: "b", role: "assistant", content: "Hello", toolCalls: [{ id: "c", type: "function", function: { name: "f", arguments: "{}" } }] },
  ]);
});
