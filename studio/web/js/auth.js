// The bearer token of a server started with --tokens: asked for at the
// first 401, kept in sessionStorage (this tab only, gone when it closes),
// forgotten by "Sign out".

import { h } from "./dom.js";

const KEY = "aguic.studio.token";

export class Auth {
  constructor() {
    this.asking = null; // the open prompt's promise, shared by every request that waits for it
    this.onchange = () => {};
  }

  get token() {
    return sessionStorage.getItem(KEY) ?? "";
  }

  // headers are the request headers that carry the token.
  headers() {
    return this.token ? { Authorization: `Bearer ${this.token}` } : {};
  }

  // ask shows the token prompt, with why the server refused (its detail),
  // and resolves once the user gave a token.
  ask(reason) {
    this.asking ??= prompt(reason).then((token) => {
      sessionStorage.setItem(KEY, token);
      this.asking = null;
      this.onchange();
    });
    return this.asking;
  }

  signOut() {
    sessionStorage.removeItem(KEY);
    this.onchange();
  }
}

function prompt(reason) {
  return new Promise((resolve) => {
    const input = h("input", { type: "password", name: "token", autocomplete: "off", required: true, "aria-label": "Token", placeholder: "token" });
    const form = h("form", { method: "dialog", class: "token-form" },
      h("h2", { text: "This server needs a token" }),
      h("p", { class: "muted", text: reason }),
      h("p", { text: "The studio sends it as Authorization: Bearer, and shows the threads of its name only. It is kept in this tab until you sign out or close it." }),
      input,
      h("div", { class: "actions" }, h("button", { type: "submit", class: "primary", text: "Sign in" })));
    const dialog = h("dialog", { class: "token-dialog" }, form);
    // The studio cannot go on without a token: Escape does not close it.
    dialog.addEventListener("cancel", (e) => e.preventDefault());
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const token = input.value.trim();
      if (!token) return;
      dialog.close();
      dialog.remove();
      resolve(token);
    });
    document.body.append(dialog);
    dialog.showModal();
    input.focus();
  });
}
