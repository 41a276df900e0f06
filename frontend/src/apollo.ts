import { ApolloClient, ApolloLink, HttpLink, InMemoryCache } from "@apollo/client";
import { CombinedGraphQLErrors } from "@apollo/client/errors";
import { relayStylePagination } from "@apollo/client/utilities";
import { OperationTypeNode, print } from "graphql";
import { type Client, createClient } from "graphql-ws";
import { Observable } from "rxjs";
import schemaTypes from "./gql/possible-types";
import type { ApiKeyStore } from "./lib/apiKey";

export interface Endpoints {
  /** Queries and mutations, over HTTP POST. */
  httpUrl: string;
  /** Subscriptions, over graphql-transport-ws. */
  wsUrl: string;
}

/** The API lives on the page's own origin: served by ragchat itself, or proxied by `vite dev`. */
export function endpointsFor(location: Pick<Location, "protocol" | "host">): Endpoints {
  const wsScheme = location.protocol === "https:" ? "wss:" : "ws:";
  return {
    httpUrl: `${location.protocol}//${location.host}/graphql`,
    wsUrl: `${wsScheme}//${location.host}/graphql`,
  };
}

/** fetch that sends the API key and asks for one when the server answers 401. */
export function authFetch(keys: ApiKeyStore, base: typeof fetch = (...args) => fetch(...args)): typeof fetch {
  return async (input, init) => {
    const headers = new Headers(init?.headers);
    const authorization = keys.authorization();
    if (authorization) headers.set("Authorization", authorization);
    const response = await base(input, { ...init, headers });
    if (response.status === 401) keys.requestKey();
    return response;
  };
}

// Strawberry closes the socket with 4403 when connection_init carries no valid key.
const FORBIDDEN = 4403;

function closeCode(value: unknown): number | null {
  return typeof value === "object" && value !== null && "code" in value && typeof value.code === "number" ? value.code : null;
}

/**
 * Subscriptions over graphql-ws. The client is rebuilt when the API key changes, because the key
 * travels in connection_init (once per socket); operations already running finish on the old one.
 */
export class AuthWsLink extends ApolloLink {
  private client: Client;

  constructor(
    private readonly url: string,
    private readonly keys: ApiKeyStore,
  ) {
    super();
    this.client = this.build();
    keys.onKeyChange(() => {
      const old = this.client;
      this.client = this.build();
      void old.dispose();
    });
  }

  private build(): Client {
    return createClient({
      url: this.url,
      // graphql-ws is lazy: the socket opens with the first subscription and closes when idle.
      lazy: true,
      // Idle for a moment first: a Stop's `complete` then reaches the server on an open socket, which
      // tells it the user stopped (cancel now) rather than lost the connection (wait to re-attach).
      lazyCloseTimeout: 3000,
      connectionParams: () => {
        const authorization = this.keys.authorization();
        return authorization ? { authorization } : {};
      },
      retryAttempts: 3,
      // Retry dropped connections, never a refused key or a protocol error.
      shouldRetry: (event) => {
        const code = closeCode(event);
        return code === null || code < 4000;
      },
    });
  }

  override request(operation: ApolloLink.Operation): Observable<ApolloLink.Result> {
    const client = this.client;
    return new Observable((observer) =>
      client.subscribe(
        { query: print(operation.query), variables: operation.variables, operationName: operation.operationName },
        {
          next: (value) => observer.next(value as ApolloLink.Result),
          complete: () => observer.complete(),
          error: (error: unknown) => {
            const code = closeCode(error);
            if (code === FORBIDDEN) this.keys.requestKey();
            if (error instanceof Error) observer.error(error);
            else if (code !== null) {
              const reason = (error as { reason?: string }).reason;
              observer.error(new Error(code === FORBIDDEN ? "an API key is required" : `connection closed (${code}${reason ? ` ${reason}` : ""})`));
            } else if (Array.isArray(error)) observer.error(new CombinedGraphQLErrors({ errors: error }));
            else observer.error(new Error("the connection to the server was lost"));
          },
        },
      ),
    );
  }
}

export function createCache(): InMemoryCache {
  return new InMemoryCache({
    possibleTypes: schemaTypes.possibleTypes,
    typePolicies: {
      // The paged lists are Relay connections: a page fetched with `after` is appended to the cached
      // list, one fetched with `before` prepended, one with neither replaces it. Their arguments
      // other than the page's (a knowledge base's id) keep separate lists apart.
      Query: { fields: { projects: relayStylePagination(), chatSessions: relayStylePagination(["projectId"]) } },
      Project: { fields: { documents: relayStylePagination(), embeddingSpace: { merge: false } } },
      Document: { fields: { chunks: relayStylePagination() } },
      ChatSession: { fields: { messages: relayStylePagination(), documentFilter: { merge: false } } },
      // Objects without ids hang off their parent; replace them whole when they change.
      ChatMessage: { fields: { trace: { merge: false }, citations: { merge: false } } },
    },
  });
}

/** Subscriptions (the streamed `chat` answer) go over the websocket; everything else over HTTP. */
export function createApolloClient(endpoints: Endpoints, keys: ApiKeyStore): ApolloClient {
  // The session cookie of a signed-in person goes with every request to this origin (the
  // websocket's handshake carries it too); the API key, when one is saved, as a header.
  const http = new HttpLink({ uri: endpoints.httpUrl, fetch: authFetch(keys), credentials: "same-origin" });
  const ws = new AuthWsLink(endpoints.wsUrl, keys);
  return new ApolloClient({
    link: ApolloLink.split(({ operationType }) => operationType === OperationTypeNode.SUBSCRIPTION, ws, http),
    cache: createCache(),
  });
}
