// A server with people (needs the people API: sign-in, members, keys, shared chats). Two people in
// one knowledge base: A's private chat is invisible to B in the app and through GraphQL, a shared
// chat is readable and not writable, and B's key scoped to one knowledge base cannot search
// another. And a fresh server's first run: the first administrator from the first-run screen, then
// sign out and sign in again.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { openPage, startServerAndBrowser } from "./harness.mjs";
import { accessibilityViolations, scriptedEnv } from "./helpers.mjs";

const PASSWORD = "a long enough password";

/** A GraphQL call as one person: `cookie` is their session (null: none); returns data and the new cookie. */
async function call(server, query, variables = {}, { cookie = null, bearer = null } = {}) {
  const headers = { "content-type": "application/json" };
  if (cookie) headers.cookie = cookie;
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  const response = await fetch(`${server.url}/graphql`, { method: "POST", headers, body: JSON.stringify({ query, variables }) });
  const body = await response.json();
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  const set = response.headers.getSetCookie().find((c) => c.startsWith("ragchat_session="));
  return { data: body.data, cookie: set ? set.split(";")[0] : cookie };
}

const SIGNED_IN = "... on Person { id email } ... on Error { message }";

async function invite(server, admin, email, name) {
  const { data } = await call(server, `mutation ($e: String!, $n: String!) { invitePerson(email: $e, name: $n) { __typename ... on Invitation { link } ... on Error { message } } }`, { e: email, n: name }, { cookie: admin });
  assert.equal(data.invitePerson.__typename, "Invitation", JSON.stringify(data));
  const token = data.invitePerson.link.split("/").pop();
  const accepted = await call(server, `mutation ($t: String!, $p: String!) { acceptInvitation(token: $t, password: $p) { __typename ${SIGNED_IN} } }`, { t: token, p: PASSWORD });
  assert.equal(accepted.data.acceptInvitation.__typename, "Person", JSON.stringify(accepted.data));
  return accepted.cookie;
}

async function signInThroughTheApp(browser, server, email, path = "/") {
  const page = await openPage(browser, server, { path });
  await page.waitForURL(/\/sign-in/);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByTestId("signed-in-person").waitFor();
  return page;
}

describe("two people in one knowledge base", () => {
  let server;
  let browser;
  const ids = {};
  let alice;
  let bob;

  before(async () => {
    [server, browser] = await startServerAndBrowser({ env: scriptedEnv("chat-script.json", { tokenDelayMs: 0 }) });
    // The first administrator from loopback (the test runs on the server's machine), who invites
    // the two people.
    const first = await call(server, `mutation ($p: String!) { setUpFirstAdministrator(email: "root@example.com", name: "Root", password: $p) { __typename ${SIGNED_IN} } }`, { p: PASSWORD });
    assert.equal(first.data.setUpFirstAdministrator.__typename, "Person", JSON.stringify(first.data));
    alice = await invite(server, first.cookie, "alice@example.com", "Alice");
    bob = await invite(server, first.cookie, "bob@example.com", "Bob");

    // Alice makes two knowledge bases (she owns them) and lets Bob view both.
    for (const name of ["Team", "Other"]) {
      const { data } = await call(server, `mutation ($n: String!) { createProject(input: { name: $n }) { ... on Project { id } ... on Error { message } } }`, { n: name }, { cookie: alice });
      assert.ok(data.createProject.id, JSON.stringify(data));
      ids[name] = data.createProject.id;
      const added = await call(server, `mutation ($k: ID!) { addMember(knowledgeBaseId: $k, email: "bob@example.com", role: VIEWER) { __typename ... on Error { message } } }`, { k: ids[name] }, { cookie: alice });
      assert.equal(added.data.addMember.__typename, "Member", JSON.stringify(added.data));
    }
    // A shared chat and a private one, each with an answer (the shared one first: it gets the
    // script's first, complete answer).
    for (const [title, shared] of [["Shared notes", true], ["Private plans", false]]) {
      const { data } = await call(server, `mutation ($p: ID!, $t: String!) { createChatSession(projectId: $p, input: { title: $t }) { ... on ChatSession { id } ... on Error { message } } }`, { p: ids.Team, t: title }, { cookie: alice });
      ids[title] = data.createChatSession.id;
      const sent = await call(server, `mutation ($s: ID!) { sendMessage(sessionId: $s, content: "How do I install Aurora?") { __typename ... on Error { message } } }`, { s: ids[title] }, { cookie: alice });
      assert.equal(sent.data.sendMessage.__typename, "ChatMessage", JSON.stringify(sent.data));
      if (shared) {
        const done = await call(server, `mutation ($s: ID!) { shareChatSession(id: $s, shared: true) { __typename ... on ChatSession { shared } ... on Error { message } } }`, { s: ids[title] }, { cookie: alice });
        assert.equal(done.data.shareChatSession.shared, true, JSON.stringify(done.data));
      }
    }
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("B sees A's shared chat, read-only, and never A's private one", async () => {
    const page = await signInThroughTheApp(browser, server, "bob@example.com", `/projects/${ids.Team}`);
    await page.waitForURL(new RegExp(`/projects/${ids.Team}$`));
    const chats = page.getByRole("list", { name: "Chats" });
    await chats.getByRole("link", { name: /Shared notes/ }).waitFor();
    assert.match(await chats.getByRole("link", { name: /Shared notes/ }).textContent(), /Shared/);
    assert.equal(await page.getByText("Private plans").count(), 0);
    await page.getByTestId("member-row").first().waitFor();
    assert.deepEqual(await accessibilityViolations(page), [], "a knowledge base with its members, as a viewer");

    await chats.getByRole("link", { name: /Shared notes/ }).click();
    await page.locator('[data-testid="assistant-message"][data-status="COMPLETE"]').first().waitFor();
    await page.getByTestId("read-only-chat").waitFor();
    assert.equal(await page.getByRole("textbox", { name: "Message" }).count(), 0);
    assert.equal(await page.getByRole("button", { name: "Delete chat" }).count(), 0);
    assert.deepEqual(await accessibilityViolations(page), [], "a shared chat, read-only");

    // A deep link to the private chat: the same "not found" as a chat that does not exist.
    await page.goto(`${server.url}/sessions/${ids["Private plans"]}`);
    await page.getByText("Chat not found").waitFor();
    assert.equal(await page.getByText("How do I install Aurora?").count(), 0);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  test("through GraphQL, B cannot read A's private chat nor write in the shared one", async () => {
    const missing = await call(server, `query ($s: ID!) { chatSession(id: $s) { __typename } }`, { s: "999999" }, { cookie: bob });
    const hidden = await call(server, `query ($s: ID!) { chatSession(id: $s) { __typename ... on Error { message } } }`, { s: ids["Private plans"] }, { cookie: bob });
    assert.equal(hidden.data.chatSession.__typename, "NotFoundError");
    assert.equal(missing.data.chatSession.__typename, "NotFoundError");
    const list = await call(server, `query ($p: ID!) { chatSessions(projectId: $p) { ... on ChatSessionConnection { edges { node { title shared } } } } }`, { p: ids.Team }, { cookie: bob });
    assert.deepEqual(list.data.chatSessions.edges.map((e) => e.node), [{ title: "Shared notes", shared: true }]);
    const write = await call(server, `mutation ($s: ID!) { sendMessage(sessionId: $s, content: "Mine now?") { __typename } }`, { s: ids["Shared notes"] }, { cookie: bob });
    assert.equal(write.data.sendMessage.__typename, "ForbiddenError");
    const rename = await call(server, `mutation ($s: ID!) { updateChatSession(id: $s, input: { title: "B was here" }) { __typename } }`, { s: ids["Shared notes"] }, { cookie: bob });
    assert.notEqual(rename.data.updateChatSession.__typename, "ChatSession");
  });

  test("B's key made in the app for one knowledge base cannot search another", async () => {
    const page = await signInThroughTheApp(browser, server, "bob@example.com", "/settings/keys");
    await page.waitForURL(/\/settings\/keys$/);
    await page.getByRole("button", { name: "New key" }).first().click();
    const dialog = page.getByRole("dialog", { name: "New API key" });
    await dialog.getByLabel("Name").fill("team script");
    await dialog.getByRole("checkbox", { name: "Team" }).check();
    await dialog.getByRole("switch", { name: "Read-only" }).check();
    assert.deepEqual(await accessibilityViolations(page, { scope: "dialog[open]" }), [], "the new key dialog");
    await dialog.getByRole("button", { name: "Create key" }).click();
    const secret = await page.getByRole("dialog", { name: "Your new API key" }).getByRole("textbox", { name: "API key" }).inputValue();
    assert.match(secret, /^rck_/);
    await page.getByRole("button", { name: "Done" }).click();
    const row = page.getByTestId("api-key-row").filter({ hasText: "team script" });
    assert.match(await row.textContent(), /Team · read-only/);
    assert.deepEqual(await accessibilityViolations(page), [], "the keys page");

    const search = `query ($p: ID!) { search(projectId: $p, query: "install") { __typename } }`;
    const allowed = await call(server, search, { p: ids.Team }, { bearer: secret });
    assert.equal(allowed.data.search.__typename, "SearchResults");
    const denied = await call(server, search, { p: ids.Other }, { bearer: secret });
    assert.notEqual(denied.data.search.__typename, "SearchResults");
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });
});

describe("a fresh server's first run", () => {
  let server;
  let browser;

  before(async () => {
    [server, browser] = await startServerAndBrowser();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("first administrator, sign out, a wrong password, sign in", async () => {
    // Open until someone is created: the app as before, with the way to the first run.
    const page = await openPage(browser, server, { path: "/" });
    await page.getByRole("link", { name: "Set up sign-in" }).click();
    await page.waitForURL(/\/first-run$/);
    const form = page.getByRole("form", { name: "First administrator" });
    await form.getByLabel("Email").fill("ada@example.com");
    await form.getByLabel("Name").fill("Ada");
    await form.getByLabel("Password", { exact: true }).fill(PASSWORD);
    await form.getByLabel("Password again").fill(`${PASSWORD}!`);
    await form.getByRole("button", { name: "Create administrator" }).click();
    await form.getByText("The two passwords differ.").waitFor();
    assert.deepEqual(await accessibilityViolations(page), [], "the first-run form with its error");
    await form.getByLabel("Password again").fill(PASSWORD);
    await form.getByRole("button", { name: "Create administrator" }).click();

    const person = page.getByTestId("signed-in-person");
    await person.waitFor();
    assert.match(await person.textContent(), /ada@example\.com/);
    const cookies = await page.context().cookies();
    const session = cookies.find((c) => c.name === "ragchat_session");
    assert.ok(session?.httpOnly, "the session cookie is HttpOnly");
    assert.equal(session.sameSite, "Lax");

    await person.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(/\/sign-in$/);
    // Every page now leads to the sign-in page, and back afterwards.
    await page.goto(`${server.url}/tools`);
    await page.waitForURL(/\/sign-in\?next=%2Ftools$/);
    await page.getByLabel("Email").fill("ada@example.com");
    await page.getByLabel("Password").fill("not the password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").filter({ hasText: "Wrong email or password." }).waitFor();
    assert.deepEqual(await accessibilityViolations(page), [], "the sign-in page with its error");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(/\/tools$/);
    await page.getByTestId("signed-in-person").waitFor();
    // The sign-in page once signed in leads home.
    await page.goto(`${server.url}/sign-in`);
    await page.waitForURL(`${server.url}/`);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });
});
