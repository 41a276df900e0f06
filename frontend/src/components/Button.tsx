import type { ComponentPropsWithRef } from "react";
import { cx } from "../lib/cx";
import styles from "./Button.module.css";

export type ButtonVariant = "default" | "primary" | "danger" | "ghost";

const VARIANTS: Record<ButtonVariant, string | undefined> = {
  default: undefined,
  primary: styles.primary,
  danger: styles.danger,
  ghost: styles.ghost,
};

export interface ButtonLook {
  variant?: ButtonVariant;
  size?: "md" | "small";
}

/** The classes of a button, for elements that only look like one (a link to a page). */
export function buttonClass({ variant = "default", size = "md" }: ButtonLook = {}, className?: string): string {
  return cx(styles.button, VARIANTS[variant], size === "small" && styles.small, className);
}

export type ButtonProps = ComponentPropsWithRef<"button"> & ButtonLook;

/** A labelled button; `type="button"` unless it submits a form. */
export function Button({ variant, size, className, type = "button", ...props }: ButtonProps) {
  return <button type={type} className={buttonClass({ variant, size }, className)} {...props} />;
}

/** A button with only an icon: give it an aria-label. */
export function IconButton({ size = "md", className, type = "button", ...props }: ComponentPropsWithRef<"button"> & { size?: "md" | "small" }) {
  return <button type={type} className={cx(styles.iconButton, size === "small" && styles.iconSmall, className)} {...props} />;
}

/** A button that reads as a link inside text ("Show more", "Adjust retrieval"). */
export function LinkButton({ className, type = "button", ...props }: ComponentPropsWithRef<"button">) {
  return <button type={type} className={cx(styles.linkButton, className)} {...props} />;
}
