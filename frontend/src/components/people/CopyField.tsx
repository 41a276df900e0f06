import { useRef, useState } from "react";
import { Button } from "../Button";
import { TextInput } from "../Field";
import styles from "./People.module.css";

/** Copy `text` to the clipboard; outside a secure context (plain http off localhost) the browser's
 * older command on a selected input. */
async function copy(text: string, input: HTMLInputElement | null): Promise<boolean> {
  try {
    if (navigator.clipboard) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // refused: fall back below
  }
  input?.select();
  return document.execCommand?.("copy") ?? false;
}

/** A secret or a link shown once: read-only, selected on focus, with a Copy button. */
export function CopyField({ value, label }: { value: string; label: string }) {
  const input = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState<boolean | null>(null);
  return (
    <div className={styles.copy}>
      <TextInput ref={input} className="mono" readOnly value={value} aria-label={label} onFocus={(e) => e.target.select()} />
      <Button onClick={() => void copy(value, input.current).then(setCopied)}>{copied ? "Copied" : "Copy"}</Button>
      {copied === false && <span className={styles.copyHint}>Select it and copy it by hand.</span>}
    </div>
  );
}
