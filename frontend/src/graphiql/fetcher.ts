import { createGraphiQLFetcher, type Fetcher } from "@graphiql/toolkit";

/**
 * GraphiQL's fetcher for this server: POSTs JSON to /graphql (a content type the CSRF rule lets
 * through) and runs subscriptions over graphql-ws on the same path. The app's saved API key, if
 * any, goes with both; an `Authorization` header typed in GraphiQL's Headers tab overrides it, and
 * reaches the websocket too (GraphiQL passes the headers as connection params). A signed-in person's
 * session cookie goes with both as well (same origin), so the playground acts as them.
 */
export function ragchatFetcher(location: Pick<Location, "protocol" | "host">, authorization: string | null): Fetcher {
  const wsScheme = location.protocol === "https:" ? "wss:" : "ws:";
  const auth: Record<string, string> = authorization ? { Authorization: authorization } : {};
  return createGraphiQLFetcher({
    url: `${location.protocol}//${location.host}/graphql`,
    subscriptionUrl: `${wsScheme}//${location.host}/graphql`,
    headers: { "Apollo-Require-Preflight": "true", ...auth },
    wsConnectionParams: auth,
    enableIncrementalDelivery: false,
    fetch: (input, init) => fetch(input, { ...init, credentials: "same-origin" }),
  });
}
