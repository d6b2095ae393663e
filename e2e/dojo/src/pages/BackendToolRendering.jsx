// Backend tool rendering: the agent looks the weather up with a tool of its
// own, and the page draws each call as a weather card once its result has
// come.
import { useConfigureSuggestions, useRenderTool } from "@copilotkit/react-core/v2";
import { z } from "zod";
import { CenteredChat, parseResult } from "../layout.jsx";

export default function BackendToolRendering() {
  useRenderTool({
    name: "get_weather",
    parameters: z.object({ location: z.string() }),
    render: ({ parameters, result, status }) => {
      if (status !== "complete") return <div className="weather-pending">Retrieving the weather…</div>;
      const w = parseResult(result);
      const temperature = w.temperature ?? 0;
      return (
        <WeatherCard
          location={parameters.location}
          weather={{
            temperature,
            conditions: w.conditions ?? "clear",
            humidity: w.humidity ?? 0,
            windSpeed: w.wind_speed ?? w.windSpeed ?? 0,
            feelsLike: w.feels_like ?? w.feelsLike ?? temperature,
          }}
        />
      );
    },
  });

  useConfigureSuggestions({
    suggestions: [
      { title: "Weather in San Francisco", message: "What is the weather in San Francisco?" },
      { title: "Weather in New York", message: "How is the weather in New York?" },
      { title: "Weather in Tokyo", message: "What's the weather in Tokyo today?" },
    ],
    available: "always",
  });

  return (
    <div className="page-center">
      <CenteredChat agentId="backend_tool_rendering" />
    </div>
  );
}

// The card's color for the weather's conditions.
const palette = [
  [/clear|sunny/, "#4f6bd8"],
  [/rain|storm|drizzle/, "#4a5568"],
  [/cloud|fog|overcast/, "#718096"],
  [/snow/, "#3f8fd1"],
];

function WeatherCard({ location, weather }) {
  const conditions = weather.conditions.toLowerCase();
  const color = palette.find(([re]) => re.test(conditions))?.[1] ?? "#6b4a9e";
  const fahrenheit = ((weather.temperature * 9) / 5 + 32).toFixed(1);
  return (
    <div data-testid="weather-card" className="weather-card" style={{ backgroundColor: color }}>
      <div className="weather-head">
        <div>
          <h3 data-testid="weather-city">{location}</h3>
          <p>Current Weather</p>
        </div>
        <span className="weather-icon" aria-hidden="true">
          {/sun|clear/.test(conditions) ? "☀" : /rain|storm|drizzle|snow/.test(conditions) ? "☂" : "☁"}
        </span>
      </div>
      <div className="weather-main">
        <span>
          {weather.temperature}° C <small>/ {fahrenheit}° F</small>
        </span>
        <span className="weather-conditions">{weather.conditions}</span>
      </div>
      <div className="weather-facts">
        <div data-testid="weather-humidity">
          <p>Humidity</p>
          <p>{weather.humidity}%</p>
        </div>
        <div data-testid="weather-wind">
          <p>Wind</p>
          <p>{weather.windSpeed} mph</p>
        </div>
        <div data-testid="weather-feels-like">
          <p>Feels Like</p>
          <p>{weather.feelsLike}°</p>
        </div>
      </div>
    </div>
  );
}
