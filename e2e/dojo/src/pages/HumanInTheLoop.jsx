// Human in the loop: the agent proposes the steps of a task by calling the
// page's generate_task_steps tool; the page lists them, the user unticks
// the ones to skip and confirms (or rejects), and the answer goes back to
// the agent as the call's result.
import { useEffect, useState } from "react";
import { CopilotChatConfigurationProvider, useConfigureSuggestions, useHumanInTheLoop } from "@copilotkit/react-core/v2";
import { z } from "zod";
import { CenteredChat } from "../layout.jsx";

export default function HumanInTheLoop() {
  return (
    <CopilotChatConfigurationProvider agentId="human_in_the_loop">
      <Planner />
    </CopilotChatConfigurationProvider>
  );
}

function Planner() {
  useConfigureSuggestions({
    suggestions: [
      { title: "Simple plan", message: "Please plan a trip to mars in 5 steps." },
      { title: "Complex plan", message: "Please plan a pasta dish in 10 steps." },
    ],
    available: "always",
  });

  useHumanInTheLoop({
    agentId: "human_in_the_loop",
    name: "generate_task_steps",
    description: "Shows the user the steps of a task to pick from",
    parameters: z.object({
      steps: z.array(
        z.object({
          description: z.string(),
          status: z.enum(["enabled", "disabled", "executing"]),
        }),
      ),
    }),
    render: ({ args, respond, status }) => <StepPicker args={args} respond={respond} status={status} />,
  });

  return (
    <div className="page-center">
      <CenteredChat agentId="human_in_the_loop" />
    </div>
  );
}

// StepPicker draws the steps while they stream in, and lets the user pick
// among them once the call waits for its answer (status "executing").
function StepPicker({ args, respond, status }) {
  const [steps, setSteps] = useState([]);
  const [answer, setAnswer] = useState(null);
  const proposed = Array.isArray(args?.steps) ? args.steps : [];

  // The user's copy of the steps, taken once the call is complete.
  useEffect(() => {
    if (status === "executing" && steps.length === 0 && proposed.length > 0) setSteps(proposed);
  }, [status, proposed, steps]);

  if (proposed.length === 0) return null;
  const shown = steps.length > 0 ? steps : proposed;
  const enabled = shown.filter((s) => s.status === "enabled").length;
  const waiting = status === "executing";

  const toggle = (i) =>
    setSteps((prev) => prev.map((s, j) => (j === i ? { ...s, status: s.status === "enabled" ? "disabled" : "enabled" } : s)));

  const reply = (accepted) => {
    if (!respond) return;
    setAnswer(accepted);
    respond(accepted ? { accepted: true, steps: steps.filter((s) => s.status === "enabled") } : { accepted: false });
  };

  return (
    <div data-testid="select-steps" className="card steps">
      <div className="steps-head">
        <h2>Select Steps</h2>
        <span>
          {enabled}/{shown.length} Selected
        </span>
        <span className={waiting ? "badge ready" : "badge"}>{waiting ? "Ready" : "Waiting"}</span>
      </div>
      <progress max={shown.length} value={enabled} />
      <div className="step-list">
        {shown.map((step, i) => (
          <label key={i} data-testid="step-item" className={step.status === "enabled" ? "step on" : "step"}>
            <input type="checkbox" checked={step.status === "enabled"} onChange={() => toggle(i)} disabled={!waiting} />
            <span data-testid="step-text" className={step.status !== "enabled" && status !== "inProgress" ? "struck" : ""}>
              {step.description}
            </span>
          </label>
        ))}
      </div>
      {answer === null ? (
        <div className="actions">
          <button type="button" className="secondary" disabled={!waiting} onClick={() => reply(false)}>
            ✗ Reject
          </button>
          <button type="button" className="primary" disabled={!waiting} onClick={() => reply(true)}>
            ✓ Confirm <span className="count">{enabled}</span>
          </button>
        </div>
      ) : (
        <div className={answer ? "verdict accepted" : "verdict rejected"}>{answer ? "✓ Accepted" : "✗ Rejected"}</div>
      )}
    </div>
  );
}
