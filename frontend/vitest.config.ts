import { defineConfig, mergeConfig } from "vitest/config";
import viteConfig from "./vite.config.ts";

// Component tests only; the browser tests in e2e/ run under node's test runner against a real server.
export default mergeConfig(
  viteConfig,
  defineConfig({
    test: {
      environment: "happy-dom",
      include: ["src/**/*.test.{ts,tsx}", "scripts/**/*.test.mjs"],
      setupFiles: ["src/test/setup.ts"],
      restoreMocks: true,
      // One happy-dom per worker instead of one per file: about 4x faster on 2 cores. Tests clean
      // up after themselves (src/test/setup.ts unmounts; stores are made per test).
      isolate: false,
    },
  }),
);
