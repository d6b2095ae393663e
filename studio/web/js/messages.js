// Messages as a chat client renders them: text, reasoning, tool calls
// with their arguments and results, and activities (a PLAN as its steps,
// others as their content). The node lifecycle activity is the graph's,
// not the chat's: it is left out.

import { h, json } from "./dom.js";
import { LIFECYCLE } from "./reducer.js";

// renderMessages draws messages into a list element.
export function renderMessages(messages) {
  const results = new Map();
  for (const m of messages) if (m.role === "tool") results.set(m.toolCallId, m);
  const called = new Set(messages.flatMap((m) => m.toolCalls?.map((c) => c.id) ?? []));
  const out = [];
  for (const m of messages) {
    if (m.role === "activity" && m.activityType === LIFECYCLE) continue;
    // A result is shown with its call; one with no call shown stands alone.
    if (m.role === "tool" && called.has(m.toolCallId)) continue;
    out.push(message(m, results));
  }
  if (out.length === 0) return h("div", { class: "messages" }, h("p", { class: "muted", text: "No messages yet." }));
  return h("div", { class: "messages" }, out);
}

function message(m, results) {
  const role = m.role ?? "assistant";
  const head = h("div", { class: "who" }, h("span", { text: role === "activity" ? `activity · ${m.activityType}` : role }), m.name ? h("span", { text: m.name }) : null);
  const body = [];
  if (role === "activity") {
    body.push(activity(m));
  } else if (typeof m.content === "string") {
    if (m.content !== "") body.push(h("div", { class: "text", text: m.content }));
  } else if (Array.isArray(m.content)) {
    for (const part of m.content) {
      body.push(part.type === "text" ? h("div", { class: "text", text: part.text }) : h("div", { class: "muted small", text: `[${part.type}]` }));
    }
  } else if (m.content !== undefined && m.content !== null) {
    body.push(h("pre", { text: json(m.content) }));
  }
  for (const c of m.toolCalls ?? []) body.push(toolCall(c, results.get(c.id)));
  if (role === "tool") body.push(h("pre", { class: "result", text: `→ ${m.content}` }));
  return h("div", { class: ["msg", role], dataset: { id: m.id } }, head, body);
}

function toolCall(c, result) {
  let args = c.function?.arguments ?? "";
  try {
    args = json(JSON.parse(args));
  } catch {
    // Arguments still streaming, or not JSON: as they are.
  }
  return h("details", { class: "toolcall", open: !result, dataset: { toolCall: c.id } },
    h("summary", {},
      h("span", { class: "name", text: c.function?.name ?? "?" }),
      result ? h("span", { class: "badge ok", text: "answered" }) : h("span", { class: "badge", text: "call" })),
    h("pre", { text: args || "{}" }),
    result ? h("pre", { class: "result", text: `→ ${result.content}` }) : null);
}

function activity(m) {
  const steps = m.content?.steps;
  if (m.activityType === "PLAN" && Array.isArray(steps)) {
    return h("ol", { class: "plan" }, steps.map((s) => h("li", {},
      h("span", { class: ["badge", "status", s.status === "done" && "ok", s.status === "in_progress" && "accent"], text: s.status ?? "" }),
      h("span", { text: s.title ?? json(s) }))));
  }
  return h("pre", { text: json(m.content) });
}
