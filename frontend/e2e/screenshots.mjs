// The README's pictures (docs/screenshots/), from a real run of the offline default: SmolLM2 and
// the local embedder, no scripted model, on the demo knowledge base (`ragchat demo`), asked a
// question in a real browser. Run by `make screenshots`; not a test, so `make test` never rewrites
// them. Re-run it whenever the UI or the default model's answers change.
//
//   node e2e/screenshots.mjs [--question "..."] [--out DIR]

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { parseArgs } from "node:util";
import { README_SCREENSHOT_DIR, REPO_DIR, VIEWPORTS, launchBrowser, openPage, screenshot, startServer } from "./harness.mjs";
import { gql } from "./helpers.mjs";

const DEMO_PROJECT = "ragchat docs"; // app/cli/ingest.py
const DEFAULT_MODEL = /local\s*\/\s*SmolLM2-135M-Instruct/;
const { values: args } = parseArgs({
  options: {
    // Passes the default threshold on the demo documents (some of their passages, not all), so the
    // pictures show kept and dropped candidates both.
    question: { type: "string", default: "Which chat model runs offline by default?" },
    out: { type: "string", default: README_SCREENSHOT_DIR },
  },
});
// A real model on a shared CPU: the first answer also loads the model.
const ANSWER_TIMEOUT_MS = 300_000;

const server = await startServer({ commands: [["demo"]], timeoutMs: 120_000 });
const browser = await launchBrowser();
// Pictures wait in a temp dir until every check passed: a failed run leaves docs/screenshots/ as it was.
const staging = await mkdtemp(join(tmpdir(), "ragchat-screenshots-"));
const saved = [];
// Each picture twice, in the light theme and the dark one (the app follows the system's scheme when
// no pick is stored, which a fresh browser context never has); the README shows both.
const shoot = async (page, name) => {
  for (const [colorScheme, suffix] of [["light", ""], ["dark", "-dark"]]) {
    await page.emulateMedia({ colorScheme });
    await page.waitForFunction((theme) => document.documentElement.dataset.theme === theme, colorScheme);
    saved.push(await screenshot(page, `${name}${suffix}`, staging));
  }
  await page.emulateMedia({ colorScheme: null });
};
try {
  const { projects } = await gql(server, "{ projects { ... on ProjectConnection { edges { node { id name } } } } }");
  const demo = projects.edges.map((edge) => edge.node).find((p) => p.name === DEMO_PROJECT);
  assert.ok(demo, `\`ragchat demo\` made no "${DEMO_PROJECT}" knowledge base`);

  const page = await openPage(browser, server, { path: `/projects/${demo.id}` });
  await page.getByRole("heading", { name: DEMO_PROJECT, level: 2 }).waitFor();
  await page.locator('[data-testid="document-row"]').first().waitFor();
  await shoot(page, "knowledge-base");

  await page.getByRole("button", { name: "New chat" }).first().click();
  const setup = page.getByRole("dialog", { name: "Set up this chat" });
  await setup.getByRole("button", { name: "Save settings" }).click();
  await setup.waitFor({ state: "detached" });
  const sessionPath = new URL(page.url()).pathname;

  const box = page.getByRole("textbox", { name: "Message" });
  await box.fill(args.question);
  await box.press("Enter");
  const answer = page.getByTestId("assistant-message").first();
  // Finished either way (the UI also shows PENDING before the first token): a failure is reported below.
  await page.locator('[data-testid="assistant-message"]:is([data-status="COMPLETE"], [data-status="FAILED"])').first().waitFor({ timeout: ANSWER_TIMEOUT_MS });
  const status = await answer.getAttribute("data-status");
  assert.equal(status, "COMPLETE", `the answer ended ${status}: ${await answer.textContent()}`);
  assert.ok((await answer.getByTestId("message-content").textContent()).trim(), "the answer is empty: not a picture for the README");
  const sources = await answer.locator('[data-testid="source"]').count();
  assert.ok(sources > 0, `no source kept for "${args.question}" at the default threshold: ask another --question`);
  const marker = answer.getByRole("button", { name: /^Source \d+:/ }).first();
  if ((await marker.count()) > 0) await marker.click(); // highlights its source, as a reader would
  await page.mouse.move(0, 0);
  await shoot(page, "chat-citations");

  const summary = (await page.getByTestId("settings-summary").textContent()).replace(/\s*·\s*/g, " · ").trim();
  await answer.getByRole("button", { name: "Why this answer" }).click();
  const trace = page.getByRole("dialog", { name: "Why this answer" });
  await trace.waitFor();
  const used = await trace.getByTestId("trace-settings").textContent();
  assert.match(used, DEFAULT_MODEL, "the pictures must show the offline default model, not another");
  await shoot(page, "trace-panel");
  await page.keyboard.press("Escape");
  await trace.waitFor({ state: "detached" });

  await page.getByRole("button", { name: "Chat settings" }).click();
  const drawer = page.getByRole("dialog", { name: "Chat settings" });
  await drawer.getByTestId("preview-summary").waitFor(); // pre-filled with the question just asked
  await shoot(page, "settings-preview");
  await drawer.getByRole("button", { name: "Cancel" }).click();

  const phone = await openPage(browser, server, { path: sessionPath, viewport: VIEWPORTS.mobile });
  await phone.locator('[data-testid="assistant-message"][data-status="COMPLETE"]').first().waitFor();
  await shoot(phone, "chat-mobile");

  await mkdir(args.out, { recursive: true });
  const written = [];
  for (const file of saved) {
    written.push(join(args.out, basename(file)));
    await copyFile(file, written.at(-1));
  }
  const stored = await storedAnswer(sessionPath);
  await writeFile(join(args.out, "README.md"), provenance(summary, stored));
  console.log(`question: ${args.question}\nanswer: ${stored.content}\n${stored.how}`);
  console.log(`saved:\n  ${written.join("\n  ")}`);
} catch (error) {
  console.error(`${error.stack ?? error}\n--- server output ---\n${server.log()}`);
  process.exitCode = 1;
} finally {
  await browser.close();
  await server.stop();
  await rm(staging, { recursive: true, force: true });
}

/** The answer as the server stored it (markers and all), and how it was written (the trace's mode). */
async function storedAnswer(sessionPath) {
  const id = sessionPath.split("/").at(-1);
  const { chatSession } = await gql(
    server,
    "query ($id: ID!) { chatSession(id: $id) { ... on ChatSession { messages(last: 10) { ... on ChatMessageConnection { edges { node { role content trace { answer { requestedMode mode reason guard { decision } } } } } } } } } }",
    { id },
  );
  const messages = chatSession.messages.edges.map((edge) => edge.node);
  const { content, trace } = messages.findLast((m) => m.role === "ASSISTANT");
  const { requestedMode, mode, reason, guard } = trace.answer;
  const how = `${requestedMode.toLowerCase()} → ${mode.toLowerCase()}${guard ? `, answer guard: ${guard.decision.toLowerCase()}` : ""} (${reason})`;
  return { content, how };
}

/** What docs/screenshots/README.md says: which run made the pictures, so the README never passes
 * off one model's answer as another's. */
function provenance(summary, { content, how }) {
  const commit = execFileSync("git", ["describe", "--always", "--dirty"], { cwd: REPO_DIR, encoding: "utf8" }).trim();
  return `# How these pictures were made

By \`make screenshots\` (\`frontend/e2e/screenshots.mjs\`), not by the tests: a real run of the offline
default, SmolLM2-135M-Instruct with the local all-MiniLM-L6-v2 embedder, on the demo knowledge base
(\`ragchat demo\`), asked in headless Chromium. Made at commit ${commit}, ${new Date().toISOString().slice(0, 10)}.

- question: ${args.question}
- answer, as stored: ${content.replace(/\s+/g, " ")}
- how it was written: ${how}
- the chat's settings: ${summary}

The browser tests save their own screenshots to \`frontend/e2e/.artifacts/\` (gitignored): most with
the scripted test model, \`frontend/e2e/offline-default.test.mjs\` with the offline default.
`;
}
