// Tool-based generative UI: the agent writes a haiku by calling the page's
// generate_haiku tool. The page draws the call's arguments as a haiku card
// while they stream, in the chat, and once the call runs it adds the haiku
// to the carousel. The tool asks for no run after it.
import { useState } from "react";
import { useConfigureSuggestions, useFrontendTool } from "@copilotkit/react-core/v2";
import { z } from "zod";
import { haikuImages } from "../haiku-images.js";
import { Sidebar } from "../layout.jsx";

const sample = {
  japanese: ["白い紙", "まだ何もない", "花を待つ"],
  english: ["A sheet of white paper—", "nothing on it yet,", "waiting for flowers."],
  image_name: null,
  gradient: "",
};

export default function ToolBasedGenerativeUI() {
  useConfigureSuggestions({
    suggestions: [
      { title: "Nature Haiku", message: "Write me a haiku about nature." },
      { title: "Ocean Haiku", message: "Write a haiku about the ocean." },
      { title: "Spring Haiku", message: "Write a haiku about spring." },
    ],
    available: "always",
  });
  return (
    <>
      <Sidebar agentId="tool_based_generative_ui" title="Haiku Generator" />
      <Haikus />
    </>
  );
}

function Haikus() {
  const [haikus, setHaikus] = useState([sample]);
  const [active, setActive] = useState(0);

  useFrontendTool(
    {
      agentId: "tool_based_generative_ui",
      name: "generate_haiku",
      parameters: z.object({
        japanese: z.array(z.string()).describe("The haiku's 3 lines, in Japanese"),
        english: z.array(z.string()).describe("The 3 lines translated into English"),
        image_name: z.string().describe(`The name of a fitting picture, one of: ${haikuImages.join(", ")}`),
        gradient: z.string().describe("A CSS gradient for the card's background"),
      }),
      followUp: false,
      handler: async ({ japanese, english, image_name, gradient }) => {
        const haiku = { japanese: japanese ?? [], english: english ?? [], image_name: image_name || null, gradient: gradient ?? "" };
        setHaikus((prev) => [haiku, ...prev.filter((h) => h !== sample)]);
        setActive(0);
        return "Haiku generated!";
      },
      render: ({ args }) => (args?.japanese ? <HaikuCard haiku={args} /> : <></>),
    },
    [haikus],
  );

  return (
    <div className="haikus">
      <div data-testid="haiku-carousel" className="carousel">
        <div className="carousel-track" style={{ transform: `translateX(-${active * 100}%)` }}>
          {haikus.map((haiku, i) => (
            <div key={i} data-testid={`carousel-item-${i}`} className="carousel-item" aria-hidden={i !== active}>
              <HaikuCard haiku={haiku} />
            </div>
          ))}
        </div>
        {haikus.length > 1 && (
          <div className="carousel-nav">
            <button type="button" aria-label="Previous haiku" disabled={active === 0} onClick={() => setActive(active - 1)}>
              ‹
            </button>
            <button type="button" aria-label="Next haiku" disabled={active === haikus.length - 1} onClick={() => setActive(active + 1)}>
              ›
            </button>
          </div>
        )}
      </div>
    </div>
  );
}

// HaikuCard draws a haiku, whole or as its arguments stream in: its
// picture shows once image_name is one of the pictures (a name still
// streaming is not yet).
function HaikuCard({ haiku }) {
  return (
    <div data-testid="haiku-card" className="card haiku" style={{ background: haiku.gradient || undefined }}>
      {(haiku.japanese ?? []).map((line, i) => (
        <div key={i} className="haiku-line">
          <p data-testid="haiku-japanese-line" className="japanese">
            {line}
          </p>
          <p data-testid="haiku-english-line" className="english">
            {haiku.english?.[i]}
          </p>
        </div>
      ))}
      {haikuImages.includes(haiku.image_name) && (
        <img data-testid="haiku-image" src={`/images/${haiku.image_name}`} alt={haiku.image_name.replace(/\.\w+$/, "").replaceAll("_", " ")} />
      )}
    </div>
  );
}
