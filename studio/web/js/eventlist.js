// A list of raw AG-UI events, one row each: when (ms since the run
// started) or the event's place in the thread's log, its type and its
// JSON, which a click unfolds.

import { h } from "./dom.js";
import { LIFECYCLE } from "./reducer.js";

// eventRow draws one event: {event, t?, seq?}. A click unfolds its JSON,
// or, with onpick, picks it (a picked row shows its JSON whole).
export function eventRow({ event, t, seq, onpick }) {
  const { type, timestamp, ...rest } = event;
  const lifecycle = event.activityType === LIFECYCLE;
  const cls = ["ev",
    lifecycle && "lifecycle",
    type === "RUN_FINISHED" && "terminal",
    type === "RUN_ERROR" && "failed",
    type?.startsWith("STATE_") && "state"];
  const row = h("div", { class: cls, role: "listitem", dataset: { type } },
    h("span", { class: "t", title: t !== undefined ? "ms since the run started" : "", text: t !== undefined ? `${Math.round(t)}` : "" }),
    h("span", { class: "seq", title: "the event's id in the thread's log", text: seq ?? "" }),
    h("div", { class: "main" },
      h("div", { class: "type", text: lifecycle ? `${type} · ${summary(event)}` : type }),
      h("div", { class: "data", text: JSON.stringify(rest) })));
  row.addEventListener("click", onpick ?? (() => row.classList.toggle("open")));
  return row;
}

// separator is a row between runs, or that says where a stream came from.
export function separator(text) {
  return h("div", { class: "ev sep", role: "listitem", text });
}

function summary(e) {
  const n = e.content?.node ?? e.patch?.find((p) => p.path === "/node")?.value;
  return n ? `${n.nodeId} ${n.phase}` : "";
}
