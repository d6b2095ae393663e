// A workflow's source with line numbers, the lines of a span marked, and
// a light highlighting of .wf syntax: comments, strings, $paths, numbers
// and keywords.

import { h } from "./dom.js";

const KEYWORDS = new Set(("wf workflow tool flow set if else switch case default for in while max goto step parallel branch " +
  "try catch end fail on say model call output state sync snapshot delta activity emit suspend interrupt " +
  "frontend_tool backend_tool http sleep true false nil matches startsWith endsWith contains and or not").split(" "));

// sourceView shows text, whose first line is line first of its file, with
// the lines from.line to to.line marked; scrollTo brings them into view.
export function sourceView(text, first = 1, span) {
  const lines = text.replace(/\n$/, "").split("\n");
  let inHeredoc = false;
  let inBlock = false;
  const from = span?.start?.line;
  const to = span?.end?.line ?? from;
  const rows = lines.map((line, i) => {
    const no = first + i;
    const { parts, heredoc, block } = tokens(line, inHeredoc, inBlock);
    inHeredoc = heredoc;
    inBlock = block;
    const marked = from !== undefined && no >= from && no <= to;
    return h("div", { class: ["line", marked && "hl"], "data-line": no },
      h("span", { class: "no", text: String(no) }),
      h("span", { class: "code" }, parts.map(([cls, t]) => (cls ? h("span", { class: `tok-${cls}`, text: t }) : t))));
  });
  const el = h("div", { class: "source", role: "region", "aria-label": "Source" }, rows);
  return {
    el,
    // scrollTo brings the marked lines into view, a few lines above them.
    scrollTo() {
      const row = el.querySelector(".line.hl");
      if (row) el.scrollTop = Math.max(0, row.offsetTop - el.offsetTop - 3 * row.offsetHeight);
    },
  };
}

// tokens splits one line into [class, text] parts.
function tokens(line, heredoc, block) {
  const parts = [];
  let i = 0;
  const push = (cls, t) => t && parts.push([cls, t]);
  if (block) {
    const end = line.indexOf("*/");
    if (end < 0) return { parts: [["comment", line]], heredoc, block: true };
    push("comment", line.slice(0, end + 2));
    i = end + 2;
    block = false;
  }
  if (heredoc) {
    const end = line.indexOf('"""');
    if (end < 0) return { parts: [["string", line]], heredoc: true, block };
    push("string", line.slice(0, end + 3));
    i = end + 3;
    heredoc = false;
  }
  let plain = "";
  const flush = () => {
    push("", plain);
    plain = "";
  };
  while (i < line.length) {
    const rest = line.slice(i);
    let m;
    if (rest.startsWith("//")) {
      flush();
      push("comment", rest);
      break;
    }
    if (rest.startsWith("/*")) {
      flush();
      const end = rest.indexOf("*/", 2);
      if (end < 0) {
        push("comment", rest);
        block = true;
        break;
      }
      push("comment", rest.slice(0, end + 2));
      i += end + 2;
      continue;
    }
    if (rest.startsWith('"""')) {
      flush();
      const end = rest.indexOf('"""', 3);
      if (end < 0) {
        push("string", rest);
        heredoc = true;
        break;
      }
      push("string", rest.slice(0, end + 3));
      i += end + 3;
      continue;
    }
    if ((m = /^"(?:\\.|[^"\\])*"?/.exec(rest))) {
      flush();
      push("string", m[0]);
      i += m[0].length;
      continue;
    }
    if ((m = /^\$[A-Za-z_][A-Za-z0-9_]*/.exec(rest))) {
      flush();
      push("var", m[0]);
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
    if ((m = /^[0-9][0-9_.]*/.exec(rest))) {
      flush();
      push("number", m[0]);
      i += m[0].length;
      continue;
    }
    plain += line[i];
    i++;
  }
  flush();
  return { parts, heredoc, block };
}
