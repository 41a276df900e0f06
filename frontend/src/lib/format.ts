// Small display helpers shared by the screens.

import type { Stage } from "../gql/graphql";

const BYTE_UNITS = ["B", "KB", "MB", "GB"];

export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const digits = unit === 0 || value >= 10 ? 0 : 1;
  return `${value.toFixed(digits)} ${BYTE_UNITS[unit]}`;
}

/** Cosine similarity (0-1) with two decimals; "—" when retrieval had none (keyword-only hits). */
export function formatScore(score: number | null | undefined): string {
  return score == null ? "—" : score.toFixed(2);
}

export function formatMs(ms: number): string {
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms >= 100) return `${Math.round(ms)} ms`;
  return `${ms.toFixed(1)} ms`;
}

export function formatCount(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString("en")} ${n === 1 ? one : many}`;
}

export interface LocationLike {
  page?: number | null;
  lineStart: number;
  lineEnd: number;
  headingPath?: string;
}

/** "p. 3" or "lines 10–24" (a single line: "line 7"). */
export function formatPlace(location: LocationLike): string {
  if (location.page) return `p. ${location.page}`;
  return location.lineStart === location.lineEnd
    ? `line ${location.lineStart}`
    : `lines ${location.lineStart}–${location.lineEnd}`;
}

/**
 * Several places in one document as one phrase, in reading order: "lines 5, 9–10", "pp. 3, 7",
 * "line 7" — not "line 5, lines 9–10", which reads as two different kinds of place.
 */
export function formatPlaces(locations: readonly LocationLike[]): string {
  const byStart = [...locations].sort((a, b) => (a.page ?? 0) - (b.page ?? 0) || a.lineStart - b.lineStart);
  const pages = [...new Set(byStart.filter((l) => l.page).map((l) => String(l.page)))];
  const lines = [...new Set(byStart.filter((l) => !l.page).map((l) => (l.lineStart === l.lineEnd ? `${l.lineStart}` : `${l.lineStart}–${l.lineEnd}`)))];
  const parts: string[] = [];
  if (lines.length) parts.push(`${lines.length === 1 && !lines[0]?.includes("–") ? "line" : "lines"} ${lines.join(", ")}`);
  if (pages.length) parts.push(`${pages.length === 1 ? "p." : "pp."} ${pages.join(", ")}`);
  return parts.join(", ");
}

/** Heading path as the backend joins it (" > "), shown with a chevron. */
export function formatHeadingPath(path: string | undefined): string {
  return (path ?? "")
    .split(/\s*>\s*/)
    .filter(Boolean)
    .join(" › ");
}

const RELATIVE = new Intl.RelativeTimeFormat("en", { numeric: "auto" });

/** A server time (ISO 8601; one without an offset is UTC) as a Date. */
export function serverTime(iso: string): Date {
  return new Date(iso.endsWith("Z") || /[+-]\d\d:\d\d$/.test(iso) ? iso : `${iso}Z`);
}

/** "just now", "5 minutes ago", "yesterday", else a date. */
export function formatRelative(iso: string, now: Date = new Date()): string {
  const then = serverTime(iso);
  const seconds = Math.round((then.getTime() - now.getTime()) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 45) return "just now";
  if (abs < 3600) return RELATIVE.format(Math.round(seconds / 60), "minute");
  if (abs < 86_400) return RELATIVE.format(Math.round(seconds / 3600), "hour");
  if (abs < 7 * 86_400) return RELATIVE.format(Math.round(seconds / 86_400), "day");
  return then.toLocaleDateString("en", { year: "numeric", month: "short", day: "numeric" });
}

export function formatDateTime(iso: string): string {
  const then = serverTime(iso);
  return then.toLocaleString("en", { dateStyle: "medium", timeStyle: "short" });
}

/** Stage names from the trace ("retrieval_embed") as words ("retrieval · embed"). */
export function formatStage(stage: Stage): string {
  return stage.toLowerCase().replace(/_/g, " · ");
}
