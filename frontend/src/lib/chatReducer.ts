// The conversation as the chat screen shows it: stored messages plus the answer being streamed.
// Subscription events (ChatQueued* -> ChatSearchProgress* -> ChatRetrieval -> ChatToken* -> ChatDone | ChatError)
// arrive for one item,
// identified by a client key, because the first event to carry the server's message id is
// ChatRetrieval and a turn can fail before it.

import type {
  ChatEventFieldsFragment,
  CitationKind,
  DegradationFieldsFragment,
  ErrorCode,
  LocationFieldsFragment,
  MessageFieldsFragment,
  Role,
  TraceSummaryFieldsFragment,
  SearchDecision,
  ToolCallFieldsFragment,
  ToolCallStatus,
} from "../gql/graphql";

export interface SourceView {
  number: number;
  documentId: string | null;
  chunkId: string | null;
  documentName: string;
  location: LocationFieldsFragment;
  /** Cosine similarity to the question (0-1); null for keyword-only hits. */
  score: number | null;
  /** The chunk text (while streaming) or the stored snippet (once cited). */
  text: string;
  /** How the citation came about; null for a retrieved source not (yet) cited. */
  kind: CitationKind | null;
  /** An extractive answer's sentences quoted from this source, in answer order, each with its exact span. */
  quotes?: Quote[];
}

export interface Quote {
  location: LocationFieldsFragment;
  text: string;
}

/** A tool call as the chat shows it: live from the stream, or stored. */
export interface ToolCallView {
  /** The model's id for the call (events name it). */
  callId: string;
  /** The stored ToolCall's id (approve/reject take it); null until the server names it. */
  id: string | null;
  name: string;
  /** As the model wrote them (JSON text, possibly invalid). */
  arguments: string;
  /** CALLING: the model called it and it is running now (live only). */
  status: ToolCallStatus | "CALLING";
  ok: boolean;
  error: string | null;
  /** The start of its result (live) or the stored result (cut to the server's cap). */
  result: string | null;
  /** The whole result's size in characters. */
  size: number | null;
  truncated: boolean;
  ms: number | null;
  /** What a side-effecting call would do (shown for approval). */
  preview: string | null;
  decidedAt: string | null;
  /** The assistant message an approved call's outcome was appended as. */
  outcomeMessageId: string | null;
  /** Where in the answer's text the call was made (live); null: before the text (stored calls). */
  offset: number | null;
}

export type ItemStatus = "PENDING" | "STREAMING" | "COMPLETE" | "FAILED";

export interface TurnError {
  /** The backend's stable code (BUSY, PROVIDER_UNAVAILABLE, …), or CONNECTION when the websocket failed. */
  code: ErrorCode | "CONNECTION";
  message: string;
}

export interface ChatItem {
  /** Stable React key: "m<id>" for stored messages, a client key for a new turn. */
  key: string;
  id: string | null;
  role: Role;
  content: string;
  status: ItemStatus;
  error: TurnError | null;
  sources: SourceView[];
  /** True once the sources are the answer's stored citations rather than retrieval's list. */
  cited: boolean;
  noContext: boolean;
  /** An extractive answer found no sentence in its kept sources that answers the question. */
  noAnswer: boolean;
  degraded: readonly DegradationFieldsFragment[];
  /** What the chat shows of the answer's trace (MessageTrace loads the whole of it on request). */
  trace: TraceSummaryFieldsFragment | null;
  createdAt: string | null;
  /** A question the server never stored (the turn could not start); it can be sent again. */
  unsent: boolean;
  /** While a regeneration starts: the answer as it was, shown again should it not start. */
  previous: ChatItem | null;
  /** While the question waits for a free generation slot: its place in line (1 = next). */
  queued?: number;
  /** While retrieval runs: the last pass that ended (WIDEN: another, wider one is under way). */
  searching?: SearchPass;
  /** The model's tool calls, in the order made. */
  toolCalls: ToolCallView[];
}

export interface SearchPass {
  number: number;
  budget: number;
  /** The query searched: the message, or the chat model's standalone rewrite of it. */
  query: string;
  rewritten: boolean;
  decision: SearchDecision;
}

export interface ChatState {
  items: ChatItem[];
  /** The item whose answer is streaming (one at a time per chat). */
  activeKey: string | null;
}

export type ChatAction =
  | { type: "loaded"; messages: readonly MessageFieldsFragment[] }
  | { type: "prepended"; messages: readonly MessageFieldsFragment[] }
  | { type: "sent"; key: string; content: string }
  | { type: "regenerating"; key: string }
  | { type: "event"; key: string; event: ChatEventFieldsFragment }
  /** The stored message of an answer that failed live: its trace says why (the answer guard's verdict). */
  | { type: "stored"; key: string; message: MessageFieldsFragment }
  | { type: "streamFailed"; key: string; message: string; code?: TurnError["code"] }
  | { type: "discard"; key: string }
  /** A previewed call was approved or rejected: the call as the server now has it. */
  | { type: "toolDecided"; call: ToolCallFieldsFragment }
  /** A message the server appended (an approved call's outcome), at the end unless already shown. */
  | { type: "appended"; message: MessageFieldsFragment };

export const initialChatState: ChatState = { items: [], activeKey: null };

export const questionKey = (answerKey: string) => `${answerKey}:q`;

export function fromMessage(message: MessageFieldsFragment, key = `m${message.id}`): ChatItem {
  return {
    key,
    id: message.id,
    role: message.role,
    content: message.content,
    status: message.status,
    error: message.status === "FAILED" ? { code: codeOf(message.error), message: message.error ?? "the answer failed" } : null,
    sources: sourcesOf(message.citations),
    cited: true,
    noContext: message.noContext,
    noAnswer: message.noAnswer,
    degraded: message.degraded,
    trace: message.trace,
    createdAt: message.createdAt,
    unsent: false,
    previous: null,
    toolCalls: message.toolCalls.map((c) => toolCallOf(c)),
  };
}

export function toolCallOf(call: ToolCallFieldsFragment, offset: number | null = null): ToolCallView {
  return {
    callId: call.callId,
    id: call.id,
    name: call.toolName,
    arguments: call.arguments,
    status: call.status,
    ok: call.ok,
    error: call.error,
    result: call.result,
    size: call.resultSize,
    truncated: false,
    ms: call.ms,
    preview: call.preview,
    decidedAt: call.decidedAt,
    outcomeMessageId: call.outcomeMessageId,
    offset,
  };
}

const DECIDED = new Set<ToolCallView["status"]>(["APPROVED", "REJECTED", "RUNNING"]);

function upsertCall(item: ChatItem, callId: string, change: (call: ToolCallView) => ToolCallView, name: string, args = ""): ChatItem {
  const known = item.toolCalls.some((c) => c.callId === callId);
  const base: ToolCallView = {
    callId,
    id: null,
    name,
    arguments: args,
    status: "CALLING",
    ok: false,
    error: null,
    result: null,
    size: null,
    truncated: false,
    ms: null,
    preview: null,
    decidedAt: null,
    outcomeMessageId: null,
    offset: item.content.length,
  };
  const toolCalls = known ? item.toolCalls.map((c) => (c.callId === callId ? change(c) : c)) : [...item.toolCalls, change(base)];
  return { ...item, toolCalls };
}

/**
 * One source per [n]. An extractive answer may quote several sentences of one source: each is an
 * EXTRACTED citation with the same marker and its own span, gathered here as the source's quotes.
 */
function sourcesOf(citations: MessageFieldsFragment["citations"]): SourceView[] {
  const byNumber = new Map<number, SourceView>();
  for (const c of citations) {
    const quote = c.kind === "EXTRACTED" ? [{ location: c.location, text: c.snippet }] : [];
    const known = byNumber.get(c.marker);
    if (known) {
      known.quotes = [...(known.quotes ?? []), ...quote];
      continue;
    }
    byNumber.set(c.marker, {
      number: c.marker,
      documentId: c.documentId,
      chunkId: c.chunkId,
      documentName: c.documentName,
      location: c.location,
      score: c.score,
      text: c.snippet,
      kind: c.kind,
      quotes: quote,
    });
  }
  return [...byNumber.values()];
}

// Stored failures keep only the message; "cancelled: …" and "interrupted: …" name their cause.
function codeOf(error: string | null): ErrorCode {
  const head = /^(\w+):/.exec(error ?? "")?.[1];
  return head === "cancelled" ? "CANCELLED" : head === "interrupted" ? "INTERRUPTED" : "FAILED";
}

function blank(key: string, role: Role, content: string): ChatItem {
  return {
    key,
    id: null,
    role,
    content,
    status: "PENDING",
    error: null,
    sources: [],
    cited: false,
    noContext: false,
    noAnswer: false,
    degraded: [],
    trace: null,
    createdAt: null,
    unsent: false,
    previous: null,
    toolCalls: [],
  };
}

function patch(state: ChatState, key: string, change: (item: ChatItem) => ChatItem | null): ChatState {
  const index = state.items.findIndex((item) => item.key === key);
  if (index < 0) return state;
  const next = change(state.items[index]!);
  const items = [...state.items];
  if (next) items[index] = next;
  else items.splice(index, 1);
  return { ...state, items };
}

function onEvent(state: ChatState, key: string, event: ChatEventFieldsFragment): ChatState {
  switch (event.__typename) {
    case "ChatQueued":
      return patch(state, key, (item) => ({ ...item, queued: event.position }));
    case "ChatSearchProgress":
      return patch(state, key, (item) => ({
        ...item,
        queued: undefined,
        searching: {
          number: event.number,
          budget: event.budget,
          query: event.query,
          rewritten: event.rewritten,
          decision: event.decision,
        },
      }));
    case "ChatRetrieval": {
      const withQuestion = patch(state, questionKey(key), (q) => ({ ...q, id: event.userMessageId, status: "COMPLETE" }));
      return patch(withQuestion, key, (item) => ({
        ...item,
        id: event.messageId,
        status: "STREAMING",
        queued: undefined,
        searching: undefined,
        content: "",
        error: null,
        previous: null,
        trace: null,
        cited: false,
        sources: event.sources.map((s) => ({
          number: s.number,
          documentId: s.documentId,
          chunkId: s.chunkId,
          documentName: s.documentName,
          location: s.location,
          score: s.score,
          text: s.text,
          kind: null,
        })),
        noContext: event.noContext,
        degraded: event.degraded,
        // A regenerated answer keeps the calls already decided (the server keeps them too); the rest go.
        toolCalls: item.toolCalls.filter((c) => DECIDED.has(c.status)).map((c) => ({ ...c, offset: 0 })),
      }));
    }
    case "ChatToolCall":
      return patch(state, key, (item) => upsertCall(item, event.callId, (c) => ({ ...c, name: event.name, arguments: event.arguments }), event.name, event.arguments));
    case "ChatToolResult":
      return patch(state, key, (item) =>
        upsertCall(
          item,
          event.callId,
          (c) => ({
            ...c,
            id: event.toolCallId ?? c.id,
            status: event.ok ? "EXECUTED" : "FAILED",
            ok: event.ok,
            error: event.error ?? null,
            result: event.summary,
            size: event.size,
            truncated: event.truncated,
            ms: event.ms,
          }),
          event.name,
        ),
      );
    case "ChatToolPreview":
      return patch(state, key, (item) =>
        upsertCall(item, event.callId, (c) => ({ ...c, id: event.toolCallId ?? c.id, status: "PREVIEW", arguments: event.arguments, preview: event.preview }), event.name, event.arguments),
      );
    case "ChatToken":
      return patch(state, key, (item) => ({ ...item, status: "STREAMING", content: item.content + event.text }));
    case "ChatDone": {
      // A turn that finished while the connection was down is replayed as ChatDone alone: its question was stored too.
      const stored = patch(state, questionKey(key), (q) => (q.status === "PENDING" ? { ...q, status: "COMPLETE" } : q));
      const done = patch(stored, key, (item) => {
        let stored = fromMessage(event.answer, key);
        // The calls stay where they were made in the text, while the stored text is the streamed one.
        if (stored.content === item.content) {
          const offsets = new Map(item.toolCalls.map((c) => [c.callId, c.offset]));
          stored = { ...stored, toolCalls: stored.toolCalls.map((c) => ({ ...c, offset: offsets.get(c.callId) ?? null })) };
        }
        // Without citations (turned off, or none attributed) keep the retrieved sources on screen.
        return stored.sources.length === 0 && item.sources.length > 0 ? { ...stored, sources: item.sources, cited: false } : stored;
      });
      return { ...done, activeKey: done.activeKey === key ? null : done.activeKey };
    }
    case "ChatError": {
      const error = { code: event.code, message: event.message };
      let next: ChatState;
      if (event.failedMessageId) {
        next = patch(state, questionKey(key), (q) => ({ ...q, status: "COMPLETE" }));
        next = patch(next, key, (item) => ({
          ...item,
          id: event.failedMessageId,
          status: "FAILED",
          content: event.partial,
          error,
          previous: null,
        }));
      } else {
        next = notStarted(state, key, error);
      }
      return { ...next, activeKey: next.activeKey === key ? null : next.activeKey };
    }
    default:
      return state;
  }
}

/** The turn was refused before anything was stored (busy, invalid) or the connection dropped early. */
function notStarted(state: ChatState, key: string, error: TurnError): ChatState {
  const item = state.items.find((i) => i.key === key);
  if (!item) return state;
  if (item.previous) return patch(state, key, () => ({ ...item.previous!, error }));
  if (item.id) return patch(state, key, (i) => ({ ...i, status: "FAILED", error }));
  // A new question: the answer placeholder goes, the question stays marked as not sent.
  const removed = patch(state, key, () => null);
  return patch(removed, questionKey(key), (q) => ({ ...q, status: "FAILED", unsent: true, error }));
}

export function chatReducer(state: ChatState, action: ChatAction): ChatState {
  switch (action.type) {
    case "loaded":
      return { items: action.messages.map((m) => fromMessage(m)), activeKey: null };
    case "prepended": {
      const known = new Set(state.items.map((i) => i.id));
      const older = action.messages.filter((m) => !known.has(m.id)).map((m) => fromMessage(m));
      return { ...state, items: [...older, ...state.items] };
    }
    case "sent":
      return {
        items: [...state.items, blank(questionKey(action.key), "USER", action.content), blank(action.key, "ASSISTANT", "")],
        activeKey: action.key,
      };
    case "regenerating": {
      const next = patch(state, action.key, (item) => ({ ...item, status: "PENDING", error: null, previous: item }));
      return { ...next, activeKey: action.key };
    }
    case "event":
      return onEvent(state, action.key, action.event);
    case "stored": {
      // The live error (its code) and partial text stay; only the trace is new.
      const { message } = action;
      return patch(state, action.key, (item) => (item.id === message.id && item.status === "FAILED" ? { ...item, trace: message.trace } : item));
    }
    case "streamFailed": {
      const item = state.items.find((i) => i.key === action.key);
      if (!item || item.status === "COMPLETE" || (item.status === "FAILED" && !item.previous)) {
        return { ...state, activeKey: state.activeKey === action.key ? null : state.activeKey };
      }
      const error: TurnError = { code: action.code ?? "CONNECTION", message: action.message };
      const next =
        item.status === "STREAMING" ? patch(state, action.key, (i) => ({ ...i, status: "FAILED", error })) : notStarted(state, action.key, error);
      return { ...next, activeKey: next.activeKey === action.key ? null : next.activeKey };
    }
    case "discard":
      return patch(state, action.key, (item) => (item.unsent ? null : item));
    case "toolDecided": {
      const { call } = action;
      const items = state.items.map((item) =>
        item.toolCalls.some((c) => c.id === call.id)
          ? { ...item, toolCalls: item.toolCalls.map((c) => (c.id === call.id ? { ...toolCallOf(call, c.offset), truncated: c.truncated } : c)) }
          : item,
      );
      return { ...state, items };
    }
    case "appended":
      if (state.items.some((item) => item.id === action.message.id)) return state;
      return { ...state, items: [...state.items, fromMessage(action.message)] };
    default:
      return state;
  }
}
