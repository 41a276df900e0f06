import react from "@vitejs/plugin-react";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

// `npm run dev` serves the app on :5173 and forwards the API, websockets included, to a ragchat
// started with `make serve` (or wherever RAGCHAT_BACKEND points).
const backend = process.env.RAGCHAT_BACKEND ?? "http://127.0.0.1:8000";

export default defineConfig({
  plugins: [react()],
  server: {
    host: "127.0.0.1",
    proxy: {
      "/graphql": { target: backend, ws: true },
      "/healthz": { target: backend },
    },
  },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: true,
    rolldownOptions: {
      // The app, and GraphiQL for /graphql (served by the API, with its monaco workers in /assets).
      input: {
        index: fileURLToPath(new URL("index.html", import.meta.url)),
        graphiql: fileURLToPath(new URL("graphiql.html", import.meta.url)),
      },
      onwarn(warning, warn) {
        // GraphiQL's packages start modules with "use no memo" (React Compiler's opt-out), one
        // warning each; it means nothing in a bundle.
        if (warning.code === "MODULE_LEVEL_DIRECTIVE" && warning.message.includes("node_modules")) return;
        warn(warning);
      },
      output: {
        // Libraries change less often than the app: separate chunks stay cached across releases.
        // entriesAware: what only GraphiQL uses (monaco, its plugins) stays out of the app's chunks.
        codeSplitting: {
          groups: [
            { name: "react", test: /node_modules[\\/](react|react-dom|scheduler)[\\/]/, priority: 3, entriesAware: true },
            {
              name: "apollo",
              test: /node_modules[\\/](@apollo|graphql|graphql-ws|rxjs|@wry|optimism)[\\/]/,
              priority: 2,
              entriesAware: true,
            },
            { name: "vendor", test: /node_modules[\\/]/, priority: 1, entriesAware: true },
          ],
        },
      },
    },
  },
});
