import { type FormEvent, type KeyboardEvent, useLayoutEffect, useRef, useState } from "react";
import { cx } from "../lib/cx";
import { SendIcon, StopIcon } from "./icons";
import styles from "./Composer.module.css";

const MAX_HEIGHT_PX = 240;

export interface ComposerProps {
  /** Called with the trimmed message; the box empties afterwards. */
  onSend: (text: string) => void;
  /** While true (e.g. an answer is streaming) the text can be edited but not sent. */
  busy?: boolean;
  disabled?: boolean;
  placeholder?: string;
  /** While busy, the send button becomes a stop button calling this. */
  onStop?: () => void;
}

/** The message box: Enter sends, Shift+Enter starts a new line, and it grows with its text. */
export function Composer({ onSend, busy = false, disabled = false, placeholder = "Ask a question…", onStop }: ComposerProps) {
  const [text, setText] = useState("");
  const box = useRef<HTMLTextAreaElement>(null);
  const canSend = !busy && !disabled && text.trim().length > 0;

  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    el.style.height = "auto";
    el.style.height = `${Math.min(el.scrollHeight, MAX_HEIGHT_PX)}px`;
  }, [text]);

  function send() {
    if (!canSend) return;
    onSend(text.trim());
    setText("");
  }

  function onKeyDown(event: KeyboardEvent<HTMLTextAreaElement>) {
    // isComposing: Enter that confirms an IME candidate (Japanese, Chinese…) must not send.
    if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      send();
    }
  }

  function onSubmit(event: FormEvent) {
    event.preventDefault();
    send();
  }

  return (
    <form onSubmit={onSubmit} aria-label="Message">
      <div className={styles.box}>
        <textarea
          ref={box}
          className={styles.input}
          rows={1}
          value={text}
          placeholder={placeholder}
          aria-label="Message"
          disabled={disabled}
          onChange={(event) => setText(event.target.value)}
          onKeyDown={onKeyDown}
        />
        {busy && onStop ? (
          <button type="button" className={cx(styles.send, styles.stop)} onClick={onStop} aria-label="Stop generating">
            <StopIcon width={18} height={18} />
          </button>
        ) : (
          <button type="submit" className={styles.send} disabled={!canSend} aria-label="Send">
            <SendIcon width={18} height={18} />
          </button>
        )}
      </div>
      <p className={styles.hint}>
        <kbd>Enter</kbd> to send · <kbd>Shift</kbd>+<kbd>Enter</kbd> for a new line
      </p>
    </form>
  );
}
