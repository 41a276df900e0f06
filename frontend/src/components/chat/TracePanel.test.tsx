import { MockedProvider } from "@apollo/client/testing/react";
import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { GuardOriginalDocument, type TraceFieldsFragment } from "../../gql/graphql";
import { extractiveAnswer, guard, loopedAnswer } from "../../test/fixtures";
import { TracePanel } from "./TracePanel";

const where = { page: null, lineStart: 1, lineEnd: 5, headingPath: "" };

function candidate(n: number, fate: TraceFieldsFragment["candidates"][number]["fate"], score: number | null) {
  return { chunkId: String(n), documentId: "1", documentName: `doc-${n}.md`, score, vectorRank: score === null ? null : n, keywordRank: n + 1, fusedRank: n, fusedScore: 0.03, rerankScore: null, passedOnWords: false, fate, location: where };
}

const trace: TraceFieldsFragment = {
  query: "How do I install it?",
  provider: "scripted",
  model: "scripted",
  effectiveMode: "KEYWORD",
  fusion: null,
  embeddingSpace: "local/all-MiniLM-L6-v2-int8@384",
  noContext: false,
  degraded: [{ reason: "VECTOR_SEARCH_FAILED", message: "vector search failed; used keyword search only" }],
  settings: { enableRag: true, topK: 2, threshold: 0.4, includeCitations: true, mode: "HYBRID" },
  candidates: [candidate(1, "KEPT", 0.8), candidate(2, "OVER_BUDGET", 0.7), candidate(3, "BEYOND_TOP_K", 0.6), candidate(4, "BELOW_THRESHOLD", 0.2), candidate(5, "BELOW_THRESHOLD", null)],
  timings: [
    { stage: "RETRIEVAL_EMBED", ms: 12.5 },
    { stage: "GENERATE", ms: 1530 },
  ],
  tokens: { prompt: 812, context: 540, completion: 64, answerReserve: 384, contextWindow: 2048, tokenizer: "estimate", exact: false },
  budget: { chunksOverBudget: [2], historyDropped: 1 },
  citations: { valid: 1, invalidRemoved: 2, attributed: false },
  answer: null,
  ranking: null,
  search: null,
  tools: null,
};

const searched: NonNullable<TraceFieldsFragment["search"]> = {
  quality: "BALANCED",
  rewriteMode: "ON",
  searched: "How do I install ragchat from source?",
  earlier: [],
  documentFilter: null,
  rewrite: { outcome: "USED", query: "How do I install ragchat from source?", reason: "rewritten by the chat model", ms: 420 },
  passes: [
    { number: 1, budget: 2, queries: ["How do I install ragchat from source?"], candidates: 20, threshold: 0.3, kept: 0, bestScore: null, adequate: false, judge: "HEURISTIC", reason: "no source passed the threshold", decision: "WIDEN", ms: 14, cacheHit: false },
    { number: 2, budget: 2, queries: ["How do I install ragchat from source?"], candidates: 40, threshold: 0.25, kept: 2, bestScore: 0.41, adequate: false, judge: "HEURISTIC", reason: "best score 0.41 (needs 0.45)", decision: "BUDGET", ms: 21, cacheHit: false },
  ],
  cache: { embeddingHits: 0, embeddingMisses: 1, resultHits: 0, resultMisses: 2 },
};

function renderPanel(onClose = vi.fn()) {
  render(<TracePanel trace={trace} open onClose={onClose} />);
  return screen.getByRole("dialog", { name: "Why this answer" });
}

describe("TracePanel", () => {
  it("lists every candidate with its scores, ranks and a distinct fate", () => {
    const panel = renderPanel();
    const rows = within(panel).getAllByTestId("trace-candidate");
    expect(rows.map((r) => r.dataset.fate)).toEqual(["KEPT", "OVER_BUDGET", "BEYOND_TOP_K", "BELOW_THRESHOLD", "BELOW_THRESHOLD"]);
    // Rows and badges are styled by their data-fate.
    expect(within(rows[0]!).getByText("Kept")).toHaveAttribute("data-fate", "KEPT");
    expect(within(rows[1]!).getByText("Over budget")).toHaveAttribute("data-fate", "OVER_BUDGET");
    expect(rows[1]).toHaveTextContent("cut to fit the model's context window");
    expect(rows[2]).toHaveTextContent("Beyond top K");
    expect(rows[2]).toHaveTextContent("top K is 2");
    expect(rows[3]).toHaveTextContent("score 0.20 < threshold 0.40");
    // A keyword-only hit has no similarity and no vector rank.
    expect(within(rows[4]!).getAllByText("—")).toHaveLength(2);
    expect(within(panel).getByTestId("fate-count-BELOW_THRESHOLD")).toHaveTextContent("2");
    expect(within(panel).getByTestId("fate-count-KEPT")).toHaveTextContent("1");
  });

  it("shows the ranking stages: the phrasings searched, the reranker and each candidate's rerank score", () => {
    const ranked = {
      ...trace,
      candidates: [{ ...candidate(2, "KEPT", 0.7), rerankScore: 3 }, { ...candidate(1, "BEYOND_TOP_K", 0.8), rerankScore: 0 }, candidate(3, "BEYOND_TOP_K", 0.6)],
      ranking: { expansions: ["install from source", "setup steps"], expansionFailed: null, reranker: "judge:scripted/scripted", reranked: 2, rerankFailed: null },
    };
    render(<TracePanel trace={ranked} open onClose={vi.fn()} />);
    const ranking = screen.getByTestId("trace-ranking");
    expect(within(ranking).getAllByRole("listitem").map((li) => li.textContent)).toEqual(["install from source", "setup steps"]);
    expect(ranking).toHaveTextContent("judge:scripted/scripted: scored the first 2");
    const rows = screen.getAllByTestId("trace-candidate");
    expect(rows[0]).toHaveTextContent("3.000");
    expect(within(rows[2]!).getAllByText("—").length).toBeGreaterThan(0);
    expect(screen.getByRole("columnheader", { name: "Rerank" })).toBeInTheDocument();
  });

  it("says why a source under the threshold was kept: on its words", () => {
    const words = { ...trace, candidates: [{ ...candidate(1, "KEPT", 0.05), passedOnWords: true }] };
    render(<TracePanel trace={words} open onClose={vi.fn()} />);
    const row = within(screen.getByRole("dialog", { name: "Why this answer" })).getByTestId("trace-candidate");
    expect(row).toHaveTextContent("score 0.05 < 0.40, kept on its words");
    expect(row).not.toHaveTextContent("≥");
  });

  it("shows no rerank column and no ranking section when no stage ran", () => {
    const panel = renderPanel();
    expect(within(panel).queryByTestId("trace-ranking")).toBeNull();
    expect(within(panel).queryByRole("columnheader", { name: "Rerank" })).toBeNull();
  });

  it("shows the settings used, the degradation, timings and token counts", () => {
    const panel = renderPanel();
    const settings = within(panel).getByTestId("trace-settings");
    expect(settings).toHaveTextContent("scripted/scripted");
    expect(settings).toHaveTextContent("Top K2");
    expect(settings).toHaveTextContent("Threshold0.40");
    expect(settings).toHaveTextContent("ran as keyword");
    expect(panel).toHaveTextContent("vector search failed; used keyword search only");
    const timings = within(panel).getByTestId("trace-timings");
    expect(timings).toHaveTextContent("retrieval · embed");
    expect(timings).toHaveTextContent("12.5 ms");
    expect(timings).toHaveTextContent("1.53 s");
    const tokens = within(panel).getByTestId("trace-tokens");
    expect(tokens).toHaveTextContent("Prompt≈812");
    expect(tokens).toHaveTextContent("of which context≈540");
    expect(tokens).toHaveTextContent("Context window2048");
    expect(tokens).toHaveTextContent("Answer reserve384");
    expect(tokens).toHaveTextContent("estimate");
    expect(tokens).toHaveTextContent("sources 2");
    expect(within(panel).getByText("estimated")).toBeInTheDocument();
    expect(panel).toHaveTextContent("2 invalid markers removed");
  });

  it("shows an answer's requested and actual mode, why, and the guard's verdict with its reasons, counts and the model's text", async () => {
    const answer = { ...loopedAnswer, guard: guard({ ...loopedAnswer.guard, echoRemoved: 2, markersDropped: 1, unsupportedSentences: 3 }) };
    const looped = "the source of the source of the source of the source of";
    const mocks = [
      {
        request: { query: GuardOriginalDocument, variables: { id: "2" } },
        result: { data: { message: { __typename: "ChatMessage", id: "2", trace: { answer: { guard: { original: looped } } } } } },
      },
    ];
    render(
      <MockedProvider mocks={mocks}>
        <TracePanel trace={{ ...trace, answer }} messageId="2" open onClose={vi.fn()} />
      </MockedProvider>,
    );
    const section = screen.getByRole("region", { name: "Answer" });
    const facts = within(section).getByTestId("trace-answer");
    expect(facts).toHaveTextContent("Modegenerative");
    expect(facts).toHaveTextContent("Whythe session asks for generated answers");
    expect(facts).toHaveTextContent("Answer guardreplaced by quoted sentences");
    expect(facts).toHaveTextContent("Unsupported sentences3");
    expect(facts).toHaveTextContent("Prompt echoes removed2");
    expect(facts).toHaveTextContent("Markers dropped1");
    expect(facts).toHaveTextContent("Stopped earlyyes: the answer looped");
    expect(facts).toHaveTextContent("Sentences quoted2");
    expect(within(section).getByRole("list", { name: "What the answer guard found" })).toHaveTextContent("the text “the source of” repeats 4+ times in a row");
    await userEvent.click(within(section).getByRole("button", { name: "Show the model's text" }));
    expect(await within(section).findByTestId("guard-original")).toHaveTextContent(looped);
  });

  it("shows AUTO choosing the extractive mode, and no guard for a quoted answer", () => {
    render(<TracePanel trace={{ ...trace, answer: extractiveAnswer }} messageId="2" open onClose={vi.fn()} />);
    const facts = within(screen.getByRole("region", { name: "Answer" })).getByTestId("trace-answer");
    expect(facts).toHaveTextContent("Modeauto → extractive");
    expect(facts).toHaveTextContent("is not a reliable writer");
    expect(facts).toHaveTextContent("Sentences quoted2 (a sentence needs 0.40)");
    expect(facts).not.toHaveTextContent("Answer guard");
    expect(screen.queryByRole("button", { name: "Show the model's text" })).toBeNull();
    const considered = screen.getByTestId("trace-considered");
    const rows = within(considered).getAllByRole("row").slice(1);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toHaveTextContent("[1]0.62Run the installer.quoted");
    expect(rows[1]).toHaveTextContent("below the bar: 0.31 < 0.40");
  });

  it("shows what was searched, the rewrite and every retrieval pass with its verdict", () => {
    render(<TracePanel trace={{ ...trace, search: searched }} open onClose={vi.fn()} />);
    const panel = screen.getByRole("dialog", { name: "Why this answer" });
    expect(within(panel).getByTestId("trace-searched")).toHaveTextContent("How do I install ragchat from source?");
    expect(within(panel).getByTestId("trace-rewrite").dataset.outcome).toBe("USED");
    const passes = within(panel).getAllByTestId("trace-pass");
    expect(passes.map((p) => p.dataset.decision)).toEqual(["WIDEN", "BUDGET"]);
    expect(passes[0]).toHaveTextContent("searched again");
    expect(passes[1]).toHaveTextContent("0.25");
    expect(within(panel).getByTestId("trace-document-filter")).toHaveTextContent("every document");
  });

  it("says which documents a filtered search read", () => {
    const documentFilter = { tagsAny: ["faq", "handbook"], tagsAll: [], pathPrefix: "runbooks/", kinds: ["pdf"], dateFrom: "2026-01-01T00:00:00+00:00", dateTo: null };
    render(<TracePanel trace={{ ...trace, search: { ...searched, documentFilter } }} open onClose={vi.fn()} />);
    expect(screen.getByTestId("trace-document-filter")).toHaveTextContent("only those tagged faq or handbook, under runbooks/, of type pdf, dated from 2026-01-01");
  });

  it("has no Answer section for a trace from before answer modes", () => {
    renderPanel();
    expect(screen.queryByRole("region", { name: "Answer" })).toBeNull();
  });

  it("closes with Escape", async () => {
    const onClose = vi.fn();
    renderPanel(onClose);
    await userEvent.keyboard("{Escape}");
    expect(onClose).toHaveBeenCalled();
  });

  it("shows tool selection's stages and the calls the model made", () => {
    const tools: NonNullable<TraceFieldsFragment["tools"]> = {
      groups: ["ops"],
      topK: 1,
      minScore: null,
      degraded: null,
      candidates: [
        { name: "create_ticket", score: 0.62 },
        { name: "close_ticket", score: 0.31 },
        { name: "ops_help", score: 0.1 },
      ],
      selected: [
        { name: "create_ticket", score: 0.62, reason: "RANKED" },
        { name: "ops_help", score: 0.1, reason: "CORE" },
      ],
      calls: [{ callId: "c1", name: "create_ticket", arguments: '{"title":"x"}', status: "PREVIEW", error: null, resultSize: 0, truncated: false, ms: 3.5 }],
      rounds: 2,
      stopped: "a call waits for the user's approval",
    };
    render(<TracePanel trace={{ ...trace, tools }} open onClose={vi.fn()} />);
    expect(screen.getByTestId("trace-tools")).toHaveTextContent("Offered2 of 3 (top 1, then core tools)");
    expect(screen.getByTestId("trace-tools")).toHaveTextContent("Stoppeda call waits for the user's approval");
    const rows = screen.getAllByTestId("trace-tool-candidate");
    expect(rows.map((r) => r.textContent)).toEqual(["create_ticket0.62similar", "close_ticket0.31no", "ops_help0.10core"]);
    expect(screen.getByTestId("trace-tool-call")).toHaveAttribute("data-status", "PREVIEW");
  });
});
