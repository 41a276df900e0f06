import { describe, expect, it } from "vitest";
import type { ChatEventFieldsFragment, MessageFieldsFragment } from "../gql/graphql";
import { guard, loopedAnswer, trace } from "../test/fixtures";
import { type ChatAction, type ChatState, chatReducer, initialChatState, questionKey } from "./chatReducer";
import { ordinal } from "./ordinal";

const location = { page: null, lineStart: 3, lineEnd: 9, headingPath: "Guide > Install" };

function message(overrides: Partial<MessageFieldsFragment> = {}): MessageFieldsFragment {
  return {
    id: "2",
    sessionId: "1",
    role: "ASSISTANT",
    content: "Run the installer [1].",
    status: "COMPLETE",
    error: null,
    createdAt: "2025-01-01T10:00:00",
    completedAt: "2025-01-01T10:00:02",
    noContext: false,
    noAnswer: false,
    degraded: [],
    citations: [
      { id: "9", marker: 1, kind: "MODEL", score: 0.71, rank: 1, documentId: "4", chunkId: "40", documentName: "guide.md", snippet: "Run the installer.", location },
    ],
    toolCalls: [],
    trace: null,
    ...overrides,
  };
}

const retrieval: ChatEventFieldsFragment = {
  __typename: "ChatRetrieval",
  messageId: "2",
  userMessageId: "1",
  noContext: false,
  degraded: [{ reason: "VECTOR_SEARCH_FAILED", message: "vector search failed; used keyword search only" }],
  sources: [
    { number: 1, chunkId: "40", documentId: "4", documentName: "guide.md", score: 0.71, rank: 1, text: "Run the installer.", location },
    { number: 2, chunkId: "41", documentId: "4", documentName: "guide.md", score: null, rank: 2, text: "Then reboot.", location },
  ],
};
const token = (text: string): ChatEventFieldsFragment => ({ __typename: "ChatToken", messageId: "2", text });

function run(...actions: ChatAction[]): ChatState {
  return actions.reduce(chatReducer, initialChatState);
}

const ev = (event: ChatEventFieldsFragment, key = "t1"): ChatAction => ({ type: "event", key, event });

describe("chatReducer", () => {
  it("loads stored messages with their citations as sources", () => {
    const state = run({ type: "loaded", messages: [message({ id: "1", role: "USER", content: "How?", citations: [] }), message()] });
    expect(state.items.map((i) => [i.key, i.role, i.status])).toEqual([
      ["m1", "USER", "COMPLETE"],
      ["m2", "ASSISTANT", "COMPLETE"],
    ]);
    expect(state.items[1]!.sources).toEqual([expect.objectContaining({ number: 1, documentName: "guide.md", score: 0.71, kind: "MODEL", text: "Run the installer." })]);
    expect(state.activeKey).toBeNull();
  });

  it("shows the place in line while the question waits for a slot, and forgets it once retrieval is done", () => {
    const queued = (position: number): ChatEventFieldsFragment => ({ __typename: "ChatQueued", position });
    const waiting = run({ type: "sent", key: "t1", content: "How?" }, ev(queued(2)), ev(queued(1)));
    expect(waiting.items[1]).toMatchObject({ status: "PENDING", queued: 1 });
    const running = chatReducer(waiting, ev(retrieval));
    expect(running.items[1]!.queued).toBeUndefined();
    expect(running.items[1]!.status).toBe("STREAMING");
  });

  it("keeps the last search pass while retrieval runs (searching again, the rewritten query), and forgets it with the sources", () => {
    const pass = (number: number, decision: "WIDEN" | "BUDGET"): ChatEventFieldsFragment => ({
      __typename: "ChatSearchProgress",
      messageId: "2",
      number,
      budget: 2,
      query: "How do I install Aurora?",
      rewritten: true,
      kept: 0,
      bestScore: null,
      decision,
    });
    const first = run({ type: "sent", key: "t1", content: "And how?" }, ev(pass(1, "WIDEN")));
    expect(first.items[1]).toMatchObject({ status: "PENDING", searching: { number: 1, budget: 2, decision: "WIDEN", rewritten: true, query: "How do I install Aurora?" } });
    const second = chatReducer(first, ev(pass(2, "BUDGET")));
    expect(second.items[1]!.searching).toMatchObject({ number: 2, decision: "BUDGET" });
    expect(chatReducer(second, ev(retrieval)).items[1]!.searching).toBeUndefined();
  });

  it("says a place in line as people do", () => {
    expect([1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111].map(ordinal)).toEqual([
      "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th",
    ]);
  });

  it("adds the question and an answer placeholder when a message is sent", () => {
    const state = run({ type: "sent", key: "t1", content: "How do I install it?" });
    expect(state.items).toHaveLength(2);
    expect(state.items[0]).toMatchObject({ key: questionKey("t1"), role: "USER", content: "How do I install it?", status: "PENDING" });
    expect(state.items[1]).toMatchObject({ key: "t1", role: "ASSISTANT", content: "", status: "PENDING", id: null });
    expect(state.activeKey).toBe("t1");
  });

  it("turns retrieval, tokens and done into a streamed then stored answer", () => {
    let state = run({ type: "sent", key: "t1", content: "How?" }, ev(retrieval));
    expect(state.items[0]).toMatchObject({ id: "1", status: "COMPLETE" });
    expect(state.items[1]).toMatchObject({ id: "2", status: "STREAMING", content: "", cited: false, degraded: retrieval.__typename === "ChatRetrieval" ? retrieval.degraded : [] });
    expect(state.items[1]!.sources.map((s) => s.number)).toEqual([1, 2]);

    state = [token("Run "), token("the "), token("installer [1].")].reduce((s, t) => chatReducer(s, ev(t)), state);
    expect(state.items[1]).toMatchObject({ status: "STREAMING", content: "Run the installer [1]." });
    expect(state.activeKey).toBe("t1");

    state = chatReducer(state, ev({ __typename: "ChatDone", answer: message() }));
    expect(state.items[1]).toMatchObject({ key: "t1", id: "2", status: "COMPLETE", cited: true, content: "Run the installer [1]." });
    expect(state.items[1]!.sources.map((s) => s.number)).toEqual([1]);
    expect(state.activeKey).toBeNull();
  });

  it("follows a turn replayed after a reconnect from its start, without doubling its text", () => {
    let state = run({ type: "sent", key: "t1", content: "How?" }, ev(retrieval), ev(token("Run ")), ev(token("the ")));
    // graphql-ws subscribed again with the same clientMessageId: the server replays the turn, then follows it
    state = [retrieval, token("Run "), token("the "), token("installer [1].")].reduce((s, e) => chatReducer(s, ev(e)), state);
    expect(state.items[1]).toMatchObject({ id: "2", status: "STREAMING", content: "Run the installer [1]." });
  });

  it("takes a turn that finished while the connection was down, replayed as Done alone", () => {
    const state = run({ type: "sent", key: "t1", content: "How?" }, ev({ __typename: "ChatDone", answer: message() }));
    expect(state.items.map((i) => [i.role, i.status])).toEqual([
      ["USER", "COMPLETE"],
      ["ASSISTANT", "COMPLETE"],
    ]);
    expect(state.activeKey).toBeNull();
  });

  it("shows the stored answer after Done, not the streamed text the answer guard replaced", () => {
    let state = run({ type: "sent", key: "t1", content: "How?" }, ev(retrieval));
    state = [token("the source of "), token("the source of "), token("the source of")].reduce((s, t) => chatReducer(s, ev(t)), state);
    const quoted = message({
      content: "Run the installer [1].",
      citations: [{ ...message().citations[0]!, kind: "EXTRACTED", location: { ...location, lineStart: 5, lineEnd: 5 } }],
      trace: trace({ answer: loopedAnswer }),
    });
    state = chatReducer(state, ev({ __typename: "ChatDone", answer: quoted }));
    expect(state.items[1]).toMatchObject({ status: "COMPLETE", content: "Run the installer [1]." });
    expect(state.items[1]!.trace?.answer?.guard?.decision).toBe("FALLBACK");
    expect(state.items[1]!.sources).toEqual([expect.objectContaining({ number: 1, kind: "EXTRACTED", quotes: [{ location: { ...location, lineStart: 5, lineEnd: 5 }, text: "Run the installer." }] })]);
  });

  it("gathers the sentences quoted from one source under its number, each with its own span", () => {
    const cite = message().citations[0]!;
    const at = (lineStart: number, lineEnd: number) => ({ ...location, lineStart, lineEnd });
    const state = run({
      type: "loaded",
      messages: [
        message({
          content: "Run the installer [1]. Reboot [2]. Then log in [1].",
          citations: [
            { ...cite, id: "1", kind: "EXTRACTED", location: at(4, 4), snippet: "Run the installer." },
            { ...cite, id: "2", marker: 2, chunkId: "41", kind: "EXTRACTED", location: at(20, 21), snippet: "Reboot." },
            { ...cite, id: "3", kind: "EXTRACTED", location: at(9, 9), snippet: "Then log in." },
          ],
        }),
      ],
    });
    const sources = state.items[0]!.sources;
    expect(sources.map((s) => s.number)).toEqual([1, 2]);
    expect(sources[0]!.quotes).toEqual([
      { location: at(4, 4), text: "Run the installer." },
      { location: at(9, 9), text: "Then log in." },
    ]);
    expect(sources[1]!.quotes).toEqual([{ location: at(20, 21), text: "Reboot." }]);
  });

  it("adds the stored trace to an answer that failed live, keeping the live error", () => {
    let state = run(
      { type: "sent", key: "t1", content: "How?" },
      ev(retrieval),
      ev(token("the the the")),
      ev({ __typename: "ChatError", failedMessageId: "2", code: "UNUSABLE_ANSWER", message: "the answer was unusable", partial: "the the the" }),
    );
    const rejected = trace({ answer: { ...loopedAnswer, guard: guard({ decision: "REJECTED", reasons: ["the answer is empty"] }) } });
    const stored = message({ status: "FAILED", content: "", error: "the answer was unusable", citations: [], trace: rejected });
    state = chatReducer(state, { type: "stored", key: "t1", message: stored });
    expect(state.items[1]).toMatchObject({ status: "FAILED", content: "the the the", error: { code: "UNUSABLE_ANSWER" }, trace: rejected });
    // Only for the message it was fetched for: a later turn in the same item is left alone.
    const other = chatReducer(state, { type: "stored", key: "t1", message: { ...stored, id: "99", trace: null } });
    expect(other.items[1]!.trace).toBe(rejected);
  });

  it("keeps the retrieved sources when the stored answer has no citations", () => {
    const state = run({ type: "sent", key: "t1", content: "How?" }, ev(retrieval), ev({ __typename: "ChatDone", answer: message({ citations: [] }) }));
    expect(state.items[1]!.sources).toHaveLength(2);
    expect(state.items[1]!.cited).toBe(false);
  });

  it("marks a failed answer with its partial text and error, and the question as stored", () => {
    const state = run(
      { type: "sent", key: "t1", content: "How?" },
      ev(retrieval),
      ev(token("Run the")),
      ev({ __typename: "ChatError", failedMessageId: "2", code: "PROVIDER_UNAVAILABLE", message: "the model failed mid-stream", partial: "Run the" }),
    );
    expect(state.items[0]!.status).toBe("COMPLETE");
    expect(state.items[1]).toMatchObject({ id: "2", status: "FAILED", content: "Run the", error: { code: "PROVIDER_UNAVAILABLE", message: "the model failed mid-stream" } });
    expect(state.activeKey).toBeNull();
  });

  it("keeps a question the server refused (busy) as unsent, without an empty answer", () => {
    const state = run(
      { type: "sent", key: "t1", content: "How?" },
      ev({ __typename: "ChatError", failedMessageId: null, code: "BUSY", message: "3 answers are being generated", partial: "" }),
    );
    expect(state.items).toHaveLength(1);
    expect(state.items[0]).toMatchObject({ role: "USER", unsent: true, status: "FAILED", error: { code: "BUSY" } });
    expect(chatReducer(state, { type: "discard", key: questionKey("t1") }).items).toEqual([]);
  });

  it("regenerates a failed answer in place", () => {
    const failed = message({ status: "FAILED", content: "Run", error: "the model failed", citations: [] });
    let state = run({ type: "loaded", messages: [failed] }, { type: "regenerating", key: "m2" });
    expect(state.items[0]).toMatchObject({ status: "PENDING", content: "Run", error: null });
    expect(state.activeKey).toBe("m2");

    state = chatReducer(state, ev(retrieval, "m2"));
    expect(state.items[0]).toMatchObject({ status: "STREAMING", content: "", previous: null });
    state = chatReducer(state, ev({ __typename: "ChatDone", answer: message() }, "m2"));
    expect(state.items).toHaveLength(1);
    expect(state.items[0]).toMatchObject({ key: "m2", status: "COMPLETE", error: null });
  });

  it("restores the old answer, with the error, when a regeneration cannot start", () => {
    const failed = message({ status: "FAILED", content: "Run", error: "the model failed", citations: [] });
    const state = run(
      { type: "loaded", messages: [failed] },
      { type: "regenerating", key: "m2" },
      ev({ __typename: "ChatError", failedMessageId: null, code: "BUSY", message: "busy", partial: "" }, "m2"),
    );
    expect(state.items[0]).toMatchObject({ status: "FAILED", content: "Run", error: { code: "BUSY" }, previous: null });
    expect(state.activeKey).toBeNull();
  });

  it("fails a streaming answer when the connection drops, and ignores a late end of stream", () => {
    let state = run({ type: "sent", key: "t1", content: "How?" }, ev(retrieval), ev(token("Run")), { type: "streamFailed", key: "t1", message: "socket closed" });
    expect(state.items[1]).toMatchObject({ status: "FAILED", content: "Run", error: { code: "CONNECTION", message: "socket closed" } });
    const again = chatReducer(state, { type: "streamFailed", key: "t1", message: "ended" });
    expect(again.items).toEqual(state.items);

    state = run({ type: "sent", key: "t1", content: "How?" }, ev(retrieval), ev({ __typename: "ChatDone", answer: message() }), { type: "streamFailed", key: "t1", message: "ended" });
    expect(state.items[1]!.status).toBe("COMPLETE");
  });

  it("reads the cause of stored failures", () => {
    const state = run({ type: "loaded", messages: [message({ status: "FAILED", error: "interrupted: the server stopped" })] });
    expect(state.items[0]!.error).toEqual({ code: "INTERRUPTED", message: "interrupted: the server stopped" });
  });

  it("prepends earlier messages without duplicates", () => {
    const state = run({ type: "loaded", messages: [message({ id: "5" })] }, { type: "prepended", messages: [message({ id: "3" }), message({ id: "5" })] });
    expect(state.items.map((i) => i.id)).toEqual(["3", "5"]);
  });
});
