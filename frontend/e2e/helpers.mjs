// Shared steps of the browser scenarios: seeding through the real API and UI gestures.

import { readFile } from "node:fs/promises";
import { delimiter } from "node:path";
import { fileURLToPath } from "node:url";

export const fixture = (name) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const REPOSITORY = fileURLToPath(new URL("../..", import.meta.url));

/**
 * Environment for a server whose chat model is the scripted one (answers from a JSON file): a test
 * provider, loaded from the repository's tests/providers.py (as tests.providers.scripted_env does).
 */
export function scriptedEnv(script, { tokenDelayMs = 40 } = {}) {
  return {
    PYTHONPATH: [REPOSITORY, process.env.PYTHONPATH].filter(Boolean).join(delimiter),
    RAGCHAT_TEST_PROVIDERS: "tests.providers",
    RAGCHAT_LLM__PROVIDER: "scripted",
    RAGCHAT_LLM__MODEL: "scripted",
    RAGCHAT_LLM__SCRIPT: fixture(script),
    RAGCHAT_LLM__TOKEN_DELAY_MS: String(tokenDelayMs),
  };
}

/** Run a GraphQL operation against the server over HTTP (seeding, checks). */
export async function gql(server, query, variables = {}, headers = {}) {
  const response = await fetch(`${server.url}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ query, variables }),
  });
  const body = await response.json();
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
}

/** Drop files on an element the way a user dragging them from the desktop does. */
export async function dropFiles(page, selector, files) {
  const payload = await Promise.all(
    files.map(async ({ path, name, type = "text/plain" }) => ({ name, type, text: await readFile(path, "utf8") })),
  );
  const dataTransfer = await page.evaluateHandle((items) => {
    const transfer = new DataTransfer();
    for (const { name, type, text } of items) transfer.items.add(new File([text], name, { type }));
    return transfer;
  }, payload);
  for (const type of ["dragenter", "dragover", "drop"]) await page.dispatchEvent(selector, type, { dataTransfer });
}

/** Collect `window.__pwned` assignments and dialogs: both must stay empty in a safe page. */
export async function watchForExecution(page) {
  const dialogs = [];
  page.on("dialog", async (dialog) => {
    dialogs.push(dialog.message());
    await dialog.dismiss();
  });
  return {
    dialogs,
    pwned: () => page.evaluate(() => window.__pwned ?? null),
  };
}
