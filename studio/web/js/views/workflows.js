// The workflows: a list to pick from, and the one picked with its
// capabilities, its graph and, for the node clicked, its source lines and
// keys.

import { h, replace } from "../dom.js";
import { Graph } from "../graph.js";
import { sourceView } from "../source.js";
import { capabilityChips } from "../capabilities.js";

export async function workflowsView(studio, id) {
  const list = await studio.workflows();
  if (list.length === 0) return { el: h("p", { class: "empty", text: "The server serves no workflow." }) };
  id ??= list[0].id;
  const filter = h("input", { type: "search", class: "filter", placeholder: "Filter workflows  /", "aria-label": "Filter workflows", "data-slash": "" });
  const items = list.map((w) => h("li", { dataset: { search: `${w.id} ${w.title ?? ""} ${w.description ?? ""}`.toLowerCase() } },
    h("a", { href: `#/workflows/${encodeURIComponent(w.id)}`, "aria-current": w.id === id ? "true" : "false" },
      h("div", { class: "title" }, h("span", { text: w.title || w.id }), h("span", { class: "badge", text: w.conversation ? "conversation" : "stateless" })),
      h("div", { class: "sub mono", text: w.id }),
      w.description ? h("div", { class: "sub", text: w.description }) : null)));
  filter.addEventListener("input", () => {
    const q = filter.value.trim().toLowerCase();
    for (const li of items) li.hidden = q !== "" && !li.dataset.search.includes(q);
  });
  const content = h("section", { class: "page" }, h("p", { class: "empty", text: "Loading…" }));
  const el = h("div", { class: "split" },
    h("nav", { class: "sidebar", "aria-label": "Workflows" }, filter, h("ul", {}, items)),
    content);
  let graph;
  try {
    const info = await studio.workflow(id);
    graph = detail(content, info);
  } catch (err) {
    replace(content, h("p", { class: "empty error-text", text: err.message }));
  }
  return { el, close: () => graph?.close() };
}

// detail fills the page of one workflow, and returns its graph.
function detail(page, info) {
  const side = h("div", { class: "body details" });
  const sideTitle = h("h3", { text: "Workflow" });
  let graph;
  const showNode = (node) => {
    replace(side, node ? nodeDetails(info, node) : workflowDetails(info));
    sideTitle.textContent = node ? `Node ${node.id}` : "Workflow";
    side.querySelector(".source")?.dispatchEvent(new Event("shown"));
  };
  let graphBody;
  if (info.layout) {
    graph = new Graph(info.layout, { onSelect: showNode });
    graphBody = graph.el;
  } else {
    graphBody = h("div", { class: "graph-fallback" },
      h("p", { class: "muted", text: "This server sends no layout for the graph; here it is as a Mermaid flowchart." }),
      h("pre", { text: info.graph ?? "" }));
  }
  replace(page,
    h("div", { class: "page-head" },
      h("div", { class: "grow" },
        h("h1", { text: info.title || info.id }),
        h("p", {}, h("span", { class: "mono", text: info.id }), info.description ? ` — ${info.description}` : ""),
        capabilityChips(info)),
      h("a", { class: "button", href: `#/threads?workflow=${encodeURIComponent(info.id)}`, text: "Threads" }),
      h("a", { class: "button primary", href: `#/run/${encodeURIComponent(info.id)}`, title: "Run (r)", text: "Run ▸" })),
    h("div", { class: "workflow-body" },
      h("section", { class: "panel" }, h("header", {}, h("h3", { text: "Graph" }), h("span", { class: "spacer" }), h("span", { class: "muted small", text: "click a node for its source" })), graphBody),
      h("section", { class: "panel" }, h("header", {}, sideTitle), side)));
  showNode(undefined);
  return graph;
}

function workflowDetails(info) {
  const src = info.source;
  const out = [
    h("dl", {},
      h("dt", { text: "URL" }), h("dd", { class: "mono", text: info.url }),
      src ? [h("dt", { text: "Source" }), h("dd", { class: "mono", text: `${src.file}, lines ${src.startLine}–${src.endLine}` })] : null),
  ];
  if (src?.text) out.push(sourceBlock(src));
  return out;
}

function nodeDetails(info, node) {
  const src = info.source;
  const span = node.span;
  const keys = Object.entries(node.keys ?? {});
  return [
    h("dl", {},
      h("dt", { text: "Kind" }), h("dd", { class: "mono", text: node.kind ?? node.role }),
      node.label ? [h("dt", { text: "Label" }), h("dd", { class: "mono", text: node.label })] : null,
      h("dt", { text: "Does" }), h("dd", { class: "mono", text: node.text ?? "" }),
      node.suspends ? [h("dt", { text: "Pauses" }), h("dd", { text: "the run may wait here" })] : null,
      span ? [h("dt", { text: "Source" }), h("dd", { class: "mono", text: `${span.file}:${span.start.line}:${span.start.col}` })] : null),
    keys.length ? h("table", {}, h("thead", {}, h("tr", {}, h("th", { text: "key" }), h("th", { text: "value" }))),
      h("tbody", {}, keys.map(([k, v]) => h("tr", {}, h("th", { class: "mono", text: k }), h("td", { class: "mono", text: typeof v === "string" ? v : JSON.stringify(v) }))))) : null,
    src?.text && span && span.file === src.file ? sourceBlock(src, span) : null,
  ];
}

// sourceBlock shows the workflow's file, its block set apart, scrolled to
// span (or the block) once shown.
function sourceBlock(src, span) {
  const view = sourceView(src.text, { block: [src.startLine, src.endLine], span });
  view.el.addEventListener("shown", () => requestAnimationFrame(() => view.scrollTo()));
  return view.el;
}
