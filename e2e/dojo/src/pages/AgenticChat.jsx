// Agentic chat: the agent may change the page's background (a frontend
// tool the page runs) and look up the weather (a backend tool whose calls
// the page draws). The page also tells the agent the user's name.
import { useAgentContext, useRenderTool } from "@copilotkit/react-core/v2";
import { z } from "zod";
import { useBackground } from "../background.js";
import { CenteredChat, parseResult } from "../layout.jsx";

export default function AgenticChat() {
  const background = useBackground("agentic_chat");

  useAgentContext({ description: "Name of the user", value: "Bob" });

  useRenderTool({
    name: "get_weather",
    parameters: z.object({ location: z.string() }),
    render: ({ parameters, result, status }) => {
      if (status !== "complete") return <div data-testid="weather-info-loading">Looking the weather up…</div>;
      const w = parseResult(result);
      return (
        <div data-testid="weather-info" className="weather-info">
          <strong>Weather in {w.city ?? parameters.location}</strong>
          <div>Temperature: {w.temperature}°C</div>
          <div>Humidity: {w.humidity}%</div>
          <div>Wind Speed: {w.windSpeed ?? w.wind_speed} mph</div>
          <div>Conditions: {w.conditions}</div>
        </div>
      );
    },
  });

  return (
    <div className="page-center" data-testid="background-container" style={{ background }}>
      <CenteredChat agentId="agentic_chat" />
    </div>
  );
}
