// Single sign-on end to end in the browser: a real OpenID Connect provider (oidc-provider-mock, the
// one the backend's tests use) on loopback, the app's sign-in page, the provider's own authorization
// page, ragchat's callback, and the app signed in as the provider's person. And the way back when the
// provider's word is not enough: an unverified email that names an existing person is refused, and
// the sign-in page says why in words.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { freePort, openPage, REPO_DIR, startServerAndBrowser } from "./harness.mjs";

const PASSWORD = "a long enough password";
const PROVIDER = join(REPO_DIR, ".venv", "bin", "oidc-provider-mock");

/** The provider on a free loopback port with two predefined people; resolves when it answers. */
async function startProvider() {
  const port = await freePort();
  const people = [
    { sub: "carol-at-idp", email: "carol@example.com", email_verified: true, name: "Carol" },
    // Claims root's address without the provider vouching for it: must not become root.
    { sub: "mallory-at-idp", email: "root@example.com", email_verified: false, name: "Mallory" },
  ];
  const args = ["--port", String(port), "--require-nonce", "true", ...people.flatMap((p) => ["--user-claims", JSON.stringify(p)])];
  const child = spawn(PROVIDER, args, { stdio: ["ignore", "pipe", "pipe"] });
  const output = [];
  child.stdout.on("data", (chunk) => output.push(chunk));
  child.stderr.on("data", (chunk) => output.push(chunk));
  const exited = once(child, "exit");
  const issuer = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      await exited;
    }
  };
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break;
    try {
      const response = await fetch(`${issuer}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(2_000) });
      if (response.ok) return { issuer, stop };
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await stop();
  throw new Error(`the OIDC provider did not start:\n${Buffer.concat(output).toString("utf8")}`);
}

/** From the app's sign-in page through the provider's page, choosing `sub` there. */
async function signInWithProvider(browser, server, sub) {
  const page = await openPage(browser, server, { path: "/" });
  await page.waitForURL(/\/sign-in/);
  await page.getByRole("link", { name: "Sign in with single sign-on" }).click();
  await page.getByRole("heading", { name: "Authorize Client" }).waitFor();
  assert.ok(page.url().startsWith(provider.issuer), page.url());
  await page.getByRole("button", { name: sub, exact: true }).click();
  return page;
}

/** A GraphQL query sent from the page, with its cookies, as the app sends its own. */
function fromPage(page, query) {
  return page.evaluate(async (q) => {
    const response = await fetch("/graphql", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ query: q }) });
    return (await response.json()).data;
  }, query);
}

let provider;

describe("single sign-on in the browser", () => {
  let server;
  let browser;

  before(async () => {
    provider = await startProvider();
    try {
      [server, browser] = await startServerAndBrowser({
        env: {
          RAGCHAT_OIDC__ISSUER: provider.issuer,
          RAGCHAT_OIDC__CLIENT_ID: "ragchat-e2e",
          RAGCHAT_OIDC__CLIENT_SECRET: "e2e-secret",
        },
      });
    } catch (error) {
      await provider.stop();
      throw error;
    }
    // The first administrator (from loopback), so the server has people and asks them to sign in.
    const response = await fetch(`${server.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        query: `mutation ($p: String!) { setUpFirstAdministrator(email: "root@example.com", name: "Root", password: $p) { __typename } }`,
        variables: { p: PASSWORD },
      }),
    });
    assert.equal((await response.json()).data.setUpFirstAdministrator.__typename, "Person");
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    await provider?.stop();
  });

  test("a person of the provider signs in and is a new member of no knowledge base", async () => {
    const page = await signInWithProvider(browser, server, "carol-at-idp");
    const person = page.getByTestId("signed-in-person");
    await person.waitFor();
    assert.ok(page.url().startsWith(server.url), page.url());
    assert.match(await person.textContent(), /Carol|carol@example\.com/);
    // Her session is the app's own cookie: the API answers as her, and she sees no knowledge base.
    const me = await fromPage(page, "{ me { email isAdmin } projects { ... on ProjectConnection { totalCount } } }");
    assert.deepEqual(me, { me: { email: "carol@example.com", isAdmin: false }, projects: { totalCount: 0 } });
    // The provider's page fetched its stylesheet from a CDN (unreachable here): only the app's own
    // loading is ours to judge, so reload it signed in and expect it clean.
    page.problems.length = 0;
    await page.reload();
    await person.waitFor();
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  test("an unverified email naming an existing person is refused, and the page says why", async () => {
    const page = await signInWithProvider(browser, server, "mallory-at-idp");
    await page.waitForURL(/\/sign-in\?error=unverified/);
    const alert = page.getByRole("alert");
    await alert.waitFor();
    assert.match(await alert.textContent(), /has not verified that the address is yours/);
    assert.equal(await page.getByTestId("signed-in-person").count(), 0);
    const me = await fromPage(page, "{ me { email } }");
    assert.deepEqual(me, { me: null });
    await page.context().close();
  });
});
