import { type KeyboardEvent, type ReactNode, type RefObject, useEffect, useId, useRef, useState } from "react";
import { createPortal } from "react-dom";
import { CloseIcon } from "./icons";

const FOCUSABLE =
  'a[href], button:not([disabled]), input:not([disabled]):not([type="hidden"]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

export interface DialogProps {
  open: boolean;
  onClose: () => void;
  title: ReactNode;
  description?: ReactNode;
  children: ReactNode;
  footer?: ReactNode;
  /** A centred modal, or a sheet sliding in from the right (full screen on phones). */
  variant?: "modal" | "drawer";
  size?: "sm" | "md" | "lg";
  /** Focused on open; otherwise the first element with data-autofocus, else the first focusable. */
  initialFocus?: RefObject<HTMLElement | null>;
  className?: string;
  testId?: string;
}

/**
 * An accessible dialog: focus moves in on open and back to where it was on close, Tab cycles
 * inside, Escape and the backdrop close it. Nested dialogs close one at a time.
 */
export function Dialog({
  open,
  onClose,
  title,
  description,
  children,
  footer,
  variant = "modal",
  size = "md",
  initialFocus,
  className,
  testId,
}: DialogProps) {
  const panel = useRef<HTMLDivElement>(null);
  const titleId = useId();
  const descriptionId = useId();
  const close = useRef(onClose);
  close.current = onClose;

  useEffect(() => {
    if (!open) return;
    const returnTo = document.activeElement as HTMLElement | null;
    const root = panel.current;
    const target =
      initialFocus?.current ??
      root?.querySelector<HTMLElement>("[data-autofocus]") ??
      root?.querySelector<HTMLElement>(`.dialog__body ${FOCUSABLE}`) ??
      root;
    target?.focus();
    return () => {
      if (returnTo && returnTo.isConnected) returnTo.focus();
    };
  }, [open, initialFocus]);

  if (!open) return null;

  function onKeyDown(event: KeyboardEvent<HTMLDivElement>) {
    if (event.key === "Escape") {
      event.stopPropagation();
      event.preventDefault();
      close.current();
      return;
    }
    if (event.key !== "Tab" || !panel.current) return;
    const items = [...panel.current.querySelectorAll<HTMLElement>(FOCUSABLE)].filter((el) => el.offsetParent !== null || el === document.activeElement);
    if (items.length === 0) return;
    const first = items[0]!;
    const last = items[items.length - 1]!;
    if (event.shiftKey && (document.activeElement === first || document.activeElement === panel.current)) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    }
  }

  return createPortal(
    <div className={`dialog-layer dialog-layer--${variant}`} data-testid={testId}>
      <div className="dialog-layer__backdrop" onClick={() => close.current()} aria-hidden="true" />
      <div
        ref={panel}
        role="dialog"
        aria-modal="true"
        aria-labelledby={titleId}
        aria-describedby={description ? descriptionId : undefined}
        tabIndex={-1}
        className={`dialog dialog--${variant} dialog--${size}${className ? ` ${className}` : ""}`}
        onKeyDown={onKeyDown}
      >
        <header className="dialog__header">
          <div className="dialog__heading">
            <h2 id={titleId} className="dialog__title">
              {title}
            </h2>
            {description && (
              <p id={descriptionId} className="dialog__description">
                {description}
              </p>
            )}
          </div>
          <button type="button" className="icon-button" onClick={() => close.current()} aria-label="Close">
            <CloseIcon />
          </button>
        </header>
        <div className="dialog__body">{children}</div>
        {footer && <footer className="dialog__footer">{footer}</footer>}
      </div>
    </div>,
    document.body,
  );
}

export interface ConfirmDialogProps {
  open: boolean;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  danger?: boolean;
  /** May reject or resolve to an error message; the dialog stays open and shows it. */
  onConfirm: () => Promise<string | null | void> | string | null | void;
  onCancel: () => void;
}

/** "Are you sure?" with the action's own name on the button; Escape or Cancel backs out. */
export function ConfirmDialog({ open, title, children, confirmLabel, danger = false, onConfirm, onCancel }: ConfirmDialogProps) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const cancel = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    if (open) setError(null);
  }, [open]);

  async function confirm() {
    setBusy(true);
    setError(null);
    try {
      const problem = await onConfirm();
      if (problem) setError(problem);
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <Dialog
      open={open}
      onClose={onCancel}
      title={title}
      size="sm"
      initialFocus={cancel}
      footer={
        <>
          <button ref={cancel} type="button" className="button" onClick={onCancel}>
            Cancel
          </button>
          <button
            type="button"
            className={danger ? "button button--danger" : "button button--primary"}
            onClick={() => void confirm()}
            disabled={busy}
          >
            {busy ? "Working…" : confirmLabel}
          </button>
        </>
      }
    >
      <div className="confirm">{children}</div>
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
    </Dialog>
  );
}
