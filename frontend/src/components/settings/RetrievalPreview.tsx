import { useQuery } from "@apollo/client/react";
import { useState } from "react";
import { RetrievalPreviewDocument, type SearchResultsFieldsFragment } from "../../gql/graphql";
import { formatHeadingPath, formatPlace } from "../../lib/format";
import { cx } from "../../lib/cx";
import { useDebounced } from "../../lib/useDebounced";
import { LinkButton } from "../Button";
import { FormError, Hint } from "../Field";
import { FateBadge, FateLegend, Score, fateCounts, fateReason } from "../retrieval/Fate";
import shared from "../../styles/shared.module.css";
import { PreviewFrame } from "./PreviewFrame";
import styles from "./RetrievalPreview.module.css";

export interface RetrievalPreviewProps {
  sessionId: string;
  /** The draft values; null while the input is not a valid number (no preview then). */
  topK: number | null;
  threshold: number | null;
  enabled: boolean;
  /** Pre-filled question (the chat's last one). */
  initialQuestion?: string;
  debounceMs?: number;
}

const SHOWN = 8;

/**
 * What retrieval would keep for a question with the draft topK/threshold, before they are saved:
 * kept and dropped passages, and why. Debounced, so dragging a slider asks once it settles.
 */
export function RetrievalPreview({ sessionId, topK, threshold, enabled, initialQuestion = "", debounceMs = 350 }: RetrievalPreviewProps) {
  const [question, setQuestion] = useState(initialQuestion);
  const wanted = { question: question.trim(), topK, threshold };
  const settled = useDebounced(wanted, debounceMs);
  const ready = enabled && settled.question.length > 0 && settled.topK !== null && settled.threshold !== null;
  const { data, previousData, loading, error } = useQuery(RetrievalPreviewDocument, {
    variables: { sessionId, message: settled.question, topK: settled.topK, threshold: settled.threshold },
    skip: !ready,
    fetchPolicy: "no-cache",
  });
  const result = (data ?? previousData)?.retrievalPreview;
  const pending = loading || wanted.question !== settled.question || wanted.topK !== settled.topK || wanted.threshold !== settled.threshold;

  return (
    <PreviewFrame
      name="Retrieval preview"
      testId="retrieval-preview"
      label="Preview retrieval"
      placeholder="Type a question to see what would be retrieved"
      value={question}
      onChange={setQuestion}
      busy={ready && pending}
    >
      {!enabled && <Hint>RAG is off: nothing is retrieved, the model answers on its own.</Hint>}
      {enabled && (topK === null || threshold === null) && <Hint>Fix top K and threshold to see the preview.</Hint>}
      {enabled && !question.trim() && <Hint>The preview uses the values above, saved or not.</Hint>}
      {ready && error && !result && <FormError>Preview unavailable: {error.message}</FormError>}
      {ready && result && result.__typename !== "SearchResults" && (
        <FormError>{"message" in result ? result.message : "Preview unavailable."}</FormError>
      )}
      {enabled && question.trim() && result?.__typename === "SearchResults" && <PreviewResults results={result} stale={pending} />}
    </PreviewFrame>
  );
}

type Ranking = NonNullable<SearchResultsFieldsFragment["ranking"]>;

/** The ranking stages the next turn would run: its other phrasings and its reranker. */
function RankingHint({ ranking }: { ranking: Ranking }) {
  const phrasings = ranking.expansions.length > 0 ? `also searched ${ranking.expansions.map((e) => `“${e}”`).join(", ")}` : ranking.expansionFailed;
  const reranked = ranking.reranker && (ranking.rerankFailed ?? `reranked the first ${ranking.reranked} by ${ranking.reranker}`);
  return <Hint data-testid="preview-ranking">{[phrasings, reranked].filter(Boolean).join(" · ")}</Hint>;
}

function PreviewResults({ results, stale }: { results: SearchResultsFieldsFragment; stale: boolean }) {
  const [all, setAll] = useState(false);
  // The best 100 candidates (one page); the summary counts them all (totalCount).
  const page = results.hits.__typename === "SearchHitConnection" ? results.hits : null;
  const loaded = page?.edges.map((edge) => edge.node) ?? [];
  const total = page?.totalCount ?? 0;
  const counts = fateCounts(loaded);
  const kept = results.kept.length;
  const hits = all ? loaded : loaded.slice(0, SHOWN);
  return (
    <div className={styles.results} data-stale={stale || undefined} aria-live="polite">
      <p className={styles.summary} data-testid="preview-summary" data-kept={kept} data-total={total}>
        {total === 0 ? (
          "No passage matches this question."
        ) : (
          <>
            Would keep <strong>{kept}</strong> of {total} candidates at top {results.topK}, threshold {results.threshold.toFixed(2)}
            {total > loaded.length && ` (the best ${loaded.length} shown)`}.
          </>
        )}
      </p>
      {results.ranking && <RankingHint ranking={results.ranking} />}
      {results.degraded.length > 0 && <Hint>Degraded: {results.degraded.map((d) => d.message).join("; ")}</Hint>}
      {!page && <FormError>{"message" in results.hits ? results.hits.message : "Candidates unavailable."}</FormError>}
      {loaded.length > 0 && <FateLegend counts={counts} onlyPresent small />}
      <ol className={cx(shared.plainList, styles.hits)}>
        {hits.map((hit) => (
          <li key={hit.chunkId} className={styles.hit} data-fate={hit.fate} data-testid="preview-hit">
            <div className={styles.hitHead}>
              <span className={cx(styles.rank, "mono")}>#{hit.fusedRank}</span>
              <span className={styles.doc}>{hit.documentName}</span>
              {hit.rerankScore != null && <span className="muted mono">rerank {hit.rerankScore.toFixed(2)}</span>}
              <span className="muted">
                {formatPlace(hit.location)}
                {hit.location.headingPath && ` · ${formatHeadingPath(hit.location.headingPath)}`}
              </span>
            </div>
            <Score score={hit.score} threshold={results.threshold}>
              <FateBadge fate={hit.fate} />
            </Score>
            <p className="muted">{fateReason(hit.fate, hit, results)}</p>
            <p className={styles.text}>{hit.text}</p>
          </li>
        ))}
      </ol>
      {loaded.length > SHOWN && (
        <LinkButton onClick={() => setAll((v) => !v)}>{all ? "Show fewer" : `Show all ${loaded.length}`}</LinkButton>
      )}
    </div>
  );
}
