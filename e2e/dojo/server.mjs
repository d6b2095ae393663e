// The dojo app's server: the built pages, their pictures, and a Copilot
// Runtime at /api/copilotkit whose agents are aguic's workflows, each an
// AG-UI HttpAgent at <aguic>/agui/workflows/<id>, as the dojo's own route
// registers its integrations.
//
//   npm run build && node server.mjs --aguic http://127.0.0.1:8080 --port 3000
//
// or, from a program, startDojo({ aguic, dist, port }).

import http from "node:http";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { HttpAgent } from "@ag-ui/client";
import { CopilotRuntime, InMemoryAgentRunner } from "@copilotkit/runtime/v2";
import { createCopilotNodeListener } from "@copilotkit/runtime/v2/node";
import { features } from "./src/features.js";
import { haikuImages } from "./src/haiku-images.js";

const here = path.dirname(fileURLToPath(import.meta.url));

const contentTypes = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".ttf": "font/ttf",
  ".woff": "font/woff",
  ".woff2": "font/woff2",
  ".json": "application/json",
};

// startDojo serves the app built into dist and its runtime, whose agents
// talk to the aguic server at origin aguic, on 127.0.0.1:port (0: a free
// port). It resolves to { origin, close }.
export async function startDojo({ aguic, dist = path.join(here, "dist"), port = 0 }) {
  // The app works offline: the runtime sends CopilotKit no telemetry.
  process.env.COPILOTKIT_TELEMETRY_DISABLED = "true";
  const agents = Object.fromEntries(
    features.map(({ id }) => [id, new HttpAgent({ url: `${aguic}/agui/workflows/${id}` })]),
  );
  const runtime = createCopilotNodeListener({
    runtime: new CopilotRuntime({ agents, runner: new InMemoryAgentRunner() }),
    basePath: "/api/copilotkit",
    mode: "single-route",
  });
  const server = http.createServer((req, res) => {
    const { pathname } = new URL(req.url, "http://localhost");
    const reply = pathname === "/api/copilotkit" || pathname.startsWith("/api/copilotkit/")
      ? runtime(req, res)
      : pathname.startsWith("/images/")
        ? picture(decodeURIComponent(pathname.slice("/images/".length)), res)
        : page(dist, pathname, res);
    Promise.resolve(reply).catch((err) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
      res.end(`dojo: ${req.method} ${pathname}: ${err.message}\n`);
    });
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  return {
    origin: `http://127.0.0.1:${server.address().port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(resolve);
        server.closeAllConnections();
      }),
  };
}

// page answers with a file of dist, or with the app's index.html for a
// path that is no file (the app routes it).
async function page(dist, pathname, res) {
  const file = path.join(dist, path.normalize(pathname));
  if (file.startsWith(dist + path.sep) && path.extname(file) !== "") {
    try {
      const body = await readFile(file);
      res.writeHead(200, { "content-type": contentTypes[path.extname(file)] ?? "application/octet-stream" });
      res.end(body);
      return;
    } catch (err) {
      if (err.code !== "ENOENT") throw err;
      res.writeHead(404, { "content-type": "text/plain" }).end(`dojo: no file ${pathname}\n`);
      return;
    }
  }
  res.writeHead(200, { "content-type": contentTypes[".html"] });
  res.end(await readFile(path.join(dist, "index.html")));
}

// picture answers with the picture a haiku names: the app has no
// photographs, so each is drawn, a sky of its own colors and its name.
function picture(name, res) {
  if (!haikuImages.includes(name)) {
    res.writeHead(404, { "content-type": "text/plain" }).end(`dojo: no picture ${name}\n`);
    return;
  }
  let hue = 0;
  for (const c of name) hue = (hue * 31 + c.charCodeAt(0)) % 360;
  const caption = name.replace(/\.\w+$/, "").replaceAll("_", " ").replace(/[<&>]/g, "");
  res.writeHead(200, { "content-type": "image/svg+xml" });
  res.end(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 640 320">
<defs><linearGradient id="sky" x1="0" y1="0" x2="0" y2="1">
<stop offset="0" stop-color="hsl(${hue} 60% 70%)"/><stop offset="1" stop-color="hsl(${(hue + 40) % 360} 50% 35%)"/>
</linearGradient></defs>
<rect width="640" height="320" fill="url(#sky)"/>
<path d="M0 260 L160 150 L260 220 L380 110 L640 260 V320 H0 Z" fill="hsl(${(hue + 200) % 360} 25% 25%)"/>
<text x="320" y="300" font-family="sans-serif" font-size="18" fill="#fff" text-anchor="middle">${caption}</text>
</svg>\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      aguic: { type: "string", default: "http://127.0.0.1:8080" },
      dist: { type: "string", default: path.join(here, "dist") },
      port: { type: "string", default: "3000" },
    },
  });
  const { origin } = await startDojo({ aguic: values.aguic, dist: path.resolve(values.dist), port: Number(values.port) });
  console.log(`the dojo app is at ${origin}/, its agents at ${values.aguic}/agui/workflows/<id>`);
}
