import type { SearchDecision, TraceFieldsFragment } from "../../gql/graphql";
import { formatMs, formatScore } from "../../lib/format";
import { Badge, type BadgeTone } from "../Badge";
import { Table, numeric } from "../Table";
import styles from "./TracePanel.module.css";

type Search = NonNullable<TraceFieldsFragment["search"]>;

const DECISIONS: Record<SearchDecision, { label: string; tone: BadgeTone }> = {
  ADEQUATE: { label: "good enough", tone: "success" },
  WIDEN: { label: "searched again", tone: "warning" },
  BUDGET: { label: "no passes left", tone: "warning" },
  NO_IMPROVEMENT: { label: "no better when widened", tone: "warning" },
};

const REWRITES: Record<Search["rewrite"]["outcome"], string> = {
  USED: "rewritten by the model",
  FAILED: "rewrite failed",
  TIMED_OUT: "rewrite timed out",
  SKIPPED: "not rewritten",
};

/** The documents a search was narrowed to, in words ("every document" without a filter). */
export function filterText(only: Search["documentFilter"]): string {
  if (!only) return "every document";
  const parts: string[] = [];
  if (only.tagsAny.length > 0) parts.push(`tagged ${only.tagsAny.join(" or ")}`);
  if (only.tagsAll.length > 0) parts.push(`tagged ${only.tagsAll.join(" and ")}`);
  if (only.pathPrefix) parts.push(`under ${only.pathPrefix}`);
  if (only.kinds.length > 0) parts.push(`of type ${only.kinds.join(", ")}`);
  if (only.dateFrom) parts.push(`dated from ${only.dateFrom.slice(0, 10)}`);
  if (only.dateTo) parts.push(`dated to ${only.dateTo.slice(0, 10)}`);
  return parts.length > 0 ? `only those ${parts.join(", ")}` : "every document";
}

/** What the turn searched (the message in its conversation, or the model's rewrite) and each pass. */
export function SearchDetails({ search }: { search: Search }) {
  return (
    <>
      <dl className={styles.kv} data-testid="trace-search">
        <dt>Searched</dt>
        <dd data-testid="trace-searched">{search.searched}</dd>
        {search.earlier.length > 0 && (
          <>
            <dt>With earlier questions</dt>
            <dd data-testid="trace-earlier">{search.earlier.join(" · ")}</dd>
          </>
        )}
        <dt>Rewrite</dt>
        <dd data-testid="trace-rewrite" data-outcome={search.rewrite.outcome}>
          {REWRITES[search.rewrite.outcome]} <span className="muted">({search.rewrite.reason})</span>
        </dd>
        <dt>Documents</dt>
        <dd data-testid="trace-document-filter">{filterText(search.documentFilter)}</dd>
        <dt>Quality</dt>
        <dd>{search.quality.toLowerCase()}</dd>
        <dt>Cache</dt>
        <dd className="mono">
          embeddings {search.cache.embeddingHits} hit / {search.cache.embeddingMisses} miss · results {search.cache.resultHits} hit /{" "}
          {search.cache.resultMisses} miss
        </dd>
      </dl>
      <Table label="Retrieval passes" compact>
        <thead>
          <tr>
            <th scope="col" className={numeric}>
              Pass
            </th>
            <th scope="col" className={numeric}>
              Candidates
            </th>
            <th scope="col" className={numeric}>
              Threshold
            </th>
            <th scope="col" className={numeric}>
              Kept
            </th>
            <th scope="col" className={numeric}>
              Best
            </th>
            <th scope="col">Verdict</th>
            <th scope="col" className={numeric}>
              Time
            </th>
          </tr>
        </thead>
        <tbody>
          {search.passes.map((p) => (
            <tr key={p.number} data-testid="trace-pass" data-decision={p.decision}>
              <td className={numeric}>{p.number}</td>
              <td className={numeric}>{p.candidates}</td>
              <td className={numeric}>{p.threshold.toFixed(2)}</td>
              <td className={numeric}>{p.kept}</td>
              <td className={numeric}>{formatScore(p.bestScore)}</td>
              <td title={p.reason}>
                <Badge tone={DECISIONS[p.decision].tone}>{DECISIONS[p.decision].label}</Badge>{" "}
                <span className="muted">{p.judge === "MODEL" ? "judged by the model" : p.reason}</span>
              </td>
              <td className={numeric}>{formatMs(p.ms)}</td>
            </tr>
          ))}
        </tbody>
      </Table>
    </>
  );
}
