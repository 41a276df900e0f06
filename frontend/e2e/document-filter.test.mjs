// Document tags and filters in the browser: files uploaded with tags, a document's tags edited,
// and a chat narrowed to one tag in its settings answering from that document alone, its trace
// saying so. Against a real ragchat (real database, local embedder); answers are extractive, so
// the sources are what the search kept.

import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { openPage, screenshot, startServerAndBrowser } from "./harness.mjs";
import { accessibilityViolations, fixture, gql, scriptedEnv } from "./helpers.mjs";

const NOTES = "# Install notes\n\nTo install Aurora on a server, run `aurora setup --headless` and answer the licence prompt.\n";
const QUESTION = "How do I install Aurora?";

describe("document tags and a chat's document filter", () => {
  let server;
  let browser;
  let page;
  let projectId;

  before(async () => {
    [server, browser] = await startServerAndBrowser({ env: scriptedEnv("chat-script.json") });
    const { createProject } = await gql(server, 'mutation { createProject(input: { name: "Aurora" }) { ... on Project { id } } }');
    projectId = createProject.id;
    page = await openPage(browser, server, { path: `/projects/${projectId}` });
    await page.getByRole("heading", { name: "Aurora", level: 2 }).waitFor();
  });

  after(async () => {
    await page?.context().close();
    await browser?.close();
    await server?.stop();
  });

  const row = (name) => page.getByTestId("document-row").filter({ hasText: name });

  test("files uploaded with tags carry them, and an editor changes a document's tags", async () => {
    const tags = page.getByLabel("Tags for the files you upload");
    const upload = async (name, buffer) => {
      await page.getByLabel("Choose files to upload").setInputFiles([{ name, mimeType: "text/markdown", buffer }]);
      await page.locator('[data-testid="upload-item"][data-phase="done"]', { hasText: name }).waitFor({ timeout: 30_000 });
    };
    await tags.fill("notes, 2026");
    await upload("aurora-install-notes.md", Buffer.from(NOTES));
    await tags.fill("handbook");
    await upload("aurora-handbook.md", await readFile(fixture("aurora-handbook.md")));

    await row("aurora-handbook.md").waitFor();
    assert.equal(await row("aurora-install-notes.md").getByTestId("document-tags").textContent(), "2026notes");
    assert.equal(await row("aurora-handbook.md").getByTestId("document-tags").textContent(), "handbook");

    await page.getByRole("button", { name: "Edit the tags of aurora-handbook.md" }).click();
    const dialog = page.getByRole("dialog", { name: "Edit tags" });
    assert.equal(await dialog.getByLabel("Tags").inputValue(), "handbook");
    await dialog.getByLabel("Tags").fill("handbook, manual");
    assert.deepEqual(await accessibilityViolations(page, { scope: "dialog[open]" }), [], "the tags dialog");
    await dialog.getByRole("button", { name: "Save tags" }).click();
    await dialog.waitFor({ state: "detached" });
    await page.waitForFunction(() =>
      [...document.querySelectorAll('[data-testid="document-row"]')].some((r) => r.textContent.includes("aurora-handbook.md") && r.textContent.includes("manual")),
    );
    await screenshot(page, "documents-with-tags");
    assert.deepEqual(await accessibilityViolations(page), [], "knowledge base with tagged documents");
  });

  test("a chat filtered to one tag answers from that document alone, and its trace says so", async () => {
    // Unfiltered, the question finds both documents: the filter is what narrows the answer.
    const { search } = await gql(
      server,
      "query ($p: ID!, $q: String!) { search(projectId: $p, query: $q, topK: 10, threshold: 0) { ... on SearchResults { kept { documentName } } } }",
      { p: projectId, q: QUESTION },
    );
    assert.deepEqual(new Set(search.kept.map((hit) => hit.documentName)), new Set(["aurora-handbook.md", "aurora-install-notes.md"]));

    await page.getByRole("button", { name: "New chat" }).first().click();
    const drawer = page.getByRole("dialog", { name: "Set up this chat" });
    await drawer.waitFor();
    await drawer.getByRole("group", { name: "Answer mode" }).getByRole("radio", { name: "Extractive" }).check();
    const filter = drawer.getByTestId("document-filter");
    const notes = filter.getByRole("switch", { name: "notes" });
    await notes.waitFor();
    assert.match(await filter.getByRole("group", { name: "Tags" }).textContent(), /manual1 document/);
    await notes.check();
    assert.deepEqual(await accessibilityViolations(page, { scope: "dialog[open]" }), [], "chat settings with a document filter");
    await drawer.getByRole("button", { name: "Save settings" }).click();
    await drawer.waitFor({ state: "detached" });

    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill(QUESTION);
    await box.press("Enter");
    const answer = page.locator('[data-testid="assistant-message"][data-status="COMPLETE"]');
    await answer.waitFor({ timeout: 30_000 });
    const sources = await answer.getByTestId("source").evaluateAll((items) => items.map((s) => s.querySelector('[data-testid="source-link"]')?.textContent));
    assert.ok(sources.length >= 1, "the answer has sources");
    assert.deepEqual(new Set(sources), new Set(["aurora-install-notes.md"]));

    await answer.getByRole("button", { name: "Why this answer" }).click();
    const panel = page.getByRole("dialog", { name: "Why this answer" });
    await panel.waitFor();
    assert.equal(await panel.getByTestId("trace-document-filter").textContent(), "only those tagged notes");
    await screenshot(page, "trace-document-filter");
    assert.deepEqual(await accessibilityViolations(page), [], "trace of a filtered search");
  });
});
