import { describe, expect, it } from "vitest";
import type { ChatEventFieldsFragment, MessageFieldsFragment, ToolCallFieldsFragment } from "../gql/graphql";
import { segmentsOf } from "../components/chat/Messages";
import { type ChatAction, type ChatState, chatReducer, initialChatState } from "./chatReducer";


function stored(overrides: Partial<ToolCallFieldsFragment> = {}): ToolCallFieldsFragment {
  return {
    id: "31",
    messageId: "2",
    position: 0,
    callId: "call_1",
    toolName: "create_ticket",
    arguments: '{"title": "printer"}',
    status: "PREVIEW",
    ok: true,
    result: null,
    resultSize: 0,
    error: null,
    ms: null,
    preview: "POST https://tickets.example/new",
    decidedAt: null,
    finishedAt: null,
    outcomeMessageId: null,
    ...overrides,
  };
}

function message(overrides: Partial<MessageFieldsFragment> = {}): MessageFieldsFragment {
  return {
    id: "2",
    sessionId: "1",
    role: "ASSISTANT",
    content: "Let me look. It waits for your approval.",
    status: "COMPLETE",
    error: null,
    createdAt: "2026-01-01T10:00:00",
    completedAt: "2026-01-01T10:00:02",
    noContext: false,
    noAnswer: false,
    degraded: [],
    citations: [],
    toolCalls: [],
    trace: null,
    ...overrides,
  };
}

const retrieval: ChatEventFieldsFragment = { __typename: "ChatRetrieval", messageId: "2", userMessageId: "1", noContext: true, degraded: [], sources: [] };
const token = (text: string): ChatEventFieldsFragment => ({ __typename: "ChatToken", messageId: "2", text });
const ev = (event: ChatEventFieldsFragment): ChatAction => ({ type: "event", key: "t1", event });
const run = (...actions: ChatAction[]): ChatState => actions.reduce(chatReducer, initialChatState);

describe("chatReducer with tool calls", () => {
  it("puts each call where it was made in the text, with its result, error and timing", () => {
    const state = run(
      { type: "sent", key: "t1", content: "Weather and tickets?" },
      ev(retrieval),
      ev(token("Let me look. ")),
      ev({ __typename: "ChatToolCall", messageId: "2", callId: "a", name: "weather", arguments: '{"city": "Paris"}' }),
      ev({ __typename: "ChatToolResult", messageId: "2", callId: "a", toolCallId: "30", name: "weather", ok: true, error: null, summary: "12°C, rain", size: 10, truncated: false, ms: 42.5 }),
      ev({ __typename: "ChatToolCall", messageId: "2", callId: "b", name: "weather", arguments: "{oops" }),
      ev({ __typename: "ChatToolResult", messageId: "2", callId: "b", toolCallId: "31", name: "weather", ok: false, error: "invalid arguments", summary: "invalid arguments: ...", size: 21, truncated: false, ms: 0.3 }),
      ev(token("It rains.")),
    );
    const answer = state.items[1]!;
    expect(answer.toolCalls.map((c) => [c.callId, c.id, c.status, c.offset, c.ms])).toEqual([
      ["a", "30", "EXECUTED", 13, 42.5],
      ["b", "31", "FAILED", 13, 0.3],
    ]);
    expect(answer.toolCalls[1]!.error).toBe("invalid arguments");
    const parts = segmentsOf(answer.content, answer.toolCalls);
    expect(parts.map((p) => ("call" in p ? `call:${p.call.callId}` : p.text))).toEqual(["Let me look. ", "call:a", "call:b", "It rains."]);
  });

  it("turns a side-effecting call into a preview, keeps its place once stored, and shows the decision", () => {
    let state = run(
      { type: "sent", key: "t1", content: "Open a ticket" },
      ev(retrieval),
      ev(token("Let me look. ")),
      ev({ __typename: "ChatToolCall", messageId: "2", callId: "call_1", name: "create_ticket", arguments: '{"title": "printer"}' }),
      ev({ __typename: "ChatToolPreview", messageId: "2", callId: "call_1", toolCallId: "31", name: "create_ticket", arguments: '{"title": "printer"}', preview: "POST https://tickets.example/new" }),
      ev(token("It waits for your approval.")),
    );
    expect(state.items[1]!.toolCalls[0]).toMatchObject({ id: "31", status: "PREVIEW", preview: "POST https://tickets.example/new", offset: 13 });

    state = chatReducer(state, ev({ __typename: "ChatDone", answer: message({ toolCalls: [stored()] }) }));
    expect(state.items[1]!.toolCalls[0]).toMatchObject({ id: "31", status: "PREVIEW", offset: 13 });

    state = chatReducer(state, { type: "toolDecided", call: stored({ status: "APPROVED", result: '{"id": 7}', resultSize: 9, ms: 12, outcomeMessageId: "3", decidedAt: "2026-01-01T10:01:00" }) });
    expect(state.items[1]!.toolCalls[0]).toMatchObject({ status: "APPROVED", result: '{"id": 7}', outcomeMessageId: "3", offset: 13 });

    const outcome = message({ id: "3", content: "create_ticket ran: {\"id\": 7}", toolCalls: [] });
    state = chatReducer(state, { type: "appended", message: outcome });
    state = chatReducer(state, { type: "appended", message: outcome });
    expect(state.items.map((i) => i.id)).toEqual(["1", "2", "3"]);
  });

  it("shows stored calls before the text after a reload, with their decision", () => {
    const state = run({ type: "loaded", messages: [message({ toolCalls: [stored({ status: "REJECTED", decidedAt: "2026-01-01T10:01:00" })] })] });
    const answer = state.items[0]!;
    expect(answer.toolCalls[0]).toMatchObject({ status: "REJECTED", offset: null });
    expect(segmentsOf(answer.content, answer.toolCalls).map((p) => ("call" in p ? "call" : "text"))).toEqual(["call", "text"]);
  });

  it("keeps a regenerated answer's decided calls and drops its undecided ones", () => {
    let state = run({
      type: "loaded",
      messages: [message({ toolCalls: [stored({ id: "31", callId: "a", status: "APPROVED" }), stored({ id: "32", callId: "b", status: "PREVIEW" })] })],
    });
    state = chatReducer(state, { type: "regenerating", key: "m2" });
    state = chatReducer(state, { type: "event", key: "m2", event: retrieval });
    expect(state.items[0]!.toolCalls.map((c) => [c.callId, c.status])).toEqual([["a", "APPROVED"]]);
  });
});
