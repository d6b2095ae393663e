// Agentic generative UI: the agent works through a plan and keeps its
// steps in the shared state ({steps: [{description, status}]}); the page
// draws them under the messages as a progress card that follows each
// state update.
import { CopilotChat, useAgent, UseAgentUpdate, useConfigureSuggestions } from "@copilotkit/react-core/v2";

export default function AgenticGenerativeUI() {
  const { agent } = useAgent({ agentId: "agentic_generative_ui", updates: [UseAgentUpdate.OnStateChanged] });
  const steps = agent.state?.steps;

  useConfigureSuggestions({
    suggestions: [
      { title: "Simple plan", message: "Please build a plan to go to mars in 5 steps." },
      { title: "Complex plan", message: "Please build a plan to make pizza in 10 steps." },
    ],
    available: "always",
  });

  return (
    <div className="page-center">
      <div className="chat-frame">
        <CopilotChat
          agentId="agentic_generative_ui"
          className="chat"
          messageView={{
            children: ({ messageElements, interruptElement }) => (
              <div data-testid="copilot-message-list" className="message-list">
                {messageElements}
                {Array.isArray(steps) && steps.length > 0 && <TaskProgress steps={steps} />}
                {interruptElement}
              </div>
            ),
          }}
        />
      </div>
    </div>
  );
}

function TaskProgress({ steps }) {
  const completed = steps.filter((s) => s.status === "completed").length;
  const current = steps.findIndex((s) => s.status === "pending");
  return (
    <div data-testid="task-progress" className="card progress">
      <div className="steps-head">
        <h3>Task Progress</h3>
        <span>
          {completed}/{steps.length} Complete
        </span>
      </div>
      <progress max={steps.length} value={completed} />
      <ol className="task-list">
        {steps.map((step, i) => {
          const state = step.status === "completed" ? "done" : i === current ? "current" : "later";
          return (
            <li key={i} className={`task ${state}`}>
              <span className="task-icon" aria-hidden="true">
                {state === "done" ? "✓" : state === "current" ? "…" : "○"}
              </span>
              <div>
                <div data-testid="task-step-text">{step.description}</div>
                {state === "current" && <div className="task-note">Processing...</div>}
              </div>
            </li>
          );
        })}
      </ol>
    </div>
  );
}
