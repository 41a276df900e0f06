// The chunk viewer: a document's page lists its chunks with headings, places, offsets and token
// counts, a page at a time, against a real ragchat with the real embedder.

import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { openPage, screenshot, startServerAndBrowser } from "./harness.mjs";
import { accessibilityViolations, gql } from "./helpers.mjs";

// Two sections, long enough for more than one page of chunks (25 a page).
const section = (title, word) =>
  `## ${title}\n\n` +
  Array.from({ length: 250 }, (_, i) => `The ${word} log entry ${i} notes the tide, the wind and the lamp at dusk.`).join("\n\n");
const HANDBOOK = `# Lighthouse handbook\n\n${section("Morning rounds", "morning")}\n\n${section("Night watch", "night")}\n`;

describe("chunk viewer", () => {
  let server;
  let browser;
  let projectId;
  let documentId;

  before(async () => {
    [server, browser] = await startServerAndBrowser();
    const { createProject } = await gql(server, 'mutation { createProject(input: { name: "Lighthouse" }) { ... on Project { id } } }');
    projectId = createProject.id;
    const { addDocument } = await gql(
      server,
      "mutation ($p: ID!, $text: String!) { addDocument(projectId: $p, name: \"handbook.md\", text: $text) { ... on UploadReport { files { document { id chunkCount } } } } }",
      { p: projectId, text: HANDBOOK },
    );
    documentId = addDocument.files[0].document.id;
    assert.ok(addDocument.files[0].document.chunkCount > 25, "the handbook needs more than one page of chunks");
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("opens from the document list and shows each chunk's heading, place, offsets and tokens", async () => {
    const page = await openPage(browser, server, { path: `/projects/${projectId}` });
    await page.getByRole("link", { name: "handbook.md: show its chunks" }).click();
    await page.waitForURL(new RegExp(`/documents/${documentId}$`));
    await page.getByRole("heading", { name: "handbook.md", level: 2 }).waitFor();

    const chunks = page.getByTestId("chunk");
    await chunks.first().waitFor();
    assert.equal(await chunks.count(), 25);
    const first = await chunks.first().textContent();
    assert.match(first, /#1/);
    assert.match(first, /Lighthouse handbook/);
    assert.match(await chunks.nth(1).textContent(), /Lighthouse handbook › Morning rounds/);
    assert.match(first, /lines 1–\d+/);
    assert.match(first, /chars 0–\d+/);
    assert.match(first, /\d+ tokens/);

    const total = Number((await page.getByTestId("chunk-total").textContent()).match(/\d+/)[0]);
    await page.getByTestId("load-more").click();
    await chunks.nth(25).waitFor();
    while (await page.getByTestId("load-more").count()) {
      await page.getByTestId("load-more").click();
      await page.waitForFunction((n) => document.querySelectorAll('[data-testid="chunk"]').length > n, await chunks.count());
    }
    assert.equal(await chunks.count(), total);
    assert.match(await chunks.last().textContent(), /Night watch/);
    await screenshot(page, "chunk-viewer");
    assert.deepEqual(page.problems, []);
  });

  test("an owner downloads the knowledge base and imports it again under another name", async () => {
    const page = await openPage(browser, server, { path: `/projects/${projectId}` });
    const saving = page.waitForEvent("download");
    await page.getByRole("button", { name: "Download knowledge base" }).click();
    const download = await saving;
    assert.equal(download.suggestedFilename(), "Lighthouse.ragchat.tar.gz");
    const archive = join(await mkdtemp(join(tmpdir(), "ragchat-e2e-")), "lighthouse.ragchat.tar.gz");
    await download.saveAs(archive);

    await page.goto(`${server.url}/`);
    await page.getByRole("button", { name: "Import" }).click();
    const form = page.getByRole("form", { name: "Import a knowledge base" });
    await form.getByLabel("Archive").setInputFiles(archive);
    await form.getByLabel("Name").fill("Lighthouse copy");
    await page.getByRole("button", { name: "Import", exact: true }).last().click();
    await page.waitForURL(/\/projects\/\d+$/);
    assert.notEqual(page.url(), `${server.url}/projects/${projectId}`);
    await page.getByRole("link", { name: "handbook.md: show its chunks" }).waitFor();
    assert.deepEqual(page.problems, []);
  });

  test("opened at a citation's lines, it loads the pages up to them, highlights them and scrolls to them", async () => {
    const { document } = await gql(server, "query ($id: ID!) { document(id: $id) { ... on Document { chunks(first: 40) { ... on ChunkConnection { edges { node { id location { lineStart lineEnd } } } } } } } }", { id: documentId });
    // A chunk on the second page (25 a page): the viewer must fetch it before it can show it.
    const target = document.chunks.edges[30].node;
    const page = await openPage(browser, server, { path: `/documents/${documentId}?chunk=${target.id}&lines=${target.location.lineStart}-${target.location.lineEnd}` });
    const cited = page.locator('[data-testid="chunk"][data-cited]');
    await cited.first().waitFor();
    assert.equal(await cited.count(), 1);
    assert.equal(await cited.getAttribute("id"), `chunk-${target.id}`);
    assert.match(await cited.textContent(), new RegExp(`lines ${target.location.lineStart}–${target.location.lineEnd}`));
    const top = await cited.evaluate((el) => el.getBoundingClientRect().top);
    assert.ok(top >= 0 && top < 800, `the cited chunk is scrolled into view (top ${top})`);
    assert.deepEqual(await accessibilityViolations(page), [], "the document viewer meets WCAG 2.1 AA in light and dark");
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  test("a document that does not exist says so", async () => {
    const page = await openPage(browser, server, { path: "/documents/999999" });
    await page.getByText("Document not found").waitFor();
    assert.deepEqual(page.problems, []);
  });
});
