// The AG-UI reducer: it folds events into what a client shows, the
// messages (text, reasoning, tool calls and results, activities), the
// shared state (JSON Patch for deltas) and how the last run stands. The
// live run view and the thread log stepper both use it, so an event log
// stepped through reads exactly as the live run did.

import { applyPatch } from "./jsonpatch.js";

// LIFECYCLE is the activity type of the node lifecycle events: which node
// of the graph runs (docs/server.md, "Node lifecycle events").
export const LIFECYCLE = "graph.node.lifecycle";

export class Reducer {
  // messages and state are where the conversation stands before the
  // first event (a client's history), copied.
  constructor({ messages = [], state = null } = {}) {
    this.messages = structuredClone(messages);
    this.state = structuredClone(state);
    this.touched = []; // the JSON Pointers the last state event changed ("" for all of it)
    this.run = null; // {threadId, runId, status: running|finished|error, outcome, result, message, code}
    this.steps = []; // the names of the steps open now
    this.custom = []; // CUSTOM events, in order
    this.problems = []; // why events could not be applied, in order
  }

  message(id) {
    return this.messages.find((m) => m.id === id);
  }

  // apply folds one event in and returns what it changed: "messages",
  // "state", "run" or "" for nothing shown.
  apply(event) {
    try {
      return this.#apply(event);
    } catch (err) {
      this.problems.push(`${event.type}: ${err.message}`);
      return "";
    }
  }

  #apply(e) {
    switch (e.type) {
      case "RUN_STARTED":
        this.run = { threadId: e.threadId, runId: e.runId, status: "running" };
        this.steps = [];
        return "run";
      case "RUN_FINISHED":
        this.run = { ...this.run, threadId: e.threadId, runId: e.runId, status: "finished", outcome: e.outcome ?? { type: "success" }, result: e.result };
        return "run";
      case "RUN_ERROR":
        this.run = { ...this.run, status: "error", message: e.message, code: e.code };
        return "run";
      case "STEP_STARTED":
        this.steps.push(e.stepName);
        return "run";
      case "STEP_FINISHED":
        this.steps = this.steps.filter((s) => s !== e.stepName);
        return "run";

      case "TEXT_MESSAGE_START":
        this.#open(e.messageId, e.role ?? "assistant");
        return "messages";
      case "TEXT_MESSAGE_CONTENT":
        this.#text(e.messageId).content += e.delta;
        return "messages";
      case "TEXT_MESSAGE_CHUNK":
        if (e.messageId) this.#open(e.messageId, e.role ?? "assistant");
        if (e.delta) this.#text(e.messageId ?? this.messages.at(-1)?.id).content += e.delta;
        return "messages";
      case "TEXT_MESSAGE_END":
        return "";

      case "REASONING_START":
      case "REASONING_END":
      case "REASONING_ENCRYPTED_VALUE":
        return "";
      case "REASONING_MESSAGE_START":
        this.#open(e.messageId, "reasoning");
        return "messages";
      case "REASONING_MESSAGE_CONTENT":
        this.#text(e.messageId).content += e.delta;
        return "messages";
      case "REASONING_MESSAGE_CHUNK":
        if (e.messageId) this.#open(e.messageId, "reasoning");
        if (e.delta) this.#text(e.messageId ?? this.messages.at(-1)?.id).content += e.delta;
        return "messages";
      case "REASONING_MESSAGE_END":
        return "";

      case "TOOL_CALL_START":
        this.#toolCall(e.toolCallId, e.toolCallName, e.parentMessageId);
        return "messages";
      case "TOOL_CALL_ARGS":
        this.#call(e.toolCallId).function.arguments += e.delta;
        return "messages";
      case "TOOL_CALL_CHUNK":
        if (e.toolCallId && !this.#findCall(e.toolCallId)) this.#toolCall(e.toolCallId, e.toolCallName, e.parentMessageId);
        if (e.delta) this.#call(e.toolCallId ?? this.#lastCallID()).function.arguments += e.delta;
        return "messages";
      case "TOOL_CALL_END":
        return "";
      case "TOOL_CALL_RESULT":
        this.#upsert({ id: e.messageId, role: "tool", toolCallId: e.toolCallId, content: e.content });
        return "messages";

      case "STATE_SNAPSHOT":
        this.state = structuredClone(e.snapshot);
        this.touched = [""];
        return "state";
      case "STATE_DELTA": {
        const { doc, touched } = applyPatch(this.state ?? {}, e.delta);
        this.state = doc;
        this.touched = touched;
        return "state";
      }
      case "MESSAGES_SNAPSHOT":
        this.messages = structuredClone(e.messages ?? []);
        return "messages";

      case "ACTIVITY_SNAPSHOT": {
        const old = this.message(e.messageId);
        if (old && e.replace === false) return "";
        this.#upsert({ id: e.messageId, role: "activity", activityType: e.activityType, content: structuredClone(e.content) });
        return "messages";
      }
      case "ACTIVITY_DELTA": {
        const m = this.message(e.messageId);
        if (!m) throw new Error(`no activity ${JSON.stringify(e.messageId)} to change`);
        m.content = applyPatch(m.content ?? {}, e.patch).doc;
        return "messages";
      }

      case "CUSTOM":
        this.custom.push({ name: e.name, value: e.value });
        return "";
      default:
        return "";
    }
  }

  #open(id, role) {
    if (!this.message(id)) this.messages.push({ id, role, content: "" });
  }

  #text(id) {
    const m = this.message(id);
    if (!m) throw new Error(`no message ${JSON.stringify(id)}: its START event is missing`);
    if (typeof m.content !== "string") m.content = "";
    return m;
  }

  #upsert(message) {
    const i = this.messages.findIndex((m) => m.id === message.id);
    if (i < 0) this.messages.push(message);
    else this.messages[i] = { ...this.messages[i], ...message };
  }

  // #toolCall adds a call to the assistant message it follows, or to a
  // message of its own, as AG-UI clients do.
  #toolCall(id, name, parentMessageId) {
    const call = { id, type: "function", function: { name, arguments: "" } };
    const parent = parentMessageId && this.message(parentMessageId);
    if (parent && parent.role === "assistant") {
      (parent.toolCalls ??= []).push(call);
      return;
    }
    this.messages.push({ id: parentMessageId || id, role: "assistant", toolCalls: [call] });
  }

  #findCall(id) {
    for (const m of this.messages) {
      const c = m.toolCalls?.find((c) => c.id === id);
      if (c) return c;
    }
    return undefined;
  }

  #call(id) {
    const c = this.#findCall(id);
    if (!c) throw new Error(`no tool call ${JSON.stringify(id)}: its START event is missing`);
    return c;
  }

  #lastCallID() {
    for (let i = this.messages.length - 1; i >= 0; i--) {
      const calls = this.messages[i].toolCalls;
      if (calls?.length) return calls.at(-1).id;
    }
    return undefined;
  }

  // toolCall is the call with this id, with its arguments parsed when they
  // are JSON: {id, name, arguments, args}.
  toolCall(id) {
    const c = this.#findCall(id);
    if (!c) return undefined;
    let args;
    try {
      args = c.function.arguments ? JSON.parse(c.function.arguments) : {};
    } catch {
      args = undefined;
    }
    return { id, name: c.function.name, arguments: c.function.arguments, args };
  }

  // pending is what the last run waits for from the client: the frontend
  // tool calls it ended with, and its open interrupts.
  pending() {
    const outcome = this.run?.status === "finished" ? this.run.outcome : undefined;
    const answered = new Set(this.messages.filter((m) => m.role === "tool").map((m) => m.toolCallId));
    return {
      toolCalls: (outcome?.pendingToolCallIds ?? []).filter((id) => !answered.has(id)).map((id) => this.toolCall(id) ?? { id, name: "?", arguments: "" }),
      interrupts: outcome?.type === "interrupt" ? outcome.interrupts ?? [] : [],
    };
  }

  // node is the content of the node lifecycle activity of the run: which
  // node runs, in which phase.
  node(runId) {
    return this.message(`activity:lifecycle-${runId}`)?.content?.node;
  }
}
