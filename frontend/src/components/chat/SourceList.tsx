import { useState } from "react";
import type { SourceView } from "../../lib/chatReducer";
import { formatHeadingPath, formatPlace, formatPlaces, formatScore } from "../../lib/format";
import { cx } from "../../lib/cx";
import { Badge } from "../Badge";
import { LinkButton } from "../Button";
import { Link, paths } from "../../lib/router";
import { FileIcon } from "../icons";
import shared from "../../styles/shared.module.css";
import styles from "./SourceList.module.css";

export interface SourceListProps {
  sources: readonly SourceView[];
  /** Element ids are `${idPrefix}-${number}`, the targets of the answer's `[n]` markers. */
  idPrefix: string;
  active: number | null;
  title: string;
  /** Only document and place (while the answer streams, so the text stays in view). */
  compact?: boolean;
}

/** Where an extractive answer's sentences sit in this source ("lines 5, 9–10"); "" when none were quoted. */
export function quotedPlaces(source: SourceView): string {
  return formatPlaces((source.quotes ?? []).map((q) => q.location));
}

/**
 * The sources under an answer: compact chips (document, where in it, similarity), each document
 * name a link to the cited lines; the cited text on demand, so three to five sources never push the
 * answer out of view.
 */
export function SourceList({ sources, idPrefix, active, title, compact = false }: SourceListProps) {
  const [open, setOpen] = useState(false);
  if (sources.length === 0) return null;
  const expanded = open && !compact;
  const listId = `${idPrefix}-list`;
  return (
    <section className={expanded ? undefined : styles.compact} aria-label={title} data-testid="sources" data-expanded={expanded || undefined}>
      <div className={styles.titleRow}>
        <h4 className={cx(shared.eyebrow, styles.title)}>
          {title} <span className={styles.count}>({sources.length})</span>
        </h4>
        {!compact && (
          <LinkButton className={styles.toggle} onClick={() => setOpen((v) => !v)} aria-expanded={expanded} aria-controls={listId}>
            {expanded ? "Hide the cited text" : "Show the cited text"}
          </LinkButton>
        )}
      </div>
      <ol id={listId} className={cx(shared.plainList, styles.list)}>
        {[...sources]
          .sort((a, b) => a.number - b.number)
          .map((source) => (
            <SourceItem key={source.number} source={source} id={`${idPrefix}-${source.number}`} active={active === source.number} compact={!expanded} />
          ))}
      </ol>
    </section>
  );
}

function SourceItem({ source, id, active, compact }: { source: SourceView; id: string; active: boolean; compact: boolean }) {
  const [expanded, setExpanded] = useState(false);
  const heading = formatHeadingPath(source.location.headingPath);
  const quoted = quotedPlaces(source);
  // Quoted sentences show as they were quoted; a plain source shows its snippet.
  const text = quoted ? [...new Set(source.quotes!.map((q) => q.text))].join("\n…\n") : source.text;
  const long = text.length > 280;
  return (
    <li id={id} className={cx(shared.box, styles.source)} data-active={active || undefined} tabIndex={-1} data-testid="source" data-number={source.number}>
      <div className={styles.head}>
        <span className={styles.number} aria-label={`Source ${source.number}`}>
          {source.number}
        </span>
        <FileIcon width={15} height={15} aria-hidden="true" />
        {source.documentId ? (
          <Link
            to={paths.cited(source.documentId, { chunkId: source.chunkId, lineStart: source.location.lineStart, lineEnd: source.location.lineEnd })}
            className={cx(shared.ellipsis, styles.doc)}
            title={`Open ${source.documentName} at the cited ${source.location.lineStart != null ? "lines" : "passage"}`}
            data-testid="source-link"
          >
            {source.documentName}
          </Link>
        ) : (
          <span className={cx(shared.ellipsis, styles.doc)} title={source.documentName}>
            {source.documentName}
          </span>
        )}
        <span className={styles.place}>{quoted ? `quoted from ${quoted}` : formatPlace(source.location)}</span>
        <span className={styles.score} title="Cosine similarity to the question (0–1)">
          score {formatScore(source.score)}
        </span>
        {source.kind === "ATTRIBUTED" && (
          <Badge tone="soft" title="The model wrote no marker here; ragchat matched the sentence to this source">
            attributed
          </Badge>
        )}
        {quoted && (
          <Badge tone="soft" title="The answer quotes this source's sentences word for word, at the lines shown">
            quoted
          </Badge>
        )}
      </div>
      {!compact && heading && <p className={styles.heading}>{heading}</p>}
      {/* Plain text: React escapes it, so document content can never become markup. */}
      {!compact && <blockquote className={cx(shared.quote, long && !expanded && styles.clamped)}>{text}</blockquote>}
      {!compact && long && (
        <LinkButton className={styles.more} onClick={() => setExpanded((v) => !v)} aria-expanded={expanded}>
          {expanded ? "Show less" : "Show more"}
        </LinkButton>
      )}
    </li>
  );
}
