// GraphiQL at /graphql, bundled with the frontend: it must render and run queries with no internet.
// Every request to a host other than the server's is aborted, and recorded so the test can say which.

import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { DIST_DIR, launchBrowser, screenshot, startServer } from "./harness.mjs";
import { gql, scriptedEnv } from "./helpers.mjs";

// A CDN's address, as Strawberry's own GraphiQL page has them (not "cdn" inside base64 data).
const CDN = /(?:https?:)?\/\/[\w.-]*(?:unpkg|jsdelivr|esm\.sh|cdn)/i;
const API_KEY = "e2e-graphiql-key";

/** /graphql in a fresh context where only the server itself can be reached. */
async function openGraphiQL(browser, server) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const offsite = [];
  await context.route("**/*", (route) => {
    const url = new URL(route.request().url());
    if (url.hostname === "127.0.0.1") return route.continue();
    offsite.push(url.href);
    return route.abort("internetdisconnected");
  });
  const page = await context.newPage();
  page.offsite = offsite;
  page.problems = [];
  page.on("pageerror", (error) => page.problems.push(`page error: ${error.message}`));
  page.on("console", (msg) => msg.type() === "error" && page.problems.push(`console: ${msg.text()}`));
  page.setDefaultTimeout(20_000);
  await page.goto(`${server.url}/graphql`);
  return page;
}

/** The response pane's text (monaco draws it in lines of non-breaking spaces). */
async function responseText(page) {
  return (await page.locator(".graphiql-response .view-lines").textContent()).replaceAll("\u00a0", " ");
}

async function run(page) {
  await page.getByRole("button", { name: /^Execute query/ }).click();
  await page.waitForFunction(() => /"(data|errors)"/.test(document.querySelector(".graphiql-response .view-lines")?.textContent ?? ""));
  return responseText(page);
}

describe("GraphiQL at /graphql, offline", () => {
  let server;
  let keyed;
  let browser;
  let sessionId;

  before(async () => {
    [server, keyed, browser] = await Promise.all([
      startServer({ env: scriptedEnv("chat-script.json", { tokenDelayMs: 0 }) }),
      startServer({ env: { RAGCHAT_API__API_KEYS: JSON.stringify([API_KEY]) } }),
      launchBrowser(),
    ]);
    const { createProject } = await gql(server, 'mutation { createProject(input: { name: "Demo" }) { ... on Project { id } } }');
    const { createChatSession } = await gql(
      server,
      "mutation ($p: ID!) { createChatSession(projectId: $p) { ... on ChatSession { id } } }",
      { p: createProject.id },
    );
    sessionId = createChatSession.id;
  });

  after(async () => {
    await browser?.close();
    await Promise.all([server?.stop(), keyed?.stop()]);
  });

  test("the built GraphiQL names no CDN", async () => {
    const files = [join(DIST_DIR, "graphiql.html"), ...(await readdir(join(DIST_DIR, "assets"))).map((f) => join(DIST_DIR, "assets", f))];
    for (const file of files.filter((f) => /\.(html|js|css)$/.test(f))) {
      assert.doesNotMatch(await readFile(file, "utf8"), CDN, file);
    }
  });

  test("renders the example operation with the explorer and runs it", async () => {
    const page = await openGraphiQL(browser, server);
    const editor = page.locator(".graphiql-query-editor .view-lines");
    await page.waitForFunction(() => document.querySelector(".graphiql-query-editor .view-lines")?.textContent.includes("KnowledgeBases"));
    assert.match((await editor.textContent()).replaceAll("\u00a0", " "), /query KnowledgeBases \{/);
    await page.getByRole("button", { name: "Show GraphiQL Explorer" }).click();
    await page.locator(".graphiql-explorer-root").waitFor();

    const result = await run(page);
    assert.match(result, /"data": \{/);
    assert.match(result, /"ok": true/);
    assert.doesNotMatch(result, /"errors"/);
    await screenshot(page, "graphiql-offline");
    assert.deepEqual(page.offsite, [], "requests that left the machine");
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  test("runs a subscription over graphql-ws on /graphql", async () => {
    const page = await openGraphiQL(browser, server);
    await page.waitForFunction(() => document.querySelector(".graphiql-query-editor .view-lines")?.textContent.includes("KnowledgeBases"));
    await page.locator(".graphiql-query-editor .graphiql-editor").click();
    await page.keyboard.press("ControlOrMeta+A");
    await page.keyboard.insertText(`subscription Ask { chat(sessionId: "${sessionId}", content: "hello") { __typename } }`);
    // GraphiQL picks up the new operation's name a moment later (the tab is named after it).
    await page.waitForFunction(() => document.querySelector(".graphiql-tabs")?.textContent.includes("Ask"));
    await page.getByRole("button", { name: /^Execute query/ }).click();
    // The pane shows each event as it comes; the stream ends with ChatDone.
    await page.waitForFunction(() => document.querySelector(".graphiql-response .view-lines")?.textContent.includes("ChatDone"));
    assert.doesNotMatch(await responseText(page), /"errors"/);
    assert.deepEqual(page.offsite, []);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  test("dark mode: the app's toggle is kept across reloads and carried to GraphiQL; with no pick, both follow the system", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: "light", reducedMotion: "reduce" });
    const page = await context.newPage();
    await page.goto(server.url);
    const toggle = page.getByRole("button", { name: "Dark mode" });
    assert.equal(await toggle.getAttribute("aria-pressed"), "false");
    assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), "light");
    await page.emulateMedia({ colorScheme: "dark" });
    await page.waitForFunction(() => document.documentElement.dataset.theme === "dark");
    await page.emulateMedia({ colorScheme: "light" });
    await page.waitForFunction(() => document.documentElement.dataset.theme === "light");

    await toggle.click();
    assert.equal(await toggle.getAttribute("aria-pressed"), "true");
    await page.reload();
    await page.getByRole("button", { name: "Dark mode", pressed: true }).waitFor();
    assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), "dark", "the pick outlives a reload, against a light system");
    await page.goto(`${server.url}/graphql`);
    await page.waitForFunction(() => document.body.classList.contains("graphiql-dark"));
    await context.close();

    const system = await browser.newContext({ colorScheme: "dark" });
    const graphiql = await system.newPage();
    await graphiql.goto(`${server.url}/graphql`);
    // No pick: GraphiQL sets no theme class and its stylesheet follows prefers-color-scheme.
    await graphiql.locator(".graphiql-container").waitFor();
    const background = await graphiql.evaluate(() => getComputedStyle(document.querySelector(".graphiql-container")).backgroundColor);
    const [r, g, b] = background.match(/\d+/g).map(Number);
    assert.ok(r + g + b < 3 * 80, `a dark GraphiQL on a dark system (${background})`);
    // The system changes while the page is open: the editors change with the page (monaco marks a
    // dark theme's editor "vs-dark"), not only the stylesheet around them.
    const editor = graphiql.locator(".graphiql-query-editor .monaco-editor");
    await graphiql.waitForFunction(() => document.querySelector(".graphiql-query-editor .monaco-editor")?.classList.contains("vs-dark"));
    await graphiql.emulateMedia({ colorScheme: "light" });
    await graphiql.waitForFunction(() => !document.querySelector(".graphiql-query-editor .monaco-editor").classList.contains("vs-dark"));
    await graphiql.emulateMedia({ colorScheme: "dark" });
    await graphiql.waitForFunction(() => document.querySelector(".graphiql-query-editor .monaco-editor").classList.contains("vs-dark"));
    assert.ok(await editor.isVisible());
    await system.close();
  });

  test("with API keys on, the key typed in the Headers tab is sent", async () => {
    const page = await openGraphiQL(browser, keyed);
    await page.waitForFunction(() => document.querySelector(".graphiql-query-editor .view-lines")?.textContent.includes("KnowledgeBases"));
    assert.match(await run(page), /API key is required/);

    // The Headers tab is open from the start (the example operation's comment points at it).
    await page.locator('.graphiql-editor-tool .graphiql-editor:not(.hidden)').click();
    await page.keyboard.insertText(JSON.stringify({ Authorization: `Bearer ${API_KEY}` }));
    const result = await run(page);
    assert.match(result, /"ok": true/);
    assert.deepEqual(page.offsite, []);
    await page.context().close();
  });
});
