// Shared parts of the suites that drive a page in Chromium (the studio,
// the CopilotKit app, the dojo): starting the browser, and collecting what
// goes wrong on a page.

import { existsSync } from "node:fs";
import { chromium } from "playwright-core";

// CHROMIUM is the browser's binary: Debian's, which `make chromium`
// installs, unless the CHROMIUM variable names another.
export const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";

// launchChromium starts a headless Chromium that asks nothing of the
// network on its own (this machine's network is closed).
export async function launchChromium() {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`the browser tests need Chromium at ${CHROMIUM}: run make chromium (or set CHROMIUM)`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
      "--disable-component-update", "--disable-sync", "--disable-quic"],
  });
}

// watchPage collects in the array it returns what goes wrong on page: the
// console's errors (and warnings, unless warnings is false), uncaught
// errors, failed requests, and answers of 400 or more. expected(status,
// url) names the answers a test expects, which are no problem; Chromium's
// console line about such an answer is none either.
export function watchPage(page, { warnings = true, expected = () => false } = {}) {
  const problems = [];
  page.on("console", (m) => {
    if (m.type() !== "error" && !(warnings && m.type() === "warning")) return;
    const status = /status of (\d+)/.exec(m.text());
    if (status && expected(Number(status[1]), m.location()?.url ?? "")) return;
    problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) => problems.push(`request failed: ${r.method()} ${r.url()}: ${r.failure()?.errorText}`));
  page.on("response", (r) => {
    if (r.status() >= 400 && !expected(r.status(), r.url())) problems.push(`answer ${r.status()}: ${r.request().method()} ${r.url()}`);
  });
  return problems;
}
