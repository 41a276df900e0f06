// Tokens that arrive within the server's coalescing window go out as one ChatToken event: a browser
// sees fewer websocket frames and the very same text as when every token is its own event. Two real
// servers, one with the window at its default and one with it off, the same scripted model.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { openPage, startServer, launchBrowser } from "./harness.mjs";
import { gql, scriptedEnv } from "./helpers.mjs";

const CREATE_PROJECT = 'mutation { createProject(input: { name: "Streams" }) { ... on Project { id } } }';
const CREATE_CHAT =
  "mutation ($p: ID!) { createChatSession(projectId: $p, input: { title: \"stream\", enableRag: false }) { ... on ChatSession { id } } }";

/** Ask one question in the web app; returns the token events the page received and the text shown. */
async function streamOnce(browser, server) {
  const { createProject } = await gql(server, CREATE_PROJECT);
  const { createChatSession } = await gql(server, CREATE_CHAT, { p: createProject.id });
  const page = await openPage(browser, server, { path: `/sessions/${createChatSession.id}` });
  const tokens = [];
  page.on("websocket", (socket) =>
    socket.on("framereceived", ({ payload }) => {
      const message = JSON.parse(String(payload));
      const event = message.type === "next" ? message.payload?.data?.chat : null;
      if (event?.__typename === "ChatToken") tokens.push(event.text);
    }),
  );
  const box = page.getByRole("textbox", { name: "Message" });
  await box.fill("Tell me how streams arrive.");
  await box.press("Enter");
  const answer = page.getByTestId("assistant-message").and(page.locator('[data-status="COMPLETE"]'));
  await answer.waitFor({ timeout: 30_000 });
  const shown = await answer.getByTestId("message-content").textContent();
  const { chatSession } = await gql(
    server,
    "query ($id: ID!) { chatSession(id: $id) { ... on ChatSession { messages(last: 1) { ... on ChatMessageConnection { edges { node { content } } } } } } }",
    { id: createChatSession.id },
  );
  await page.context().close();
  return { tokens, shown, stored: chatSession.messages.edges[0].node.content };
}

describe("coalesced streams", () => {
  let browser;
  const servers = [];

  before(async () => {
    const env = scriptedEnv("stream-script.json", { tokenDelayMs: 5 });
    servers.push(await startServer({ env }));
    servers.push(await startServer({ env: { ...env, RAGCHAT_CHAT__STREAM_COALESCE_MS: "0" } }));
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await Promise.all(servers.map((server) => server.stop()));
  });

  test("the text streamed with coalescing is the text streamed without it, in fewer events", async () => {
    const batched = await streamOnce(browser, servers[0]);
    const single = await streamOnce(browser, servers[1]);
    assert.equal(batched.tokens.join(""), batched.stored, "the batched events add up to the stored answer");
    assert.equal(single.tokens.join(""), single.stored, "one event per token adds up to the stored answer");
    assert.equal(batched.stored, single.stored);
    assert.equal(batched.shown, single.shown, "the page shows the same answer");
    assert.ok(
      batched.tokens.length < single.tokens.length,
      `coalesced: ${batched.tokens.length} events, one by one: ${single.tokens.length}`,
    );
  });
});
