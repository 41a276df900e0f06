import { InMemoryCache } from "@apollo/client";
import { describe, expect, it } from "vitest";
import { evictDeleted } from "./evict";

function cacheWithAKnowledgeBase(): InMemoryCache {
  const cache = new InMemoryCache();
  cache.restore({
    ROOT_QUERY: {
      __typename: "Query",
      projects: [{ __ref: "Project:1" }],
      'chatSessions({"projectId":"1"})': [{ __ref: "ChatSession:3" }],
    },
    "Project:1": { __typename: "Project", id: "1", name: "kb", documents: [{ __ref: "Document:1" }, { __ref: "Document:2" }] },
    "Document:1": { __typename: "Document", id: "1", name: "a.md" },
    "Document:2": { __typename: "Document", id: "2", name: "b.md" },
    "ChatSession:3": { __typename: "ChatSession", id: "3", title: "t", "messages({})": [{ __ref: "ChatMessage:7" }] },
    "ChatMessage:7": { __typename: "ChatMessage", id: "7", content: "hi" },
  });
  return cache;
}

describe("evictDeleted", () => {
  it("removes the entity a delete payload names, and what only it referred to", () => {
    const cache = cacheWithAKnowledgeBase();
    evictDeleted(cache, { __typename: "DocumentDeleted", id: "1" });
    expect(Object.keys(cache.extract()).sort()).toEqual(["ChatMessage:7", "ChatSession:3", "Document:2", "Project:1", "ROOT_QUERY"]);
    evictDeleted(cache, { __typename: "ChatSessionDeleted", id: "3" });
    expect(Object.keys(cache.extract()).sort()).toEqual(["Document:2", "Project:1", "ROOT_QUERY"]);
    evictDeleted(cache, { __typename: "ProjectDeleted", id: "1" });
    expect(Object.keys(cache.extract())).toEqual(["ROOT_QUERY"]);
  });
});
