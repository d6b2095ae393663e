// Building the page: elements from data, never from HTML strings, so
// nothing a workflow or a thread holds can become markup.

const SVG_NS = "http://www.w3.org/2000/svg";

// h makes an HTML element: attrs sets attributes, with "class", "text",
// "dataset", "on<event>" handlers and boolean properties (hidden,
// disabled, checked…) handled as such; children are nodes, strings,
// arrays of them, or null and false, which are left out.
export function h(tag, attrs = {}, ...children) {
  return build(document.createElement(tag), attrs, children);
}

// s makes an SVG element, as h does.
export function s(tag, attrs = {}, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

const properties = new Set(["hidden", "disabled", "checked", "selected", "value", "readOnly", "required", "open", "indeterminate"]);

function build(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false && !properties.has(k)) continue;
    if (k === "class") {
      el.setAttribute("class", Array.isArray(v) ? v.filter(Boolean).join(" ") : v);
    } else if (k === "text") {
      el.textContent = v;
    } else if (k === "dataset") {
      Object.assign(el.dataset, v);
    } else if (k.startsWith("on") && typeof v === "function") {
      el.addEventListener(k.slice(2), v);
    } else if (properties.has(k)) {
      el[k] = v;
    } else {
      el.setAttribute(k, v === true ? "" : String(v));
    }
  }
  append(el, children);
  return el;
}

// append adds children to el, as h does.
export function append(el, ...children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

// replace empties el and fills it with children.
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

// json is v as indented JSON, or the text of a string as it is.
export function json(v) {
  return typeof v === "string" ? v : JSON.stringify(v, null, 2);
}

// ms writes a duration in milliseconds for people: 12 ms, 1.4 s, 3 min.
export function ms(n) {
  if (n === undefined || n === null || Number.isNaN(n)) return "";
  if (n < 1000) return `${Math.round(n)} ms`;
  if (n < 60_000) return `${(n / 1000).toFixed(n < 10_000 ? 2 : 1)} s`;
  return `${Math.floor(n / 60_000)} min ${Math.round((n % 60_000) / 1000)} s`;
}

// when writes a time (ISO text or Unix ms) as local date and time.
export function when(t) {
  if (!t) return "";
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) return String(t);
  return d.toLocaleString(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

// newID is an id for a message or a run the studio makes.
// (crypto.randomUUID needs a secure context; a server on a LAN address
// over plain HTTP is not one.)
export function newID(prefix) {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return `${prefix}-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

// typing reports whether a key event goes to a field, where keys are text.
export function typing(e) {
  const t = e.target;
  return t instanceof HTMLElement && (t.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(t.tagName));
}
