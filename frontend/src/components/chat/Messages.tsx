import { type ReactNode, useCallback, useEffect, useMemo, useRef, useState } from "react";
import type { ChatItem, SearchPass, ToolCallView } from "../../lib/chatReducer";
import { cx } from "../../lib/cx";
import { ordinal } from "../../lib/ordinal";
import { Button, LinkButton } from "../Button";
import { Markdown, type MarkdownCitations } from "../Markdown";
import { Notice } from "../Notice";
import { AlertIcon, InfoIcon, LayersIcon, LogoMark, RefreshIcon, SlidersIcon } from "../icons";
import { AnswerNotice } from "./AnswerNotice";
import { describeTurnError } from "./describeError";
import { SourceList, quotedPlaces } from "./SourceList";
import { ToolCallCard, type ToolDecision } from "./ToolCallCard";
import shared from "../../styles/shared.module.css";
import styles from "./Messages.module.css";

export interface AssistantMessageProps {
  item: ChatItem;
  /** Another answer is streaming: retry/regenerate wait. */
  busy: boolean;
  onRetry: (key: string) => void;
  onOpenTrace: (key: string) => void;
  onOpenSettings: () => void;
  /** False for a message that records how an approved tool call ended: the server will not regenerate it. */
  regenerable?: boolean;
  /** Approve or reject a previewed tool call (see ToolCallCard). */
  onDecideTool?: (call: ToolCallView, decision: ToolDecision) => Promise<string | null>;
}

/** The answer's text cut where the model called tools: text, call, text, … (stored calls come first). */
export function segmentsOf(content: string, calls: readonly ToolCallView[]): ({ text: string } | { call: ToolCallView })[] {
  const out: ({ text: string } | { call: ToolCallView })[] = [];
  let at = 0;
  for (const call of calls) {
    const offset = Math.min(Math.max(call.offset ?? 0, at), content.length);
    if (offset > at) out.push({ text: content.slice(at, offset) });
    out.push({ call });
    at = offset;
  }
  if (at < content.length) out.push({ text: content.slice(at) });
  return out;
}

const prefersReducedMotion = () => typeof window !== "undefined" && window.matchMedia?.("(prefers-reduced-motion: reduce)").matches;

/** An answer: Markdown with linked `[n]` markers, notices, its sources, and what went wrong if it did. */
export function AssistantMessage({ item, busy, onRetry, onOpenTrace, onOpenSettings, regenerable = true, onDecideTool }: AssistantMessageProps) {
  const [active, setActive] = useState<number | null>(null);
  const clear = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const idPrefix = `source-${item.key}`;
  useEffect(() => () => clearTimeout(clear.current), []);

  const cite = useCallback(
    (n: number) => {
      setActive(n);
      clearTimeout(clear.current);
      clear.current = setTimeout(() => setActive(null), 4000);
      const target = document.getElementById(`${idPrefix}-${n}`);
      target?.scrollIntoView({ block: "nearest", behavior: prefersReducedMotion() ? "auto" : "smooth" });
      target?.focus({ preventScroll: true });
    },
    [idPrefix],
  );

  const numbers = useMemo(() => item.sources.map((s) => s.number), [item.sources]);
  const citations = useMemo<MarkdownCitations>(
    () => ({
      numbers,
      onCite: cite,
      active,
      label: (n) => {
        const source = item.sources.find((s) => s.number === n);
        const quoted = source && quotedPlaces(source);
        return `Source ${n}: ${source?.documentName ?? ""}${quoted ? `, quoted from ${quoted}` : ""}`.trim();
      },
    }),
    [numbers, cite, active, item.sources],
  );

  const pending = item.status === "PENDING";
  const streaming = item.status === "STREAMING";
  const failed = item.error !== null;
  const error = item.error && describeTurnError(item.error);
  const extractive = item.trace?.answer?.mode === "EXTRACTIVE";
  const sourcesTitle = item.cited
    ? extractive
      ? "Quoted sources"
      : "Cited sources"
    : streaming || pending
      ? "Sources"
      : extractive
        ? "Sources searched"
        : "Sources given to the model";

  return (
    <article
      className={cx(styles.assistant, streaming && styles.streaming)}
      data-status={item.status}
      data-testid="assistant-message"
      aria-busy={pending || streaming}
    >
      <span className={cx(shared.brandTile, styles.avatar)} aria-hidden="true">
        <LogoMark width={16} height={16} />
      </span>
      <div className={styles.body}>
        {item.noContext && (
          <Notice tone="info" icon={<InfoIcon width={16} height={16} />} role="note" data-testid="no-context">
            <strong>No relevant context found.</strong> Nothing in the knowledge base passed the similarity threshold
            {item.trace ? ` (${item.trace.settings.threshold.toFixed(2)})` : ""}, so this answer is not grounded in your documents.{" "}
            <LinkButton onClick={onOpenSettings}>Adjust retrieval</LinkButton>
          </Notice>
        )}
        {item.noAnswer && !item.noContext && (
          <Notice tone="info" icon={<InfoIcon width={16} height={16} />} role="note" data-testid="no-answer">
            <strong>No sentence in the sources answers this.</strong> Sources were found, but none of their sentences
            scored high enough to quote{item.trace?.answer?.bar != null ? ` (${item.trace.answer.bar.toFixed(2)} needed)` : ""}.
            &ldquo;Why this answer&rdquo; lists the closest ones; rephrasing the question often helps.
          </Notice>
        )}
        {item.degraded.length > 0 && (
          <Notice tone="warning" icon={<AlertIcon width={16} height={16} />} role="note" data-testid="degraded">
            <strong>Answered with reduced retrieval.</strong>
            <ul>
              {item.degraded.map((d) => (
                <li key={d.reason} data-reason={d.reason}>
                  {d.message}
                </li>
              ))}
            </ul>
          </Notice>
        )}
        <AnswerNotice answer={item.trace?.answer} messageId={item.id} />
        {pending && !item.content && (
          <Pending>
            {item.queued
              ? `Waiting for a free slot (${ordinal(item.queued)} in line)…`
              : item.searching
                ? <SearchingLine pass={item.searching} />
                : item.previous
                ? "Generating the answer again…"
                : "Searching your documents…"}
          </Pending>
        )}
        {item.toolCalls.length === 0
          ? item.content && (
              <Markdown className={cx(styles.content, failed && styles.partial)} citations={citations} testId="message-content">
                {item.content}
              </Markdown>
            )
          : segmentsOf(item.content, item.toolCalls).map((part, i, parts) =>
              "call" in part ? (
                <ToolCallCard key={part.call.callId} call={part.call} onDecide={onDecideTool} />
              ) : (
                // The text after the last call is the answer (message-content); earlier text led up to a call.
                <Markdown
                  key={`text-${i}`}
                  className={cx(i === parts.length - 1 && styles.content, failed && styles.partial)}
                  citations={citations}
                  testId={i === parts.length - 1 ? "message-content" : "message-segment"}
                >
                  {part.text}
                </Markdown>
              ),
            )}
        {streaming && !item.content && (
          <Pending>Writing…</Pending>
        )}
        {error && (
          <Notice
            tone="danger"
            icon={<AlertIcon width={16} height={16} />}
            role="alert"
            data-testid="message-error"
            data-code={item.error?.code}
            actions={
              item.id && (
                <Button size="small" onClick={() => onRetry(item.key)} disabled={busy || pending}>
                  <RefreshIcon width={14} height={14} /> Retry
                </Button>
              )
            }
          >
            <strong>{error.title}</strong>
            <p>{error.detail}</p>
            {item.content && <p className="muted">The text above is what arrived before it failed.</p>}
          </Notice>
        )}
        <SourceList sources={item.sources} idPrefix={idPrefix} active={active} title={sourcesTitle} compact={pending || streaming} />
        {(item.trace || (item.status === "COMPLETE" && item.id && regenerable)) && (
          <div className={styles.actions}>
            {item.trace && (
              <Button variant="ghost" size="small" onClick={() => onOpenTrace(item.key)}>
                <LayersIcon width={15} height={15} /> Why this answer
              </Button>
            )}
            {item.status === "COMPLETE" && item.id && regenerable && (
              <Button variant="ghost" size="small" onClick={() => onRetry(item.key)} disabled={busy}>
                <RefreshIcon width={14} height={14} /> Regenerate
              </Button>
            )}
          </div>
        )}
      </div>
    </article>
  );
}

export interface UserMessageProps {
  item: ChatItem;
  busy: boolean;
  onResend: (key: string) => void;
  onDiscard: (key: string) => void;
}

export function UserMessage({ item, busy, onResend, onDiscard }: UserMessageProps) {
  const error = item.error && describeTurnError(item.error);
  return (
    <article className={styles.user} data-testid="user-message" data-unsent={item.unsent || undefined}>
      <div className={styles.bubble}>{item.content}</div>
      {item.unsent && error && (
        <Notice
          tone="danger"
          compact
          className={styles.userNotice}
          icon={<AlertIcon width={16} height={16} />}
          role="alert"
          data-testid="message-error"
          data-code={item.error?.code}
          actions={
            <>
              <Button size="small" onClick={() => onResend(item.key)} disabled={busy}>
                <RefreshIcon width={14} height={14} /> Retry
              </Button>
              <Button variant="ghost" size="small" onClick={() => onDiscard(item.key)}>
                Discard
              </Button>
            </>
          }
        >
          <strong>{error.title}</strong>
          <p>{error.detail}</p>
        </Notice>
      )}
    </article>
  );
}

/** How the chat's answers are made, in words (the trace's Answer section says which ran each time). */
const ANSWER_MODES: Record<string, string> = {
  EXTRACTIVE: "quotes the documents",
  GENERATIVE: "the model writes",
  AUTO: "auto: writes or quotes",
};

export function SettingsSummary({
  session,
  onOpen,
}: {
  session: {
    enableRag: boolean;
    topK: number;
    threshold: number;
    includeCitations: boolean;
    provider: string;
    model: string;
    answerMode?: string;
    toolGroups?: readonly string[];
  };
  onOpen: () => void;
}) {
  return (
    <button type="button" className={styles.summary} onClick={onOpen} title="Change the chat settings" data-testid="settings-summary">
      <SlidersIcon width={15} height={15} />
      {session.enableRag ? (
        <>
          <span>top {session.topK}</span>
          <span aria-hidden="true">·</span>
          <span>threshold {session.threshold.toFixed(2)}</span>
          <span aria-hidden="true">·</span>
          <span>{session.includeCitations ? "citations" : "no citations"}</span>
        </>
      ) : (
        <span>RAG off</span>
      )}
      {session.toolGroups && session.toolGroups.length > 0 && (
        <>
          <span aria-hidden="true">·</span>
          <span data-testid="summary-tools">tools: {session.toolGroups.join(", ")}</span>
        </>
      )}
      {session.answerMode && (
        <>
          <span aria-hidden="true">·</span>
          <span data-testid="summary-mode">{ANSWER_MODES[session.answerMode] ?? session.answerMode.toLowerCase()}</span>
        </>
      )}
      <span aria-hidden="true">·</span>
      <span className={styles.summaryModel}>
        {session.provider}/{session.model}
      </span>
    </button>
  );
}

/** "Searching your documents…" with three bouncing dots. */
function Pending({ children }: { children: ReactNode }) {
  return (
    <p className={styles.pending} role="status">
      <span className={styles.typing} aria-hidden="true">
        <span />
        <span />
        <span />
      </span>
      {children}
    </p>
  );
}

/** What the search is doing, from its last progress event: searching again after a weak pass, or
 *  which standalone question the model rewrote the follow-up into. */
function SearchingLine({ pass }: { pass: SearchPass }) {
  const searchingFor = pass.rewritten ? <> for “<span data-testid="searching-query">{pass.query}</span>”</> : null;
  if (pass.decision === "WIDEN") {
    return (
      <span data-testid="searching-again">
        Searching again, wider (pass {pass.number + 1} of at most {pass.budget}){searchingFor}…
      </span>
    );
  }
  return <span data-testid="searching-done">Found the sources{searchingFor}; reading them…</span>;
}
