// A server that requires an API key: the app asks for it on the first 401, keeps it in localStorage
// and sends it on HTTP (queries, uploads) and in the websocket's connection_init (streamed answers).

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { launchBrowser, openPage, startServer } from "./harness.mjs";
import { gql, scriptedEnv } from "./helpers.mjs";

const KEY = "e2e-secret-key";
const auth = { authorization: `Bearer ${KEY}` };

describe("a server with API keys", () => {
  let server;
  let browser;
  let sessionId;

  before(async () => {
    [server, browser] = await Promise.all([
      startServer({ env: { ...scriptedEnv("chat-script.json", { tokenDelayMs: 0 }), RAGCHAT_API__API_KEYS: JSON.stringify([KEY]) } }),
      launchBrowser(),
    ]);
    const { createProject } = await gql(server, 'mutation { createProject(input: { name: "Locked" }) { ... on Project { id } } }', {}, auth);
    const { createChatSession } = await gql(
      server,
      "mutation ($p: ID!) { createChatSession(projectId: $p) { ... on ChatSession { id } } }",
      { p: createProject.id },
      auth,
    );
    sessionId = createChatSession.id;
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("asks for the key on 401, refuses a wrong one, then works over HTTP and the websocket", async () => {
    // Only "/" and /assets/ are served without a key (a deep link such as /sessions/1 gets a 401
    // from the server before the app can load), so start at the root and navigate in the app.
    const page = await openPage(browser, server, { path: "/" });
    const dialog = page.getByRole("dialog", { name: "API key" });
    await dialog.waitFor();
    assert.match(await dialog.textContent(), /asked for an API key/);

    await dialog.getByLabel("Key").fill("wrong-key");
    await dialog.getByLabel("Key").press("Enter");
    await dialog.getByText("The server refused the saved key").waitFor();

    await dialog.getByLabel("Key").fill(KEY);
    await dialog.getByRole("button", { name: "Save key" }).click();
    await dialog.waitFor({ state: "detached" });
    assert.equal(await page.evaluate(() => localStorage.getItem("ragchat.apiKey")), KEY);
    await page.locator('[data-testid="server-status"][data-state="ok"]').waitFor();

    // Uploads carry the key too.
    await page.getByRole("link", { name: "Locked" }).first().click();
    await page.getByLabel("Choose files to upload").setInputFiles([{ name: "note.txt", mimeType: "text/plain", buffer: Buffer.from("A short note about keys.") }]);
    await page.locator('[data-testid="upload-item"][data-phase="done"]').waitFor({ timeout: 30_000 });

    // And the websocket's connection_init: the answer streams.
    await page.locator(`a[href="/sessions/${sessionId}"]`).first().click();
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("Is the websocket authorised?");
    await box.press("Enter");
    await page.locator('[data-testid="assistant-message"][data-status="COMPLETE"]').waitFor({ timeout: 20_000 });

    // A new page load keeps the key: no dialog.
    await page.goto(`${server.url}/`);
    await page.locator('[data-testid="server-status"][data-state="ok"]').waitFor();
    assert.equal(await page.getByRole("dialog", { name: "API key" }).count(), 0);
    // The 401s before the key was given are expected; nothing else went wrong.
    assert.deepEqual(page.problems.filter((p) => !/401|Unauthorized/.test(p)), []);
    await page.context().close();
  });
});
