// The threads: every thread the user's credentials see, by workflow then
// thread id, filtered by workflow and status, a page at a time.

import { h, replace, when } from "../dom.js";

const STATUSES = ["running", "suspended", "finished", "failed", "cancelled"];

export async function threadsView(studio, query) {
  const workflows = await studio.workflows();
  const wf = query.get("workflow") ?? "";
  const st = query.get("status") ?? "";
  const pickWorkflow = h("select", { "aria-label": "Workflow", "data-slash": "" },
    h("option", { value: "", text: "All workflows" }),
    workflows.map((w) => h("option", { value: w.id, selected: w.id === wf, text: w.title ? `${w.title} (${w.id})` : w.id })));
  const pickStatus = h("select", { "aria-label": "Status" },
    h("option", { value: "", text: "Any status" }),
    STATUSES.map((s) => h("option", { value: s, selected: s === st, text: s })));
  const refilter = () => {
    const q = new URLSearchParams();
    if (pickWorkflow.value) q.set("workflow", pickWorkflow.value);
    if (pickStatus.value) q.set("status", pickStatus.value);
    studio.go(`#/threads${q.size ? `?${q}` : ""}`);
  };
  pickWorkflow.addEventListener("change", refilter);
  pickStatus.addEventListener("change", refilter);

  const rows = h("tbody");
  const more = h("button", { type: "button", text: "Load more", hidden: true });
  const count = h("span", { class: "muted small" });
  const table = h("table", { class: "list threads" },
    h("thead", {}, h("tr", {}, ["Thread", "Workflow", "Status", "Updated", "Created", "Events", "Last run"].map((t) => h("th", { text: t })))),
    rows);
  const body = h("div", { class: "body flush" }, table);
  const el = h("section", { class: "threads-page" },
    h("div", { class: "page-head" }, h("div", { class: "grow" }, h("h1", { text: "Threads" }), h("p", { text: "The threads your credentials see; open one to step through its event log." }))),
    h("div", { class: "filters" }, pickWorkflow, pickStatus, h("span", { class: "spacer" }), count),
    h("section", { class: "panel" }, body, h("footer", {}, more)));

  let after;
  let shown = 0;
  const load = async () => {
    more.disabled = true;
    const page = await studio.api.threads({ workflow: wf, status: st, after, limit: 50 });
    for (const t of page.threads ?? []) rows.append(row(studio, t));
    shown += page.threads?.length ?? 0;
    count.textContent = `${shown} thread${shown === 1 ? "" : "s"}${page.next ? " so far" : ""}`;
    after = page.next;
    more.hidden = !after;
    more.disabled = false;
    if (shown === 0) replace(body, h("p", { class: "empty", text: wf || st ? "No thread matches." : "No thread yet: run a workflow." }));
  };
  more.addEventListener("click", () => load().catch((err) => studio.fail(err)));
  await load();
  return { el };
}

function row(studio, t) {
  const href = `#/threads/${encodeURIComponent(t.workflow)}/${encodeURIComponent(t.threadId)}`;
  const tr = h("tr", { tabindex: "0", dataset: { thread: t.threadId, workflow: t.workflow } },
    h("td", {}, h("a", { class: "mono", href, text: t.threadId })),
    h("td", { class: "mono", text: t.workflow }),
    h("td", {}, statusBadge(t.status)),
    h("td", { text: when(t.updated) }),
    h("td", { class: "muted", text: when(t.created) }),
    h("td", { class: "mono muted", text: t.lastSeq ? `${t.firstSeq ?? 1}–${t.lastSeq}` : "—" }),
    h("td", { class: "mono muted", text: t.runId ?? "" }));
  tr.addEventListener("click", (e) => {
    if (!e.target.closest("a")) studio.go(href);
  });
  tr.addEventListener("keydown", (e) => {
    if (e.key === "Enter") studio.go(href);
  });
  return tr;
}

// statusBadge shows where a thread or a run stands.
export function statusBadge(status) {
  const cls = { running: "accent running", suspended: "warn", finished: "ok", failed: "bad", cancelled: "" }[status] ?? "";
  return h("span", { class: `badge ${cls}`, text: status ?? "?" });
}
