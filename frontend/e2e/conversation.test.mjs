// Conversational retrieval in the browser (issue 15), with a scripted chat model and the local
// embedder: the chat's Search settings (quality, rewrite) saved from the settings form, then a
// follow-up whose trace shows the earlier question it was searched with and each retrieval pass.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { openPage, screenshot, startServerAndBrowser } from "./harness.mjs";
import { dropFiles, fixture, scriptedEnv } from "./helpers.mjs";

const assistant = (page) => page.getByTestId("assistant-message");

describe("a follow-up is searched in its conversation, as hard as the chat's quality allows", () => {
  let server;
  let browser;
  let page;

  before(async () => {
    const env = { ...scriptedEnv("conversation-script.json", { tokenDelayMs: 5 }), RAGCHAT_INGEST__CHUNK_TOKENS: "64", RAGCHAT_INGEST__OVERLAP_TOKENS: "8" };
    [server, browser] = await startServerAndBrowser({ env });
    page = await openPage(browser, server, { path: "/" });
  });

  after(async () => {
    await page?.context().close();
    await browser?.close();
    await server?.stop();
  });

  test("the Search settings are saved with the chat", async () => {
    await page.getByRole("button", { name: "New knowledge base" }).first().click();
    const dialog = page.getByRole("dialog", { name: "New knowledge base" });
    await dialog.getByLabel("Name").fill("Aurora");
    await dialog.getByLabel("Name").press("Enter");
    await page.waitForURL(/\/projects\/\d+$/);
    await dropFiles(page, '[data-testid="dropzone"]', [{ path: fixture("aurora-handbook.md"), name: "aurora-handbook.md", type: "text/markdown" }]);
    await page.locator('[data-testid="upload-item"][data-phase="done"]').waitFor({ timeout: 30_000 });

    await page.getByRole("button", { name: "New chat" }).first().click();
    await page.waitForURL(/\/sessions\/\d+$/);
    const drawer = page.getByRole("dialog", { name: "Set up this chat" });
    const search = drawer.getByRole("group", { name: "Search" });
    assert.equal(await search.getByLabel("Quality").inputValue(), "BALANCED");
    assert.equal(await search.getByLabel("Rewrite follow-ups").inputValue(), "AUTO");
    await search.getByLabel("Quality").selectOption("THOROUGH");
    await search.getByLabel("Rewrite follow-ups").selectOption("OFF");
    await drawer.getByLabel("Threshold").fill("0.1");
    await drawer.getByRole("button", { name: "Save settings" }).click();
    await drawer.waitFor({ state: "detached" });

    // Reopened (a chat without messages yet still calls it "Set up this chat"): the saved values.
    await page.getByRole("button", { name: "Chat settings" }).click();
    const reopened = page.getByRole("dialog", { name: "Set up this chat" });
    const again = reopened.getByRole("group", { name: "Search" });
    assert.equal(await again.getByLabel("Quality").inputValue(), "THOROUGH");
    assert.equal(await again.getByLabel("Rewrite follow-ups").inputValue(), "OFF");
    await reopened.getByRole("button", { name: "Close" }).click();
    await reopened.waitFor({ state: "detached" });
  });

  test("the trace shows the follow-up searched with the earlier question, and every pass", async () => {
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("How do I install Aurora?");
    await box.press("Enter");
    await assistant(page).first().and(page.locator('[data-status="COMPLETE"]')).waitFor({ timeout: 30_000 });
    await box.fill("And what does it ask for after that?");
    await box.press("Enter");
    const second = assistant(page).nth(1);
    await second.and(page.locator('[data-status="COMPLETE"]')).waitFor({ timeout: 30_000 });

    await second.getByRole("button", { name: "Why this answer" }).click();
    const panel = page.getByRole("dialog", { name: "Why this answer" });
    await panel.waitFor();
    assert.equal(await panel.getByTestId("trace-searched").textContent(), "And what does it ask for after that?");
    assert.equal(await panel.getByTestId("trace-earlier").textContent(), "How do I install Aurora?");
    assert.equal(await panel.getByTestId("trace-rewrite").getAttribute("data-outcome"), "SKIPPED");
    assert.match(await panel.getByTestId("trace-search").textContent(), /Qualitythorough/);
    const decisions = await panel.getByTestId("trace-pass").evaluateAll((rows) => rows.map((r) => r.dataset.decision));
    assert.ok(decisions.length >= 1 && decisions.length <= 4, `passes ${decisions}`);
    assert.ok(decisions.slice(0, -1).every((d) => d === "WIDEN"), `every pass but the last widened (${decisions})`);
    assert.notEqual(decisions.at(-1), "WIDEN");
    await screenshot(page, "trace-search");
    await panel.getByRole("button", { name: "Close" }).click();
    await panel.waitFor({ state: "detached" });
    assert.deepEqual(page.problems, []);
  });

  test("expansion and the judge, switched on in the settings, show in the stream and the trace", async () => {
    await page.getByRole("button", { name: "Chat settings" }).click();
    const drawer = page.getByRole("dialog", { name: "Chat settings" });
    await drawer.getByTestId("expansion").selectOption("ON");
    await drawer.getByTestId("rerank").selectOption("JUDGE");
    await drawer.getByRole("button", { name: "Save settings" }).click();
    await drawer.waitFor({ state: "detached" });

    // Every line the pending answer shows while it searches, as the progress events render it.
    await page.evaluate(() => {
      window.searchLines = [];
      new MutationObserver(() => {
        for (const el of document.querySelectorAll('[data-testid="searching-again"], [data-testid="searching-done"]')) {
          const line = el.textContent;
          if (window.searchLines.at(-1) !== line) window.searchLines.push(line);
        }
      }).observe(document.body, { childList: true, subtree: true, characterData: true });
    });
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("Which command installs Aurora?");
    await box.press("Enter");
    const third = assistant(page).nth(2);
    await third.and(page.locator('[data-status="COMPLETE"]')).waitFor({ timeout: 30_000 });
    const lines = await page.evaluate(() => window.searchLines);
    assert.ok(lines.includes("Found the sources; reading them…"), `lines seen: ${JSON.stringify(lines)}`);

    await third.getByRole("button", { name: "Why this answer" }).click();
    const panel = page.getByRole("dialog", { name: "Why this answer" });
    const ranking = panel.getByTestId("trace-ranking");
    await ranking.waitFor();
    assert.match(await ranking.textContent(), /Aurora installer steps/);
    assert.match(await ranking.textContent(), /judge:scripted\/scripted: scored the first \d+/);
    const rerank = await panel.getByTestId("trace-candidate").evaluateAll((rows) => rows.map((r) => Array.from(r.querySelectorAll("td")).at(-2)?.textContent));
    assert.ok(rerank.includes("3.000"), `rerank scores ${rerank}`);
    assert.match(await panel.getByTestId("trace-fusion").textContent(), /rank \(RRF\)/);  // two phrasings: fused by rank
    await screenshot(page, "trace-ranking");
    assert.deepEqual(page.problems, []);
  });
});
