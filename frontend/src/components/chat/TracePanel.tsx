import type { ReactNode } from "react";
import type { TraceFieldsFragment } from "../../gql/graphql";
import { cx } from "../../lib/cx";
import { Link, paths } from "../../lib/router";
import { formatCount, formatHeadingPath, formatMs, formatPlace, formatStage } from "../../lib/format";
import { Badge, type BadgeTone } from "../Badge";
import { Dialog } from "../Dialog";
import { Notice } from "../Notice";
import { Table, numeric } from "../Table";
import { AlertIcon } from "../icons";
import { FateBadge, FateLegend, Score, fateCounts, fateReason } from "../retrieval/Fate";
import { OriginalDisclosure } from "./AnswerNotice";
import { SearchDetails } from "./SearchSection";
import { ToolsDetails } from "./ToolsSection";
import shared from "../../styles/shared.module.css";
import styles from "./TracePanel.module.css";

export interface TracePanelProps {
  trace: TraceFieldsFragment | null;
  /** The answer's id: the panel loads the model's original text from it when asked. */
  messageId?: string | null;
  open: boolean;
  onClose: () => void;
}

/** "Why this answer": what retrieval considered and did, the settings, timings and token budget. */
export function TracePanel({ trace, messageId = null, open, onClose }: TracePanelProps) {
  return (
    <Dialog open={open && trace !== null} onClose={onClose} variant="drawer" size="lg" title="Why this answer" testId="trace-panel"
      description={trace ? <>For “{trace.query}”</> : undefined}>
      {trace && <TraceBody trace={trace} messageId={messageId} />}
    </Dialog>
  );
}

export function TraceBody({ trace, messageId = null }: { trace: TraceFieldsFragment; messageId?: string | null }) {
  const counts = fateCounts(trace.candidates);
  const reranked = trace.candidates.some((c) => c.rerankScore != null);
  return (
    <div className={styles.trace}>
      {trace.degraded.length > 0 && (
        <Notice tone="warning" icon={<AlertIcon width={16} height={16} />} role="note">
          <strong>Degraded</strong>
          <ul>
            {trace.degraded.map((d) => (
              <li key={d.reason} data-reason={d.reason}>
                {d.message}
              </li>
            ))}
          </ul>
        </Notice>
      )}
      {trace.answer && <AnswerSection answer={trace.answer} messageId={messageId} />}
      {trace.search && (
        <TraceSection id="trace-search" title="Search">
          <SearchDetails search={trace.search} />
        </TraceSection>
      )}
      {trace.tools && (
        <TraceSection id="trace-tools" title="Tools">
          <ToolsDetails tools={trace.tools} />
        </TraceSection>
      )}
      <TraceSection id="trace-settings" title="Settings used">
        <dl className={styles.kv} data-testid="trace-settings">
          <dt>Model</dt>
          <dd className="mono">
            {trace.provider}/{trace.model}
          </dd>
          <dt>RAG</dt>
          <dd>{trace.settings.enableRag ? "on" : "off"}</dd>
          <dt>Top K</dt>
          <dd>{trace.settings.topK}</dd>
          <dt>Threshold</dt>
          <dd>{trace.settings.threshold.toFixed(2)}</dd>
          <dt>Citations</dt>
          <dd>{trace.settings.includeCitations ? "requested" : "off"}</dd>
          <dt>Search</dt>
          <dd>
            {trace.settings.mode.toLowerCase()}
            {trace.effectiveMode && trace.effectiveMode !== trace.settings.mode && (
              <Badge tone="warning" className={styles.ranAs}>
                ran as {trace.effectiveMode.toLowerCase()}
              </Badge>
            )}
            {trace.fusion && (
              <span className="muted" data-testid="trace-fusion">
                {" "}
                · fused by {trace.fusion === "CONVEX" ? "score (convex)" : "rank (RRF)"}
              </span>
            )}
          </dd>
          {trace.embeddingSpace && (
            <>
              <dt>Embeddings</dt>
              <dd className="mono">{trace.embeddingSpace}</dd>
            </>
          )}
        </dl>
      </TraceSection>

      {trace.ranking && <RankingSection ranking={trace.ranking} />}

      <TraceSection
        id="trace-candidates"
        title={
          <>
            Candidates <span className="muted">({trace.candidates.length})</span>
          </>
        }
      >
        {trace.candidates.length === 0 ? (
          <p className="muted">{trace.settings.enableRag ? "Retrieval found no candidates." : "RAG was off: nothing was retrieved."}</p>
        ) : (
          <>
            <FateLegend counts={counts} label="Candidates by fate" />
            <Table label="Candidates" compact>
              <thead>
                <tr>
                  <th scope="col">Source</th>
                  <th scope="col">Score</th>
                  <th scope="col" className={numeric} title="Rank in vector (embedding) search">
                    Vector
                  </th>
                  <th scope="col" className={numeric} title="Rank in keyword (BM25) search">
                    Keyword
                  </th>
                  <th scope="col" className={numeric} title="Rank after reciprocal rank fusion">
                    Fused
                  </th>
                  {reranked && (
                    <th scope="col" className={numeric} title="The reranker's score (its own scale); the order blends it with the fused rank">
                      Rerank
                    </th>
                  )}
                  <th scope="col">Fate</th>
                </tr>
              </thead>
              <tbody>
                {trace.candidates.map((c) => (
                  <tr key={c.chunkId} data-fate={c.fate} data-testid="trace-candidate" className={styles.row}>
                    <th scope="row">
                      <Link
                        to={paths.cited(c.documentId, { chunkId: c.chunkId, lineStart: c.location.lineStart, lineEnd: c.location.lineEnd })}
                        className={cx(shared.ellipsis, styles.doc)}
                        data-testid="trace-candidate-link"
                      >
                        {c.documentName}
                      </Link>
                      <span className={styles.where}>
                        {formatPlace(c.location)}
                        {c.location.headingPath && ` · ${formatHeadingPath(c.location.headingPath)}`}
                      </span>
                    </th>
                    <td>
                      <Score score={c.score} threshold={trace.settings.threshold} />
                    </td>
                    <td className={cx(numeric, "mono")}>{c.vectorRank ?? "—"}</td>
                    <td className={cx(numeric, "mono")}>{c.keywordRank ?? "—"}</td>
                    <td className={cx(numeric, "mono")}>{c.fusedRank}</td>
                    {reranked && <td className={cx(numeric, "mono")}>{c.rerankScore != null ? c.rerankScore.toFixed(3) : "—"}</td>}
                    <td>
                      <FateBadge fate={c.fate} />
                      <span className={styles.reason}>{fateReason(c.fate, c, trace.settings)}</span>
                    </td>
                  </tr>
                ))}
              </tbody>
            </Table>
          </>
        )}
      </TraceSection>

      <div className={styles.columns}>
        <TimingList timings={trace.timings} />
        <TokenBudget trace={trace} />
      </div>

      {trace.citations && (
        <TraceSection id="trace-citations" title="Citations">
          <p>
            {formatCount(trace.citations.valid, "source")}
            {trace.answer?.mode === "EXTRACTIVE"
              ? " quoted (an extractive answer: its sentences are the sources' own, no model wrote it)"
              : trace.citations.attributed
                ? " cited (attributed by ragchat: the model wrote no markers)"
                : " cited by the model"}
            {trace.citations.invalidRemoved > 0 && `; ${formatCount(trace.citations.invalidRemoved, "invalid marker")} removed`}.
          </p>
        </TraceSection>
      )}
    </div>
  );
}

type Ranking = NonNullable<TraceFieldsFragment["ranking"]>;

/** What multi-query expansion and reranking did: the phrasings searched, the reranker, and why a stage fell back. */
function RankingSection({ ranking }: { ranking: Ranking }) {
  return (
    <TraceSection id="trace-ranking" title="Ranking">
      <dl className={styles.kv} data-testid="trace-ranking">
        <dt>Also searched</dt>
        <dd>
          {ranking.expansions.length > 0 ? (
            <ul aria-label="Alternative phrasings">
              {ranking.expansions.map((e) => (
                <li key={e}>{e}</li>
              ))}
            </ul>
          ) : (
            (ranking.expansionFailed ?? "no other phrasing (expansion off)")
          )}
        </dd>
        <dt>Reranker</dt>
        <dd className="mono">
          {ranking.reranker ? `${ranking.reranker}: ${ranking.rerankFailed ?? `scored the first ${ranking.reranked}`}` : "none"}
        </dd>
      </dl>
    </TraceSection>
  );
}

type Answer = NonNullable<TraceFieldsFragment["answer"]>;
type Decision = NonNullable<Answer["guard"]>["decision"];

const DECISIONS: Record<Decision, { label: string; tone: BadgeTone }> = {
  PASS: { label: "passed", tone: "success" },
  FLAGGED: { label: "flagged, kept", tone: "warning" },
  FALLBACK: { label: "replaced by quoted sentences", tone: "warning" },
  REJECTED: { label: "rejected", tone: "danger" },
};

/** Which answer mode ran and why, and what the answer guard found in a generated answer. */
function AnswerSection({ answer, messageId }: { answer: Answer; messageId: string | null }) {
  const guard = answer.guard;
  const mode = (m: string) => m.toLowerCase();
  return (
    <TraceSection id="trace-answer" title="Answer">
      <dl className={styles.kv} data-testid="trace-answer">
        <dt>Mode</dt>
        <dd>{answer.requestedMode === answer.mode ? mode(answer.mode) : `${mode(answer.requestedMode)} → ${mode(answer.mode)}`}</dd>
        <dt>Why</dt>
        <dd>{answer.reason}</dd>
        {guard && (
          <>
            <dt>Answer guard</dt>
            <dd>
              <Badge tone={DECISIONS[guard.decision].tone}>{DECISIONS[guard.decision].label}</Badge>
            </dd>
            <dt>Unsupported sentences</dt>
            <dd className="mono">{guard.unsupportedSentences}</dd>
            <dt>Prompt echoes removed</dt>
            <dd className="mono">{guard.echoRemoved}</dd>
            <dt>Markers dropped</dt>
            <dd className="mono">{guard.markersDropped}</dd>
            <dt>Stopped early</dt>
            <dd>{guard.stoppedEarly ? "yes: the answer looped" : "no"}</dd>
          </>
        )}
        {answer.sentences != null && (
          <>
            <dt>Sentences quoted</dt>
            <dd className="mono">
              {answer.sentences}
              {answer.bar != null && ` (a sentence needs ${answer.bar.toFixed(2)})`}
            </dd>
          </>
        )}
      </dl>
      {answer.considered.length > 0 && (
        <table className={styles.considered} data-testid="trace-considered">
          <caption>The best candidate sentences, and why each was or was not quoted</caption>
          <thead>
            <tr>
              <th scope="col">Source</th>
              <th scope="col">Score</th>
              <th scope="col">Sentence</th>
              <th scope="col">Decision</th>
            </tr>
          </thead>
          <tbody>
            {answer.considered.map((c, i) => (
              <tr key={i} data-quoted={c.quoted}>
                <td className="mono">[{c.source}]</td>
                <td className="mono">{c.score.toFixed(2)}</td>
                <td>{c.text}</td>
                <td>{c.reason}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {guard && guard.reasons.length > 0 && (
        <ul className={styles.reasons} aria-label="What the answer guard found">
          {guard.reasons.map((reason) => (
            <li key={reason}>{reason}</li>
          ))}
        </ul>
      )}
      {guard && guard.decision !== "PASS" && messageId && <OriginalDisclosure messageId={messageId} />}
    </TraceSection>
  );
}

function TimingList({ timings }: { timings: TraceFieldsFragment["timings"] }) {
  const max = Math.max(1, ...timings.map((t) => t.ms));
  return (
    <TraceSection id="trace-timings" title="Timings">
      {timings.length === 0 ? (
        <p className="muted">None recorded.</p>
      ) : (
        <ul className={cx(shared.plainList, styles.bars)} data-testid="trace-timings">
          {timings.map((t) => (
            <li key={t.stage} className={styles.barRow}>
              <span className={cx(shared.ellipsis, styles.barLabel)}>{formatStage(t.stage)}</span>
              <span className={styles.barTrack} aria-hidden="true">
                <span className={styles.barFill} style={{ width: `${Math.max(1, (t.ms / max) * 100)}%` }} />
              </span>
              <span className={cx(styles.barValue, "mono")} data-volatile>
                {formatMs(t.ms)}
              </span>
            </li>
          ))}
        </ul>
      )}
    </TraceSection>
  );
}

function TokenBudget({ trace }: { trace: TraceFieldsFragment }) {
  const tokens = trace.tokens;
  return (
    <TraceSection
      id="trace-tokens"
      title={
        <>
          Tokens {tokens && !tokens.exact && <Badge tone="soft">estimated</Badge>}
        </>
      }
    >
      {!tokens ? (
        <p className="muted">Not recorded.</p>
      ) : (
        <>
          <TokenBar tokens={tokens} />
          <dl className={styles.kv} data-testid="trace-tokens">
            <dt>Prompt</dt>
            <dd className="mono">
              {approx(tokens.exact)}
              {tokens.prompt}
            </dd>
            <dt>of which context</dt>
            <dd className="mono">
              {approx(tokens.exact)}
              {tokens.context}
            </dd>
            <dt>Completion</dt>
            <dd className="mono">
              {approx(tokens.exact)}
              {tokens.completion}
            </dd>
            <dt>Answer reserve</dt>
            <dd className="mono">{tokens.answerReserve}</dd>
            <dt>Context window</dt>
            <dd className="mono">{tokens.contextWindow}</dd>
            <dt>Tokenizer</dt>
            <dd className="mono">
              {tokens.tokenizer} ({tokens.exact ? "exact" : "estimate"})
            </dd>
            {trace.budget && trace.budget.chunksOverBudget.length > 0 && (
              <>
                <dt>Cut to fit</dt>
                <dd>sources {trace.budget.chunksOverBudget.join(", ")}</dd>
              </>
            )}
            {trace.budget && trace.budget.historyDropped > 0 && (
              <>
                <dt>History dropped</dt>
                <dd>{formatCount(trace.budget.historyDropped, "message")}</dd>
              </>
            )}
          </dl>
        </>
      )}
    </TraceSection>
  );
}

const approx = (exact: boolean) => (exact ? "" : "≈");

function TokenBar({ tokens }: { tokens: NonNullable<TraceFieldsFragment["tokens"]> }) {
  const window = Math.max(1, tokens.contextWindow);
  const pct = (n: number) => `${Math.max(0, Math.min(100, (n / window) * 100))}%`;
  const other = Math.max(0, tokens.prompt - tokens.context);
  return (
    <div className={styles.tokenBar} role="img" aria-label={`Context window use: prompt ${tokens.prompt} (context ${tokens.context}), completion ${tokens.completion}, of ${tokens.contextWindow}`}>
      <span className={styles.context} style={{ width: pct(tokens.context) }} title={`context ${tokens.context}`} />
      <span className={styles.prompt} style={{ width: pct(other) }} title={`rest of prompt ${other}`} />
      <span className={styles.completion} style={{ width: pct(tokens.completion) }} title={`completion ${tokens.completion}`} />
      <span className={styles.reserve} style={{ width: pct(tokens.answerReserve) }} title={`answer reserve ${tokens.answerReserve}`} />
    </div>
  );
}

/** One part of the panel, labelled by its small uppercase heading. */
function TraceSection({ id, title, children }: { id: string; title: ReactNode; children: ReactNode }) {
  return (
    <section className={styles.section} aria-labelledby={id}>
      <h3 id={id} className={cx(shared.eyebrow, styles.title)}>
        {title}
      </h3>
      {children}
    </section>
  );
}
