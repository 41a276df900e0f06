// Long lists page through Relay connections: a chat opens on its newest 50 messages and loads older
// ones on demand; the sidebar lists 30 chats and loads more. A real ragchat with a scripted model;
// the history is made through the API (sendMessage), as a long-running chat would have made it.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { openPage, screenshot, startServerAndBrowser } from "./harness.mjs";
import { gql, scriptedEnv } from "./helpers.mjs";

const TURNS = 40; // 80 messages: more than the 50 a chat opens with
const CHATS = 35; // more than the sidebar's page of 30

describe("long histories and lists load on demand", () => {
  let server;
  let browser;
  let sessionPath;
  let projectId;

  before(async () => {
    [server, browser] = await startServerAndBrowser({ env: scriptedEnv("history-script.json", { tokenDelayMs: 0 }) });
    const { createProject } = await gql(server, 'mutation { createProject(input: { name: "Long" }) { ... on Project { id } } }');
    projectId = createProject.id;
    const create = "mutation ($p: ID!, $t: String!) { createChatSession(projectId: $p, input: { title: $t, enableRag: false }) { ... on ChatSession { id } } }";
    let sessionId;
    for (let n = 0; n < CHATS; n += 1) {
      const { createChatSession } = await gql(server, create, { p: projectId, t: `chat ${n}` });
      sessionId ??= createChatSession.id;
    }
    const send = "mutation ($s: ID!, $c: String!) { sendMessage(sessionId: $s, content: $c) { __typename ... on ChatMessage { status } } }";
    for (let n = 0; n < TURNS; n += 1) {
      const { sendMessage } = await gql(server, send, { s: sessionId, c: `question ${n}` });
      assert.equal(sendMessage.status, "COMPLETE");
    }
    sessionPath = `/sessions/${sessionId}`;
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("a long chat opens on its newest messages and loads older ones on demand", async () => {
    const page = await openPage(browser, server, { path: sessionPath });
    const questions = page.getByTestId("user-message");
    await page.locator('[data-testid="assistant-message"]').nth(24).waitFor();
    assert.equal(await questions.count(), 25, "the newest 50 messages: 25 questions and their answers");
    assert.equal(await questions.first().textContent(), "question 15");
    assert.equal(await questions.last().textContent(), `question ${TURNS - 1}`);

    const earlier = page.getByRole("button", { name: "Show earlier messages" });
    await earlier.click();
    await questions.nth(TURNS - 1).waitFor();
    assert.equal(await questions.count(), TURNS);
    const texts = await questions.allTextContents();
    assert.deepEqual(texts, Array.from({ length: TURNS }, (_, n) => `question ${n}`), "in order, no gaps, no repeats");
    assert.equal(await earlier.count(), 0, "the start of the chat is reached: nothing earlier to load");
    assert.equal(await page.getByTestId("assistant-message").count(), TURNS);
    await screenshot(page, "history-loaded");

    // A new question still lands at the end of the loaded history.
    await page.getByRole("textbox", { name: "Message" }).fill("one more");
    await page.getByRole("textbox", { name: "Message" }).press("Enter");
    await page.locator('[data-testid="assistant-message"][data-status="COMPLETE"]').nth(TURNS).waitFor();
    assert.equal(await questions.last().textContent(), "one more");
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  test("the sidebar lists 30 chats and loads the rest on demand", async () => {
    const page = await openPage(browser, server, { path: `/projects/${projectId}` });
    const sidebarChats = page.getByRole("list", { name: "Chats" }).getByRole("link");
    await sidebarChats.nth(29).waitFor();
    assert.equal(await sidebarChats.count(), 30);
    const more = page.getByRole("button", { name: `More chats (30 of ${CHATS})` }).first();
    await more.click();
    await sidebarChats.nth(CHATS - 1).waitFor();
    assert.equal(await sidebarChats.count(), CHATS);
    const titles = await sidebarChats.allTextContents();
    assert.equal(new Set(titles).size, CHATS, "no chat listed twice");
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });
});
