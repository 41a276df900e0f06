import { useQuery } from "@apollo/client/react";
import { useId, useState } from "react";
import { RetrievalPreviewDocument, type SearchResultsFieldsFragment } from "../../gql/graphql";
import { formatHeadingPath, formatPlace, formatScore } from "../../lib/format";
import { useDebounced } from "../../lib/useDebounced";
import { SearchIcon } from "../icons";
import { FATE_ORDER, FateBadge, ScoreBar, fateCounts, fateReason } from "../retrieval/Fate";
import { Spinner } from "../States";

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
  const inputId = useId();
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
    <section className="preview" aria-label="Retrieval preview" data-testid="retrieval-preview">
      <div className="preview__head">
        <label className="field__label" htmlFor={inputId}>
          Preview retrieval
        </label>
        {ready && pending && <Spinner label="Updating the preview" />}
      </div>
      <div className="preview__search">
        <SearchIcon width={16} height={16} aria-hidden="true" />
        <input
          id={inputId}
          className="preview__input"
          placeholder="Type a question to see what would be retrieved"
          value={question}
          onChange={(e) => setQuestion(e.target.value)}
          onKeyDown={(e) => e.key === "Enter" && e.preventDefault()}
        />
      </div>
      {!enabled && <p className="field__hint">RAG is off: nothing is retrieved, the model answers on its own.</p>}
      {enabled && (topK === null || threshold === null) && <p className="field__hint">Fix top K and threshold to see the preview.</p>}
      {enabled && !question.trim() && <p className="field__hint">The preview uses the values above, saved or not.</p>}
      {ready && error && !result && <p className="form-error">Preview unavailable: {error.message}</p>}
      {ready && result && result.__typename !== "SearchResults" && (
        <p className="form-error">{"message" in result ? result.message : "Preview unavailable."}</p>
      )}
      {enabled && question.trim() && result?.__typename === "SearchResults" && <PreviewResults results={result} stale={pending} />}
    </section>
  );
}

function PreviewResults({ results, stale }: { results: SearchResultsFieldsFragment; stale: boolean }) {
  const [all, setAll] = useState(false);
  const counts = fateCounts(results.hits);
  const hits = all ? results.hits : results.hits.slice(0, SHOWN);
  return (
    <div className="preview__results" data-stale={stale || undefined} aria-live="polite">
      <p className="preview__summary" data-testid="preview-summary" data-kept={counts.KEPT} data-total={results.hits.length}>
        {results.hits.length === 0 ? (
          "No passage matches this question."
        ) : (
          <>
            Would keep <strong>{counts.KEPT}</strong> of {results.hits.length} candidates at top {results.topK}, threshold{" "}
            {results.threshold.toFixed(2)}.
          </>
        )}
      </p>
      {results.degraded.length > 0 && <p className="field__hint">Degraded: {results.degraded.join("; ")}</p>}
      {results.hits.length > 0 && (
        <ul className="fate-legend fate-legend--small">
          {FATE_ORDER.filter((f) => counts[f] > 0).map((fate) => (
            <li key={fate}>
              <FateBadge fate={fate} /> <span className="fate-legend__count">{counts[fate]}</span>
            </li>
          ))}
        </ul>
      )}
      <ol className="preview__hits">
        {hits.map((hit) => (
          <li key={hit.chunkId} className={`preview-hit preview-hit--${hit.fate.toLowerCase()}`} data-fate={hit.fate} data-testid="preview-hit">
            <div className="preview-hit__head">
              <span className="preview-hit__rank mono">#{hit.fusedRank}</span>
              <span className="preview-hit__doc">{hit.documentName}</span>
              <span className="preview-hit__where">
                {formatPlace(hit.location)}
                {hit.location.headingPath && ` · ${formatHeadingPath(hit.location.headingPath)}`}
              </span>
            </div>
            <div className="preview-hit__score">
              <ScoreBar score={hit.score} threshold={results.threshold} />
              <span className="mono">{formatScore(hit.score)}</span>
              <FateBadge fate={hit.fate} />
            </div>
            <p className="preview-hit__reason">{fateReason(hit.fate, hit, results)}</p>
            <p className="preview-hit__text">{hit.text}</p>
          </li>
        ))}
      </ol>
      {results.hits.length > SHOWN && (
        <button type="button" className="link-button" onClick={() => setAll((v) => !v)}>
          {all ? "Show fewer" : `Show all ${results.hits.length}`}
        </button>
      )}
    </div>
  );
}
