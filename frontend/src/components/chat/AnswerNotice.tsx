import { useQuery } from "@apollo/client/react";
import { useState } from "react";
import { cx } from "../../lib/cx";
import { GuardOriginalDocument, type TraceAnswerFieldsFragment } from "../../gql/graphql";
import { LinkButton } from "../Button";
import { Notice } from "../Notice";
import { AlertIcon, QuoteIcon } from "../icons";
import shared from "../../styles/shared.module.css";
import styles from "./AnswerNotice.module.css";

type Answer = TraceAnswerFieldsFragment;
type Guard = NonNullable<Answer["guard"]>;

/** The notice's headline for each verdict that changed or refused the model's answer. */
function headline(guard: Guard): string | null {
  switch (guard.decision) {
    case "FALLBACK":
      return guard.stoppedEarly
        ? "The model's answer looped; showing sentences quoted from your documents instead."
        : "The model's answer did not hold up; showing sentences quoted from your documents instead.";
    case "FLAGGED":
      return guard.unsupportedSentences > 0
        ? "Parts of this answer may not be supported by your documents."
        : "ragchat cleaned up the model's answer; check it against the sources.";
    case "REJECTED":
      return "The model's answer was unusable, and no sentence in your documents answered the question instead.";
    default:
      return null;
  }
}

/**
 * How the answer came about, when the reader should know: the answer guard replaced, flagged or
 * rejected the model's text (with its reasons and the text itself on request), or the answer is
 * quoted from the documents (extractive). Nothing for an answer the model wrote that passed.
 */
export function AnswerNotice({ answer, messageId }: { answer: Answer | null | undefined; messageId: string | null }) {
  if (!answer) return null;
  const guard = answer.guard;
  const title = guard && headline(guard);
  if (guard && title) {
    return (
      <Notice tone="warning" icon={<AlertIcon width={16} height={16} />} role="note" data-testid="guard-notice" data-decision={guard.decision}>
        <strong>{title}</strong>
        {guard.reasons.length > 0 && (
          <ul aria-label="What the answer guard found">
            {guard.reasons.map((reason) => (
              <li key={reason}>{reason}</li>
            ))}
          </ul>
        )}
        {messageId && <OriginalDisclosure messageId={messageId} />}
      </Notice>
    );
  }
  if (answer.mode === "EXTRACTIVE") {
    return (
      <p className={styles.label} data-testid="answer-label">
        <QuoteIcon width={14} height={14} aria-hidden="true" />
        <strong>Quoted from your documents</strong>
        <span className="muted">— each sentence as it stands in its source; no model wrote this answer.</span>
      </p>
    );
  }
  return null;
}

/** "Show the model's text": loads the original only when asked (it can be a whole looping answer). */
export function OriginalDisclosure({ messageId }: { messageId: string }) {
  const [open, setOpen] = useState(false);
  return (
    <div className={styles.disclosure}>
      <LinkButton aria-expanded={open} onClick={() => setOpen((v) => !v)}>
        {open ? "Hide the model's text" : "Show the model's text"}
      </LinkButton>
      {open && <OriginalText messageId={messageId} />}
    </div>
  );
}

function OriginalText({ messageId }: { messageId: string }) {
  const { data, loading, error } = useQuery(GuardOriginalDocument, { variables: { id: messageId }, fetchPolicy: "no-cache" });
  if (loading) return <p className="muted">Loading the model's text…</p>;
  if (error) return <p className="muted">Could not load the model's text: {error.message}</p>;
  const message = data?.message;
  if (message?.__typename !== "ChatMessage") return <p className="muted">{message && "message" in message ? message.message : "The message is gone."}</p>;
  const original = message.trace?.answer?.guard?.original;
  if (original == null) return <p className="muted">The stored answer is the model's own text.</p>;
  // Plain text, never Markdown: this is the text that failed the checks, markers and all.
  return (
    <blockquote className={cx(shared.quote, styles.original)} data-testid="guard-original">
      {original}
    </blockquote>
  );
}
