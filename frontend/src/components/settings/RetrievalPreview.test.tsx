import type { MockLink } from "@apollo/client/testing";
import { MockedProvider } from "@apollo/client/testing/react";
import { render, screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { RetrievalPreviewDocument, type RetrievalPreviewQuery } from "../../gql/graphql";
import { RetrievalPreview } from "./RetrievalPreview";

const where = { page: null, lineStart: 1, lineEnd: 4, headingPath: "Guide > Install" };
const scores = [0.71, 0.55, 0.32, 0.12];

type Ranking = { expansions: string[]; expansionFailed: string | null; reranker: string | null; reranked: number; rerankFailed: string | null };

function answer(topK: number, threshold: number, ranking: Ranking | null = null): MockLink.MockedResponse<RetrievalPreviewQuery> {
  let kept = 0;
  const hits = scores.map((score, i) => {
    const passes = score >= threshold;
    const fate = passes && kept < topK ? "KEPT" : passes ? "BEYOND_TOP_K" : "BELOW_THRESHOLD";
    if (fate === "KEPT") kept += 1;
    return { chunkId: String(i + 1), documentId: "1", documentName: "guide.md", text: `passage ${i + 1}`, score, vectorRank: i + 1, keywordRank: null, fusedRank: i + 1, rerankScore: ranking?.reranker ? 4 - i : null, passedOnWords: false, fate, location: where } as const;
  });
  return {
    request: { query: RetrievalPreviewDocument, variables: { sessionId: "7", message: "How do I install it?", topK, threshold } },
    result: {
      data: {
        retrievalPreview: { __typename: "SearchResults", query: "How do I install it?", topK, threshold, mode: "HYBRID", effectiveMode: "HYBRID", fusion: ranking ? "RRF" : "CONVEX", ranking, degraded: [], timings: [],
          kept: hits.filter((hit) => hit.fate === "KEPT").map((hit) => ({ chunkId: hit.chunkId })),
          hits: { __typename: "SearchHitConnection", totalCount: hits.length, edges: hits.map((node) => ({ node })) },
        },
      },
    },
  };
}

function preview(topK: number, threshold: number) {
  return <RetrievalPreview sessionId="7" topK={topK} threshold={threshold} enabled initialQuestion="How do I install it?" debounceMs={0} />;
}

describe("RetrievalPreview", () => {
  it("shows what the draft settings keep and drop, and follows a threshold change", async () => {
    const { rerender } = render(<MockedProvider mocks={[answer(2, 0.3), answer(2, 0.6)]}>{preview(2, 0.3)}</MockedProvider>);
    const summary = await screen.findByTestId("preview-summary");
    expect(summary).toHaveTextContent("Would keep 2 of 4 candidates at top 2, threshold 0.30.");
    const hits = screen.getAllByTestId("preview-hit");
    expect(hits.map((h) => h.dataset.fate)).toEqual(["KEPT", "KEPT", "BEYOND_TOP_K", "BELOW_THRESHOLD"]);
    expect(within(hits[3]!).getByText("score 0.12 < threshold 0.30")).toBeInTheDocument();

    rerender(<MockedProvider mocks={[answer(2, 0.3), answer(2, 0.6)]}>{preview(2, 0.6)}</MockedProvider>);
    await waitFor(() => expect(screen.getByTestId("preview-summary")).toHaveTextContent("Would keep 1 of 4 candidates at top 2, threshold 0.60."));
    expect(screen.getAllByTestId("preview-hit").map((h) => h.dataset.fate)).toEqual(["KEPT", "BELOW_THRESHOLD", "BELOW_THRESHOLD", "BELOW_THRESHOLD"]);
  });

  it("asks for valid values instead of querying with invalid ones", () => {
    render(
      <MockedProvider mocks={[]}>
        <RetrievalPreview sessionId="7" topK={null} threshold={0.3} enabled initialQuestion="x" debounceMs={0} />
      </MockedProvider>,
    );
    expect(screen.getByText("Fix top K and threshold to see the preview.")).toBeInTheDocument();
  });
  it("shows the ranking stages the next turn would run: its other phrasings and its reranker", async () => {
    const ranking = { expansions: ["setting it up"], expansionFailed: null, reranker: "judge:local/smol", reranked: 4, rerankFailed: null };
    render(<MockedProvider mocks={[answer(2, 0.3, ranking)]}>{preview(2, 0.3)}</MockedProvider>);
    expect(await screen.findByTestId("preview-ranking")).toHaveTextContent("also searched “setting it up” · reranked the first 4 by judge:local/smol");
    expect(screen.getAllByTestId("preview-hit")[0]).toHaveTextContent("rerank 4.00");
  });
});
