import { type MouseEvent, type PointerEvent, type ReactNode, type RefObject, useEffect, useId, useLayoutEffect, useRef, useState } from "react";
import { createPortal } from "react-dom";
import { cx } from "../lib/cx";
import { Button, IconButton } from "./Button";
import { FormError } from "./Field";
import { CloseIcon } from "./icons";
import styles from "./Dialog.module.css";

const FOCUSABLE =
  'a[href], button:not([disabled]), input:not([disabled]):not([type="hidden"]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

const VARIANTS = { modal: undefined, drawer: styles.drawer };
const SIZES = { sm: styles.sm, md: styles.md, lg: styles.lg };

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
  /** Focused on open; otherwise the first element with data-autofocus, else the first focusable (the close button). */
  initialFocus?: RefObject<HTMLElement | null>;
  className?: string;
  testId?: string;
}

/**
 * A modal dialog on the native `<dialog>`, opened with `showModal()`: the browser keeps focus
 * inside, makes the page behind inert and sends Escape to the topmost dialog as a `cancel` event,
 * so nested dialogs close one at a time. Escape, the close button and a click on the backdrop call
 * onClose; focus moves in on open and back to where it was on close.
 */
export function Dialog({ open, ...props }: DialogProps) {
  if (!open) return null;
  return createPortal(<ModalDialog {...props} />, document.body);
}

function ModalDialog({
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
}: Omit<DialogProps, "open">) {
  const dialog = useRef<HTMLDialogElement>(null);
  const pressedOnBackdrop = useRef(false);
  const titleId = useId();
  const descriptionId = useId();
  const close = useRef(onClose);
  close.current = onClose;

  // Mounted only while open: showModal on mount, close and give focus back on unmount. A layout
  // effect, so the dialog is still in the document when it closes.
  useLayoutEffect(() => {
    const element = dialog.current!;
    const returnTo = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    element.showModal();
    const target =
      initialFocus?.current ??
      element.querySelector<HTMLElement>("[data-autofocus]") ??
      element.querySelector<HTMLElement>(FOCUSABLE) ??
      element;
    target.focus();
    // The owner decides: it closes the dialog by no longer rendering it.
    const onCancel = (event: Event) => {
      event.preventDefault();
      close.current();
    };
    // The browser may close it without asking (a second Escape with no user activation between).
    const onNativeClose = () => close.current();
    element.addEventListener("cancel", onCancel);
    element.addEventListener("close", onNativeClose);
    return () => {
      element.removeEventListener("cancel", onCancel);
      element.removeEventListener("close", onNativeClose);
      element.close();
      if (returnTo?.isConnected) returnTo.focus();
    };
    // initialFocus is read once, on open.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  // The ::backdrop is part of the <dialog> box: a click on it targets the dialog itself, outside its
  // rectangle. Pressing inside and releasing outside (selecting text) does not count.
  const onBackdrop = (event: PointerEvent<HTMLDialogElement> | MouseEvent<HTMLDialogElement>) => {
    if (event.target !== event.currentTarget) return false;
    const box = event.currentTarget.getBoundingClientRect();
    return event.clientX < box.left || event.clientX > box.right || event.clientY < box.top || event.clientY > box.bottom;
  };

  return (
    <dialog
      ref={dialog}
      aria-labelledby={titleId}
      aria-describedby={description ? descriptionId : undefined}
      tabIndex={-1}
      className={cx(styles.dialog, VARIANTS[variant], SIZES[size], className)}
      data-testid={testId}
      // Escape becomes the dialog's cancel event; it must not also reach the page's own Escape
      // handlers (the phone drawer's) behind the dialog.
      onKeyDown={(event) => event.key === "Escape" && event.stopPropagation()}
      onPointerDown={(event) => {
        pressedOnBackdrop.current = onBackdrop(event);
      }}
      onClick={(event) => {
        if (pressedOnBackdrop.current && onBackdrop(event)) close.current();
        pressedOnBackdrop.current = false;
      }}
    >
      <header className={styles.header}>
        <div className={styles.heading}>
          <h2 id={titleId} className={styles.title}>
            {title}
          </h2>
          {description && (
            <p id={descriptionId} className={styles.description}>
              {description}
            </p>
          )}
        </div>
        <IconButton onClick={() => close.current()} aria-label="Close">
          <CloseIcon />
        </IconButton>
      </header>
      <div className={styles.body}>{children}</div>
      {footer && <footer className={styles.footer}>{footer}</footer>}
    </dialog>
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
          <Button ref={cancel} onClick={onCancel}>
            Cancel
          </Button>
          <Button variant={danger ? "danger" : "primary"} onClick={() => void confirm()} disabled={busy}>
            {busy ? "Working…" : confirmLabel}
          </Button>
        </>
      }
    >
      <div className={styles.confirm}>{children}</div>
      {error && <FormError role="alert">{error}</FormError>}
    </Dialog>
  );
}
