import type { TraceFieldsFragment } from "../../gql/graphql";
import { formatCount, formatHeadingPath, formatMs, formatPlace, formatScore, formatStage } from "../../lib/format";
import { Dialog } from "../Dialog";
import { AlertIcon } from "../icons";
import { FATE_ORDER, FateBadge, ScoreBar, fateCounts, fateReason } from "../retrieval/Fate";
import { OriginalDisclosure } from "./AnswerNotice";

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
  return (
    <div className="trace">
      {trace.degraded.length > 0 && (
        <div className="notice notice--warning" role="note">
          <AlertIcon width={16} height={16} />
          <div>
            <strong>Degraded</strong>
            <ul>
              {trace.degraded.map((d) => (
                <li key={d}>{d}</li>
              ))}
            </ul>
          </div>
        </div>
      )}
      {trace.answer && <AnswerSection answer={trace.answer} messageId={messageId} />}
      <section className="trace__section" aria-labelledby="trace-settings">
        <h3 id="trace-settings" className="trace__title">
          Settings used
        </h3>
        <dl className="kv" data-testid="trace-settings">
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
              <span className="badge badge--warning">ran as {trace.effectiveMode.toLowerCase()}</span>
            )}
          </dd>
          {trace.embeddingSpace && (
            <>
              <dt>Embeddings</dt>
              <dd className="mono">{trace.embeddingSpace}</dd>
            </>
          )}
        </dl>
      </section>

      <section className="trace__section" aria-labelledby="trace-candidates">
        <h3 id="trace-candidates" className="trace__title">
          Candidates <span className="muted">({trace.candidates.length})</span>
        </h3>
        {trace.candidates.length === 0 ? (
          <p className="muted">{trace.settings.enableRag ? "Retrieval found no candidates." : "RAG was off: nothing was retrieved."}</p>
        ) : (
          <>
            <ul className="fate-legend" aria-label="Candidates by fate">
              {FATE_ORDER.map((fate) => (
                <li key={fate} data-testid={`fate-count-${fate}`}>
                  <FateBadge fate={fate} /> <span className="fate-legend__count">{counts[fate]}</span>
                </li>
              ))}
            </ul>
            <div className="table-wrap">
              <table className="table table--compact trace__candidates" aria-label="Candidates">
                <thead>
                  <tr>
                    <th scope="col">Source</th>
                    <th scope="col">Score</th>
                    <th scope="col" className="num" title="Rank in vector (embedding) search">
                      Vector
                    </th>
                    <th scope="col" className="num" title="Rank in keyword (BM25) search">
                      Keyword
                    </th>
                    <th scope="col" className="num" title="Rank after reciprocal rank fusion">
                      Fused
                    </th>
                    <th scope="col">Fate</th>
                  </tr>
                </thead>
                <tbody>
                  {trace.candidates.map((c) => (
                    <tr key={c.chunkId} data-fate={c.fate} data-testid="trace-candidate" className={`trace-row trace-row--${c.fate.toLowerCase()}`}>
                      <th scope="row">
                        <span className="trace-row__doc">{c.documentName}</span>
                        <span className="trace-row__where">
                          {formatPlace(c.location)}
                          {c.location.headingPath && ` · ${formatHeadingPath(c.location.headingPath)}`}
                        </span>
                      </th>
                      <td>
                        <span className="score-cell">
                          <ScoreBar score={c.score} threshold={trace.settings.threshold} />
                          <span className="mono">{formatScore(c.score)}</span>
                        </span>
                      </td>
                      <td className="num mono">{c.vectorRank ?? "—"}</td>
                      <td className="num mono">{c.keywordRank ?? "—"}</td>
                      <td className="num mono">{c.fusedRank}</td>
                      <td>
                        <FateBadge fate={c.fate} />
                        <span className="trace-row__reason">{fateReason(c.fate, c, trace.settings)}</span>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </>
        )}
      </section>

      <div className="trace__columns">
        <TimingList timings={trace.timings} />
        <TokenBudget trace={trace} />
      </div>

      {trace.citations && (
        <section className="trace__section" aria-labelledby="trace-citations">
          <h3 id="trace-citations" className="trace__title">
            Citations
          </h3>
          <p>
            {formatCount(trace.citations.valid, "source")} cited
            {trace.citations.attributed ? " (attributed by ragchat: the model wrote no markers)" : " by the model"}
            {trace.citations.invalidRemoved > 0 && `; ${formatCount(trace.citations.invalidRemoved, "invalid marker")} removed`}.
          </p>
        </section>
      )}
    </div>
  );
}

type Answer = NonNullable<TraceFieldsFragment["answer"]>;
type Decision = NonNullable<Answer["guard"]>["decision"];

const DECISIONS: Record<Decision, { label: string; badge: string }> = {
  PASS: { label: "passed", badge: "badge--success" },
  FLAGGED: { label: "flagged, kept", badge: "badge--warning" },
  FALLBACK: { label: "replaced by quoted sentences", badge: "badge--warning" },
  REJECTED: { label: "rejected", badge: "badge--danger" },
};

/** Which answer mode ran and why, and what the answer guard found in a generated answer. */
function AnswerSection({ answer, messageId }: { answer: Answer; messageId: string | null }) {
  const guard = answer.guard;
  const mode = (m: string) => m.toLowerCase();
  return (
    <section className="trace__section" aria-labelledby="trace-answer">
      <h3 id="trace-answer" className="trace__title">
        Answer
      </h3>
      <dl className="kv" data-testid="trace-answer">
        <dt>Mode</dt>
        <dd>{answer.requestedMode === answer.mode ? mode(answer.mode) : `${mode(answer.requestedMode)} → ${mode(answer.mode)}`}</dd>
        <dt>Why</dt>
        <dd>{answer.reason}</dd>
        {guard && (
          <>
            <dt>Answer guard</dt>
            <dd>
              <span className={`badge ${DECISIONS[guard.decision].badge}`}>{DECISIONS[guard.decision].label}</span>
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
            <dd className="mono">{answer.sentences}</dd>
          </>
        )}
      </dl>
      {guard && guard.reasons.length > 0 && (
        <ul className="trace__reasons" aria-label="What the answer guard found">
          {guard.reasons.map((reason) => (
            <li key={reason}>{reason}</li>
          ))}
        </ul>
      )}
      {guard && guard.decision !== "PASS" && messageId && <OriginalDisclosure messageId={messageId} />}
    </section>
  );
}

function TimingList({ timings }: { timings: TraceFieldsFragment["timings"] }) {
  const max = Math.max(1, ...timings.map((t) => t.ms));
  return (
    <section className="trace__section" aria-labelledby="trace-timings">
      <h3 id="trace-timings" className="trace__title">
        Timings
      </h3>
      {timings.length === 0 ? (
        <p className="muted">None recorded.</p>
      ) : (
        <ul className="bars" data-testid="trace-timings">
          {timings.map((t) => (
            <li key={t.stage} className="bars__row">
              <span className="bars__label">{formatStage(t.stage)}</span>
              <span className="bars__track" aria-hidden="true">
                <span className="bars__fill" style={{ width: `${Math.max(1, (t.ms / max) * 100)}%` }} />
              </span>
              <span className="bars__value mono" data-volatile>
                {formatMs(t.ms)}
              </span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function TokenBudget({ trace }: { trace: TraceFieldsFragment }) {
  const tokens = trace.tokens;
  return (
    <section className="trace__section" aria-labelledby="trace-tokens">
      <h3 id="trace-tokens" className="trace__title">
        Tokens {tokens && !tokens.exact && <span className="badge badge--soft">estimated</span>}
      </h3>
      {!tokens ? (
        <p className="muted">Not recorded.</p>
      ) : (
        <>
          <TokenBar tokens={tokens} />
          <dl className="kv" data-testid="trace-tokens">
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
    </section>
  );
}

const approx = (exact: boolean) => (exact ? "" : "≈");

function TokenBar({ tokens }: { tokens: NonNullable<TraceFieldsFragment["tokens"]> }) {
  const window = Math.max(1, tokens.contextWindow);
  const pct = (n: number) => `${Math.max(0, Math.min(100, (n / window) * 100))}%`;
  const other = Math.max(0, tokens.prompt - tokens.context);
  return (
    <div className="token-bar" role="img" aria-label={`Context window use: prompt ${tokens.prompt} (context ${tokens.context}), completion ${tokens.completion}, of ${tokens.contextWindow}`}>
      <span className="token-bar__seg token-bar__seg--context" style={{ width: pct(tokens.context) }} title={`context ${tokens.context}`} />
      <span className="token-bar__seg token-bar__seg--prompt" style={{ width: pct(other) }} title={`rest of prompt ${other}`} />
      <span className="token-bar__seg token-bar__seg--completion" style={{ width: pct(tokens.completion) }} title={`completion ${tokens.completion}`} />
      <span className="token-bar__reserve" style={{ width: pct(tokens.answerReserve) }} title={`answer reserve ${tokens.answerReserve}`} />
    </div>
  );
}
