import { useId, type ReactNode } from "react";
import { Label } from "../Field";
import { SearchIcon } from "../icons";
import { Spinner } from "../States";
import styles from "./RetrievalPreview.module.css";

export interface PreviewFrameProps {
  /** The section's accessible name and test id. */
  name: string;
  testId: string;
  label: string;
  placeholder: string;
  value: string;
  onChange: (value: string) => void;
  /** Whether an answer is on its way (the input has not settled, or the query is loading). */
  busy: boolean;
  children: ReactNode;
}

/**
 * The frame the settings' live previews share: a labelled search box whose text the preview
 * runs once it settles, a spinner while it does, and the preview's own hints and results below.
 * Enter does nothing (the box sits inside the settings form, which it must not submit).
 */
export function PreviewFrame({
  name,
  testId,
  label,
  placeholder,
  value,
  onChange,
  busy,
  children,
}: PreviewFrameProps) {
  const inputId = useId();
  return (
    <section className={styles.preview} aria-label={name} data-testid={testId}>
      <div className={styles.head}>
        <Label htmlFor={inputId}>{label}</Label>
        {busy && <Spinner label="Updating the preview" />}
      </div>
      <div className={styles.search}>
        <SearchIcon width={16} height={16} aria-hidden="true" />
        <input
          id={inputId}
          className={styles.input}
          placeholder={placeholder}
          value={value}
          onChange={(e) => onChange(e.target.value)}
          onKeyDown={(e) => e.key === "Enter" && e.preventDefault()}
        />
      </div>
      {children}
    </section>
  );
}
