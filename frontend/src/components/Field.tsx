import { type ComponentPropsWithRef, type ReactElement, type ReactNode, cloneElement, useId } from "react";
import { cx } from "../lib/cx";
import shared from "../styles/shared.module.css";
import styles from "./Field.module.css";

export interface FieldProps {
  label: ReactNode;
  /** The input; it gets id, aria-invalid and aria-describedby. */
  children: ReactElement<Record<string, unknown>>;
  hint?: ReactNode;
  error?: string | null;
  /** Extra content on the label row (a value readout, a link). */
  aside?: ReactNode;
  className?: string;
}

/** A labelled input with its hint and its error (from the client or a ValidationError). */
export function Field({ label, children, hint, error, aside, className }: FieldProps) {
  const id = useId();
  const hintId = hint ? `${id}-hint` : undefined;
  const errorId = error ? `${id}-error` : undefined;
  const describedBy = [errorId, hintId].filter(Boolean).join(" ") || undefined;
  return (
    <div className={cx(styles.field, className)}>
      <div className={styles.labelRow}>
        <Label htmlFor={id}>{label}</Label>
        {aside}
      </div>
      {cloneElement(children, { id, "aria-invalid": error ? true : undefined, "aria-describedby": describedBy })}
      {error && (
        <p className={styles.error} id={errorId}>
          {error}
        </p>
      )}
      {hint && !error && <Hint id={hintId}>{hint}</Hint>}
    </div>
  );
}

export interface SwitchProps {
  label: ReactNode;
  checked: boolean;
  onChange: (checked: boolean) => void;
  hint?: ReactNode;
  disabled?: boolean;
}

/** An on/off setting: a checkbox with role="switch". */
export function Switch({ label, checked, onChange, hint, disabled }: SwitchProps) {
  const id = useId();
  return (
    <div className={styles.choice}>
      <input
        id={id}
        type="checkbox"
        role="switch"
        className={styles.switch}
        checked={checked}
        disabled={disabled}
        aria-describedby={hint ? `${id}-hint` : undefined}
        onChange={(event) => onChange(event.target.checked)}
      />
      <ChoiceLabel id={id} label={label} hint={hint} />
    </div>
  );
}

export interface RadioProps extends Omit<ComponentPropsWithRef<"input">, "type"> {
  label: ReactNode;
  hint: ReactNode;
}

/** One choice of a radio group, laid out like a switch: control, label, hint. */
export function Radio({ label, hint, id: given, ...props }: RadioProps) {
  const generated = useId();
  const id = given ?? generated;
  return (
    <div className={styles.choice}>
      <input id={id} type="radio" className={styles.radio} aria-describedby={`${id}-hint`} {...props} />
      <ChoiceLabel id={id} label={label} hint={hint} />
    </div>
  );
}

function ChoiceLabel({ id, label, hint }: { id: string; label: ReactNode; hint?: ReactNode }) {
  return (
    <div>
      <Label htmlFor={id}>{label}</Label>
      {hint && <Hint id={`${id}-hint`}>{hint}</Hint>}
    </div>
  );
}

export function Label(props: ComponentPropsWithRef<"label">) {
  return <label {...props} className={cx(styles.label, props.className)} />;
}

/** Help under a field, or a note in a form. */
export function Hint(props: ComponentPropsWithRef<"p">) {
  return <p {...props} className={cx(styles.hint, props.className)} />;
}

/** A bordered group of fields under a small uppercase legend. */
export function Fieldset({ legend, children, ...props }: ComponentPropsWithRef<"fieldset"> & { legend: ReactNode }) {
  return (
    <fieldset {...props} className={cx(styles.fieldset, props.className)}>
      <legend className={cx(shared.eyebrow, styles.legend)}>{legend}</legend>
      {children}
    </fieldset>
  );
}

/** Two fields side by side (one above the other on phones). */
export function FieldRow({ children }: { children: ReactNode }) {
  return <div className={styles.row}>{children}</div>;
}

/** A form laid out as a column of fields. */
export function Form(props: ComponentPropsWithRef<"form">) {
  return <form {...props} className={cx(styles.form, props.className)} />;
}

/** What went wrong with the whole form (or an action), not with one field. */
export function FormError(props: ComponentPropsWithRef<"p">) {
  return <p {...props} className={cx(styles.formError, props.className)} />;
}

export function TextInput(props: ComponentPropsWithRef<"input">) {
  return <input {...props} className={cx(styles.input, props.className)} />;
}

export function TextArea(props: ComponentPropsWithRef<"textarea">) {
  return <textarea {...props} className={cx(styles.input, props.className)} />;
}

export function Select(props: ComponentPropsWithRef<"select">) {
  return <select {...props} className={cx(styles.input, props.className)} />;
}

/** A slider next to a field's label, mirroring its number input. */
export function Range(props: Omit<ComponentPropsWithRef<"input">, "type">) {
  return <input {...props} type="range" className={cx(styles.range, props.className)} />;
}
