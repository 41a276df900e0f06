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

const AXE_SOURCE = readFile(fileURLToPath(import.meta.resolve("axe-core/axe.min.js")), "utf8");
const WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"];

/**
 * Run axe-core on what the page shows now, in the light theme and then the dark one (the app follows
 * prefers-color-scheme while the reader has not picked a theme), and return the WCAG 2.1 A/AA
 * violations as readable lines: `[]` is an accessible page. `scope` narrows it to an open dialog.
 */
export async function accessibilityViolations(page, { scope = "body" } = {}) {
  if (!(await page.evaluate(() => "axe" in window))) await page.addScriptTag({ content: await AXE_SOURCE });
  const found = [];
  for (const colorScheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme });
    await page.waitForFunction((theme) => document.documentElement.dataset.theme === theme, colorScheme);
    // The switch starts colour transitions (0.01 ms under reduced motion): measure once they have ended.
    await page.waitForFunction(() => document.getAnimations().every((a) => a.playState !== "running"));
    const violations = await page.evaluate(
      async ({ scope, tags }) => {
        const results = await window.axe.run(document.querySelector(scope), { runOnly: { type: "tag", values: tags }, resultTypes: ["violations"] });
        return results.violations.map((v) => `${v.id}: ${v.nodes.map((n) => `${n.target.join(" ")} (${n.failureSummary.split("\n").slice(1).join(" ").trim()})`).join("; ")}`);
      },
      { scope, tags: WCAG_21_AA },
    );
    found.push(...violations.map((v) => `${colorScheme}: ${v}`));
  }
  await page.emulateMedia({ colorScheme: null });
  return found;
}
