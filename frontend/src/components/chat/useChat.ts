import { useApolloClient } from "@apollo/client/react";
import { useCallback, useEffect, useReducer, useRef } from "react";
import type { Subscription } from "rxjs";
import {
  ApproveToolCallDocument,
  type ChatEventFieldsFragment,
  ChatDocument,
  type MessageFieldsFragment,
  RegenerateDocument,
  RejectToolCallDocument,
  StoredMessageDocument,
} from "../../gql/graphql";
import { type ToolCallView, chatReducer, initialChatState } from "../../lib/chatReducer";
import { newClientMessageId } from "../../lib/clientMessageId";

let turnCounter = 0;

/**
 * One chat's conversation: the stored messages plus the answer streaming over the `chat` (or
 * `regenerate`) subscription. Unsubscribing (stop, leaving the chat) makes the server cancel the
 * generation and store the answer as failed, so it can be regenerated later.
 */
export function useChat(sessionId: string, initial: readonly MessageFieldsFragment[] | undefined, onSettled?: () => void) {
  const client = useApolloClient();
  const [state, dispatch] = useReducer(chatReducer, initialChatState);
  const current = useRef<{ key: string; subscription: Subscription } | null>(null);
  const loadedFor = useRef<string | null>(null);
  const settled = useRef(onSettled);
  settled.current = onSettled;

  useEffect(() => {
    if (initial && loadedFor.current !== sessionId) {
      loadedFor.current = sessionId;
      dispatch({ type: "loaded", messages: initial });
    }
  }, [initial, sessionId]);

  useEffect(() => () => current.current?.subscription.unsubscribe(), []);

  // A failed answer's stored trace says why (e.g. the answer guard rejected it); the error event does not carry it.
  const fetchStored = useCallback(
    async (key: string, id: string) => {
      try {
        const { data } = await client.query({ query: StoredMessageDocument, variables: { id }, fetchPolicy: "no-cache" });
        if (data?.message.__typename === "ChatMessage") dispatch({ type: "stored", key, message: data.message });
      } catch {
        // Only the trace is missing; the failure itself is already shown.
      }
    },
    [client],
  );

  const follow = useCallback(
    (key: string, source: ReturnType<typeof client.subscribe<Record<string, ChatEventFieldsFragment>>>) => {
      current.current?.subscription.unsubscribe();
      let finished = false;
      const finish = () => {
        if (finished) return;
        finished = true;
        if (current.current?.key === key) current.current = null;
        settled.current?.();
      };
      const subscription = source.subscribe({
        next: (result) => {
          const event = result.data && Object.values(result.data)[0];
          if (event) {
            dispatch({ type: "event", key, event });
            if (event.__typename === "ChatError" && event.failedMessageId) void fetchStored(key, event.failedMessageId);
            if (event.__typename === "ChatDone" || event.__typename === "ChatError") finish();
          } else if (result.error) {
            dispatch({ type: "streamFailed", key, message: result.error.message });
            finish();
          }
        },
        error: (error: unknown) => {
          dispatch({ type: "streamFailed", key, message: error instanceof Error ? error.message : String(error) });
          finish();
        },
        complete: () => {
          dispatch({ type: "streamFailed", key, message: "the answer stream ended before the answer was complete" });
          finish();
        },
      });
      if (!finished) current.current = { key, subscription };
    },
    [client, fetchStored],
  );

  const send = useCallback(
    (content: string) => {
      const key = `t${++turnCounter}`;
      dispatch({ type: "sent", key, content });
      // One id per question: graphql-ws re-sends this subscribe after a reconnect, and the server follows the same turn.
      const variables = { sessionId, content, clientMessageId: newClientMessageId() };
      follow(key, client.subscribe({ query: ChatDocument, variables, fetchPolicy: "no-cache" }));
    },
    [client, follow, sessionId],
  );

  /** Generate an assistant message again (Retry after a failure); streams the replacement. */
  const regenerate = useCallback(
    (key: string) => {
      const item = state.items.find((i) => i.key === key);
      if (!item?.id || item.role !== "ASSISTANT") return;
      dispatch({ type: "regenerating", key });
      const variables = { messageId: item.id, clientMessageId: newClientMessageId() };
      follow(key, client.subscribe({ query: RegenerateDocument, variables, fetchPolicy: "no-cache" }));
    },
    [client, follow, state.items],
  );

  /** Send again a question the server never took (busy, connection lost before it started). */
  const resend = useCallback(
    (key: string) => {
      const item = state.items.find((i) => i.key === key);
      if (!item?.unsent) return;
      dispatch({ type: "discard", key });
      send(item.content);
    },
    [send, state.items],
  );

  const discard = useCallback((key: string) => dispatch({ type: "discard", key }), []);

  const stop = useCallback(() => {
    const active = current.current;
    if (!active) return;
    active.subscription.unsubscribe();
    current.current = null;
    dispatch({ type: "streamFailed", key: active.key, code: "CANCELLED", message: "you stopped this answer" });
    settled.current?.();
  }, []);

  /**
   * Approve or reject a previewed tool call. Approval runs it once on the server, which appends its
   * outcome to the conversation as a message: shown at the end. Resolves to an error message, or null.
   */
  const decideTool = useCallback(
    async (call: ToolCallView, decision: "approve" | "reject"): Promise<string | null> => {
      if (!call.id) return "This call was not stored, so it cannot be decided.";
      try {
        const variables = { id: call.id };
        const data =
          decision === "approve"
            ? (await client.mutate({ mutation: ApproveToolCallDocument, variables, fetchPolicy: "no-cache" })).data?.approveToolCall
            : (await client.mutate({ mutation: RejectToolCallDocument, variables, fetchPolicy: "no-cache" })).data?.rejectToolCall;
        if (!data) return "No answer from the server.";
        if (data.__typename !== "ToolCall") return data.message;
        dispatch({ type: "toolDecided", call: data });
        if (data.outcomeMessageId) {
          const stored = await client.query({ query: StoredMessageDocument, variables: { id: data.outcomeMessageId }, fetchPolicy: "no-cache" });
          if (stored.data?.message.__typename === "ChatMessage") dispatch({ type: "appended", message: stored.data.message });
        }
        settled.current?.();
        return null;
      } catch (err) {
        return err instanceof Error ? err.message : String(err);
      }
    },
    [client],
  );

  const prepend = useCallback((messages: readonly MessageFieldsFragment[]) => dispatch({ type: "prepended", messages }), []);

  return { state, busy: state.activeKey !== null, send, regenerate, resend, discard, stop, prepend, decideTool };
}
