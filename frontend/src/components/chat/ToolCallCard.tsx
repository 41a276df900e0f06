import { useState } from "react";
import type { ToolCallView } from "../../lib/chatReducer";
import { cx } from "../../lib/cx";
import { Badge, type BadgeTone } from "../Badge";
import { Button } from "../Button";
import { FormError } from "../Field";
import { CheckIcon, CloseIcon, WrenchIcon } from "../icons";
import styles from "./ToolCallCard.module.css";

export type ToolDecision = "approve" | "reject";

export interface ToolCallCardProps {
  call: ToolCallView;
  /** Approve or reject a previewed call; resolves to an error message, or null when decided. */
  onDecide?: (call: ToolCallView, decision: ToolDecision) => Promise<string | null>;
}

const STATUS: Record<ToolCallView["status"], { label: string; tone: BadgeTone }> = {
  CALLING: { label: "running…", tone: "soft" },
  EXECUTED: { label: "done", tone: "success" },
  FAILED: { label: "failed", tone: "danger" },
  PREVIEW: { label: "waiting for your approval", tone: "warning" },
  RUNNING: { label: "approved, running…", tone: "soft" },
  APPROVED: { label: "approved", tone: "success" },
  REJECTED: { label: "rejected", tone: "neutral" },
};

/** The arguments as the model wrote them, indented when they are JSON. */
function pretty(args: string): string {
  try {
    return JSON.stringify(JSON.parse(args), null, 2);
  } catch {
    return args;
  }
}

function formatMs(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

/** One tool call in an answer: name, arguments, then its result or error and timing; a preview with Approve / Reject. */
export function ToolCallCard({ call, onDecide }: ToolCallCardProps) {
  const [deciding, setDeciding] = useState<ToolDecision | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const status = STATUS[call.status];
  const ran = call.status === "EXECUTED" || call.status === "FAILED" || call.status === "APPROVED";

  async function decide(decision: ToolDecision) {
    if (!onDecide) return;
    setDeciding(decision);
    setProblem(null);
    try {
      setProblem(await onDecide(call, decision));
    } finally {
      setDeciding(null);
    }
  }

  return (
    <section className={cx(styles.card, call.status === "PREVIEW" && styles.waiting)} data-testid="tool-call" data-status={call.status} data-tool={call.name} aria-label={`Tool call ${call.name}`}>
      <header className={styles.head}>
        <WrenchIcon width={15} height={15} aria-hidden="true" />
        <span className={styles.name}>{call.name}</span>
        <Badge tone={status.tone} data-testid="tool-call-status">
          {status.label}
        </Badge>
        {call.ms != null && (
          <span className={cx(styles.timing, "muted")} data-volatile>
            {formatMs(call.ms)}
          </span>
        )}
      </header>
      <pre className={styles.code} aria-label="Arguments" data-testid="tool-call-arguments">
        {pretty(call.arguments)}
      </pre>
      {call.preview != null && (
        <div className={styles.block}>
          <span className={styles.label}>{call.status === "PREVIEW" ? "It would:" : "Previewed:"}</span>
          <pre className={styles.code} data-testid="tool-call-preview">
            {call.preview}
          </pre>
        </div>
      )}
      {ran && call.error && (
        <p className={styles.error} data-testid="tool-call-error">
          {call.error}
        </p>
      )}
      {ran && call.result != null && (
        <div className={styles.block}>
          <span className={styles.label}>
            Result{call.size != null && ` (${call.size} characters${call.truncated ? ", cut for the model" : ""})`}:
          </span>
          <pre className={styles.code} data-testid="tool-call-result">
            {call.result}
          </pre>
        </div>
      )}
      {call.status === "REJECTED" && <p className="muted">You rejected it: it never ran.</p>}
      {call.status === "APPROVED" && call.outcomeMessageId && (
        <p className="muted" data-testid="tool-call-outcome">
          Its outcome was added to the conversation below.
        </p>
      )}
      {call.status === "PREVIEW" && onDecide && call.id && (
        <div className={styles.decide}>
          <Button size="small" variant="primary" onClick={() => void decide("approve")} disabled={deciding !== null}>
            <CheckIcon width={14} height={14} /> {deciding === "approve" ? "Running…" : "Approve"}
          </Button>
          <Button size="small" onClick={() => void decide("reject")} disabled={deciding !== null}>
            <CloseIcon width={14} height={14} /> Reject
          </Button>
        </div>
      )}
      {problem && <FormError role="alert">{problem}</FormError>}
    </section>
  );
}
