// Untrusted text stays text: a document full of <script>, javascript: links and event handlers, and
// a (scripted) answer quoting them, shown in citations, the preview, the trace and the answer.
// Nothing may execute (window.__pwned stays unset, no dialog opens) and no link may keep its URL.

import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { openPage, startServerAndBrowser } from "./harness.mjs";
import { fixture, gql, scriptedEnv, watchForExecution } from "./helpers.mjs";

const EVIL_NAME = `"><img src=x onerror="window.__pwned='name'">.md`;
const UNSAFE_URL = /^\s*(javascript|vbscript|data):/i;

describe("untrusted document and model text", () => {
  let server;
  let browser;
  let projectId;
  let sessionId;

  before(async () => {
    [server, browser] = await startServerAndBrowser({ env: scriptedEnv("safety-script.json", { tokenDelayMs: 5 }) });
    ({
      createProject: { id: projectId },
    } = await gql(server, 'mutation { createProject(input: { name: "Untrusted" }) { ... on Project { id } } }'));
    const text = await readFile(fixture("evil-notes.md"), "utf8");
    const add = "mutation ($p: ID!, $n: String!, $t: String!) { addDocument(projectId: $p, name: $n, text: $t) { __typename } }";
    await gql(server, add, { p: projectId, n: "evil-notes.md", t: text });
    await gql(server, add, { p: projectId, n: EVIL_NAME, t: `${text}\n\nA second copy of the pwn guide.` });
    ({
      createChatSession: { id: sessionId },
    } = await gql(
      server,
      "mutation ($p: ID!) { createChatSession(projectId: $p, input: { topK: 3, threshold: 0 }) { ... on ChatSession { id } } }",
      { p: projectId },
    ));
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  async function assertInert(page, watch) {
    assert.equal(await watch.pwned(), null, "no injected code ran");
    assert.deepEqual(watch.dialogs, []);
    const unsafe = await page.evaluate(() => {
      const root = document.getElementById("root");
      const dialogs = [...document.querySelectorAll("dialog")];
      const scopes = [root, ...dialogs];
      const all = scopes.flatMap((s) => [...s.querySelectorAll("*")]);
      return {
        scripts: all.filter((el) => el.tagName === "SCRIPT").length,
        images: all.filter((el) => el.tagName === "IMG" || el.tagName === "IFRAME").length,
        handlers: all.filter((el) => [...el.attributes].some((a) => a.name.startsWith("on"))).length,
        hrefs: all.filter((el) => el.tagName === "A").map((a) => a.getAttribute("href") ?? ""),
      };
    });
    assert.equal(unsafe.scripts, 0, "no <script> element");
    assert.equal(unsafe.images, 0, "no <img>/<iframe> from untrusted text");
    assert.equal(unsafe.handlers, 0, "no inline event handler attribute");
    for (const href of unsafe.hrefs) assert.doesNotMatch(href, UNSAFE_URL);
  }

  test("an answer quoting script, javascript: links and handlers renders inert", async () => {
    const page = await openPage(browser, server, { path: `/sessions/${sessionId}` });
    const watch = await watchForExecution(page);
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("What does the pwn guide say?");
    await box.press("Enter");
    const answer = page.locator('[data-testid="assistant-message"][data-status="COMPLETE"]');
    await answer.waitFor({ timeout: 20_000 });

    // The markup is not rendered as markup (raw HTML is dropped or shown as text)...
    const content = answer.getByTestId("message-content");
    assert.match(await content.textContent(), /The pwn guide/);
    // ...links lose their javascript:/data: URLs, and clicking them does nothing.
    for (const name of ["click me", "data"]) {
      const link = content.getByText(name, { exact: true });
      const href = await link.evaluate((el) => el.closest("a")?.getAttribute("href") ?? "");
      assert.doesNotMatch(href, UNSAFE_URL);
      await link.click();
    }
    assert.equal(new URL(page.url()).pathname, `/sessions/${sessionId}`, "no navigation");

    // The document's text is shown verbatim in the cited source: visible, not executed.
    await answer.getByTestId("sources").getByRole("button", { name: "Show the cited text" }).click();
    const source = answer.locator('[data-testid="source"]').first();
    // Its document name links to the chunk viewer on this site, whatever the name holds.
    assert.match(await source.getByTestId("source-link").getAttribute("href"), /^\/documents\/\d+\?/);
    assert.match(await source.textContent(), /<script>window\.__pwned = "script tag"<\/script>/);
    await assertInert(page, watch);

    // The trace and the retrieval preview show the same names and texts.
    await answer.getByRole("button", { name: "Why this answer" }).click();
    await page.getByRole("dialog", { name: "Why this answer" }).getByText(EVIL_NAME).first().waitFor();
    await assertInert(page, watch);
    await page.keyboard.press("Escape");
    await page.getByRole("button", { name: "Chat settings" }).click();
    const preview = page.getByTestId("retrieval-preview");
    await preview.getByTestId("preview-hit").first().waitFor();
    assert.match(await preview.textContent(), /<script>window\.__pwned/);
    await assertInert(page, watch);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  test("a document's name and text are inert on the knowledge base page and after a reload", async () => {
    const page = await openPage(browser, server, { path: `/projects/${projectId}` });
    const watch = await watchForExecution(page);
    await page.getByRole("rowheader", { name: EVIL_NAME }).waitFor();
    await assertInert(page, watch);
    await page.goto(`${server.url}/sessions/${sessionId}`);
    await page.locator('[data-testid="assistant-message"][data-status="COMPLETE"]').waitFor();
    await assertInert(page, watch);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });
});
