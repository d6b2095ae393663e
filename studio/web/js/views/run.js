// The run view: chat with a workflow on a new or an existing thread and
// watch the run live, side by side: the messages as a client renders
// them, the raw events with their timing, the node the run is at on the
// graph, and the state with the paths each delta touched marked. A
// stateless workflow gets the whole history each turn, a conversation
// only the new turn, as an AG-UI client sends them.

import { h, replace, newID, ms, json } from "../dom.js";
import { Reducer, LIFECYCLE } from "../reducer.js";
import { Graph } from "../graph.js";
import { renderMessages } from "../messages.js";
import { eventRow, separator } from "../eventlist.js";
import { stateTree } from "../statetree.js";
import { toolCallsCard, interruptsCard } from "../hitl.js";
import { loadTools, requestTools, editTools } from "../tools.js";

// runView runs the workflow on thread (a new one when not given; fresh:
// a thread that does not exist yet); started(threadId) is told when the
// first run starts.
export async function runView(studio, workflowId, { thread, fresh = false, started = () => {} } = {}) {
  const givenThread = fresh ? undefined : thread;
  const [info, list] = await Promise.all([studio.workflow(workflowId), studio.workflows()]);
  const api = studio.api;
  const threadId = thread || newID("studio");
  let announced = false;
  let reducer = new Reducer();
  let tools = loadTools(info);
  let running = null; // {runId, abort, t0}
  let last = null; // the last run: {runId, took}
  let eventCount = 0;

  // The bar.
  const pick = h("select", { "aria-label": "Workflow" }, list.map((w) => h("option", { value: w.id, selected: w.id === workflowId, text: w.title ? `${w.title} (${w.id})` : w.id })));
  pick.addEventListener("change", () => studio.go(`#/run/${encodeURIComponent(pick.value)}`));
  const threadLabel = h("a", { class: "thread", title: "Open the thread's page" });
  const status = h("span", { class: "badge", role: "status", text: "idle" });
  const cancel = h("button", { type: "button", class: "danger", text: "Cancel run", disabled: true, title: "POST /cancel: stop the run in progress", onclick: () => cancelRun() });
  const newThread = h("button", { type: "button", text: "New thread", onclick: () => studio.go(`#/run/${encodeURIComponent(workflowId)}?thread=${encodeURIComponent(newID("studio"))}&new`) });
  const toolsButton = h("button", { type: "button", onclick: async () => {
    const saved = await editTools(info, tools);
    if (saved) {
      tools = saved;
      updateToolsButton();
      render();
    }
  } });
  const updateToolsButton = () => {
    toolsButton.textContent = `Client tools (${tools.length})`;
  };
  updateToolsButton();
  threadLabel.textContent = `thread ${threadId}`;
  threadLabel.href = `#/threads/${encodeURIComponent(workflowId)}/${encodeURIComponent(threadId)}`;

  // The chat.
  const messagesBox = h("div", { class: "body chat-log", "aria-live": "polite" });
  const hitlBox = h("div", { class: "hitl-box" });
  const outcome = h("div", { class: "outcome" });
  const input = h("textarea", { rows: 2, placeholder: `Message ${info.title || info.id}…  (Enter to send)`, "aria-label": "Message", "data-slash": "" });
  const sendButton = h("button", { type: "submit", class: "primary", text: "Send" });
  const composer = h("form", { class: "composer" }, input, sendButton);
  composer.addEventListener("submit", (e) => {
    e.preventDefault();
    sendText();
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      sendText();
    }
  });

  // The events, the graph and the state.
  const eventsBox = h("div", { class: "body flush eventlist", role: "list", "aria-label": "Events" });
  const eventsCount = h("span", { class: "muted small" });
  const lifecycleToggle = h("input", { type: "checkbox", checked: true, "aria-label": "Show the node lifecycle events" });
  lifecycleToggle.addEventListener("change", () => eventsBox.classList.toggle("hide-lifecycle", !lifecycleToggle.checked));
  const stateBox = h("div", { class: "body state-body" });
  const graph = info.layout ? new Graph(info.layout) : null;

  const el = h("div", { class: "run", dataset: { workflow: workflowId } },
    h("div", { class: "run-bar" },
      pick, threadLabel, h("span", { class: "grow" }), status, cancel, toolsButton, newThread),
    h("section", { class: "panel chat" },
      h("header", {}, h("h3", { text: "Chat" }), h("span", { class: "spacer" }), h("span", { class: "badge accent", text: info.conversation ? "conversation: sends the new turn" : "stateless: sends the whole history" })),
      messagesBox,
      h("footer", {}, outcome, hitlBox, composer)),
    h("section", { class: "panel events" },
      h("header", {}, h("h3", { text: "Events" }), h("span", { class: "spacer" }), eventsCount,
        h("label", { class: "muted small toggle", title: "The graph.node.lifecycle activity of each run" }, lifecycleToggle, "nodes"),
        h("span", { class: "muted small", title: "ms since the run started · the event's id in the log", text: "ms · id" })),
      eventsBox),
    h("section", { class: "panel graph-panel" },
      h("header", {}, h("h3", { text: "Graph" }), h("span", { class: "spacer" }), h("span", { class: "node-at muted small mono" })),
      graph ? graph.el : h("div", { class: "graph-fallback muted", text: "No layout for this workflow's graph." })),
    h("section", { class: "panel state-panel" },
      h("header", {}, h("h3", { text: "State" })),
      stateBox));
  const nodeAt = el.querySelector(".node-at");

  // render draws what the reducer holds, at most once a frame.
  let queued = false;
  function render() {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      draw();
    });
  }
  let drawnState;
  let drawnTouched;
  function draw() {
    const atBottom = messagesBox.scrollHeight - messagesBox.scrollTop - messagesBox.clientHeight < 40;
    replace(messagesBox, renderMessages(reducer.messages));
    if (atBottom) messagesBox.scrollTop = messagesBox.scrollHeight;
    if (drawnState !== reducer.state || drawnTouched !== reducer.touched) {
      drawnState = reducer.state;
      drawnTouched = reducer.touched;
      replace(stateBox, stateTree(reducer.state, reducer.touched));
    }
    drawStatus();
    drawPending();
  }

  function drawStatus() {
    const run = reducer.run;
    cancel.disabled = !running;
    sendButton.disabled = !!running;
    let text = "idle";
    let cls = "badge";
    if (running) {
      text = reducer.steps.length ? `running · ${reducer.steps.at(-1)}` : "running";
      cls = "badge accent running";
    } else if (run?.status === "error") {
      text = `error${run.code ? ` · ${run.code}` : ""}`;
      cls = "badge bad";
    } else if (run?.status === "finished") {
      const o = run.outcome ?? {};
      const { toolCalls, interrupts } = reducer.pending();
      if (o.type === "cancelled") [text, cls] = ["cancelled", "badge warn"];
      else if (interrupts.length) [text, cls] = ["interrupt: waits for an answer", "badge warn"];
      else if (toolCalls.length) [text, cls] = [`waits for ${toolCalls.map((c) => c.name).join(", ")}`, "badge warn"];
      else [text, cls] = [`finished · ${o.type ?? "success"}`, "badge ok"];
    }
    status.className = cls;
    status.textContent = text;
    replace(outcome, outcomeLine(run));
  }

  function outcomeLine(run) {
    if (!run || running) return null;
    const parts = [h("span", { class: "small muted mono", text: run.runId ?? "" })];
    if (last?.took !== undefined) parts.push(h("span", { class: "small muted", text: ms(last.took) }));
    if (run.status === "error") parts.push(h("span", { class: "error-text small", text: `${run.code ? run.code + ": " : ""}${run.message ?? ""}` }));
    if (run.result !== undefined) parts.push(h("details", { class: "result small" }, h("summary", { class: "muted", text: "result" }), h("pre", { text: json(run.result) })));
    return parts;
  }

  let drawnPending = "";
  function drawPending() {
    const { toolCalls, interrupts } = running ? { toolCalls: [], interrupts: [] } : reducer.pending();
    const key = JSON.stringify([toolCalls.map((c) => [c.id, c.arguments]), interrupts.map((i) => i.id), tools]);
    if (key === drawnPending) return;
    drawnPending = key;
    replace(hitlBox,
      toolCalls.length ? toolCallsCard(toolCalls, tools, answerTools) : null,
      interrupts.length ? interruptsCard(interrupts, (resume) => start({ messages: [], resume })) : null);
  }

  function showNode() {
    if (!graph || !running) return;
    const node = reducer.node(running.runId);
    if (!node) return;
    graph.mark(node);
    if (node.phase === "start") graph.follow(node.nodeId);
    nodeAt.textContent = `${node.nodeId} · ${node.phase}`;
  }

  function addEvent(row) {
    const atBottom = eventsBox.scrollHeight - eventsBox.scrollTop - eventsBox.clientHeight < 40;
    eventsBox.append(row);
    eventCount++;
    eventsCount.textContent = `${eventCount} events`;
    if (atBottom) eventsBox.scrollTop = eventsBox.scrollHeight;
  }

  // history is what the next request carries: the new turn for a
  // conversation, everything for a stateless workflow.
  function history(turn) {
    return info.conversation ? turn : [...reducer.messages.filter((m) => !(m.role === "activity" && m.activityType === LIFECYCLE)), ...turn];
  }

  function sendText() {
    const text = input.value.trim();
    if (!text || running) return;
    input.value = "";
    const msg = { id: newID("msg"), role: "user", content: text };
    const messages = history([msg]);
    reducer.messages.push(msg);
    start({ messages });
  }

  function answerTools(answers) {
    const msgs = answers.map((a) => ({ id: newID("tool"), role: "tool", toolCallId: a.toolCallId, content: a.content }));
    const messages = history(msgs);
    reducer.messages.push(...msgs);
    start({ messages });
  }

  // start sends a run request and streams its answer.
  async function start({ messages, resume }) {
    const runId = newID("run");
    const abort = new AbortController();
    running = { runId, abort, t0: performance.now() };
    last = { runId };
    graph?.clear();
    nodeAt.textContent = "";
    addEvent(separator(`run ${runId}`));
    render();
    const body = {
      threadId,
      runId,
      messages,
      state: reducer.state ?? {},
      tools: requestTools(tools),
      context: [],
      forwardedProps: { aguic: { nodeEvents: true } },
    };
    if (resume) body.resume = resume;
    if (!announced) {
      announced = true;
      started(threadId);
    }
    try {
      for await (const { id, event } of api.run(workflowId, body, abort.signal)) {
        const t = performance.now() - running.t0;
        reducer.apply(event);
        addEvent(eventRow({ event, t, seq: id }));
        if (event.activityType === LIFECYCLE) showNode();
        render();
      }
    } catch (err) {
      if (err.name !== "AbortError") {
        reducer.run = { ...reducer.run, runId, status: "error", message: err.message, code: err.status ? `http ${err.status}` : "network" };
        studio.fail(err);
      }
    } finally {
      last.took = performance.now() - running.t0;
      running = null;
      render();
      if (!closed) input.focus();
    }
  }

  async function cancelRun() {
    if (!running) return;
    cancel.disabled = true;
    try {
      await api.cancel(workflowId, threadId);
    } catch (err) {
      studio.fail(err);
    }
  }

  // restore loads an existing thread: a conversation as a client that
  // reloads restores it (the history stream: messages, state, what it
  // waits for), a stateless one from its stored messages.
  async function restore() {
    if (!givenThread) return;
    addEvent(separator(`thread ${threadId}, restored`));
    try {
      if (info.conversation) {
        for await (const { id, event } of api.history(workflowId, threadId)) {
          reducer.apply(event);
          addEvent(eventRow({ event, seq: id }));
        }
      } else {
        const messages = [];
        for (let cursor; ;) {
          const page = await api.messages(workflowId, threadId, cursor);
          messages.push(...page.messages);
          if (!page.nextCursor) break;
          cursor = page.nextCursor;
        }
        reducer = new Reducer({ messages });
      }
    } catch (err) {
      studio.fail(err);
    }
    render();
  }

  let closed = false;
  await restore();
  draw();
  return {
    el,
    close() {
      closed = true;
      running?.abort.abort();
      graph?.close();
    },
  };
}
