import type { ComponentPropsWithoutRef } from "react";
import { cx } from "../lib/cx";
import styles from "./Badge.module.css";

export type BadgeTone = "neutral" | "success" | "danger" | "warning" | "soft";

const TONES: Record<BadgeTone, string | undefined> = {
  neutral: undefined,
  success: styles.success,
  danger: styles.danger,
  warning: styles.warning,
  soft: styles.soft,
};

export interface BadgeProps extends ComponentPropsWithoutRef<"span"> {
  tone?: BadgeTone;
  /** Monospaced: identifiers, settings. */
  mono?: boolean;
}

/** A short status or label in a pill. */
export function Badge({ tone = "neutral", mono = false, className, ...props }: BadgeProps) {
  return <span className={cx(styles.badge, TONES[tone], mono && styles.mono, className)} {...props} />;
}
