// What the two agentic chat pages share: the change_background tool they
// give their agent, and their suggestions.
import { useState } from "react";
import { useConfigureSuggestions, useFrontendTool } from "@copilotkit/react-core/v2";
import { z } from "zod";

// useBackground registers change_background for the agent agentId, and the
// chat's suggestions; it returns the background the agent set, undefined
// until it sets one.
export function useBackground(agentId) {
  const [background, setBackground] = useState();

  useFrontendTool({
    agentId,
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

  useConfigureSuggestions({
    suggestions: [
      { title: "Change background", message: "Change the background to something new." },
      { title: "Generate sonnet", message: "Write a short sonnet about AI." },
    ],
    available: "always",
  });

  return background;
}
