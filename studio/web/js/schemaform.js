// Forms generated from JSON schemas, for the answers a run waits for: an
// interrupt's responseSchema, a frontend tool's declared responseSchema.
// Objects (nested too) whose properties are strings, numbers, integers,
// booleans, enums or arrays of those; required fields are marked, and
// each field says what is wrong with it. A JSON editor is always there
// beside the form, and is the only editor for a schema the form cannot
// draw (or when there is no schema).

import { h, replace } from "./dom.js";

let fields = 0; // for the ids that tie labels to inputs

// answerEditor edits a value for schema (undefined: none known), starting
// from initial. read() returns {ok, value} or {ok: false, error}; it marks
// what is wrong.
export function answerEditor(schema, { initial, label = "answer" } = {}) {
  const form = schema && supported(schema) ? field(schema, { label: null, required: true, value: initial }) : undefined;
  const text = h("textarea", { class: "mono", rows: 5, spellcheck: "false", "aria-label": `${label} as JSON` });
  text.value = JSON.stringify(initial ?? (schema ? example(schema) : {}), null, 2);
  const jsonError = h("div", { class: "invalid", role: "alert" });
  const jsonPane = h("div", { class: "json-editor" }, text, jsonError);
  const formPane = form ? h("div", { class: "schema-form" }, form.el) : null;
  let mode = form ? "form" : "json";
  const tabs = form ? h("div", { class: "editor-tabs", role: "group", "aria-label": "Editor" }) : null;
  const el = h("div", { class: "answer-editor" }, tabs, formPane, jsonPane);

  const show = () => {
    if (formPane) formPane.hidden = mode !== "form";
    jsonPane.hidden = mode !== "json";
    if (tabs) {
      replace(tabs,
        h("button", { type: "button", "aria-pressed": String(mode === "form"), text: "Form", onclick: () => switchTo("form") }),
        h("button", { type: "button", "aria-pressed": String(mode === "json"), text: "JSON", onclick: () => switchTo("json") }));
    }
  };
  const switchTo = (next) => {
    if (next === mode) return;
    if (next === "json") {
      text.value = JSON.stringify(form.get().value ?? null, null, 2);
    } else {
      try {
        form.set(JSON.parse(text.value));
      } catch {
        // Not JSON: the form keeps what it had.
      }
    }
    mode = next;
    show();
  };
  show();

  return {
    el,
    read() {
      if (mode === "form") {
        const { value, ok } = form.get(true);
        return ok ? { ok: true, value } : { ok: false, error: "Some fields need a fix." };
      }
      try {
        const value = JSON.parse(text.value);
        jsonError.textContent = "";
        text.removeAttribute("aria-invalid");
        return { ok: true, value };
      } catch (err) {
        jsonError.textContent = `Not JSON: ${err.message}`;
        text.setAttribute("aria-invalid", "true");
        return { ok: false, error: jsonError.textContent };
      }
    },
  };
}

// typeOf is a schema's type: its first non-null one.
function typeOf(schema) {
  if (Array.isArray(schema.enum)) return "enum";
  const t = Array.isArray(schema.type) ? schema.type.find((x) => x !== "null") : schema.type;
  if (t === undefined && schema.properties) return "object";
  return t;
}

// supported reports whether the form can draw schema.
export function supported(schema) {
  if (!schema || typeof schema !== "object") return false;
  switch (typeOf(schema)) {
    case "enum":
    case "string":
    case "number":
    case "integer":
    case "boolean":
      return true;
    case "array":
      return !!schema.items && typeOf(schema.items) !== "array" && supported(schema.items);
    case "object":
      return Object.values(schema.properties ?? {}).every(supported);
    default:
      return false;
  }
}

// example is a value of schema to start the JSON editor with.
function example(schema) {
  if (schema.default !== undefined) return schema.default;
  switch (typeOf(schema)) {
    case "enum": return schema.enum[0];
    case "string": return "";
    case "number":
    case "integer": return 0;
    case "boolean": return false;
    case "array": return [];
    case "object": return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, s]) => [k, example(s)]));
    default: return null;
  }
}

// field draws one value of schema: {el, get(show) → {value, ok}, set(v)}.
// get(true) shows every message; a field's own input shows its message
// once it was changed.
function field(schema, { label, required, value }) {
  const id = `f${++fields}`;
  const type = typeOf(schema);
  const title = schema.title ?? label;
  const labelEl = title !== null && title !== undefined
    ? h("label", { for: id }, title, required ? h("span", { class: "req", title: "required", text: "*" }) : null)
    : null;
  const hint = schema.description ? h("div", { class: "hint", text: schema.description }) : null;
  const message = h("div", { class: "invalid", id: `${id}-msg`, "aria-live": "polite" });
  const mark = (input, error, show) => {
    if (!show) return;
    message.textContent = error ?? "";
    if (error) input.setAttribute("aria-invalid", "true");
    else input.removeAttribute("aria-invalid");
  };

  switch (type) {
    case "object": {
      const req = new Set(schema.required ?? []);
      const children = Object.entries(schema.properties ?? {}).map(([k, s]) => [k, field(s, { label: k, required: req.has(k), value: value?.[k] })]);
      const body = children.map(([, f]) => f.el);
      const el = title !== null && title !== undefined
        ? h("fieldset", {}, h("legend", {}, title, required ? h("span", { class: "req", text: "*" }) : null), hint, body)
        : h("div", { class: "schema-object" }, hint, body);
      return {
        el,
        get(show) {
          const out = {};
          let ok = true;
          for (const [k, f] of children) {
            const r = f.get(show);
            ok &&= r.ok;
            if (r.value !== undefined) out[k] = r.value;
          }
          return { value: out, ok };
        },
        set(v) {
          for (const [k, f] of children) f.set(v?.[k]);
        },
      };
    }
    case "array": {
      const list = h("div", { class: "array-items" });
      const items = [];
      const add = (v) => {
        const f = field(schema.items, { label: null, required: true, value: v });
        const row = h("div", { class: "array-item" }, f.el,
          h("button", { type: "button", class: "quiet", "aria-label": "Remove", title: "Remove", text: "✕", onclick: () => {
            items.splice(items.indexOf(entry), 1);
            row.remove();
          } }));
        const entry = { f, row };
        items.push(entry);
        list.append(row);
      };
      for (const v of Array.isArray(value) ? value : []) add(v);
      const addButton = h("button", { type: "button", id, text: "+ Add", onclick: () => add(undefined) });
      const el = h("div", { class: "field" }, labelEl, hint, list, h("div", {}, addButton), message);
      return {
        el,
        get(show) {
          const rs = items.map((i) => i.f.get(show));
          let error;
          if (schema.minItems !== undefined && rs.length < schema.minItems) error = `At least ${schema.minItems} item${schema.minItems === 1 ? "" : "s"}.`;
          else if (schema.maxItems !== undefined && rs.length > schema.maxItems) error = `At most ${schema.maxItems} items.`;
          mark(addButton, error, show);
          return { value: rs.map((r) => r.value), ok: !error && rs.every((r) => r.ok) };
        },
        set(v) {
          items.splice(0).forEach((i) => i.row.remove());
          for (const x of Array.isArray(v) ? v : []) add(x);
        },
      };
    }
    case "boolean": {
      const input = h("input", { type: "checkbox", id, checked: value ?? schema.default ?? false });
      const el = h("div", { class: "field check" }, input, title !== null && title !== undefined ? h("label", { for: id, text: title }) : null, hint);
      return {
        el,
        get: () => ({ value: input.checked, ok: true }),
        set(v) {
          input.checked = v === true;
        },
      };
    }
    case "enum": {
      const options = schema.enum;
      const input = h("select", { id, "aria-describedby": `${id}-msg` },
        required ? null : h("option", { value: "", text: "—" }),
        options.map((o, i) => h("option", { value: String(i), text: typeof o === "string" ? o : JSON.stringify(o) })));
      const set = (v) => {
        const i = options.findIndex((o) => JSON.stringify(o) === JSON.stringify(v));
        input.value = i < 0 ? (required ? "0" : "") : String(i);
      };
      set(value ?? schema.default);
      let changed = false;
      const get = (show) => {
        const v = input.value === "" ? undefined : options[Number(input.value)];
        const error = required && v === undefined ? "Required." : undefined;
        mark(input, error, show || changed);
        return { value: v, ok: !error };
      };
      input.addEventListener("change", () => { changed = true; get(false); });
      return { el: h("div", { class: "field" }, labelEl, hint, input, message), get, set };
    }
    case "number":
    case "integer": {
      const input = h("input", { type: "number", id, step: type === "integer" ? "1" : "any", "aria-describedby": `${id}-msg` });
      const set = (v) => {
        input.value = typeof v === "number" ? String(v) : "";
      };
      set(value ?? schema.default);
      let changed = false;
      const get = (show) => {
        const raw = input.value.trim();
        let error;
        let v;
        if (raw === "") {
          if (required) error = "Required.";
        } else {
          v = Number(raw);
          if (!Number.isFinite(v)) error = "Not a number.";
          else if (type === "integer" && !Number.isInteger(v)) error = "A whole number.";
          else if (schema.minimum !== undefined && v < schema.minimum) error = `At least ${schema.minimum}.`;
          else if (schema.maximum !== undefined && v > schema.maximum) error = `At most ${schema.maximum}.`;
        }
        mark(input, error, show || changed);
        return { value: v, ok: !error };
      };
      input.addEventListener("input", () => { changed = true; get(false); });
      return { el: h("div", { class: "field" }, labelEl, hint, input, message), get, set };
    }
    default: {
      const long = schema.format === "textarea" || (schema.maxLength ?? 0) > 200;
      const input = long
        ? h("textarea", { id, rows: 3, "aria-describedby": `${id}-msg` })
        : h("input", { type: "text", id, "aria-describedby": `${id}-msg`, autocomplete: "off" });
      const set = (v) => {
        input.value = typeof v === "string" ? v : "";
      };
      set(value ?? schema.default);
      let changed = false;
      const get = (show) => {
        const v = input.value;
        let error;
        if (v === "") {
          if (required) error = "Required.";
        } else if (schema.minLength !== undefined && v.length < schema.minLength) {
          error = `At least ${schema.minLength} characters.`;
        } else if (schema.maxLength !== undefined && v.length > schema.maxLength) {
          error = `At most ${schema.maxLength} characters.`;
        } else if (schema.pattern !== undefined && !matches(schema.pattern, v)) {
          error = `Must match ${schema.pattern}.`;
        }
        mark(input, error, show || changed);
        return { value: v === "" && !required ? undefined : v, ok: !error };
      };
      input.addEventListener("input", () => { changed = true; get(false); });
      return { el: h("div", { class: "field" }, labelEl, hint, input, message), get, set };
    }
  }
}

function matches(pattern, v) {
  try {
    return new RegExp(pattern, "u").test(v);
  } catch {
    return true;
  }
}
