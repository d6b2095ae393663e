// The client tools the studio declares in each run request's `tools`, per
// workflow, kept in localStorage: {name, description, parameters} as
// AG-UI has them, and, for the studio only, responseSchema, the JSON
// schema of the answer, from which the answer form is drawn. The first
// time, the list holds the workflow's frontend_tool names.

import { h } from "./dom.js";
import { frontendTools } from "./capabilities.js";

const key = (id) => `aguic.studio.tools.${id}`;

// defaultTools are the frontend tools of the workflow's source.
function defaultTools(info) {
  return frontendTools(info).map((name) => ({ name, description: "", parameters: { type: "object", properties: {} } }));
}

export function loadTools(info) {
  try {
    const saved = JSON.parse(localStorage.getItem(key(info.id)) ?? "null");
    if (Array.isArray(saved)) return saved;
  } catch {
    // A broken entry: start again from the defaults.
  }
  return defaultTools(info);
}

function saveTools(id, tools) {
  localStorage.setItem(key(id), JSON.stringify(tools));
}

// requestTools are the tools as a run request carries them.
export function requestTools(tools) {
  return tools.map((t) => ({ name: t.name, description: t.description ?? "", parameters: t.parameters ?? { type: "object", properties: {} } }));
}

// checkTools says what is wrong with a list of tool declarations, or "".
function checkTools(tools) {
  if (!Array.isArray(tools)) return "The tools must be a JSON array.";
  const seen = new Set();
  for (const [i, t] of tools.entries()) {
    if (t === null || typeof t !== "object" || Array.isArray(t)) return `Tool ${i} is not an object.`;
    if (typeof t.name !== "string" || !/^[A-Za-z_][A-Za-z0-9_-]*$/.test(t.name)) return `Tool ${i} needs a name of letters, digits, _ and -.`;
    if (seen.has(t.name)) return `Two tools are named ${JSON.stringify(t.name)}.`;
    seen.add(t.name);
    if (t.description !== undefined && typeof t.description !== "string") return `The description of ${t.name} must be a string.`;
    for (const k of ["parameters", "responseSchema"]) {
      if (t[k] !== undefined && (t[k] === null || typeof t[k] !== "object" || Array.isArray(t[k]))) return `The ${k} of ${t.name} must be a JSON schema object.`;
    }
  }
  return "";
}

// editTools opens the editor of the workflow's tools and resolves to the
// saved list, or undefined when the user closed it.
export function editTools(info, tools) {
  return new Promise((resolve) => {
    const text = h("textarea", { spellcheck: "false", "aria-label": "Client tools as JSON" });
    text.value = JSON.stringify(tools, null, 2);
    const error = h("p", { class: "error-text", role: "alert" });
    let result;
    const dialog = h("dialog", { class: "tools-dialog" },
      h("form", { method: "dialog" },
        h("h2", { text: `Client tools of ${info.title || info.id}` }),
        h("p", { class: "muted" },
          "Each run sends these in ", h("code", { text: "tools" }), ", as a client declares its frontend tools: ",
          h("code", { text: "name" }), ", ", h("code", { text: "description" }), ", ", h("code", { text: "parameters" }),
          " (a JSON schema). Add ", h("code", { text: "responseSchema" }),
          " (a JSON schema, kept by the studio) to answer a call of the tool with a form."),
        text,
        error,
        h("div", { class: "actions" },
          h("button", { type: "button", text: "Reset", title: "The workflow's frontend tools, without schemas", onclick: () => {
            text.value = JSON.stringify(defaultTools(info), null, 2);
          } }),
          h("span", { class: "spacer" }),
          h("button", { type: "button", text: "Cancel", onclick: () => dialog.close() }),
          h("button", { type: "submit", class: "primary", text: "Save" }))));
    dialog.querySelector("form").addEventListener("submit", (e) => {
      e.preventDefault();
      let list;
      try {
        list = JSON.parse(text.value);
      } catch (err) {
        error.textContent = `Not JSON: ${err.message}`;
        return;
      }
      const problem = checkTools(list);
      if (problem) {
        error.textContent = problem;
        return;
      }
      saveTools(info.id, list);
      result = list;
      dialog.close();
    });
    dialog.addEventListener("close", () => {
      dialog.remove();
      resolve(result);
    });
    document.body.append(dialog);
    dialog.showModal();
    text.focus();
  });
}
