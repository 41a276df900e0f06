// Uploads as background jobs (issue 17): the upload request returns at once and each file's row
// follows the server's job (queued -> embedding n/m -> ready, or failed with the reason); a failed
// file is retried, a queued one cancelled and retried, and a reload mid-way picks the progress up
// again from the server. A real server with the tests' slow fake embedder (200 ms per chunk), so
// the job is still running while the page is looked at.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { openPage, screenshot, startServerAndBrowser } from "./harness.mjs";
import { gql, scriptedEnv } from "./helpers.mjs";

const SLOW_EMBEDDER = {
  RAGCHAT_EMBEDDER__PROVIDER: "fake",
  RAGCHAT_EMBEDDER__MODEL: "hash-words-200ms",
  RAGCHAT_INGEST__CHUNK_TOKENS: "64",
  RAGCHAT_INGEST__OVERLAP_TOKENS: "8",
};

const row = (page, name, phase) =>
  page.locator(`[data-testid="upload-item"]${phase ? `[data-phase="${phase}"]` : ""}`, { hasText: name });

function note(name) {
  const body = Array.from({ length: 60 }, (_, i) => `${name} paragraph ${i} is about penguins and krill.`).join("\n\n");
  return { name, mimeType: "text/markdown", buffer: Buffer.from(`# ${name}\n\n${body}\n`) };
}

describe("uploads follow their ingestion job", () => {
  let server;
  let browser;
  let page;
  let projectId;

  before(async () => {
    [server, browser] = await startServerAndBrowser({ env: { ...scriptedEnv("chat-script.json"), ...SLOW_EMBEDDER } });
    const created = await gql(server, 'mutation { createProject(input: {name: "Jobs"}) { ... on Project { id } } }');
    projectId = created.createProject.id;
    page = await openPage(browser, server, { path: `/projects/${projectId}` });
  });

  after(async () => {
    await page?.context().close();
    await browser?.close();
    await server?.stop();
  });

  test("files go queued -> embedding n/m -> ready; a failed one is retried, a queued one cancelled and retried; a reload keeps the progress", async () => {
    await page.getByRole("heading", { name: "Jobs", level: 2 }).waitFor();
    await page.getByLabel("Choose files to upload").setInputFiles([
      { name: "broken.html", mimeType: "text/html", buffer: Buffer.from("<script>go()</script>") }, // no visible text: fails, retryable
      { name: "empty.txt", mimeType: "text/plain", buffer: Buffer.from("  \n\n  ") }, // nothing to read: skipped, no retry
      note("alpha.md"),
      note("beta.md"),
      note("gamma.md"),
      note("delta.md"),
    ]);

    // An empty file is skipped with its reason, and offers no Retry that could never help.
    const empty = page.locator('[data-testid="upload-item"][data-outcome="SKIPPED"]', { hasText: "empty.txt" });
    await empty.waitFor({ timeout: 30_000 });
    assert.match(await empty.textContent(), /empty/i);
    assert.equal(await page.getByRole("button", { name: "Retry empty.txt" }).count(), 0);
    // The page with no text fails with the reason; retrying it runs it again (and it fails again).
    const broken = row(page, "broken.html", "failed");
    await broken.waitFor({ timeout: 30_000 });
    assert.match(await broken.textContent(), /no visible text/i);
    await page.getByRole("button", { name: "Retry broken.html" }).click();
    await broken.waitFor({ timeout: 30_000 });

    // Live progress: a file being embedded shows how far it is.
    const embedding = page.locator('[data-testid="upload-item"][data-phase="processing"]', { hasText: /Embedding \d+\/\d+ chunks/ });
    await embedding.first().waitFor({ timeout: 30_000 });
    await screenshot(page, "uploads-progress");

    // delta.md waits behind the others: cancel it, see it cancelled, queue it again.
    await page.getByRole("button", { name: "Cancel delta.md" }).click();
    await row(page, "delta.md", "cancelled").waitFor();
    await page.getByRole("button", { name: "Retry delta.md" }).click();
    await row(page, "delta.md", "processing").waitFor();

    // Reload while files are unfinished: the rows come back from the server's stored state and go on.
    await page.reload();
    await page.getByRole("heading", { name: "Jobs", level: 2 }).waitFor();
    await row(page, "delta.md").waitFor({ timeout: 15_000 });
    for (const name of ["delta.md"]) await row(page, name, "done").waitFor({ timeout: 60_000 });
    assert.match(await row(page, "delta.md", "done").getByTestId("upload-status").textContent(), /^Added · \d+ chunks$/);

    const jobs = await gql(
      server,
      `query($id: ID!) { project(id: $id) { ... on Project { documentCount ingestionJobs { ... on IngestionJobConnection {
        edges { node { items { name state attempts error } } } } } } } }`,
      { id: projectId },
    );
    const items = Object.fromEntries(jobs.project.ingestionJobs.edges.flatMap((edge) => edge.node.items.map((item) => [item.name, item])));
    assert.deepEqual(
      Object.fromEntries(Object.entries(items).map(([name, item]) => [name, item.state])),
      { "broken.html": "FAILED", "empty.txt": "SKIPPED", "alpha.md": "READY", "beta.md": "READY", "gamma.md": "READY", "delta.md": "READY" },
    );
    assert.equal(items["broken.html"].attempts, 2, "the retry ran it again");
    assert.ok(items["broken.html"].error);
    await page.locator('[data-testid="document-row"]', { hasText: "delta.md" }).waitFor();
    assert.deepEqual(page.problems, []);
  });
});
