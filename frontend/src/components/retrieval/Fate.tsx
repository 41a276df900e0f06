import type { CandidateFate } from "../../gql/graphql";
import type { ReactNode } from "react";
import { formatScore } from "../../lib/format";
import { cx } from "../../lib/cx";
import shared from "../../styles/shared.module.css";
import styles from "./Fate.module.css";

export const FATE_LABELS: Record<CandidateFate, string> = {
  KEPT: "Kept",
  BELOW_THRESHOLD: "Below threshold",
  BEYOND_TOP_K: "Beyond top K",
  OVER_BUDGET: "Over budget",
  NEAR_DUPLICATE: "Near duplicate",
  OVER_DOCUMENT_CAP: "Document cap",
  MERGED: "Merged",
};

export const FATE_ORDER: CandidateFate[] = [
  "KEPT",
  "MERGED",
  "BELOW_THRESHOLD",
  "BEYOND_TOP_K",
  "NEAR_DUPLICATE",
  "OVER_DOCUMENT_CAP",
  "OVER_BUDGET",
];

/** Kept (green), below threshold (grey), beyond top K (amber), over budget (violet): data-fate picks the look. */
export function FateBadge({ fate }: { fate: CandidateFate }) {
  return (
    <span className={styles.fate} data-fate={fate}>
      <span className={styles.dot} aria-hidden="true" />
      {FATE_LABELS[fate]}
    </span>
  );
}

export interface FateLegendProps {
  counts: Record<CandidateFate, number>;
  label?: string;
  /** Leave out the fates nothing met. */
  onlyPresent?: boolean;
  small?: boolean;
}

/** How many candidates met each fate, in FATE_ORDER. */
export function FateLegend({ counts, label, onlyPresent = false, small = false }: FateLegendProps) {
  return (
    <ul className={cx(shared.plainList, styles.legend, small && styles.small)} aria-label={label}>
      {FATE_ORDER.filter((fate) => !onlyPresent || counts[fate] > 0).map((fate) => (
        <li key={fate} data-testid={`fate-count-${fate}`}>
          <FateBadge fate={fate} /> <span className={styles.count}>{counts[fate]}</span>
        </li>
      ))}
    </ul>
  );
}

/** Why a candidate met its fate, in words, from its numbers and the settings. */
export function fateReason(
  fate: CandidateFate,
  candidate: { score: number | null; fusedRank: number; passedOnWords?: boolean },
  settings: { threshold: number; topK: number },
): string {
  switch (fate) {
    case "KEPT":
      if (candidate.passedOnWords && candidate.score !== null && candidate.score < settings.threshold)
        return `score ${formatScore(candidate.score)} < ${settings.threshold.toFixed(2)}, kept on its words: it holds every word of a short question that nothing else matched`;
      return `score ${formatScore(candidate.score)} ≥ ${settings.threshold.toFixed(2)}, within the top ${settings.topK}`;
    case "BELOW_THRESHOLD":
      return `score ${formatScore(candidate.score)} < threshold ${settings.threshold.toFixed(2)}`;
    case "BEYOND_TOP_K":
      return `passed the threshold, but top K is ${settings.topK}`;
    case "OVER_BUDGET":
      return "kept, but cut to fit the model's context window";
    case "NEAR_DUPLICATE":
      return "nearly the same text as a better-ranked chunk";
    case "OVER_DOCUMENT_CAP":
      return "its document already gave as many sources as one document may";
    case "MERGED":
      return "kept, merged into the adjacent chunk of its document ranked above it";
  }
}

/** A 0–1 score as a bar, with the threshold marked. */
export function ScoreBar({ score, threshold }: { score: number | null; threshold?: number }) {
  const value = Math.max(0, Math.min(1, score ?? 0));
  return (
    <span className={styles.bar} aria-hidden="true">
      <span className={styles.fill} style={{ width: `${value * 100}%` }} data-below={threshold !== undefined && (score ?? 0) < threshold ? true : undefined} />
      {threshold !== undefined && <span className={styles.threshold} style={{ left: `${threshold * 100}%` }} />}
    </span>
  );
}

/** The bar and the figure of a score, and whatever follows them on the line (its fate). */
export function Score({ score, threshold, children }: { score: number | null; threshold: number; children?: ReactNode }) {
  return (
    <span className={styles.score}>
      <ScoreBar score={score} threshold={threshold} />
      <span className="mono">{formatScore(score)}</span>
      {children}
    </span>
  );
}

export function fateCounts(items: readonly { fate: CandidateFate }[]): Record<CandidateFate, number> {
  const counts: Record<CandidateFate, number> = {
    KEPT: 0,
    BELOW_THRESHOLD: 0,
    BEYOND_TOP_K: 0,
    OVER_BUDGET: 0,
    NEAR_DUPLICATE: 0,
    OVER_DOCUMENT_CAP: 0,
    MERGED: 0,
  };
  for (const item of items) counts[item.fate] += 1;
  return counts;
}
