// The app shell against a real ragchat: health from the server, responsive layout, SPA routing.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { VIEWPORTS, openPage, screenshot, startServerAndBrowser } from "./harness.mjs";
import { gql, scriptedEnv } from "./helpers.mjs";

describe("app shell on a migrated server", () => {
  let server;
  let browser;
  let health;
  let sessionPath;

  before(async () => {
    [server, browser] = await startServerAndBrowser({ env: scriptedEnv("chat-script.json", { tokenDelayMs: 0 }) });
    health = await (await fetch(`${server.url}/healthz`)).json();
    const { createProject } = await gql(server, 'mutation { createProject(input: { name: "Demo" }) { ... on Project { id } } }');
    const { createChatSession } = await gql(
      server,
      "mutation ($p: ID!) { createChatSession(projectId: $p) { ... on ChatSession { id } } }",
      { p: createProject.id },
    );
    sessionPath = `/sessions/${createChatSession.id}`;
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("shows the server's health from the real /graphql", async () => {
    const page = await openPage(browser, server);
    const status = page.getByTestId("server-status");
    await page.locator('[data-testid="server-status"][data-state="ok"]').waitFor();
    assert.match(await status.textContent(), new RegExp(`v${health.version.replaceAll(".", "\\.")}`));
    assert.equal(await page.getByTestId("sqlite-version").textContent(), health.sqlite_version);
    assert.equal(await page.getByTestId("sqlite-vec-version").textContent(), health.sqlite_vec_version);
    assert.equal(await page.getByTestId("migration-state").textContent(), `${health.head_revision} (latest)`);
    assert.equal(await page.title(), "ragchat");
    // Wide window: the sidebar is a column, so no drawer buttons, and the status card fits on screen.
    assert.equal(await page.getByRole("button", { name: "Open sidebar" }).isVisible(), false);
    assert.equal(await page.getByRole("button", { name: "Close sidebar" }).isVisible(), false);
    const playground = await page.getByRole("link", { name: "GraphQL playground" }).boundingBox();
    assert.ok(playground.y + playground.height <= VIEWPORTS.desktop.height, "status card fits the window");
    await screenshot(page, "app-shell");
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  test("composer: Enter sends, Shift+Enter adds a line", async () => {
    const page = await openPage(browser, server, { path: sessionPath });
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("first line");
    await box.press("Shift+Enter");
    await box.pressSequentially("second line");
    assert.equal(await box.inputValue(), "first line\nsecond line");
    await box.press("Enter");
    assert.equal(await box.inputValue(), "");
    assert.equal(await page.getByTestId("user-message").textContent(), "first line\nsecond line");
    await page.locator('[data-testid="assistant-message"][data-status="COMPLETE"]').waitFor();
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  test("on a phone the sidebar is a drawer", async () => {
    const page = await openPage(browser, server, { viewport: VIEWPORTS.mobile });
    const sidebarRight = () => page.evaluate(() => document.querySelector("#sidebar").getBoundingClientRect().right);
    await page.getByRole("heading", { name: "Your knowledge bases" }).waitFor();
    assert.ok((await sidebarRight()) <= 0, "the drawer starts closed");
    await screenshot(page, "app-shell-mobile");

    await page.getByRole("button", { name: "Open sidebar" }).click();
    await page.locator('[data-testid="server-status"][data-state="ok"]').waitFor();
    await page.waitForFunction(() => document.querySelector("#sidebar").getBoundingClientRect().x === 0);
    await screenshot(page, "app-shell-mobile-drawer");

    await page.keyboard.press("Escape");
    await page.waitForFunction(() => document.querySelector("#sidebar").getBoundingClientRect().right <= 0);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  test("deep links load the app; /graphql and /healthz stay the API", async () => {
    const page = await openPage(browser, server, { path: "/projects/1/chats/2" });
    await page.getByTestId("server-status").waitFor();
    const api = await fetch(`${server.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: "{ health { ok } }" }),
    });
    assert.deepEqual(await api.json(), { data: { health: { ok: true } } });
    assert.equal((await fetch(`${server.url}/healthz`)).headers.get("content-type"), "application/json");
    assert.equal((await fetch(`${server.url}/assets/missing.js`)).status, 404);
    await page.context().close();
  });

  test("the page reaches the graphql-transport-ws endpoint the subscriptions use", async () => {
    const page = await openPage(browser, server);
    const handshake = await page.evaluate(
      (path) =>
        new Promise((resolve) => {
          const socket = new WebSocket(new URL(path, location.href.replace(/^http/, "ws")), "graphql-transport-ws");
          socket.onopen = () => socket.send(JSON.stringify({ type: "connection_init" }));
          socket.onmessage = (event) => {
            resolve({ protocol: socket.protocol, message: JSON.parse(event.data) });
            socket.close();
          };
          socket.onerror = () => resolve({ error: true });
        }),
      "/graphql",
    );
    assert.deepEqual(handshake, { protocol: "graphql-transport-ws", message: { type: "connection_ack" } });
    await page.context().close();
  });
});

describe("app shell on an unmigrated database", () => {
  let server;
  let browser;

  before(async () => {
    [server, browser] = await startServerAndBrowser({ migrate: false });
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("says the database needs migrating and how", async () => {
    const page = await openPage(browser, server);
    const status = page.getByTestId("server-status");
    await page.locator('[data-testid="server-status"][data-state="migrate"]').waitFor();
    assert.match(await status.textContent(), /Database needs migrating/);
    assert.match(await page.getByTestId("migration-state").textContent(), /^empty → \w+/);
    assert.match(await status.textContent(), /ragchat migrate/);
    await page.context().close();
  });
});
