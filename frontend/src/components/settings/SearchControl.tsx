import type { Quality, RewriteMode } from "../../gql/graphql";
import { Field, FieldRow, Fieldset, Select } from "../Field";
import { QUALITIES, REWRITE_MODES, choiceHint } from "./settingsDraft";

export interface SearchControlProps {
  quality: Quality;
  rewrite: RewriteMode;
  /** RAG is off: nothing is searched, so neither applies. */
  disabled?: boolean;
  onQuality: (quality: Quality) => void;
  onRewrite: (rewrite: RewriteMode) => void;
}

/** How a turn searches in its conversation: how many passes it may take, and whether the model rewrites follow-ups. */
export function SearchControl({ quality, rewrite, disabled = false, onQuality, onRewrite }: SearchControlProps) {
  return (
    <Fieldset legend="Search" data-testid="search-settings">
      <FieldRow>
        <Field label="Quality" hint={choiceHint("A weak search is widened (more candidates, a lower threshold, neighbouring passages).", QUALITIES.find((q) => q.value === quality))}>
          <Select value={quality} disabled={disabled} data-testid="quality" onChange={(e) => onQuality(e.target.value as Quality)}>
            {QUALITIES.map((q) => (
              <option key={q.value} value={q.value}>
                {q.label}
              </option>
            ))}
          </Select>
        </Field>
        <Field label="Rewrite follow-ups" hint={choiceHint("Follow-ups are always searched with the conversation's recent questions.", REWRITE_MODES.find((r) => r.value === rewrite))}>
          <Select value={rewrite} disabled={disabled} data-testid="rewrite" onChange={(e) => onRewrite(e.target.value as RewriteMode)}>
            {REWRITE_MODES.map((r) => (
              <option key={r.value} value={r.value}>
                {r.label}
              </option>
            ))}
          </Select>
        </Field>
      </FieldRow>
    </Fieldset>
  );
}
