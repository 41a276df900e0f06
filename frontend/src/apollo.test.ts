import { gql } from "@apollo/client";
import { describe, expect, it } from "vitest";
import { createCache, endpointsFor } from "./apollo";

describe("endpointsFor", () => {
  it("uses ws: beside http:", () => {
    expect(endpointsFor({ protocol: "http:", host: "127.0.0.1:8000" })).toEqual({
      httpUrl: "http://127.0.0.1:8000/graphql",
      wsUrl: "ws://127.0.0.1:8000/graphql",
    });
  });

  it("uses wss: beside https:", () => {
    expect(endpointsFor({ protocol: "https:", host: "chat.example.org" }).wsUrl).toBe("wss://chat.example.org/graphql");
  });
});

// The shape the chat's query has (ChatSessionDetail), cut down to what the merge looks at.
const MESSAGES = gql`
  query Messages($id: ID!, $last: Int, $before: String) {
    chatSession(id: $id) {
      __typename
      ... on ChatSession {
        id
        messages(last: $last, before: $before) {
          __typename
          ... on ChatMessageConnection {
            totalCount
            pageInfo {
              hasNextPage
              hasPreviousPage
              startCursor
              endCursor
            }
            edges {
              cursor
              node {
                id
                content
              }
            }
          }
        }
      }
    }
  }
`;

function page(ids: number[], hasPreviousPage: boolean) {
  const edges = ids.map((id) => ({ __typename: "ChatMessageEdge", cursor: `c${id}`, node: { __typename: "ChatMessage", id: String(id), content: `m${id}` } }));
  return {
    chatSession: {
      __typename: "ChatSession",
      id: "7",
      messages: {
        __typename: "ChatMessageConnection",
        totalCount: 6,
        pageInfo: { __typename: "PageInfo", hasNextPage: false, hasPreviousPage, startCursor: `c${ids[0]}`, endCursor: `c${ids.at(-1)}` },
        edges,
      },
    },
  };
}

describe("the cache's connections (relayStylePagination)", () => {
  it("puts an older page of messages (`before`) in front of the newest, and a fresh first page replaces both", () => {
    const cache = createCache();
    cache.writeQuery({ query: MESSAGES, variables: { id: "7", last: 3 }, data: page([4, 5, 6], true) });
    cache.writeQuery({ query: MESSAGES, variables: { id: "7", last: 3, before: "c4" }, data: page([1, 2, 3], false) });
    const merged = cache.readQuery({ query: MESSAGES, variables: { id: "7", last: 3 } }) as ReturnType<typeof page>;
    const messages = merged.chatSession.messages;
    expect(messages.edges.map((edge) => edge.node.id)).toEqual(["1", "2", "3", "4", "5", "6"]);
    expect(messages.pageInfo).toMatchObject({ hasPreviousPage: false, startCursor: "c1", endCursor: "c6" });
    expect(messages.totalCount).toBe(6);

    cache.writeQuery({ query: MESSAGES, variables: { id: "7", last: 3 }, data: page([4, 5, 6], true) });
    const reloaded = cache.readQuery({ query: MESSAGES, variables: { id: "7", last: 3 } }) as ReturnType<typeof page>;
    expect(reloaded.chatSession.messages.edges.map((edge) => edge.node.id)).toEqual(["4", "5", "6"]);
  });
});
