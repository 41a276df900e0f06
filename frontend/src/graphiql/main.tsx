// GraphiQL at /graphql, bundled with the app so that it works without internet (Strawberry's own
// page loads React and GraphiQL from a CDN). The server serves the built graphiql.html for a
// browser's GET of /graphql with the example operation in #graphiql-config.
import "graphiql/style.css";
import "@graphiql/plugin-explorer/style.css";
import "./workers";
import { explorerPlugin } from "@graphiql/plugin-explorer";
import { useGraphiQL, useGraphiQLActions } from "@graphiql/react";
import { GraphiQL } from "graphiql";
import { StrictMode, useEffect } from "react";
import { createRoot } from "react-dom/client";
import { ApiKeyStore } from "../lib/apiKey";
import { storedTheme } from "../lib/theme";
import { ragchatFetcher } from "./fetcher";

interface PageConfig {
  defaultQuery?: string;
}

function readConfig(): PageConfig {
  try {
    return JSON.parse(document.getElementById("graphiql-config")?.textContent ?? "{}") as PageConfig;
  } catch {
    return {};
  }
}

const { defaultQuery } = readConfig();
/**
 * With no theme picked, GraphiQL's stylesheet follows the system's scheme when it changes but its
 * editors keep the colours they were made with (light code on a dark page, contrast 1.7:1): ask it
 * to pick the system's theme again on each change. Rendered inside GraphiQL, for its store.
 */
function FollowSystemTheme() {
  const theme = useGraphiQL((state) => state.theme);
  const { setTheme } = useGraphiQLActions();
  useEffect(() => {
    if (theme !== null) return;
    const media = window.matchMedia?.("(prefers-color-scheme: dark)");
    if (!media) return;
    const onChange = () => setTheme(null);
    media.addEventListener("change", onChange);
    return () => media.removeEventListener("change", onChange);
  }, [theme, setTheme]);
  return null;
}

const fetcher = ragchatFetcher(window.location, new ApiKeyStore().authorization());
const plugins = [explorerPlugin()];
// The app's light/dark pick, when the reader made one; GraphiQL follows the system otherwise (and
// keeps its own pick once made in its settings).

createRoot(document.getElementById("graphiql")!).render(
  <StrictMode>
    <GraphiQL fetcher={fetcher} defaultQuery={defaultQuery} plugins={plugins} defaultEditorToolsVisibility="headers" defaultTheme={storedTheme()}>
      <FollowSystemTheme />
    </GraphiQL>
  </StrictMode>,
);
