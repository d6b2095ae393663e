// The studio's entry: the API under the base path the page names, the
// token prompt, the router (#/workflows, #/run, #/threads) and the
// keyboard shortcuts every view shares.

import { API } from "./api.js";
import { Auth } from "./auth.js";
import { h, replace, typing } from "./dom.js";
import { workflowsView } from "./views/workflows.js";
import { runView } from "./views/run.js";
import { threadsView } from "./views/threads.js";
import { threadView } from "./views/thread.js";

const base = document.querySelector('meta[name="aguic-base-path"]')?.content || "/agui";
const auth = new Auth();
const api = new API(base, auth);
const main = document.getElementById("view");
const notice = document.getElementById("notice");
const signout = document.getElementById("signout");

// The context every view gets.
const studio = {
  api,
  base,
  // workflows is the list of workflows, fetched once.
  workflows() {
    this.list ??= api.workflows().catch((err) => {
      this.list = undefined;
      throw err;
    });
    return this.list;
  },
  // workflow is one workflow with its capabilities, layout and source,
  // fetched once.
  workflow(id) {
    this.details ??= new Map();
    if (!this.details.has(id)) {
      this.details.set(id, api.workflow(id).catch((err) => {
        this.details.delete(id);
        throw err;
      }));
    }
    return this.details.get(id);
  },
  go(hash) {
    if (location.hash === hash) route();
    else location.hash = hash;
  },
  fail(err) {
    showNotice(err);
  },
  // The run view lives on while the user looks at other views, so a run
  // goes on streaming; it is made again for another workflow or thread.
  runs: null,
};

function showNotice(err) {
  if (err?.name === "AbortError") return;
  replace(notice,
    h("span", { text: err?.message ?? String(err) }),
    h("button", { type: "button", class: "quiet", text: "Dismiss", onclick: () => { notice.hidden = true; } }));
  notice.hidden = false;
}

auth.onchange = () => {
  signout.hidden = !auth.token;
};
auth.onchange();
signout.addEventListener("click", () => {
  auth.signOut();
  // Everything shown came with the token: load the studio again, from its
  // first view, without it.
  location.assign(location.pathname);
});

let current; // {key, keep, view}: the view shown, and whether it lives on when left

// parseHash reads "#/a/b?x=1" as {parts: ["a", "b"], query}.
function parseHash() {
  const [path, qs] = location.hash.replace(/^#\/?/, "").split("?");
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(qs ?? "") };
}

// route shows the view the hash names. A view is {el, close()}.
async function route() {
  const { parts, query } = parseHash();
  const name = ["run", "threads"].includes(parts[0]) ? parts[0] : "workflows";
  for (const a of document.querySelectorAll(".tabs a")) {
    if (a.dataset.view === name) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  let key = location.hash;
  let keep = false;
  let make;
  switch (name) {
    case "run":
      if (!parts[1]) {
        // The Run tab: back to the run view there is, else the first workflow's.
        const first = studio.runs?.hash ?? `#/run/${encodeURIComponent((await studio.workflows().catch(() => []))[0]?.id ?? "")}`;
        if (first !== "#/run/") {
          location.replace(first);
          return;
        }
      }
      key = `run/${parts[1] ?? ""}/${query.get("thread") ?? ""}`;
      keep = true;
      make = async () => {
        if (!parts[1]) return { el: h("p", { class: "empty", text: "The server serves no workflow." }) };
        if (studio.runs?.key !== key) {
          studio.runs?.view.close();
          const id = parts[1];
          const runs = { key, hash: location.hash };
          // Once the first run of a new thread starts, the address names
          // the thread, so a reload or a link comes back to it.
          const started = (thread) => {
            const hash = `#/run/${encodeURIComponent(id)}?thread=${encodeURIComponent(thread)}`;
            if (location.hash === runs.hash) history.replaceState(null, "", hash);
            if (current?.key === runs.key) current.key = `run/${id}/${thread}`;
            runs.key = `run/${id}/${thread}`;
            runs.hash = hash;
          };
          runs.view = await runView(studio, id, { thread: query.get("thread"), fresh: query.has("new"), started });
          studio.runs = runs;
        }
        return studio.runs.view;
      };
      break;
    case "threads":
      make = () => (parts.length >= 3 ? threadView(studio, parts[1], parts[2]) : threadsView(studio, query));
      break;
    default:
      make = () => workflowsView(studio, parts[1]);
  }
  if (current?.key === key) return;
  if (!current?.keep) current?.view?.close?.();
  notice.hidden = true;
  const mine = { key, keep };
  current = mine;
  try {
    const view = await make();
    if (current !== mine) {
      if (!keep) view.close?.();
      return;
    }
    mine.view = view;
    replace(main, view.el);
  } catch (err) {
    if (current === mine) replace(main, h("p", { class: "empty error-text", text: err.message }));
  }
}

addEventListener("hashchange", route);
addEventListener("unhandledrejection", (e) => {
  showNotice(e.reason);
  e.preventDefault();
});
route();

// Keyboard shortcuts: w, r and t open the views, / finds, ? lists them.
const shortcuts = [
  ["w", "Workflows"],
  ["r", "Run the workflow in view"],
  ["t", "Threads"],
  ["/", "Focus the filter or the message box"],
  ["f", "Fit the graph"],
  ["+ / −", "Zoom the graph"],
  ["← →", "Step through a thread's events"],
  ["Home / End", "First and last event"],
  ["Enter", "Send (Shift+Enter: a new line)"],
  ["Esc", "Close a dialog"],
  ["?", "This list"],
];

function help() {
  const dialog = h("dialog", { class: "help-dialog" },
    h("div", { class: "content" },
      h("h2", { text: "Keyboard shortcuts" }),
      h("dl", { class: "shortcuts" }, shortcuts.map(([k, what]) => [h("dt", {}, h("kbd", { text: k })), h("dd", { text: what })])),
      h("div", { class: "actions" }, h("button", { type: "button", class: "primary", text: "Close", onclick: () => dialog.close() }))));
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
}
document.getElementById("help").addEventListener("click", help);

addEventListener("keydown", (e) => {
  if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || typing(e) || document.querySelector("dialog[open]")) return;
  const { parts } = parseHash();
  switch (e.key) {
    case "w":
      studio.go("#/workflows" + (parts[0] === "workflows" && parts[1] ? `/${encodeURIComponent(parts[1])}` : ""));
      break;
    case "r":
      studio.go(parts[0] === "workflows" && parts[1] ? `#/run/${encodeURIComponent(parts[1])}` : "#/run");
      break;
    case "t":
      studio.go("#/threads");
      break;
    case "/": {
      const target = main.querySelector("[data-slash]");
      if (!target) return;
      target.focus();
      break;
    }
    case "?":
      help();
      break;
    default:
      return;
  }
  e.preventDefault();
});
