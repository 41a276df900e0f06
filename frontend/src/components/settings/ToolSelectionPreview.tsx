import { useQuery } from "@apollo/client/react";
import { useState } from "react";
import { ToolSelectionDocument } from "../../gql/graphql";
import { cx } from "../../lib/cx";
import { useDebounced } from "../../lib/useDebounced";
import { Badge } from "../Badge";
import { FormError, Hint } from "../Field";
import shared from "../../styles/shared.module.css";
import { PreviewFrame } from "./PreviewFrame";
import styles from "./RetrievalPreview.module.css";

export interface ToolSelectionPreviewProps {
  sessionId: string;
  /** The chat's saved groups (selection runs on those, not the unsaved draft). */
  savedGroups: readonly string[];
  initialMessage?: string;
  debounceMs?: number;
}

const REASONS = { RANKED: "similar", CORE: "core", ALL: "all (degraded)" } as const;

/** Which tools a message would be offered (the `toolSelection` query): ranked ones with their scores, then core ones. */
export function ToolSelectionPreview({ sessionId, savedGroups, initialMessage = "", debounceMs = 350 }: ToolSelectionPreviewProps) {
  const [message, setMessage] = useState(initialMessage);
  const settled = useDebounced(message.trim(), debounceMs);
  const ready = savedGroups.length > 0 && settled.length > 0;
  const { data, previousData, loading, error } = useQuery(ToolSelectionDocument, {
    variables: { sessionId, message: settled },
    skip: !ready,
    fetchPolicy: "no-cache",
  });
  const result = (data ?? previousData)?.toolSelection;
  const pending = loading || settled !== message.trim();

  return (
    <PreviewFrame
      name="Tool selection preview"
      testId="tool-selection-preview"
      label="Preview tool selection"
      placeholder="Type a message to see which tools it would be offered"
      value={message}
      onChange={setMessage}
      busy={ready && pending}
    >
      {savedGroups.length === 0 && <Hint>Allow a tool group and save to preview the selection.</Hint>}
      {savedGroups.length > 0 && <Hint>Uses the saved groups: {savedGroups.join(", ")}.</Hint>}
      {ready && error && !result && <FormError>Preview unavailable: {error.message}</FormError>}
      {ready && result && result.__typename !== "ToolSelection" && <FormError>{"message" in result ? result.message : "Preview unavailable."}</FormError>}
      {ready && result?.__typename === "ToolSelection" && (
        <div className={styles.results} data-stale={pending || undefined} aria-live="polite">
          <p className={styles.summary} data-testid="tool-selection-summary">
            Would offer <strong>{result.selected.length}</strong> of {result.candidates.length} allowed tools (top {result.topK}
            {result.minScore != null && `, score ≥ ${result.minScore.toFixed(2)}`}, then core ones).
          </p>
          {result.degraded && <Hint>Degraded: {result.degraded}</Hint>}
          <ol className={cx(shared.plainList, styles.hits)}>
            {result.selected.map((s) => (
              <li key={s.tool.id} className={styles.hit} data-testid="selected-tool">
                <div className={styles.hitHead}>
                  <span className={styles.doc}>{s.tool.name}</span>
                  <Badge mono>{s.tool.group}</Badge>
                  <Badge tone={s.reason === "RANKED" ? "soft" : "neutral"}>{REASONS[s.reason]}</Badge>
                  {s.tool.sideEffects && <Badge tone="warning">side effects</Badge>}
                  <span className="muted mono">{s.score != null ? s.score.toFixed(3) : "—"}</span>
                </div>
              </li>
            ))}
          </ol>
        </div>
      )}
    </PreviewFrame>
  );
}
