import { useState } from "react";
import { Support } from "./Support.jsx";
import { Todos } from "./Todos.jsx";
import { Approval } from "./Approval.jsx";
import { Handoff } from "./Handoff.jsx";

// One page per agent of the Copilot Runtime (server.mjs).
const pages = {
  "/support": { title: "Support chat", Page: Support },
  "/todos": { title: "Todo list", Page: Todos },
  "/approval": { title: "Refund approval", Page: Approval },
  "/handoff": { title: "Human handoff", Page: Handoff },
};

// threadOf is the conversation of the page: the thread the address names,
// or a new one, written into the address so that a reload comes back to it.
function threadOf() {
  const url = new URL(window.location.href);
  let thread = url.searchParams.get("thread");
  if (!thread) {
    thread = crypto.randomUUID();
    url.searchParams.set("thread", thread);
    window.history.replaceState(null, "", url);
  }
  return thread;
}

export function App() {
  const path = window.location.pathname;
  const page = pages[path];
  const [threadId] = useState(() => (page ? threadOf() : undefined));
  return (
    <>
      <nav>
        {Object.entries(pages).map(([href, { title }]) => (
          <a key={href} href={href} aria-current={href === path ? "page" : undefined}>{title}</a>
        ))}
      </nav>
      <main>{page ? <page.Page threadId={threadId} /> : <p>Pick an example above.</p>}</main>
    </>
  );
}
