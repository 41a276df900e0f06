import type { ComponentPropsWithoutRef, ReactNode } from "react";
import { cx } from "../lib/cx";
import styles from "./Notice.module.css";

export type NoticeTone = "info" | "warning" | "danger";

const TONES: Record<NoticeTone, string | undefined> = {
  info: styles.info,
  warning: styles.warning,
  danger: styles.danger,
};

export interface NoticeProps extends ComponentPropsWithoutRef<"div"> {
  tone: NoticeTone;
  icon: ReactNode;
  /** Buttons at the end (Retry, Discard). */
  actions?: ReactNode;
  compact?: boolean;
}

/** A coloured box in the flow of a page: icon, text, and what the reader can do about it. */
export function Notice({ tone, icon, actions, compact = false, className, children, ...props }: NoticeProps) {
  return (
    <div className={cx(styles.notice, TONES[tone], compact && styles.compact, className)} {...props}>
      {icon}
      <div className={styles.main}>{children}</div>
      {actions && <div className={styles.actions}>{actions}</div>}
    </div>
  );
}
