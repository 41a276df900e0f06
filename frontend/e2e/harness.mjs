// End-to-end harness: a real ragchat server (its own temp database, serving frontend/dist) and
// headless Debian Chromium driven by playwright-core. Scenarios live in e2e/*.test.mjs and run
// under node's test runner; see frontend/README.md.

import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const FRONTEND_DIR = fileURLToPath(new URL("..", import.meta.url));
export const REPO_DIR = resolve(FRONTEND_DIR, "..");
export const DIST_DIR = join(FRONTEND_DIR, "dist");
// Tests save what they saw here (gitignored): a test run never rewrites the README's pictures in
// docs/screenshots/, which `make screenshots` (e2e/screenshots.mjs) refreshes from a real model.
export const SCREENSHOT_DIR = join(FRONTEND_DIR, "e2e", ".artifacts");
export const README_SCREENSHOT_DIR = join(REPO_DIR, "docs", "screenshots");
const RAGCHAT = process.env.RAGCHAT_BIN ?? join(REPO_DIR, ".venv", "bin", "ragchat");
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export const VIEWPORTS = {
  desktop: { width: 1280, height: 800 },
  mobile: { width: 390, height: 844 },
};

/** A TCP port nothing listens on right now. */
export async function freePort() {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address();
  server.close();
  await once(server, "close");
  return port;
}

/**
 * Start `ragchat serve` on a free port with a fresh SQLite file, and wait until /healthz answers.
 *
 * @param {object} [options]
 * @param {Record<string, string>} [options.env] extra RAGCHAT_* settings (override the defaults here)
 * @param {boolean} [options.migrate] run `ragchat migrate` first (default true)
 * @param {string[][]} [options.commands] more `ragchat` commands to run before serving, e.g. [["demo"]]
 * @param {number} [options.timeoutMs] how long to wait for /healthz
 */
export async function startServer({ env = {}, migrate = true, commands = [], timeoutMs = 60_000 } = {}) {
  if (!existsSync(join(DIST_DIR, "index.html"))) {
    throw new Error(`${DIST_DIR} has no index.html: run \`make frontend\` (or \`npm run build\`) first`);
  }
  if (!existsSync(RAGCHAT)) throw new Error(`${RAGCHAT} not found: run \`make install\` first`);
  const workDir = await mkdtemp(join(tmpdir(), "ragchat-e2e-"));
  const port = await freePort();
  const serverEnv = {
    ...withoutRagchatSettings(process.env),
    RAGCHAT_DATABASE_URL: `sqlite:///${join(workDir, "ragchat.db")}`,
    RAGCHAT_FRONTEND_DIR: DIST_DIR,
    RAGCHAT_LOG__LEVEL: "warning",
    ...env,
  };
  // cwd is the temp dir, so a developer's .env in the repo cannot change what the test runs against.
  const spawnOptions = { cwd: workDir, env: serverEnv };
  const output = [];
  try {
    if (migrate) await run(RAGCHAT, ["migrate"], spawnOptions, output);
    for (const args of commands) await run(RAGCHAT, args, spawnOptions, output);
  } catch (error) {
    await rm(workDir, { recursive: true, force: true });
    throw error;
  }

  const child = spawn(RAGCHAT, ["serve", "--host", "127.0.0.1", "--port", String(port)], {
    ...spawnOptions,
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout.on("data", (chunk) => output.push(chunk));
  child.stderr.on("data", (chunk) => output.push(chunk));
  const exited = once(child, "exit");
  const url = `http://127.0.0.1:${port}`;

  const server = {
    url,
    port,
    workDir,
    env: serverEnv,
    /** Everything the server printed so far (handy in assertion messages). */
    log: () => Buffer.concat(output).toString("utf8"),
    /** Stop the server (SIGTERM, then SIGKILL after 5 s) and delete its files. Safe to call twice. */
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
        await exited;
        clearTimeout(timer);
      }
      process.off("exit", killOnExit);
      await rm(workDir, { recursive: true, force: true });
    },
  };
  // Should the test process die without calling stop(), do not leave a server behind.
  const killOnExit = () => child.kill("SIGKILL");
  process.on("exit", killOnExit);

  try {
    await waitForHealth(url, exited, timeoutMs);
  } catch (error) {
    await server.stop();
    throw new Error(`${error.message}\n--- server output ---\n${server.log()}`, { cause: error });
  }
  return server;
}

/**
 * `startServer(options)` and `launchBrowser()` side by side. When either fails the other is closed
 * before the error is thrown: a browser left open would keep the test file's process alive and the
 * whole run would wait for it forever.
 */
export async function startServerAndBrowser(options) {
  const [server, browser] = await Promise.allSettled([startServer(options), launchBrowser()]);
  if (server.status === "fulfilled" && browser.status === "fulfilled") return [server.value, browser.value];
  if (server.status === "fulfilled") await server.value.stop();
  if (browser.status === "fulfilled") await browser.value.close();
  throw server.status === "rejected" ? server.reason : browser.reason;
}

/** Start one headless Chromium (Debian's) for a test file; close it in `after`. */
export function launchBrowser() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
}

/**
 * Open `path` of a started server in a fresh browser context. Console errors and failed requests
 * are collected on `page.problems`, so a test can assert the page loaded cleanly.
 *
 * @param {import("playwright-core").Browser} browser
 * @param {{ url: string }} server
 * @param {{ path?: string, viewport?: { width: number, height: number } }} [options]
 */
export async function openPage(browser, server, { path = "/", viewport = VIEWPORTS.desktop } = {}) {
  const context = await browser.newContext({ viewport, deviceScaleFactor: 1, reducedMotion: "reduce" });
  const page = await context.newPage();
  page.problems = [];
  page.on("console", (msg) => msg.type() === "error" && page.problems.push(`console: ${msg.text()}`));
  page.on("pageerror", (error) => page.problems.push(`page error: ${error.message}`));
  page.on("requestfailed", (req) => {
    // ERR_ABORTED is the app cancelling a request it no longer needs (a query whose screen was
    // left, an upload cancelled), not a failure.
    const error = req.failure()?.errorText ?? "";
    if (!error.includes("ERR_ABORTED")) page.problems.push(`request failed: ${req.url()} ${error}`);
  });
  page.setDefaultTimeout(10_000);
  await page.goto(new URL(path, server.url).href);
  return page;
}

/** Save a PNG to `dir`/<name>.png (by default e2e/.artifacts/, gitignored) and return its path. */
export async function screenshot(page, name, dir = SCREENSHOT_DIR) {
  await mkdir(dir, { recursive: true });
  const file = join(dir, `${name}.png`);
  await page.screenshot({ path: file, animations: "disabled", caret: "hide" });
  return file;
}

function withoutRagchatSettings(env) {
  return Object.fromEntries(Object.entries(env).filter(([key]) => !key.startsWith("RAGCHAT_")));
}

async function run(command, args, options, output) {
  const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
  const mine = [];
  for (const stream of [child.stdout, child.stderr]) stream.on("data", (chunk) => mine.push(chunk));
  const [code] = await once(child, "exit");
  output.push(...mine);
  if (code !== 0) {
    throw new Error(`${command} ${args.join(" ")} exited with ${code}:\n${Buffer.concat(mine).toString("utf8")}`);
  }
}

async function waitForHealth(url, exited, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let died = false;
  exited.then(() => (died = true));
  while (Date.now() < deadline) {
    if (died) throw new Error("ragchat serve exited before answering /healthz");
    try {
      const response = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) });
      // 401: up, but API keys are configured (RAGCHAT_API__API_KEYS) and /healthz wants one.
      if (response.ok || response.status === 401) return;
    } catch {
      // not listening yet
    }
    await new Promise((done) => setTimeout(done, 150));
  }
  throw new Error(`ragchat did not answer ${url}/healthz within ${timeoutMs} ms`);
}
