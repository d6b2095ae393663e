import { CopilotChat, useAgent } from "@copilotkit/react-core/v2";

// Shared state: the workflow todos keeps the list in the agent's state,
// which this page renders as it changes.
export function Todos({ threadId }) {
  const { agent, isReady } = useAgent({ agentId: "todos" });
  const todos = agent.state?.todos ?? [];
  return (
    <>
      <ul aria-label="Todos">
        {todos.map((todo, i) => (
          <li key={i}>
            <input type="checkbox" checked={todo.done} readOnly /> {todo.title}
          </li>
        ))}
      </ul>
      {isReady && <CopilotChat agentId="todos" threadId={threadId} />}
    </>
  );
}
