import type { CandidateFate } from "../../gql/graphql";
import { formatScore } from "../../lib/format";

export const FATE_LABELS: Record<CandidateFate, string> = {
  KEPT: "Kept",
  BELOW_THRESHOLD: "Below threshold",
  BEYOND_TOP_K: "Beyond top K",
  OVER_BUDGET: "Over budget",
};

export const FATE_ORDER: CandidateFate[] = ["KEPT", "BELOW_THRESHOLD", "BEYOND_TOP_K", "OVER_BUDGET"];

/** Kept (green), below threshold (grey), beyond top K (amber), over budget (violet). */
export function FateBadge({ fate }: { fate: CandidateFate }) {
  return (
    <span className={`fate fate--${fate.toLowerCase()}`} data-fate={fate}>
      <span className="fate__dot" aria-hidden="true" />
      {FATE_LABELS[fate]}
    </span>
  );
}

/** Why a candidate met its fate, in words, from its numbers and the settings. */
export function fateReason(
  fate: CandidateFate,
  candidate: { score: number | null; fusedRank: number },
  settings: { threshold: number; topK: number },
): string {
  switch (fate) {
    case "KEPT":
      return `score ${formatScore(candidate.score)} ≥ ${settings.threshold.toFixed(2)}, within the top ${settings.topK}`;
    case "BELOW_THRESHOLD":
      return `score ${formatScore(candidate.score)} < threshold ${settings.threshold.toFixed(2)}`;
    case "BEYOND_TOP_K":
      return `passed the threshold, but top K is ${settings.topK}`;
    case "OVER_BUDGET":
      return "kept, but cut to fit the model's context window";
  }
}

/** A 0–1 score as a bar, with the threshold marked. */
export function ScoreBar({ score, threshold }: { score: number | null; threshold?: number }) {
  const value = Math.max(0, Math.min(1, score ?? 0));
  return (
    <span className="score-bar" aria-hidden="true">
      <span className="score-bar__fill" style={{ width: `${value * 100}%` }} data-below={threshold !== undefined && (score ?? 0) < threshold ? true : undefined} />
      {threshold !== undefined && <span className="score-bar__threshold" style={{ left: `${threshold * 100}%` }} />}
    </span>
  );
}

export function fateCounts(items: readonly { fate: CandidateFate }[]): Record<CandidateFate, number> {
  const counts: Record<CandidateFate, number> = { KEPT: 0, BELOW_THRESHOLD: 0, BEYOND_TOP_K: 0, OVER_BUDGET: 0 };
  for (const item of items) counts[item.fate] += 1;
  return counts;
}
