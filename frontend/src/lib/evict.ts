import type { ApolloCache } from "@apollo/client";

// A delete mutation answers with a payload named after what it deleted (ProjectDeleted { id } …), so
// the entity's cache id follows from the payload alone: no guessing from the mutation's name.
const DELETED_TYPE = {
  ProjectDeleted: "Project",
  DocumentDeleted: "Document",
  ChatSessionDeleted: "ChatSession",
  ToolDeleted: "Tool",
} as const;

export type DeletedPayload = { __typename: keyof typeof DELETED_TYPE; id: string };

/** Drop a deleted entity from the cache, and whatever only it referred to (its messages, …). */
export function evictDeleted(cache: ApolloCache, deleted: DeletedPayload): void {
  const id = cache.identify({ __typename: DELETED_TYPE[deleted.__typename], id: deleted.id });
  if (id) cache.evict({ id });
  cache.gc();
}
