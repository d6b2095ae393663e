// The compiled graph of a workflow, drawn as SVG from the layout the
// server computes (GET {base}/workflows/{id}, "layout"): nodes, edges with
// their labels, and the boxes of handler blocks and parallel branches.
// Drag to pan, wheel or +/- to zoom, f to fit; a click or Enter on a node
// selects it. A run marks the node it is at (mark) and the nodes and
// edges it went through.

import { h, s } from "./dom.js";

const MIN_ZOOM = 0.15;
const MAX_ZOOM = 4;
const FOLLOW_ZOOM = 0.85; // the least zoom follow shows a node at
// The metrics the server's layout sized its boxes for: two lines of 13px
// monospace text, each rune 7.8px wide, on 16px lines, 6px from the top.
const CHAR = 7.8;
const LINE = 16;
const PAD_Y = 6;
const RISE = 13 * 0.35; // from a line's middle to its baseline
const INSET = 14; // how far a decision's points reach in
let graphs = 0; // for the ids of each graph's arrow markers

export class Graph {
  // layout is the server's; onSelect(node or undefined) is told of every
  // selection.
  constructor(layout, { onSelect = () => {} } = {}) {
    this.layout = layout;
    this.onSelect = onSelect;
    this.nodes = new Map(); // id → {data, el}
    this.edges = []; // {data, el}
    this.view = { x: 0, y: 0, k: 1 };
    this.arrows = `graph${++graphs}-arrow`;

    this.viewport = s("g", { class: "viewport" });
    this.svg = s("svg", { role: "img", "aria-label": `The graph of workflow ${layout.workflow ?? ""}` },
      s("defs", {},
        arrow(this.arrows, "arrow"),
        arrow(`${this.arrows}-taken`, "arrow taken")),
      this.viewport);
    this.el = h("div", { class: "graph", tabindex: "-1" },
      this.svg,
      h("div", { class: "tools" },
        h("button", { type: "button", title: "Zoom in (+)", "aria-label": "Zoom in", text: "+", onclick: () => this.zoom(1.25) }),
        h("button", { type: "button", title: "Zoom out (−)", "aria-label": "Zoom out", text: "−", onclick: () => this.zoom(0.8) }),
        h("button", { type: "button", title: "Fit (f)", text: "Fit", onclick: () => this.fit() })));
    this.#draw();
    this.#interact();
    // Fit once the element has a size, and again when it is resized
    // before the user moved the view.
    this.resize = new ResizeObserver(() => {
      if (!this.moved) this.fit();
    });
    this.resize.observe(this.el);
  }

  close() {
    this.resize.disconnect();
  }

  #draw() {
    const { groups = [], edges = [], nodes = [] } = this.layout;
    const layer = (cls) => this.viewport.appendChild(s("g", { class: cls }));
    const gLayer = layer("groups");
    const eLayer = layer("edges");
    const nLayer = layer("nodes");
    for (const g of [...groups].sort((a, b) => depth(groups, a) - depth(groups, b))) {
      gLayer.append(s("g", { class: ["group", g.kind], "data-group": g.id },
        s("rect", { x: g.x, y: g.y, width: g.width, height: g.height, rx: 8 }),
        g.label ? s("text", { x: g.x + 8, y: g.y + 15 }, g.label) : null));
    }
    for (const e of edges) {
      const el = edgeElement(e, this.arrows);
      eLayer.append(el);
      this.edges.push({ data: e, el });
    }
    for (const n of nodes) {
      const el = nodeElement(n);
      el.addEventListener("click", (ev) => {
        ev.stopPropagation();
        this.select(n.id);
      });
      el.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter" || ev.key === " ") {
          ev.preventDefault();
          this.select(n.id);
        }
      });
      nLayer.append(el);
      this.nodes.set(n.id, { data: n, el });
    }
  }

  // select marks the node with this id as selected (none for undefined)
  // and tells onSelect.
  select(id, { quiet = false } = {}) {
    for (const { el } of this.nodes.values()) el.classList.remove("selected");
    const n = id !== undefined ? this.nodes.get(id) : undefined;
    n?.el.classList.add("selected");
    this.selected = n?.data;
    if (!quiet) this.onSelect(n?.data);
  }

  // mark shows where a run is: the node it is at (phase start: current;
  // waiting when it suspends there), the nodes it finished (visited),
  // the edge it took after a node (next), a node that failed.
  mark({ nodeId, phase, next } = {}) {
    const n = this.nodes.get(nodeId);
    if (!n) return;
    for (const { el } of this.nodes.values()) el.classList.remove("current", "waiting");
    if (phase === "start") {
      n.el.classList.add("current");
      if (n.data.suspends) n.el.classList.add("waiting");
    } else if (phase === "error") {
      n.el.classList.add("failed");
    } else {
      n.el.classList.add("visited");
    }
    if (next !== undefined) {
      for (const e of this.edges) {
        if (e.data.from === nodeId && e.data.to === next) {
          e.el.classList.add("taken");
          e.el.querySelector("path").setAttribute("marker-end", `url(#${this.arrows}-taken)`);
        }
      }
    }
    this.current = phase === "start" ? nodeId : undefined;
  }

  // clear forgets the marks of a run.
  clear() {
    for (const { el } of this.nodes.values()) el.classList.remove("current", "waiting", "visited", "failed");
    for (const { el } of this.edges) {
      el.classList.remove("taken");
      el.querySelector("path").setAttribute("marker-end", `url(#${this.arrows})`);
    }
    this.current = undefined;
  }

  fit() {
    const w = this.el.clientWidth;
    const hgt = this.el.clientHeight;
    const lw = this.layout.width || 1;
    const lh = this.layout.height || 1;
    if (!w || !hgt) return;
    const pad = 24;
    const k = clamp(Math.min((w - pad * 2) / lw, (hgt - pad * 2) / lh, 1.5));
    this.view = { k, x: (w - lw * k) / 2, y: Math.max(pad, (hgt - lh * k) / 2) };
    this.moved = false;
    this.#apply();
  }

  // follow centres the node with this id at a zoom where its text reads,
  // unless the user moved the view: the run view follows the run with it.
  follow(id) {
    const n = this.nodes.get(id)?.data;
    const w = this.el.clientWidth;
    const hgt = this.el.clientHeight;
    if (!n || this.moved || !w || !hgt) return;
    const k = clamp(Math.max(this.view.k, FOLLOW_ZOOM));
    this.view = { k, x: w / 2 - (n.x + n.width / 2) * k, y: hgt / 2 - (n.y + n.height / 2) * k };
    this.#apply();
  }

  // zoom scales the view by f around (cx, cy), the middle by default.
  zoom(f, cx = this.el.clientWidth / 2, cy = this.el.clientHeight / 2) {
    const k = clamp(this.view.k * f);
    const r = k / this.view.k;
    this.view = { k, x: cx - (cx - this.view.x) * r, y: cy - (cy - this.view.y) * r };
    this.moved = true;
    this.#apply();
  }

  #apply() {
    const { x, y, k } = this.view;
    this.viewport.setAttribute("transform", `translate(${x.toFixed(1)} ${y.toFixed(1)}) scale(${k.toFixed(4)})`);
  }

  #interact() {
    let drag;
    this.svg.addEventListener("pointerdown", (e) => {
      if (e.button !== 0 || e.target.closest(".node")) return;
      drag = { x: e.clientX, y: e.clientY, vx: this.view.x, vy: this.view.y };
      this.svg.setPointerCapture(e.pointerId);
      this.el.classList.add("dragging");
    });
    this.svg.addEventListener("pointermove", (e) => {
      if (!drag) return;
      this.view = { ...this.view, x: drag.vx + e.clientX - drag.x, y: drag.vy + e.clientY - drag.y };
      this.moved = true;
      this.#apply();
    });
    const end = () => {
      drag = undefined;
      this.el.classList.remove("dragging");
    };
    this.svg.addEventListener("pointerup", end);
    this.svg.addEventListener("pointercancel", end);
    this.svg.addEventListener("click", (e) => {
      if (!e.target.closest(".node") && this.selected) this.select(undefined);
    });
    this.svg.addEventListener("wheel", (e) => {
      e.preventDefault();
      const r = this.svg.getBoundingClientRect();
      this.zoom(Math.exp(-e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top);
    }, { passive: false });
    this.el.addEventListener("keydown", (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const step = 40;
      const moves = { ArrowLeft: [step, 0], ArrowRight: [-step, 0], ArrowUp: [0, step], ArrowDown: [0, -step] };
      if (e.key === "f") this.fit();
      else if (e.key === "+" || e.key === "=") this.zoom(1.25);
      else if (e.key === "-") this.zoom(0.8);
      else if (moves[e.key] && !e.target.closest(".node")) {
        this.view = { ...this.view, x: this.view.x + moves[e.key][0], y: this.view.y + moves[e.key][1] };
        this.moved = true;
        this.#apply();
      } else return;
      e.preventDefault();
    });
  }
}

function clamp(k) {
  return Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, k));
}

function depth(groups, g) {
  let d = 0;
  for (let p = g.parent; p; p = groups.find((x) => x.id === p)?.parent) d++;
  return d;
}

function arrow(id, cls) {
  return s("marker", { id, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
    s("path", { d: "M 0 0 L 10 5 L 0 10 z", class: cls }));
}

function edgeElement(e, arrows) {
  const pts = e.points ?? [];
  const d = pts.map(([x, y], i) => `${i ? "L" : "M"} ${x} ${y}`).join(" ");
  const g = s("g", { class: ["edge", e.style === "dashed" && "dashed", e.back && "back"], "data-from": e.from, "data-to": e.to },
    s("path", { d, "marker-end": `url(#${arrows})` }));
  if (e.label && e.label !== "next") {
    const w = e.label.length * 6.6 + 6;
    g.append(
      s("rect", { class: "label-bg", x: e.labelX - w / 2, y: e.labelY - 8, width: w, height: 16, rx: 3 }),
      s("text", { x: e.labelX, y: e.labelY + 4, "text-anchor": "middle" }, e.label));
  }
  return g;
}

// nodeElement draws a vertex in its box: the shape its kind has (a
// hexagon with pointed ends for a decision, a double border and a pause
// mark where the run may wait, a circle for start and end, a dashed box
// for a missing target), its id (its label, when it has one) over its
// text.
function nodeElement(n) {
  const { x, y, width: w, height: ht } = n;
  const role = n.role ?? "node";
  const g = s("g", {
    class: ["node", role, n.shape, n.suspends && "suspends"],
    "data-node": n.id,
    tabindex: "0",
    role: "button",
    "aria-label": `${n.id}: ${n.text ?? n.kind ?? ""}`,
  });
  const cx = x + w / 2;
  const cy = y + ht / 2;
  let shape;
  switch (n.shape) {
    case "circle":
      shape = s("circle", { cx, cy, r: w / 2 });
      break;
    case "decision":
      shape = s("polygon", { points: [[x, cy], [x + INSET, y], [x + w - INSET, y], [x + w, cy], [x + w - INSET, y + ht], [x + INSET, y + ht]].map((p) => p.join(",")).join(" ") });
      break;
    default:
      shape = s("rect", { x, y, width: w, height: ht, rx: 4 });
  }
  shape.setAttribute("class", "shape");
  g.append(s("title", {}, [n.id, n.text].filter(Boolean).join("\n")), shape);
  if (n.shape === "suspend") {
    g.append(
      s("rect", { class: "inner", x: x + 3, y: y + 3, width: w - 6, height: ht - 6, rx: 2 }),
      s("rect", { class: "glyph", x: x + w - 10, y: y + 6, width: 2, height: 8 }),
      s("rect", { class: "glyph", x: x + w - 6, y: y + 6, width: 2, height: 8 }));
  }
  const room = Math.max(4, Math.floor(w / CHAR));
  if (n.shape === "circle") {
    g.append(s("text", { x: cx, y: cy + RISE, "text-anchor": "middle" }, n.text || (role === "start" ? "start" : "end")));
    return g;
  }
  g.append(
    s("text", { class: "id", x: cx, y: y + PAD_Y + LINE / 2 + RISE, "text-anchor": "middle" }, cut(n.id, room)),
    s("text", { x: cx, y: y + PAD_Y + LINE * 1.5 + RISE, "text-anchor": "middle" }, cut(role === "missing" ? "missing" : n.text ?? n.kind ?? "", room)));
  return g;
}

function cut(text, room) {
  const t = String(text).replace(/\s+/g, " ");
  return t.length <= room ? t : t.slice(0, room - 1) + "…";
}
