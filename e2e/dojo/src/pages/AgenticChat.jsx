// Agentic chat: the agent may change the page's background (a frontend
// tool the page runs) and look up the weather (a backend tool whose calls
// the page draws). The page also tells the agent the user's name.
import { useState } from "react";
import { useAgentContext, useConfigureSuggestions, useFrontendTool, useRenderTool } from "@copilotkit/react-core/v2";
import { z } from "zod";
import { CenteredChat, parseResult } from "../layout.jsx";

export default function AgenticChat() {
  const [background, setBackground] = useState();

  useAgentContext({ description: "Name of the user", value: "Bob" });

  useFrontendTool({
    name: "change_background",
    description: "Sets the chat's background to any CSS background value: a color, or a linear or radial gradient.",
    parameters: z.object({
      background: z.string().describe("The CSS background; gradients look best. Use only when the user asks."),
    }),
    handler: async ({ background }) => {
      setBackground(background);
      return { status: "success", message: `The background is now ${background}` };
    },
  });

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

  useConfigureSuggestions({
    suggestions: [
      { title: "Change background", message: "Change the background to something new." },
      { title: "Generate sonnet", message: "Write a short sonnet about AI." },
    ],
    available: "always",
  });

  return (
    <div className="page-center" data-testid="background-container" style={{ background }}>
      <CenteredChat agentId="agentic_chat" />
    </div>
  );
}
