import { useId } from "react";
import type { AnswerMode } from "../../gql/graphql";
import { ANSWER_MODES } from "./settingsDraft";

export interface AnswerModeControlProps {
  value: AnswerMode;
  onChange: (mode: AnswerMode) => void;
}

/** How answers are written: a radio group (the fieldset names it), each choice with its help line. */
export function AnswerModeControl({ value, onChange }: AnswerModeControlProps) {
  const id = useId();
  return (
    <fieldset className="fieldset" data-testid="answer-mode">
      <legend className="fieldset__legend">Answer mode</legend>
      {ANSWER_MODES.map(({ mode, label, help }) => (
        <div key={mode} className="switch-field">
          <input
            id={`${id}-${mode}`}
            type="radio"
            className="radio"
            name={`${id}-answer-mode`}
            value={mode}
            checked={value === mode}
            onChange={() => onChange(mode)}
            aria-describedby={`${id}-${mode}-hint`}
          />
          <div>
            <label htmlFor={`${id}-${mode}`} className="field__label">
              {label}
            </label>
            <p className="field__hint" id={`${id}-${mode}-hint`}>
              {help}
            </p>
          </div>
        </div>
      ))}
    </fieldset>
  );
}
