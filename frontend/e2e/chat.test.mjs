// The product scenario against a real ragchat (real database, local embedder) with a scripted chat
// model: knowledge base -> upload -> chat with custom RAG settings -> streamed, cited answer ->
// trace -> retrieval preview -> failed answer -> retry. Screenshots go to e2e/.artifacts/.

import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { VIEWPORTS, openPage, screenshot, startServerAndBrowser } from "./harness.mjs";
import { accessibilityViolations, dropFiles, fixture, gql, scriptedEnv } from "./helpers.mjs";

// Small chunks, so two short documents give retrieval a dozen candidates to choose from.
const SMALL_CHUNKS = { RAGCHAT_INGEST__CHUNK_TOKENS: "64", RAGCHAT_INGEST__OVERLAP_TOKENS: "8" };

const assistant = (page) => page.getByTestId("assistant-message");

describe("from a knowledge base to a cited, explained answer", () => {
  let server;
  let browser;
  let page;
  let sessionPath;

  before(async () => {
    [server, browser] = await startServerAndBrowser({ env: { ...scriptedEnv("chat-script.json"), ...SMALL_CHUNKS } });
    page = await openPage(browser, server, { path: "/" });
  });

  after(async () => {
    await page?.context().close();
    await browser?.close();
    await server?.stop();
  });

  test("create a knowledge base and upload documents (drag and drop, then the file picker)", async () => {
    await page.getByText("No knowledge bases yet").waitFor();
    // Every page these scenarios visit meets WCAG 2.1 AA (axe-core), in the light theme and the dark.
    assert.deepEqual(await accessibilityViolations(page), [], "home");
    await page.getByRole("button", { name: "New knowledge base" }).first().click();
    const dialog = page.getByRole("dialog", { name: "New knowledge base" });
    await dialog.getByLabel("Name").fill("Aurora docs");
    await dialog.getByLabel("Description").fill("Handbook and FAQ of the Aurora notes app.");
    await dialog.getByLabel("Name").press("Enter");
    await page.waitForURL(/\/projects\/\d+$/);
    await page.getByRole("heading", { name: "Aurora docs", level: 2 }).waitFor();

    await dropFiles(page, '[data-testid="dropzone"]', [{ path: fixture("aurora-handbook.md"), name: "aurora-handbook.md", type: "text/markdown" }]);
    const handbook = page.locator('[data-testid="upload-item"][data-phase="done"]', { hasText: "aurora-handbook.md" });
    await handbook.waitFor({ timeout: 30_000 });
    assert.match(await handbook.getByTestId("upload-status").textContent(), /^Added · \d+ chunks?$/);

    // Several at once through the picker: one good file and one the server refuses.
    await page.getByLabel("Choose files to upload").setInputFiles([
      { name: "aurora-faq.txt", mimeType: "text/plain", buffer: await readFile(fixture("aurora-faq.txt")) },
      { name: "diagram.bmp", mimeType: "image/bmp", buffer: Buffer.from("BM not really an image") },
    ]);
    const faq = page.locator('[data-testid="upload-item"][data-phase="done"]', { hasText: "aurora-faq.txt" });
    const bmp = page.locator('[data-testid="upload-item"][data-phase="failed"]', { hasText: "diagram.bmp" });
    await faq.waitFor({ timeout: 30_000 });
    await bmp.waitFor({ timeout: 30_000 });
    assert.match(await bmp.textContent(), /not supported/);

    await page.locator('[data-testid="document-row"]').nth(1).waitFor();
    assert.equal(await page.getByTestId("document-row").count(), 2);
    assert.equal(await page.getByTestId("stat-documents").textContent(), "2");
    assert.ok(Number(await page.getByTestId("stat-chunks").textContent()) >= 4, "the documents were chunked");
    await screenshot(page, "knowledge-base");
    assert.deepEqual(await accessibilityViolations(page), [], "knowledge base");
  });

  test("a new chat opens its settings; invalid values are flagged next to the input", async () => {
    await page.getByRole("button", { name: "New chat" }).first().click();
    await page.waitForURL(/\/sessions\/\d+$/);
    sessionPath = new URL(page.url()).pathname;
    const drawer = page.getByRole("dialog", { name: "Set up this chat" });
    await drawer.waitFor();
    assert.equal(await drawer.getByLabel("Top K").inputValue(), "5");
    // How answers are written: a radio group with the server's default (sessionDefaults: AUTO) chosen.
    const answerModes = drawer.getByRole("group", { name: "Answer mode" });
    assert.equal(await answerModes.getByRole("radio").count(), 3);
    assert.ok(await answerModes.getByRole("radio", { name: "Auto" }).isChecked());

    await drawer.getByLabel("Top K").fill("99");
    const topK = drawer.getByLabel("Top K");
    assert.equal(await topK.getAttribute("aria-invalid"), "true");
    const errorId = (await topK.getAttribute("aria-describedby")).split(" ")[0];
    assert.match(await page.locator(`[id="${errorId}"]`).textContent(), /whole number from 1 to 50/);

    await topK.fill("3");
    await drawer.getByLabel("Threshold").fill("0.1");
    assert.equal(await topK.getAttribute("aria-invalid"), null);
    await drawer.getByRole("button", { name: "Save settings" }).click();
    await drawer.waitFor({ state: "detached" });
    assert.match(await page.getByTestId("settings-summary").textContent(), /top 3.*threshold 0\.10/);
    // The empty chat suggests three questions drawn from the knowledge base's headings.
    const suggestions = page.getByRole("list", { name: "Suggested questions" }).getByTestId("suggested-question");
    await suggestions.nth(2).waitFor();
    const questions = await suggestions.allTextContents();
    assert.equal(questions.length, 3, `three suggestions (${questions})`);
    for (const question of questions) assert.match(question, /^What do the documents say about “.+”\?$/);
  });

  test("the answer streams token by token, with linked citations", async () => {
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("How do I install Aurora?");
    await box.press("Enter");

    // Part of the answer is on screen while it is still streaming.
    const partial = await page.waitForFunction(() => {
      const streaming = document.querySelector('[data-testid="assistant-message"][data-status="STREAMING"] [data-testid="message-content"]');
      const text = streaming?.textContent ?? "";
      return text.length > 10 ? text : false;
    });
    const partialText = await partial.jsonValue();
    await assistant(page).and(page.locator('[data-status="COMPLETE"]')).waitFor({ timeout: 20_000 });
    const finalText = await assistant(page).getByTestId("message-content").textContent();
    assert.ok(partialText.length < finalText.length, `partial "${partialText}" shorter than the answer`);
    assert.ok(finalText.startsWith(partialText.replace(/\s+$/, "").slice(0, 10)), "the partial text is the start of the answer");
    assert.match(finalText, /run aurora setup in a terminal/);

    // [1] is a button that brings source 1 into view and highlights it.
    const marker = assistant(page).getByRole("button", { name: /^Source 1:/ });
    assert.match(await marker.getAttribute("aria-label"), /^Source 1: aurora-/);
    await marker.click();
    const source = assistant(page).locator('[data-testid="source"][data-number="1"]');
    assert.equal(await source.getAttribute("data-active"), "true");
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("data-number")), "1");
    assert.match(await source.textContent(), /score \d\.\d\d/);
    assert.match(await source.textContent(), /lines? \d+/);
    await page.mouse.move(0, 0);
    await screenshot(page, "chat-citations");
  });

  test("'Why this answer' shows every candidate's fate, the settings, timings and tokens", async () => {
    await assistant(page).getByRole("button", { name: "Why this answer" }).click();
    const panel = page.getByRole("dialog", { name: "Why this answer" });
    await panel.waitFor();
    const fates = await panel.getByTestId("trace-candidate").evaluateAll((rows) => rows.map((r) => r.dataset.fate));
    assert.ok(fates.length >= 4, `several candidates (${fates})`);
    // Top K 3 keeps three; adjacent chunks of one document kept together become one source (MERGED).
    assert.equal(fates.filter((f) => f === "KEPT" || f === "MERGED").length, 3, "top K 3 keeps three");
    assert.ok(fates.some((f) => f !== "KEPT"), "some were dropped");
    const settings = await panel.getByTestId("trace-settings").textContent();
    assert.match(settings, /Top K3/);
    assert.match(settings, /Threshold0\.10/);
    assert.match(settings, /scripted\/scripted/);
    assert.ok((await panel.getByTestId("trace-timings").locator("li").count()) >= 3);
    assert.match(await panel.getByTestId("trace-tokens").textContent(), /Context window\d+/);
    await screenshot(page, "trace-panel");
    assert.deepEqual(await accessibilityViolations(page), [], "chat with an answer and its trace open");
    await page.keyboard.press("Escape");
    await panel.waitFor({ state: "detached" });
  });

  test("changing the threshold changes the retrieval preview before saving", async () => {
    await page.getByRole("button", { name: "Chat settings" }).click();
    const drawer = page.getByRole("dialog", { name: "Chat settings" });
    const preview = drawer.getByTestId("retrieval-preview");
    // Pre-filled with the chat's last question.
    assert.equal(await preview.getByLabel("Preview retrieval").inputValue(), "How do I install Aurora?");
    const summary = preview.getByTestId("preview-summary");
    // Up to three: adjacent kept chunks of one document are one source.
    await preview.locator('[data-testid="preview-summary"]:not([data-kept="0"])').waitFor();

    await drawer.getByLabel("Threshold").fill("0.95");
    await preview.locator('[data-testid="preview-summary"][data-kept="0"]').waitFor();
    assert.match(await summary.textContent(), /keep 0 of \d+ candidates at top 3, threshold 0\.95/);
    assert.ok((await preview.locator('[data-testid="preview-hit"][data-fate="BELOW_THRESHOLD"]').count()) > 0);

    await drawer.getByLabel("Threshold").fill("0.3");
    await preview.locator('[data-testid="preview-summary"]:not([data-kept="0"])').waitFor();
    const kept = Number(await summary.getAttribute("data-kept"));
    assert.ok(kept >= 1 && kept <= 3, `a middle threshold keeps some (${kept})`);
    await screenshot(page, "settings-preview");
    assert.deepEqual(await accessibilityViolations(page), [], "chat settings with the retrieval preview");
    // Not saved: Cancel leaves the chat's threshold as it was.
    await drawer.getByRole("button", { name: "Cancel" }).click();
    assert.match(await page.getByTestId("settings-summary").textContent(), /threshold 0\.10/);
  });

  test("a failed answer shows the error and its partial text; Retry streams a new one", async () => {
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("Where does Aurora keep its settings?");
    await box.press("Enter");
    const failed = assistant(page).nth(1);
    await failed.locator('[data-testid="message-error"]').waitFor({ timeout: 20_000 });
    assert.equal(await failed.getAttribute("data-status"), "FAILED");
    assert.match(await failed.getByTestId("message-content").textContent(), /in a TOML file in your home folder/);
    assert.match(await failed.getByTestId("message-error").textContent(), /The model failed/);

    await failed.getByRole("button", { name: "Retry" }).click();
    await failed.and(page.locator('[data-status="COMPLETE"]')).waitFor({ timeout: 20_000 });
    assert.match(await failed.getByTestId("message-content").textContent(), /config\.toml/);
    assert.equal(await failed.getByTestId("message-error").count(), 0);
  });

  test("the history reloads with citations, and the chat works on a phone", async () => {
    const phone = await openPage(browser, server, { path: sessionPath, viewport: VIEWPORTS.mobile });
    await phone.locator('[data-testid="assistant-message"][data-status="COMPLETE"]').nth(1).waitFor();
    assert.equal(await phone.getByTestId("user-message").count(), 2);
    assert.ok((await phone.locator('[data-testid="source"]').count()) >= 1, "stored citations come back");
    assert.equal(await phone.getByRole("button", { name: "Open sidebar" }).isVisible(), true);
    await screenshot(phone, "chat-mobile");
    await phone.getByRole("button", { name: "Open sidebar" }).click();
    await phone.getByRole("link", { name: "Where does Aurora keep its settings?" }).or(phone.getByRole("link", { name: /How do I install Aurora/ })).first().waitFor();
    assert.deepEqual(phone.problems, []);
    await phone.context().close();
    assert.deepEqual(page.problems, []);
  });

  test("with five sources the answer stays in view; a citation opens the document at its lines", async () => {
    // Three more short documents: with every chunk kept, one source per document, five in all.
    const sessionId = sessionPath.split("/").pop();
    const { chatSession } = await gql(server, "query ($id: ID!) { chatSession(id: $id) { ... on ChatSession { projectId } } }", { id: sessionId });
    for (const [name, text] of [
      ["notes.md", "# Notes\n\nAurora stores every note as a plain Markdown file in the data folder."],
      ["sync.md", "# Sync\n\nAurora syncs the data folder in the background while the app is open."],
      ["backups.md", "# Backups\n\nAurora writes a backup of the data folder every night."],
    ]) {
      await gql(server, "mutation ($p: ID!, $n: String!, $t: String!) { addDocument(projectId: $p, name: $n, text: $t) { __typename } }", {
        p: chatSession.projectId,
        n: name,
        t: text,
      });
    }
    await page.getByRole("button", { name: "Chat settings" }).click();
    const drawer = page.getByRole("dialog", { name: "Chat settings" });
    await drawer.getByLabel("Top K").fill("50");
    await drawer.getByLabel("Threshold").fill("0");
    await drawer.getByRole("button", { name: "Save settings" }).click();
    await drawer.waitFor({ state: "detached" });
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("Give me an overview of Aurora: install, licence, settings, notes and sync.");
    await box.press("Enter");
    const answer = assistant(page).nth(2);
    await answer.and(page.locator('[data-status="COMPLETE"]')).waitFor({ timeout: 20_000 });
    assert.equal(await answer.locator('[data-testid="source"]').count(), 5);
    // When streaming ends, the answer's text is inside the chat's visible area, sources or not.
    const inView = await answer.getByTestId("message-content").evaluate((text) => {
      // The chat's scrolling area: the nearest ancestor with more content than room.
      let el = text.parentElement;
      while (el && el.scrollHeight <= el.clientHeight + 1) el = el.parentElement;
      const view = (el ?? document.documentElement).getBoundingClientRect();
      const rect = text.getBoundingClientRect();
      return { top: rect.top - view.top, bottom: view.bottom - rect.bottom };
    });
    assert.ok(inView.top >= 0 && inView.bottom >= 0, `the answer's text is in view (${JSON.stringify(inView)})`);
    // The cited text is there on demand.
    const sources = answer.getByTestId("sources");
    assert.equal(await sources.locator("blockquote").count(), 0);
    await sources.getByRole("button", { name: "Show the cited text" }).click();
    assert.equal(await sources.locator("blockquote").count(), 5);

    // A citation's document name opens the chunk viewer at the cited lines, highlighted and in view.
    const place = await answer.locator('[data-testid="source"][data-number="3"]').textContent();
    const [, lineStart] = /lines? (\d+)/.exec(place);
    await answer.locator('[data-testid="source"][data-number="3"]').getByTestId("source-link").click();
    await page.waitForURL(/\/documents\/\d+\?chunk=/);
    const cited = page.locator('[data-testid="chunk"][data-cited]').first();
    await cited.waitFor();
    assert.match(await cited.textContent(), new RegExp(`lines? ${lineStart}\\b|lines \\d+–\\d+`));
    assert.ok(await cited.evaluate((el) => el.getBoundingClientRect().top >= 0 && el.getBoundingClientRect().top < window.innerHeight), "the cited chunk is in view");
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.cited), "true");
    await page.goBack();

    // And from the trace: each candidate opens its lines.
    await assistant(page).nth(2).getByRole("button", { name: "Why this answer" }).click();
    const panel = page.getByRole("dialog", { name: "Why this answer" });
    await panel.getByTestId("trace-candidate-link").first().click();
    await page.waitForURL(/\/documents\/\d+\?chunk=/);
    await page.locator('[data-testid="chunk"][data-cited]').first().waitFor();
    await page.goBack();
    await assistant(page).nth(2).waitFor();
  });

  test("with a threshold nothing passes, the answer says it has no relevant context", async () => {
    await page.getByRole("button", { name: "Chat settings" }).click();
    const drawer = page.getByRole("dialog", { name: "Chat settings" });
    await drawer.getByLabel("Threshold").fill("0.99");
    await drawer.getByRole("button", { name: "Save settings" }).click();
    await drawer.waitFor({ state: "detached" });
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("What is the meaning of life?");
    await box.press("Enter");
    const answer = assistant(page).nth(3);
    await answer.getByTestId("no-context").waitFor();
    await answer.and(page.locator('[data-status="COMPLETE"]')).waitFor({ timeout: 20_000 });
    assert.match(await answer.getByTestId("no-context").textContent(), /threshold \(0\.99\)/);
    assert.equal(await answer.locator('[data-testid="source"]').count(), 0);
    // The settings are one click away from the notice.
    await answer.getByRole("button", { name: "Adjust retrieval" }).click();
    await page.getByRole("dialog", { name: "Chat settings" }).waitFor();
    await page.keyboard.press("Escape");
  });

  test("rename and delete: chat, document, knowledge base (each confirmed)", async () => {
    await page.getByRole("button", { name: "Rename chat" }).click();
    const rename = page.getByRole("dialog", { name: "Rename chat" });
    await rename.getByLabel("Title").fill("Installing Aurora");
    await rename.getByLabel("Title").press("Enter");
    await rename.waitFor({ state: "detached" });
    await page.getByRole("heading", { level: 1, name: /Installing Aurora/ }).waitFor();
    await page.getByRole("link", { name: "Installing Aurora" }).waitFor();

    await page.getByRole("button", { name: "Delete chat" }).click();
    const confirmChat = page.getByRole("dialog", { name: "Delete chat?" });
    // A modal <dialog>: focus starts on Cancel, and Tab cycles through the dialog, never the page behind.
    const focused = () =>
      page.evaluate(() => {
        const el = document.activeElement;
        if (!el || el === document.body) return "(browser)"; // past the last element, before wrapping round
        return el.closest("dialog") ? (el.getAttribute("aria-label") ?? el.textContent) : `outside: ${el.outerHTML.slice(0, 80)}`;
      });
    assert.equal(await focused(), "Cancel");
    const visited = [];
    for (let i = 0; i < 5; i++) {
      await page.keyboard.press(i < 4 ? "Tab" : "Shift+Tab");
      visited.push(await focused());
    }
    assert.deepEqual(visited.filter((f) => f.startsWith("outside")), [], `Tab left the dialog: ${visited}`);
    assert.deepEqual([...new Set(visited)].filter((f) => f !== "(browser)").sort(), ["Cancel", "Close", "Delete chat"]);
    await confirmChat.getByRole("button", { name: "Cancel" }).press("Escape");
    await confirmChat.waitFor({ state: "detached" });
    await page.getByRole("button", { name: "Delete chat" }).click();
    await page.getByRole("dialog", { name: "Delete chat?" }).getByRole("button", { name: "Delete chat" }).click();
    await page.waitForURL(/\/projects\/\d+$/);
    await page.getByText("No chats yet").first().waitFor();

    await page.getByRole("button", { name: "Edit knowledge base" }).click();
    const editKb = page.getByRole("dialog", { name: "Edit knowledge base" });
    await editKb.getByLabel("Name").fill("Aurora manual");
    await editKb.getByLabel("Description").fill("How to install and run Aurora");
    await editKb.getByRole("button", { name: "Save" }).click();
    await page.getByRole("heading", { level: 2, name: "Aurora manual" }).waitFor();
    await page.getByText("How to install and run Aurora").first().waitFor();

    await page.getByRole("button", { name: "Delete aurora-faq.txt" }).click();
    await page.getByRole("dialog", { name: "Delete document?" }).getByRole("button", { name: "Delete document" }).click();
    // The handbook and the three added with the five-source answer remain.
    await page.locator('[data-testid="stat-documents"]', { hasText: /^4$/ }).waitFor();
    assert.equal(await page.getByTestId("document-row").count(), 4);

    await page.getByRole("button", { name: "Delete knowledge base" }).click();
    await page.getByRole("dialog", { name: "Delete knowledge base?" }).getByRole("button", { name: "Delete knowledge base" }).click();
    await page.waitForURL((url) => url.pathname === "/");
    await page.getByText("No knowledge bases yet").waitFor();
    assert.deepEqual(page.problems, []);
  });
});
