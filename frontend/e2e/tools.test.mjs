// Tools in the browser (issue 19 item 8): an HTTP tool served on loopback by this test (a team's
// ticket system: previews by GET, tickets created by POST, counted), registered and tested on the
// tools page; a chat allowed its group, where the scripted model calls it: the preview shows,
// Approve runs it (the endpoint sees exactly one POST) and the outcome joins the chat, also after a
// reload; a second call, rejected, never runs. The script and the tool are those of tests/graphql/tools/test_chat_scripted.py.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import { once } from "node:events";
import { after, before, describe, test } from "node:test";
import { openPage, screenshot, startServerAndBrowser } from "./harness.mjs";
import { accessibilityViolations, gql, scriptedEnv } from "./helpers.mjs";

const SECRET = "s3cret-crm-token";

/** The ticket system: every request recorded; POST /tickets creates one. */
async function startEndpoint() {
  const requests = [];
  let created = 0;
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      requests.push({ method: req.method, path: req.url, auth: req.headers.authorization ?? null, body });
      const answer = (status, value) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(value));
      };
      if (req.method === "GET" && req.url.startsWith("/tickets/preview")) answer(200, { would_create: "a ticket", queue: "support" });
      else if (req.method === "POST" && req.url === "/tickets") answer(201, { ticket: ++created });
      else answer(404, { error: "no such route" });
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    base: `http://127.0.0.1:${server.address().port}`,
    requests,
    posts: () => requests.filter((r) => r.method === "POST"),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

describe("tools: register and test one, then a previewed call approved in the chat", () => {
  let endpoint;
  let server;
  let browser;
  let page;

  before(async () => {
    endpoint = await startEndpoint();
    const env = {
      ...scriptedEnv("tools-script.json", { tokenDelayMs: 5 }),
      RAGCHAT_TOOLS__ALLOW_PRIVATE: "true",
      RAGCHAT_TOOLS__SECRETS__CRM_TOKEN: SECRET,
      RAGCHAT_TOOLS__SECRET_ORIGINS__CRM_TOKEN: JSON.stringify([endpoint.base]),
    };
    [server, browser] = await startServerAndBrowser({ env });
    page = await openPage(browser, server, { path: "/" });
    page.setDefaultTimeout(20_000); // the machine is shared: a preview or an approval may wait for a core
  });

  after(async () => {
    await page?.context().close();
    await browser?.close();
    await server?.stop();
    await endpoint?.close();
  });

  test("the tools page registers an HTTP tool (the server's verdict at its field) and tests it", async () => {
    await page.getByRole("link", { name: "Tools" }).click();
    await page.waitForURL(/\/tools$/);
    await page.locator('[data-testid="tool-row"][data-tool="search_knowledge_base"]').waitFor();
    const builtins = await page.getByTestId("tool-row").evaluateAll((rows) => rows.map((r) => r.dataset.tool));
    assert.ok(builtins.includes("search_knowledge_base"), `built-in tools listed: ${builtins}`);
    assert.deepEqual(await accessibilityViolations(page), [], "the tools page meets WCAG 2.1 AA in light and dark");

    await page.getByRole("button", { name: "New HTTP tool" }).click();
    const form = page.getByRole("dialog", { name: "New HTTP tool" });
    await form.getByLabel("Name", { exact: true }).fill("create_ticket");
    await form.getByLabel("Group").fill("ops");
    await form.getByLabel("Description").fill("Open a support ticket");
    await form.getByLabel("Example requests").fill("open a ticket about the outage");
    const schema = { type: "object", properties: { title: { type: "string", minLength: 1 } }, required: ["title"], additionalProperties: false };
    await form.getByLabel("Input schema").fill(JSON.stringify(schema, null, 2));
    await form.getByLabel("Method", { exact: true }).selectOption("POST");
    await form.getByLabel("URL template", { exact: true }).fill(`${endpoint.base}/tickets`);
    await form.getByRole("button", { name: "Add header" }).click();
    await form.getByLabel("Header 1 name").fill("Authorization");
    await form.getByLabel("Header 1 secret").fill("crm");
    await form.getByRole("switch", { name: "Changes the world" }).check();
    await form.getByRole("switch", { name: "Dry run" }).check();
    await form.getByLabel("Dry-run URL template").fill(`${endpoint.base}/tickets/preview?title={title}`);

    // A secret the server does not have: refused, and said next to the headers (in the words used for
    // one bound to other origins, so the refusal tells no secret's name).
    await form.getByRole("button", { name: "Create tool" }).click();
    const refusal = form.getByTestId("tool-headers").getByRole("alert");
    await refusal.waitFor();
    assert.match(await refusal.textContent(), /Authorization: no secret 'crm' may be sent to http:\/\/127\.0\.0\.1:\d+/);
    await form.getByLabel("Header 1 secret").fill("crm_token");
    await form.getByRole("button", { name: "Create tool" }).click();
    await form.waitFor({ state: "detached" });

    const row = page.locator('[data-testid="tool-row"][data-tool="create_ticket"]');
    await row.waitFor();
    assert.match(await row.textContent(), /ops.*HTTP.*side effects.*POST http:\/\/127\.0\.0\.1:\d+\/tickets/);

    // Test: a side-effecting tool runs its dry run only; nothing is created.
    await row.getByRole("button", { name: "Test create_ticket" }).click();
    const tester = page.getByRole("dialog", { name: "Test create_ticket" });
    await tester.getByLabel("Arguments").fill('{"title": "Printer on fire"}');
    await tester.getByRole("button", { name: "Run" }).click();
    const output = tester.getByTestId("tool-test-output");
    await output.waitFor();
    assert.equal(await output.getAttribute("data-ok"), "true");
    assert.match(await output.textContent(), /preview only/);
    assert.match(await output.textContent(), /would_create/);
    await screenshot(page, "tools-test");
    await tester.getByRole("button", { name: "Close" }).first().click();
    await tester.waitFor({ state: "detached" });
    assert.equal(endpoint.posts().length, 0);
    assert.ok(endpoint.requests.some((r) => r.path === "/tickets/preview?title=Printer+on+fire" || r.path.startsWith("/tickets/preview")));
  });

  test("the scripted model calls the tool: the preview shows, Approve runs it once, the outcome stays after a reload", async () => {
    const made = await gql(server, 'mutation { createProject(input: {name: "Office"}) { ... on Project { id } } }');
    const projectId = made.createProject.id;
    await gql(server, "mutation($p: ID!) { addDocument(projectId: $p, name: \"printers.md\", text: \"# Printers\\n\\nThe office printer is on the second floor.\") { __typename } }", { p: projectId });
    await page.goto(`${server.url}/projects/${projectId}`);
    await page.getByRole("button", { name: "New chat" }).first().click();
    await page.waitForURL(/\/sessions\/\d+/);

    // The chat's settings: allow the "ops" tools, and see which the message would be offered.
    const drawer = page.getByRole("dialog", { name: "Set up this chat" });
    const tools = drawer.getByRole("group", { name: "Tools" });
    assert.equal(await tools.getByRole("switch", { name: "ops" }).isChecked(), false);
    await tools.getByRole("switch", { name: "ops" }).check();
    await drawer.getByRole("button", { name: "Save settings" }).click();
    await drawer.waitFor({ state: "detached" });
    assert.equal(await page.getByTestId("summary-tools").textContent(), "tools: ops");

    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("Open a ticket: the printer is on fire");
    await box.press("Enter");
    const answer = page.getByTestId("assistant-message").first();
    await answer.and(page.locator('[data-status="COMPLETE"]')).waitFor({ timeout: 30_000 });
    const call = answer.getByTestId("tool-call");
    assert.equal(await call.getAttribute("data-status"), "PREVIEW");
    assert.equal(await call.getAttribute("data-tool"), "create_ticket");
    assert.equal(JSON.parse(await call.getByTestId("tool-call-arguments").textContent()).title, "Printer on fire");
    assert.match(await call.getByTestId("tool-call-preview").textContent(), /would_create/);
    assert.equal(await answer.getByTestId("message-content").textContent(), "I have asked to open a ticket about the printer; approve it to go ahead.");
    assert.equal(endpoint.posts().length, 0, "nothing ran before approval");
    await screenshot(page, "tool-preview");

    await call.getByRole("button", { name: "Approve" }).click();
    await answer.locator('[data-testid="tool-call"][data-status="APPROVED"]').waitFor();
    assert.match(await call.getByTestId("tool-call-result").textContent(), /"ticket": ?1/);
    assert.equal(endpoint.posts().length, 1, "approval ran it exactly once");
    assert.equal(endpoint.posts()[0].auth, SECRET);
    assert.equal(JSON.parse(endpoint.posts()[0].body).title, "Printer on fire");
    assert.equal(await call.getByRole("button", { name: "Approve" }).count(), 0);
    // The outcome the server appended to the conversation.
    const outcome = page.getByTestId("assistant-message").nth(1);
    await outcome.waitFor();
    assert.match(await outcome.textContent(), /Approved: create_ticket/);
    assert.equal(await outcome.getByRole("button", { name: "Regenerate" }).count(), 0, "an outcome is not an answer to regenerate");
    await screenshot(page, "tool-approved");

    await page.reload();
    const stored = page.getByTestId("assistant-message").first().getByTestId("tool-call");
    await stored.waitFor();
    assert.equal(await stored.getAttribute("data-status"), "APPROVED");
    assert.match(await stored.getByTestId("tool-call-result").textContent(), /"ticket": ?1/);
    assert.equal(await stored.getByRole("button", { name: "Approve" }).count(), 0);
    assert.equal(await page.getByTestId("assistant-message").count(), 2);
    assert.equal(endpoint.posts().length, 1);
    assert.deepEqual(page.problems, []);
  });

  test("a rejected preview never runs, and stays rejected", async () => {
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("And the coffee machine leaks");
    await box.press("Enter");
    const answer = page.getByTestId("assistant-message").nth(2);
    await answer.and(page.locator('[data-status="COMPLETE"]')).waitFor({ timeout: 30_000 });
    const call = answer.getByTestId("tool-call");
    assert.equal(await call.getAttribute("data-status"), "PREVIEW");
    await call.getByRole("button", { name: "Reject" }).click();
    await answer.locator('[data-testid="tool-call"][data-status="REJECTED"]').waitFor();
    assert.match(await call.textContent(), /You rejected it: it never ran/);
    assert.equal(await page.getByTestId("assistant-message").count(), 3, "a rejection appends nothing");
    assert.equal(endpoint.posts().length, 1);
    await page.reload();
    await page.getByTestId("assistant-message").nth(2).locator('[data-testid="tool-call"][data-status="REJECTED"]').waitFor();
    assert.equal(endpoint.posts().length, 1);
  });
});
