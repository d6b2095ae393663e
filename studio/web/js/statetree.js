// The shared state as a JSON tree; the paths the last state event touched
// are marked (and flash as they change).

import { h } from "./dom.js";
import { pointer } from "./jsonpatch.js";

// stateTree draws value; touched are JSON Pointers ("" for the whole).
export function stateTree(value, touched = []) {
  const marks = new Set(touched);
  const isTouched = (path) => {
    for (const t of marks) if (path === t || path.startsWith(t + "/") || t === "") return true;
    return false;
  };
  if (value === null || value === undefined) {
    return h("div", { class: "tree" }, h("span", { class: "muted", text: value === null ? "null (no state)" : "no state" }));
  }
  return h("div", { class: "tree" },
    h("ul", {}, node(null, value, [], isTouched)),
    touched.length ? h("div", { class: "touched-list" }, "changed: ", h("span", { class: "mono", text: touched.map((t) => t || "/").join(", ") })) : null);
}

function node(key, value, path, isTouched) {
  const p = pointer(path);
  const entry = h("span", { class: ["entry", isTouched(p) && "touched"], dataset: { path: p } },
    key !== null ? [h("span", { class: "key", text: JSON.stringify(key) }), h("span", { class: "punct", text: ": " })] : null);
  if (Array.isArray(value) || (value !== null && typeof value === "object")) {
    const arr = Array.isArray(value);
    const entries = arr ? value.map((v, i) => [i, v]) : Object.entries(value);
    entry.append(h("span", { class: "punct", text: arr ? `[${entries.length ? "" : "]"}` : `{${entries.length ? "" : "}"}` }));
    if (!entries.length) return h("li", {}, entry);
    return h("li", {}, entry,
      h("ul", {}, entries.map(([k, v]) => node(arr ? Number(k) : k, v, [...path, String(k)], isTouched))),
      h("span", { class: "punct", text: arr ? "]" : "}" }));
  }
  const cls = typeof value === "string" ? "str" : typeof value === "number" ? "num" : "lit";
  entry.append(h("span", { class: cls, text: JSON.stringify(value) }));
  return h("li", {}, entry);
}
