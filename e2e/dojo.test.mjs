// The AG-UI dojo's journeys, in a real browser. The dojo's feature pages,
// written again in dojo/ on the CopilotKit and @ag-ui/client versions the
// dojo pins, talk through a Copilot Runtime to the example workflows of
//
//   aguic serve --model-script workflows/scripts/demo.script workflows
//
// and headless Chromium goes through each of the dojo's journeys, checking
// on the page what the dojo's own checks (docs/dojo.md, "The journeys"). A
// console error, an uncaught page error, a failed request or an HTTP error
// fails the journey.
//
// It needs the packages of e2e/ and e2e/dojo/ (make deps) and Chromium at
// /usr/bin/chromium, or where CHROMIUM says.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { launchChromium, watchPage } from "./browser.mjs";
import { root, here, startServe, waitFor, warnings } from "./lib.mjs";
import { startDojo } from "./dojo/server.mjs";

const app = path.join(here, "dojo");
let serve, dojo, browser, dist;

before(async () => {
  dist = mkdtempSync(path.join(tmpdir(), "aguic-dojo-"));
  const built = build(dist);
  serve = await startServe({
    args: ["--model-script", path.join(root, "workflows", "scripts", "demo.script"), path.join(root, "workflows")],
  });
  await built;
  dojo = await startDojo({ aguic: serve.origin, dist });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await dojo?.close();
  await serve?.stop();
  if (dist) rmSync(dist, { recursive: true, force: true });
});

// build builds the app with Vite into dir.
function build(dir) {
  const vite = path.join(app, "node_modules", "vite", "bin", "vite.js");
  const child = spawn(process.execPath, [vite, "build", "--outDir", dir, "--emptyOutDir", "--logLevel", "warn"], {
    cwd: app,
    stdio: ["ignore", "inherit", "inherit"],
  });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`vite build exited with ${code}`))));
  });
}

// journey is one of the dojo's journeys: run goes through it on the page
// of feature, in a browser context of its own, with chat, the page's chat.
// The journey fails on any problem the page reports and on any warning of
// the runtime (which runs in this process), and says what the page showed.
function journey(name, feature, run) {
  test(name, { timeout: 180_000 }, async () => {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const page = await context.newPage();
    const problems = watchPage(page, { warnings: false });
    const chat = new Chat(page);
    try {
      await page.goto(`${dojo.origin}/feature/${feature}`);
      await run(page, chat);
      await chat.idle();
      assert.deepEqual(problems, [], "the page reported problems");
      assert.deepEqual(warnings, [], "the runtime warned");
    } catch (err) {
      err.message += `\n${await shown(page)}${problems.length ? `\nproblems:\n  ${problems.join("\n  ")}` : ""}`;
      throw err;
    } finally {
      await context.close();
    }
  });
}

// shown is what the chat showed, for a failure's message.
async function shown(page) {
  try {
    return await page.evaluate(() => {
      const of = (id) => [...document.querySelectorAll(`[data-testid="${id}"]`)].map((e) => JSON.stringify(e.textContent.trim().slice(0, 300)));
      const running = document.querySelector("[data-copilot-running]")?.getAttribute("data-copilot-running");
      return `the page showed: user messages ${of("copilot-user-message").join(", ") || "none"}; ` +
        `assistant messages ${of("copilot-assistant-message").join(", ") || "none"}; running=${running}`;
    });
  } catch (err) {
    return `the page could not be read: ${err.message}`;
  }
}

// Chat drives a page's CopilotKit chat, as a user does, and knows when the
// agent's runs are over: it counts the runtime requests that run the agent
// (method "agent/run") and the ones whose streams have ended.
class Chat {
  constructor(page) {
    this.page = page;
    this.started = 0;
    this.ended = 0;
    this.bodies = [];
    const isRun = (req) => req.method() === "POST" && req.url().endsWith("/api/copilotkit") && req.postDataJSON()?.method === "agent/run";
    page.on("request", (req) => {
      if (!isRun(req)) return;
      this.started++;
      this.bodies.push(req.postDataJSON().body);
    });
    const end = (req) => {
      if (isRun(req)) this.ended++;
    };
    page.on("requestfinished", end);
    page.on("requestfailed", end);
  }

  get textarea() { return this.page.getByTestId("copilot-chat-textarea"); }
  get userMessages() { return this.page.getByTestId("copilot-user-message"); }
  get assistantMessages() { return this.page.getByTestId("copilot-assistant-message"); }

  // welcome waits for the chat's greeting.
  async welcome() {
    await this.page.getByText("How can I help you today?").first().waitFor();
  }

  // send types text and sends it, and waits for it among the user's
  // messages.
  async send(text) {
    const before = await this.userMessages.count();
    await this.textarea.fill(text);
    await this.page.getByTestId("copilot-send-button").click();
    await waitFor(async () => (await this.userMessages.count()) > before && (await this.userMessages.last().textContent()).includes(text),
      { what: `the user message ${JSON.stringify(text)}` });
  }

  // ask sends text and waits for the runs it starts to end.
  async ask(text) {
    await this.after(() => this.send(text));
  }

  // after does action and waits until the runs it starts have ended, at
  // least one, and the chat no longer shows a run going on.
  async after(action) {
    const since = this.started;
    await action();
    await waitFor(() => this.started > since, { what: "a run to start" });
    await this.idle();
  }

  // idle waits until every run has ended and the chat shows none going on.
  async idle() {
    await waitFor(async () => this.started === this.ended && (await this.page.locator('[data-copilot-running="true"]').count()) === 0,
      { what: "the runs to end", timeout: 60_000 });
  }

  // assistantMatching waits for an assistant message that matches re and
  // returns its text.
  async assistantMatching(re) {
    return waitFor(async () => {
      for (const t of await this.assistantMessages.allTextContents()) if (re.test(t)) return t;
      return undefined;
    }, { what: `an assistant message matching ${re}` });
  }

  // lastRunState is the state the page sent with its last run.
  get lastRunState() { return this.bodies.at(-1)?.state; }
}

// texts waits for locator to show at least one element and returns the
// text of each.
async function texts(locator) {
  await locator.first().waitFor();
  return (await locator.allInnerTexts()).map((t) => t.trim());
}

// record keeps, in the page, every text that the elements selector selects
// show as they change, until the returned function collects them.
async function record(page, selector) {
  await page.evaluate((sel) => {
    window.__seen = [];
    const note = () => {
      for (const el of document.querySelectorAll(sel)) {
        if (window.__seen.at(-1) !== el.textContent) window.__seen.push(el.textContent);
      }
    };
    new MutationObserver(note).observe(document.body, { subtree: true, childList: true, characterData: true });
  }, selector);
  return () => page.evaluate(() => window.__seen);
}

// ---------------------------------------------------------------------
// Agentic chat

journey("agentic_chat: a greeting is answered with a countdown that streams in", "agentic_chat", async (page, chat) => {
  await chat.welcome();
  const seen = await record(page, '[data-testid="copilot-assistant-message"]');
  await chat.ask("Hey there");
  const text = await chat.assistantMatching(/counting down:/);
  assert.match(text, /counting down:\s*10\s+9\s+8\s+7\s+6\s+5\s+4\s+3\s+2\s+1\s+✓/);
  const partial = (await seen()).filter((t) => t.includes("counting down:") && !t.includes("✓"));
  assert.ok(partial.length > 0, "the countdown must show before it is whole");
});

journey("agentic_chat: the agent changes the page's background with the page's tool, then says so", "agentic_chat", async (page, chat) => {
  await chat.welcome();
  const container = page.getByTestId("background-container");
  const background = () => container.evaluate((el) => el.style.background);
  const initial = await background();
  const before = await chat.assistantMessages.count();
  await chat.ask("Please change the background to blue.");
  await waitFor(async () => (await chat.assistantMessages.count()) >= before + 2, { what: "two assistant messages" });
  assert.notEqual(await background(), initial);
  assert.match(await background(), /linear-gradient/);
  await chat.assistantMatching(/done|changed|background/i);
  // The tool's result went back to the agent with the second run.
  const result = chat.bodies.at(-1).messages.find((m) => m.role === "tool");
  assert.match(result?.content ?? "", /success/);
});

journey("agentic_chat: a weather question shows the weather tool's call as a card", "agentic_chat", async (page, chat) => {
  await chat.welcome();
  await chat.ask("What is the weather in Tokyo?");
  const info = page.getByTestId("weather-info");
  await info.waitFor();
  const text = await info.innerText();
  for (const part of ["Weather in Tokyo", "Temperature: 21°C", "Humidity: 84%", "Wind Speed: 6 mph", "Conditions: rainy"]) {
    assert.ok(text.includes(part), `the card ${JSON.stringify(text)} must show ${part}`);
  }
  await chat.assistantMatching(/weather there/);
});

journey("agentic_chat_reasoning: the reasoning model is picked in a menu, and the pick goes with the run", "agentic_chat_reasoning", async (page, chat) => {
  const menu = page.getByRole("button", { name: /OpenAI|Anthropic|Gemini/ });
  assert.match(await menu.innerText(), /OpenAI/);
  await menu.click();
  await page.getByRole("menuitem", { name: "Anthropic" }).click();
  assert.match(await menu.innerText(), /Anthropic/);
  await chat.ask("Hello");
  assert.deepEqual(chat.lastRunState, { model: "Anthropic" });
});

journey("agentic_chat_reasoning: the reasoning shows before the answer", "agentic_chat_reasoning", async (page, chat) => {
  await chat.welcome();
  await chat.ask("What is the best car to buy?");
  await page.getByText(/Thought for/i).first().waitFor();
  assert.match(await chat.assistantMessages.last().innerText(), /Toyota|Honda|Mazda|recommendations/i);
});

// ---------------------------------------------------------------------
// Backend tool rendering

journey("backend_tool_rendering: each suggested city's weather shows as a card", "backend_tool_rendering", async (page, chat) => {
  const cities = [["Weather in San Francisco", "San Francisco", "78%"], ["Weather in New York", "New York", "55%"]];
  for (const [i, [suggestion, city, humidity]] of cities.entries()) {
    await chat.after(() => page.getByRole("button", { name: suggestion }).click());
    const card = page.getByTestId("weather-card").nth(i);
    await card.waitFor();
    assert.equal((await card.getByTestId("weather-city").innerText()).toLowerCase(), city.toLowerCase());
    assert.ok((await card.innerText()).includes("Current Weather"));
    assert.match(await card.getByTestId("weather-humidity").innerText(), new RegExp(`Humidity\\s+${humidity}`));
    assert.match(await card.getByTestId("weather-wind").innerText(), /Wind\s+\d+ mph/);
  }
  assert.equal(await page.getByTestId("weather-card").count(), 2);
});

// ---------------------------------------------------------------------
// Human in the loop

journey("human_in_the_loop: the plan's steps are listed, the user keeps some and confirms, and the agent goes on", "human_in_the_loop", async (page, chat) => {
  await chat.welcome();
  await chat.ask("Hi");
  const plan = page.getByTestId("select-steps");
  await plan.waitFor();
  const steps = await texts(plan.getByTestId("step-text"));
  assert.deepEqual(steps, ["Gather what you need", "Prepare the work", "Do the main part", "Check the result", "Tidy up"]);
  // Untick the last step: the answer keeps the other four.
  await plan.getByTestId("step-item").last().click();
  assert.equal(await plan.locator('input[type="checkbox"]').last().isChecked(), false);
  const confirm = page.getByRole("button", { name: "Confirm" });
  const before = await chat.assistantMessages.count();
  await chat.after(() => confirm.click());
  await confirm.waitFor({ state: "hidden" });
  assert.ok((await chat.assistantMessages.count()) > before, "an assistant message follows the answer");
  await chat.assistantMatching(/working on it: Gather what you need, Prepare the work, Do the main part, Check the result\./);
  await plan.getByText("Accepted").waitFor();
});

// ---------------------------------------------------------------------
// Agentic generative UI

journey("agentic_generative_ui: the plan's progress shows under the messages as its steps complete", "agentic_generative_ui", async (page, chat) => {
  await chat.welcome();
  const seen = await record(page, '[data-testid="task-progress"]');
  await chat.ask("Hi");
  const progress = page.getByTestId("task-progress");
  const steps = await texts(progress.getByTestId("task-step-text"));
  assert.deepEqual(steps, ["Gather what you need", "Prepare the work", "Do the main part", "Check the result", "Tidy up"]);
  assert.match(await progress.innerText(), /5\/5 Complete/);
  const counts = [...new Set((await seen()).map((t) => t.match(/(\d)\/5 Complete/)?.[1]).filter(Boolean))];
  assert.deepEqual(counts, ["0", "1", "2", "3", "4", "5"], "the card follows each step");
  await chat.assistantMatching(/all 5 steps are completed/);
});

// ---------------------------------------------------------------------
// Tool-based generative UI

// haiku sends a haiku request and checks the haiku card in the chat and the
// same haiku in the carousel.
async function haiku(page, chat, prompt, japanese) {
  await chat.ask(prompt);
  const cards = page.getByTestId("copilot-assistant-message").getByTestId("haiku-card");
  await waitFor(async () => {
    for (const card of await cards.all()) {
      if (JSON.stringify(await card.getByTestId("haiku-japanese-line").allInnerTexts()) === JSON.stringify(japanese)) return true;
    }
    return false;
  }, { what: `a haiku card in the chat with ${japanese.join(" ")}` });
  const carousel = page.getByTestId("haiku-carousel");
  await waitFor(async () => {
    const first = carousel.getByTestId("carousel-item-0");
    return JSON.stringify(await first.getByTestId("haiku-japanese-line").allInnerTexts()) === JSON.stringify(japanese);
  }, { what: `the carousel to show ${japanese.join(" ")} first` });
  const image = carousel.getByTestId("carousel-item-0").getByTestId("haiku-image");
  await waitFor(() => image.evaluate((img) => img.complete && img.naturalWidth > 0), { what: "the haiku's picture" });
}

const winning = ["勝ちを信じ", "倒れても立つ", "朝の道"];
const moonlight = ["月明かり", "静かな湖に", "光る道"];

journey("tool_based_generative_ui: a haiku shows in the chat and in the carousel", "tool_based_generative_ui", async (page, chat) => {
  await chat.welcome();
  await haiku(page, chat, 'Generate Haiku for "I will always win"', winning);
  assert.equal(await page.getByTestId("haiku-carousel").getByTestId("haiku-card").count(), 1, "the haiku takes the sample's place");
});

journey("tool_based_generative_ui: two haikus show in the chat and both in the carousel", "tool_based_generative_ui", async (page, chat) => {
  await chat.welcome();
  await haiku(page, chat, 'Generate Haiku for "I will always win"', winning);
  await haiku(page, chat, 'Generate Haiku for "The moon shines bright"', moonlight);
  const carousel = page.getByTestId("haiku-carousel");
  assert.deepEqual(await carousel.getByTestId("carousel-item-1").getByTestId("haiku-japanese-line").allInnerTexts(), winning);
  assert.equal(chat.started, 2, "a haiku asks for no run after it");
});

// ---------------------------------------------------------------------
// Shared state

// ingredients are the names in the recipe's ingredient cards.
const ingredients = (page) => page.locator(".ingredient-card .ingredient-name-input").evaluateAll((inputs) => inputs.map((i) => i.value));

journey("shared_state: a recipe asked for in the chat fills the form", "shared_state", async (page, chat) => {
  await chat.welcome();
  await chat.ask('Please give me a pasta recipe of your choosing, but one of the ingredients should be "Pasta"');
  await waitFor(async () => (await ingredients(page)).includes("Salt"), { what: "the ingredient Salt" });
  assert.deepEqual(await ingredients(page), ["Pasta", "Tomatoes", "Garlic", "Olive oil", "Salt"]);
  assert.equal(await page.locator(".instructions-container .instruction-item").count(), 3);
  assert.equal(await page.locator(".recipe-title-input").inputValue(), "Garlic Tomato Pasta");
  assert.equal(await page.getByTestId("improve-button").innerText(), "Improve with AI");
});

journey("shared_state: an ingredient added in the form goes with the run, and the agent's recipe comes back", "shared_state", async (page, chat) => {
  await chat.welcome();
  await page.getByRole("button", { name: "+ Add Ingredient" }).click();
  const card = page.locator(".ingredient-card").last();
  await card.locator(".ingredient-name-input").fill("Potatoes");
  await card.locator(".ingredient-amount-input").fill("12");
  await chat.ask("Give me all the ingredients");
  assert.deepEqual(chat.lastRunState.recipe.ingredients.at(-1), { icon: "🍴", name: "Potatoes", amount: "12" });
  await waitFor(async () => (await ingredients(page)).includes("Lettuce leaves"), { what: "the agent's ingredients" });
  assert.deepEqual(await ingredients(page), ["chicken breast", "chili powder", "Salt", "Lettuce leaves"]);
  assert.equal(await page.locator(".instructions-container .instruction-item").count(), 3);
});

// ---------------------------------------------------------------------
// Predictive state updates

const story = "Once upon a time there was a dog named Rex. Rex lived by the sea and was a very good dog.";
const rewritten = "Once upon a time there was a dog named Rex. Rex lived by the sea, swam every morning and was a very good dog.";

// writeAndConfirm asks for a story, which fills the editor, and confirms
// it in the dialog the agent asks for.
async function writeAndConfirm(page, chat) {
  await chat.welcome();
  await chat.ask("Write a story");
  const editor = page.locator("div.tiptap.ProseMirror");
  await editor.waitFor();
  assert.equal((await editor.innerText()).trim(), story);
  await editor.click();
  await answerDialog(page, chat, "confirm-button");
  await chat.assistantMatching(/The document is updated/);
  return editor;
}

// answerDialog clicks the button of the last confirm-changes dialog, which
// must be enabled (the agent waits for its answer), and waits for the run
// the answer starts; the dialog then takes no other answer.
async function answerDialog(page, chat, button) {
  const dialog = page.getByTestId("confirm-changes-modal").last();
  await dialog.waitFor();
  const b = dialog.getByTestId(button);
  assert.equal(await b.isEnabled(), true, `the dialog's ${button} must be enabled`);
  await chat.after(() => b.click());
  assert.equal(await dialog.getByRole("button", { disabled: false }).count(), 0, "an answered dialog takes no other answer");
}

journey("predictive_state_updates: a story is written and confirmed, then a change is marked and confirmed", "predictive_state_updates", async (page, chat) => {
  const editor = await writeAndConfirm(page, chat);
  await chat.ask("Update the story");
  const added = await texts(page.locator(".tiptap em"));
  assert.ok(added.join(" ").includes("swam every morning"), `the new words are marked: ${JSON.stringify(added)}`);
  await answerDialog(page, chat, "confirm-button");
  await chat.assistantMatching(/The document is updated/);
  assert.equal((await editor.innerText()).trim(), rewritten);
  assert.equal(await page.locator(".tiptap em").count(), 0, "a confirmed change is no longer marked");
});

journey("predictive_state_updates: a story is written and confirmed, then a change is marked and rejected", "predictive_state_updates", async (page, chat) => {
  const editor = await writeAndConfirm(page, chat);
  await chat.ask("Update the story");
  await page.locator(".tiptap em").first().waitFor();
  await answerDialog(page, chat, "reject-button");
  await chat.assistantMatching(/kept the document as it was/);
  assert.equal((await editor.innerText()).trim(), story);
  assert.deepEqual(chat.lastRunState, { document: story }, "the answer's run carries the document put back");
});
