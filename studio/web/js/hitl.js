// What a run waits for from its client, with the forms to answer it: the
// frontend tool calls it ended with (RUN_FINISHED pendingToolCallIds) and
// its open interrupts (outcome interrupt). Answers go back as a client
// sends them: a tool message per call, a resume entry per interrupt.

import { h, json, when } from "./dom.js";
import { answerEditor } from "./schemaform.js";

// toolCallsCard asks for the results of calls ({id, name, arguments,
// args}); send(messages) gets the tool messages' {toolCallId, content}.
export function toolCallsCard(calls, tools, send) {
  const editors = calls.map((c) => {
    const decl = tools.find((t) => t.name === c.name);
    return { call: c, editor: answerEditor(decl?.responseSchema, { label: `the result of ${c.name}` }) };
  });
  const error = h("p", { class: "error-text small", role: "alert" });
  const submit = h("button", { type: "submit", class: "primary", text: calls.length > 1 ? "Send the results" : "Send the result" });
  const form = h("form", { class: "hitl", "aria-label": "Pending frontend tool calls" },
    h("h3", { text: calls.length > 1 ? "The run waits for these tool calls" : "The run waits for a tool call" }),
    editors.map(({ call, editor }) => h("div", { class: "pending-call", dataset: { toolCall: call.id } },
      h("div", {}, h("span", { class: "mono", text: call.name }), " ", h("span", { class: "faint small mono", text: call.id })),
      h("pre", { class: "args", text: call.args !== undefined ? json(call.args) : call.arguments }),
      editor.el)),
    error,
    h("div", { class: "actions" }, submit));
  form.addEventListener("input", () => {
    error.textContent = "";
  });
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const answers = [];
    for (const { call, editor } of editors) {
      const r = editor.read();
      if (!r.ok) {
        error.textContent = r.error;
        return;
      }
      answers.push({ toolCallId: call.id, content: typeof r.value === "string" ? r.value : JSON.stringify(r.value) });
    }
    error.textContent = "";
    submit.disabled = true;
    send(answers);
  });
  return form;
}

// interruptsCard asks for an answer to every open interrupt; send(resume)
// gets one {interruptId, status, payload?} each, once every interrupt has
// one.
export function interruptsCard(interrupts, send) {
  const decisions = new Map();
  const error = h("p", { class: "error-text small", role: "alert" });
  const cards = interrupts.map((it) => {
    const editor = answerEditor(it.responseSchema, { label: `the answer to ${it.reason ?? it.id}` });
    const state = h("span", { class: "small muted" });
    const decide = (decision) => {
      decisions.set(it.id, decision);
      state.textContent = decision.status === "resolved" ? "resolved ✓" : "cancelled ✓";
      if (decisions.size === interrupts.length) {
        for (const b of el.querySelectorAll("button")) b.disabled = true;
        send(interrupts.map((x) => decisions.get(x.id)));
      }
    };
    const resolve = h("button", { type: "button", class: "primary", text: "Resolve", onclick: () => {
      const r = editor.read();
      if (!r.ok) {
        error.textContent = r.error;
        return;
      }
      error.textContent = "";
      decide({ interruptId: it.id, status: "resolved", payload: r.value });
    } });
    const cancel = h("button", { type: "button", class: "danger", text: "Cancel interrupt", onclick: () => decide({ interruptId: it.id, status: "cancelled" }) });
    return h("div", { class: "pending-interrupt", dataset: { interrupt: it.id } },
      h("div", {}, h("span", { class: "badge warn", text: it.reason ?? "interrupt" }), " ", h("span", { class: "faint small mono", text: it.id })),
      it.message ? h("p", { text: it.message }) : null,
      it.expiresAt ? h("div", { class: "small muted", text: `expires ${when(it.expiresAt)}` }) : null,
      it.toolCallId ? h("div", { class: "small muted mono", text: `tool call ${it.toolCallId}` }) : null,
      editor.el,
      h("div", { class: "actions" }, state, cancel, resolve));
  });
  const el = h("section", { class: "hitl", "aria-label": "Open interrupts" },
    h("h3", { text: interrupts.length > 1 ? "The run waits for answers to these interrupts" : "The run waits for an answer to an interrupt" }),
    cards,
    error);
  el.addEventListener("input", () => {
    error.textContent = "";
  });
  return el;
}
