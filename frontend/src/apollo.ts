import { ApolloClient, ApolloLink, HttpLink, InMemoryCache } from "@apollo/client";
import { GraphQLWsLink } from "@apollo/client/link/subscriptions";
import { OperationTypeNode } from "graphql";
import { createClient } from "graphql-ws";
import schemaTypes from "./gql/possible-types";

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

/** Subscriptions (the streamed `chat` answer) go over the websocket; everything else over HTTP. */
export function createApolloClient(endpoints: Endpoints): ApolloClient {
  const http = new HttpLink({ uri: endpoints.httpUrl });
  // graphql-ws is lazy: the socket opens with the first subscription and closes when idle.
  const ws = new GraphQLWsLink(
    createClient({
      url: endpoints.wsUrl,
      retryAttempts: 5,
      shouldRetry: () => true,
    }),
  );
  return new ApolloClient({
    link: ApolloLink.split(({ operationType }) => operationType === OperationTypeNode.SUBSCRIPTION, ws, http),
    cache: new InMemoryCache({ possibleTypes: schemaTypes.possibleTypes }),
  });
}
