// A workflow's AG-UI capabilities, as chips, and the names of the
// frontend tools its source calls.

import { h } from "./dom.js";

// capabilityChips lists what a workflow uses of AG-UI.
export function capabilityChips(info) {
  const c = info.capabilities ?? {};
  const chips = [h("span", { class: "badge accent", title: info.conversation ? "The thread keeps the conversation: the client sends only the new turn." : "Stateless: the client sends the whole history every turn.", text: info.conversation ? "conversation" : "stateless" })];
  const add = (text, title) => chips.push(h("span", { class: "badge", title, text }));
  if (c.tools?.supported) add(c.tools.clientProvided ? "tools · client" : "tools", "Calls tools" + (c.tools.clientProvided ? ", some of them the client's" : ""));
  if (c.state) add(`state · ${["snapshots", "deltas", "persistentState"].filter((k) => c.state[k]).join(", ")}`, "Shares state with the client");
  if (c.reasoning?.supported) add("reasoning", "Streams the model's reasoning");
  if (c.humanInTheLoop?.supported) add(`human in the loop · ${["approvals", "interrupts"].filter((k) => c.humanInTheLoop[k]).join(", ") || "suspend"}`, "Waits for people");
  if (c.multiAgent?.supported) add("calls workflows", "Calls other workflows");
  return h("div", { class: "chips" }, chips);
}

// frontendTools are the names of the frontend_tool nodes of a workflow's
// graph (their argument, when it is a plain string), in order, each once.
export function frontendTools(info) {
  const names = new Set();
  for (const n of info.layout?.nodes ?? []) {
    const m = n.kind === "frontend_tool" && /^"([^"<\\]+)"$/.exec(n.keys?.arg ?? "");
    if (m) names.add(m[1]);
  }
  return [...names];
}
