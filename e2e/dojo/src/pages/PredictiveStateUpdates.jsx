// Predictive state updates: the agent writes a document kept in the shared
// state ({document}), shown in an editor. While a run goes on, the editor
// follows the state, the words that are new set off against the document
// as it was; then the agent asks the user, through the page's
// confirm_changes (or write_document) tool, to keep the change or not. A
// rejected change puts the document back.
import { useEffect, useRef, useState } from "react";
import { useAgent, UseAgentUpdate, useConfigureSuggestions, useHumanInTheLoop } from "@copilotkit/react-core/v2";
import { EditorContent, useEditor } from "@tiptap/react";
import StarterKit from "@tiptap/starter-kit";
import MarkdownIt from "markdown-it";
import { diffWords } from "diff";
import { z } from "zod";
import { Sidebar } from "../layout.jsx";

const markdown = new MarkdownIt({ typographer: true, html: true });

export default function PredictiveStateUpdates() {
  return (
    <div className="page-document">
      <Sidebar agentId="predictive_state_updates" title="AI Document Editor" />
      <DocumentEditor />
    </div>
  );
}

function DocumentEditor() {
  const editor = useEditor({
    extensions: [StarterKit],
    immediatelyRender: false,
    editorProps: { attributes: { class: "document" } },
  });
  const { agent } = useAgent({
    agentId: "predictive_state_updates",
    updates: [UseAgentUpdate.OnStateChanged, UseAgentUpdate.OnRunStatusChanged],
  });
  const running = agent.isRunning;
  const doc = agent.state?.document ?? "";
  // before is the document as it was when the run started.
  const [before, setBefore] = useState("");
  const wasRunning = useRef(false);

  useConfigureSuggestions({
    suggestions: [
      { title: "Write a pirate story", message: "Please write a story about a pirate named Candy Beard." },
      { title: "Write a mermaid story", message: "Please write a story about a mermaid named Luna." },
      { title: "Add character", message: "Please add a character named Courage." },
    ],
    available: "always",
  });

  // Each effect follows one signal and reads the rest as it is then: the
  // run starting or ending, the agent's document, the editor's text.
  useEffect(() => {
    if (running) setBefore(editor?.getText() ?? "");
    editor?.setEditable(!running);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [running]);

  useEffect(() => {
    if (wasRunning.current && !running && before.trim() !== "" && before !== doc) {
      editor?.commands.setContent(html(marked(before, doc, true)));
    }
    wasRunning.current = running;
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [running]);

  useEffect(() => {
    if (!running) return;
    editor?.commands.setContent(html(before.trim() !== "" ? marked(before, doc, false) : doc));
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [doc]);

  const text = editor?.getText() ?? "";
  useEffect(() => {
    if (!running) {
      setBefore(text);
      agent.setState({ document: text });
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [text]);

  const answer = {
    onReject: () => {
      editor?.commands.setContent(html(before));
      agent.setState({ document: before });
    },
    onConfirm: () => {
      editor?.commands.setContent(html(doc));
      setBefore(doc);
      agent.setState({ document: doc });
    },
  };

  useHumanInTheLoop(
    {
      agentId: "predictive_state_updates",
      name: "confirm_changes",
      render: ({ respond, status }) => <ConfirmChanges respond={respond} status={status} {...answer} />,
    },
    [doc],
  );

  useHumanInTheLoop(
    {
      agentId: "predictive_state_updates",
      name: "write_document",
      description: "Shows the user the new document to accept or reject",
      parameters: z.object({ document: z.string().describe("The whole new document, in markdown") }),
      render: ({ respond, status }) => (status === "executing" ? <ConfirmChanges respond={respond} status={status} {...answer} /> : <></>),
    },
    [doc],
  );

  return (
    <div className="document-frame">
      {text.length === 0 && <div className="document-placeholder">Write whatever you want here in Markdown format...</div>}
      <EditorContent editor={editor} />
    </div>
  );
}

// ConfirmChanges asks the user to keep the agent's change; it answers the
// tool call with {accepted}.
function ConfirmChanges({ respond, status, onReject, onConfirm }) {
  const [accepted, setAccepted] = useState(null);
  const waiting = status === "executing";
  const reply = (ok) => {
    if (!respond) return;
    setAccepted(ok);
    if (ok) onConfirm();
    else onReject();
    respond({ accepted: ok });
  };
  return (
    <div data-testid="confirm-changes-modal" className="card confirm">
      <h2>Confirm Changes</h2>
      <p>Do you want to accept the changes?</p>
      {accepted === null ? (
        <div className="actions">
          <button data-testid="reject-button" type="button" className="secondary" disabled={!waiting} onClick={() => reply(false)}>
            Reject
          </button>
          <button data-testid="confirm-button" type="button" className="primary" disabled={!waiting} onClick={() => reply(true)}>
            Confirm
          </button>
        </div>
      ) : (
        <div data-testid="status-display" className="verdict">
          {accepted ? "✓ Accepted" : "✗ Rejected"}
        </div>
      )}
    </div>
  );
}

function html(text) {
  return markdown.render(text);
}

// marked is the new text with the words it adds in <em> and those it drops
// in <s>. While the text still streams (complete false), it is compared with
// as much of the old text as has come, and the rest of the old text follows
// unmarked.
function marked(oldText, newText, complete) {
  const partial = !complete && oldText.length > newText.length;
  const compared = partial ? oldText.slice(0, newText.length) : oldText;
  let out = diffWords(compared, newText)
    .map((part) => (part.added ? `<em>${part.value}</em>` : part.removed ? `<s>${part.value}</s>` : part.value))
    .join("");
  if (partial) out += oldText.slice(newText.length);
  return out;
}
