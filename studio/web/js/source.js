// A workflow's source with line numbers, the lines of a span marked, and
// a light highlighting of .wf syntax: comments, strings, $paths, numbers
// and keywords.

import { h } from "./dom.js";

const KEYWORDS = new Set(("wf workflow tool flow set if else switch case default for in while max goto step parallel branch " +
  "try catch end fail on say model call output state sync snapshot delta activity emit suspend interrupt " +
  "frontend_tool backend_tool http sleep true false nil matches startsWith endsWith contains and or not").split(" "));

// RULES are the tokens that start where they match: strings, $paths and
// numbers (a digit inside a name, as in x2, goes with the name).
const RULES = [
  [/^"(?:\\.|[^"\\])*"?/, "string"],
  [/^\$[A-Za-z_][A-Za-z0-9_]*/, "var"],
  [/^[0-9][0-9_.]*/, "number"],
];

// SPANS are the tokens that may go on over several lines: block comments
// and heredocs.
const SPANS = [
  ["/*", "*/", "comment"],
  ['"""', '"""', "string"],
];

// sourceView shows a file's text with its line numbers: the lines of
// block ([first, last]: a workflow's) set apart, the lines of span (a
// node's) marked; scrollTo brings the marked lines, else the block, into
// view.
export function sourceView(text, { block, span } = {}) {
  const lines = text.replace(/\n$/, "").split("\n");
  let open; // the span a line starts inside of, from the line before
  const from = span?.start?.line;
  const to = span?.end?.line ?? from;
  const rows = lines.map((line, i) => {
    const no = i + 1;
    const t = tokens(line, open);
    open = t.open;
    const marked = from !== undefined && no >= from && no <= to;
    const inBlock = block && no >= block[0] && no <= block[1];
    return h("div", { class: ["line", marked && "hl", inBlock && "block"], "data-line": no },
      h("span", { class: "no", text: String(no) }),
      h("span", { class: "code" }, t.parts.map(([cls, text]) => (cls ? h("span", { class: `tok-${cls}`, text }) : text))));
  });
  const el = h("div", { class: "source", role: "region", "aria-label": "Source" }, rows);
  return {
    el,
    // scrollTo brings the marked lines (else the block) into view, in
    // whatever scrolls them.
    scrollTo() {
      const row = el.querySelector(".line.hl") ?? el.querySelector(".line.block");
      row?.scrollIntoView({ block: el.querySelector(".line.hl") ? "center" : "start" });
    },
  };
}

// tokens splits one line into [class, text] parts; open is the span (of
// SPANS) the line starts inside of, and the result's open the one it ends
// inside of.
function tokens(line, open) {
  const parts = [];
  const push = (cls, t) => t && parts.push([cls, t]);
  let plain = "";
  const flush = () => {
    push("", plain);
    plain = "";
  };
  let i = 0;
  if (open) {
    const end = line.indexOf(open[1]);
    if (end < 0) return { parts: [[open[2], line]], open };
    i = end + open[1].length;
    push(open[2], line.slice(0, i));
  }
  while (i < line.length) {
    const rest = line.slice(i);
    let m;
    if (rest.startsWith("//")) {
      flush();
      push("comment", rest);
      break;
    }
    const sp = SPANS.find(([o]) => rest.startsWith(o));
    if (sp) {
      flush();
      const end = line.indexOf(sp[1], i + sp[0].length);
      if (end < 0) {
        push(sp[2], rest);
        return { parts, open: sp };
      }
      push(sp[2], line.slice(i, end + sp[1].length));
      i = end + sp[1].length;
      continue;
    }
    const rule = RULES.find(([re]) => (m = re.exec(rest)));
    if (rule) {
      flush();
      push(rule[1], m[0]);
      i += m[0].length;
      continue;
    }
    if ((m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest))) {
      if (KEYWORDS.has(m[0]) && !/[.$]$/.test(plain)) {
        flush();
        push("keyword", m[0]);
      } else {
        plain += m[0];
      }
      i += m[0].length;
      continue;
    }
    plain += line[i];
    i++;
  }
  flush();
  return { parts, open: undefined };
}
