// One thread: where it stands and what it waits for, its runs with their
// outcome and duration, and its stored event log to step through: a
// slider and a list, with the messages and the state as they were after
// the event picked (folded with the reducer the live view uses). From the
// event picked, the replay route streams the rest of the log again; the
// conversation goes on in the run view.

import { h, replace, when, ms, json } from "../dom.js";
import { Reducer } from "../reducer.js";
import { renderMessages } from "../messages.js";
import { eventRow, separator } from "../eventlist.js";
import { stateTree } from "../statetree.js";
import { statusBadge } from "./threads.js";

const MAX_EVENTS = 20_000; // the most events the stepper loads

export async function threadView(studio, workflowId, threadId) {
  const api = studio.api;
  const [info, events] = await Promise.all([api.thread(workflowId, threadId), loadEvents(api, workflowId, threadId)]);

  // Where the thread stands.
  const head = h("div", { class: "page-head" },
    h("div", { class: "grow" },
      h("h1", {}, h("span", { class: "mono", text: threadId }), " ", statusBadge(info.status)),
      h("p", {},
        "workflow ", h("a", { class: "mono", href: `#/workflows/${encodeURIComponent(workflowId)}`, text: workflowId }),
        info.title ? ` — ${info.title}` : "",
        ` · created ${when(info.created)} · updated ${when(info.updated)}`),
      h("div", { class: "waiting" }, waiting(info.waiting))),
    h("a", { class: "button primary", href: `#/run/${encodeURIComponent(workflowId)}?thread=${encodeURIComponent(threadId)}`, text: "Continue in the run view ▸" }));

  // The runs.
  const runRows = h("tbody");
  const moreRuns = h("button", { type: "button", text: "More runs", hidden: !info.runsNext });
  let runsAfter = info.runsNext;
  const addRuns = (runs) => runRows.append(...runs.map(runRow));
  addRuns(info.runs ?? []);
  moreRuns.addEventListener("click", async () => {
    try {
      const page = await api.threadRuns(workflowId, threadId, runsAfter);
      addRuns(page.runs ?? []);
      runsAfter = page.next;
      moreRuns.hidden = !runsAfter;
    } catch (err) {
      studio.fail(err);
    }
  });
  const runsPanel = h("section", { class: "panel runs-panel" },
    h("header", {}, h("h3", { text: "Runs" }), h("span", { class: "spacer" }), moreRuns),
    h("div", { class: "body flush" },
      h("table", { class: "list runs" },
        h("thead", {}, h("tr", {}, ["Run", "Status", "Started", "Duration", "Outcome"].map((t) => h("th", { text: t })))),
        runRows)));

  // The log stepper.
  const n = events.length;
  let cursor = n; // after the first cursor events
  const slider = h("input", { type: "range", min: "0", max: String(n), value: String(n), "aria-label": "Position in the event log" });
  const pos = h("span", { class: "pos", "aria-live": "polite" });
  const button = (text, label, delta) => h("button", { type: "button", text, title: label, "aria-label": label, onclick: () => move(delta) });
  const replayButton = h("button", { type: "button", title: "Stream the replay route from this position", text: "Replay from here" });
  const list = h("div", { class: "body flush eventlist", role: "list", "aria-label": "Stored events" });
  const rows = [];
  let runOf;
  events.forEach((e, i) => {
    if (e.runId !== runOf) {
      runOf = e.runId;
      list.append(separator(`run ${e.runId ?? "?"}`));
    }
    const row = eventRow({ event: e.event, seq: e.seq, t: sinceRun(events, i), onpick: () => setCursor(i + 1) });
    row.dataset.seq = e.seq;
    rows.push(row);
    list.append(row);
  });
  if (n === 0) list.append(h("p", { class: "empty", text: "The thread has no stored event." }));
  const stepper = h("section", { class: "panel stepper-panel" },
    h("header", {}, h("h3", { text: "Event log" }), h("span", { class: "spacer" }), replayButton),
    h("div", { class: "body stepper" },
      h("div", { class: "controls" },
        button("«", "First (Home)", -Infinity), button("‹", "Back (←)", -1), slider, button("›", "Forward (→)", 1), button("»", "Last (End)", Infinity), pos)),
    list);

  const messagesBox = h("div", { class: "body" });
  const stateBox = h("div", { class: "body" });
  const replayBox = h("div", { class: "replay-out", hidden: true });
  const messagesTitle = h("h3", { text: "Messages" });
  const stateTitle = h("h3", { text: "State" });

  const el = h("div", { class: "thread-page" },
    head,
    runsPanel,
    stepper,
    h("section", { class: "panel" }, h("header", {}, messagesTitle), messagesBox),
    h("section", { class: "panel" }, h("header", {}, stateTitle), stateBox, replayBox));

  function setCursor(k) {
    cursor = Math.max(0, Math.min(n, k));
    slider.value = String(cursor);
    const r = new Reducer();
    for (let i = 0; i < cursor; i++) r.apply(events[i].event);
    const at = events[cursor - 1];
    pos.textContent = cursor === 0 ? `0 / ${n}` : `${cursor} / ${n} · #${at.seq}`;
    const label = cursor === 0 ? "before the first event" : cursor === n ? "after the last event" : `after event #${at.seq}`;
    messagesTitle.textContent = `Messages ${label}`;
    stateTitle.textContent = `State ${label}`;
    replace(messagesBox, renderMessages(r.messages), r.problems.length ? h("p", { class: "error-text small", text: r.problems.join("; ") }) : null);
    // The paths the event at the cursor touched are marked.
    const touched = at?.event.type?.startsWith("STATE_") ? r.touched : [];
    replace(stateBox, stateTree(r.state, touched));
    rows.forEach((row, i) => {
      row.setAttribute("aria-selected", String(i === cursor - 1));
      row.classList.toggle("after", i >= cursor);
    });
    rows[cursor - 1]?.scrollIntoView({ block: "nearest" });
    replayButton.disabled = n === 0 || cursor === n;
    replayButton.textContent = cursor === 0 ? "Replay from the start" : `Replay after #${at.seq}`;
  }
  function move(delta) {
    setCursor(cursor + delta);
  }
  slider.addEventListener("input", () => setCursor(Number(slider.value)));

  // replay streams the replay route after the cursor, folding what comes
  // onto the messages and state at the cursor.
  let replaying;
  replayButton.addEventListener("click", async () => {
    replaying?.abort();
    const abort = new AbortController();
    replaying = abort;
    const from = cursor === 0 ? undefined : events[cursor - 1].seq;
    const r = new Reducer();
    for (let i = 0; i < cursor; i++) r.apply(events[i].event);
    const got = h("div", { class: "eventlist", role: "list", "aria-label": "Replayed events" });
    const summary = h("span", { class: "small muted" });
    replace(replayBox,
      h("header", { class: "replay-head" }, h("h3", { text: `Replay ${from === undefined ? "from the start" : `after #${from}`}` }), h("span", { class: "spacer" }), summary),
      got);
    replayBox.hidden = false;
    let count = 0;
    try {
      for await (const { id, event } of api.replay(workflowId, threadId, from, abort.signal)) {
        r.apply(event);
        got.append(eventRow({ event, seq: id }));
        count++;
        summary.textContent = `${count} event${count === 1 ? "" : "s"} streamed`;
      }
      summary.textContent = `${count} event${count === 1 ? "" : "s"} streamed · done`;
      messagesTitle.textContent = "Messages after the replay";
      stateTitle.textContent = "State after the replay";
      replace(messagesBox, renderMessages(r.messages));
      replace(stateBox, stateTree(r.state, r.touched));
    } catch (err) {
      if (err.name !== "AbortError") studio.fail(err);
    }
  });

  const onKey = (e) => {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || document.querySelector("dialog[open]")) return;
    if (e.target instanceof HTMLElement && ["INPUT", "TEXTAREA", "SELECT"].includes(e.target.tagName) && e.target !== slider) return;
    if (e.target === slider) return; // the slider moves itself
    const moves = { ArrowLeft: -1, ArrowRight: 1, Home: -Infinity, End: Infinity };
    if (moves[e.key] === undefined) return;
    e.preventDefault();
    move(moves[e.key]);
  };
  document.addEventListener("keydown", onKey);
  setCursor(n);
  return {
    el,
    close() {
      document.removeEventListener("keydown", onKey);
      replaying?.abort();
    },
  };
}

// loadEvents reads the thread's stored events, a page at a time.
async function loadEvents(api, workflowId, threadId) {
  const out = [];
  for (let after; out.length < MAX_EVENTS; ) {
    const page = await api.threadEvents(workflowId, threadId, after);
    out.push(...(page.events ?? []));
    if (!page.next) break;
    after = page.next;
  }
  return out;
}

// sinceRun is the ms from the first stored event of an event's run to it.
function sinceRun(events, i) {
  const t = Date.parse(events[i].time);
  let j = i;
  while (j > 0 && events[j - 1].runId === events[i].runId) j--;
  const t0 = Date.parse(events[j].time);
  return Number.isNaN(t) || Number.isNaN(t0) ? undefined : t - t0;
}

function waiting(w) {
  if (!w || w.for === "nothing" || !w.for) return h("span", { class: "muted", text: "It waits for nothing." });
  switch (w.for) {
    case "user":
      return h("span", { class: "badge warn", text: "waits for the next user message" });
    case "tools":
      return [h("span", { class: "badge warn", text: "waits for frontend tools" }), " ",
        (w.toolCalls ?? []).map((c) => h("span", { class: "mono small", text: `${c.name ?? "?"}(${c.args ?? ""}) ${c.id} ` }))];
    case "interrupts":
      return [h("span", { class: "badge warn", text: "waits for answers to interrupts" }), " ",
        (w.interrupts ?? []).map((i) => h("span", { class: "mono small", text: `${i.reason ?? ""} ${i.id} ` }))];
    case "time":
      return h("span", { class: "badge warn", text: `sleeps until ${when(w.wakeAt)}` });
    default:
      return h("span", { class: "badge", text: `waits for ${w.for}` });
  }
}

// outcomeText says how a run ended, from its outcome or its error.
function outcomeText(r) {
  if (r.error) return `${r.code ? r.code + ": " : ""}${r.error}`;
  const o = r.outcome;
  if (!o) return "";
  if (o.type === "interrupt") return `interrupt: ${(o.interrupts ?? []).map((i) => i.reason ?? i.id).join(", ")}`;
  if (o.pendingToolCallIds?.length) return `${o.type}, waits for tool calls ${o.pendingToolCallIds.join(", ")}`;
  return o.type ?? json(o);
}

function runRow(r) {
  const outcome = outcomeText(r);
  return h("tr", { dataset: { run: r.runId } },
    h("td", { class: "mono", text: r.runId }),
    h("td", {}, statusBadge(r.status)),
    h("td", { text: when(r.started) }),
    h("td", { class: "mono", text: r.durationMs !== undefined ? ms(r.durationMs) : r.finished ? "" : "…" }),
    h("td", { class: ["wrap", "mono", "small", r.error && "error-text"], text: outcome }));
}
