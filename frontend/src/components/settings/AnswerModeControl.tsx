import { useId } from "react";
import type { AnswerMode } from "../../gql/graphql";
import { Fieldset, Radio } from "../Field";
import { ANSWER_MODES } from "./settingsDraft";

export interface AnswerModeControlProps {
  value: AnswerMode;
  onChange: (mode: AnswerMode) => void;
}

/** How answers are written: a radio group (the fieldset names it), each choice with its help line. */
export function AnswerModeControl({ value, onChange }: AnswerModeControlProps) {
  const id = useId();
  return (
    <Fieldset legend="Answer mode" data-testid="answer-mode">
      {ANSWER_MODES.map(({ mode, label, help }) => (
        <Radio
          key={mode}
          id={`${id}-${mode}`}
          label={label}
          hint={help}
          name={`${id}-answer-mode`}
          value={mode}
          checked={value === mode}
          onChange={() => onChange(mode)}
        />
      ))}
    </Fieldset>
  );
}
