import type { ReactNode } from "react";
import { cx } from "../lib/cx";
import { Button } from "./Button";
import { AlertIcon, RefreshIcon } from "./icons";
import shared from "../styles/shared.module.css";
import styles from "./States.module.css";

/** Placeholder rows while a list loads. */
export function Skeleton({ lines = 3, label = "Loading" }: { lines?: number; label?: string }) {
  return (
    <div className={styles.skeleton} role="status" aria-label={label}>
      {Array.from({ length: lines }, (_, i) => (
        <span key={i} className={styles.line} style={{ width: `${92 - ((i * 17) % 40)}%` }} />
      ))}
    </div>
  );
}

export interface EmptyStateProps {
  icon?: ReactNode;
  title: ReactNode;
  children?: ReactNode;
  action?: ReactNode;
  compact?: boolean;
}

export function EmptyState({ icon, title, children, action, compact }: EmptyStateProps) {
  return (
    <div className={cx(styles.empty, compact && styles.compact)}>
      {icon && <span className={cx(shared.accentTile, styles.emptyIcon)}>{icon}</span>}
      <h3 className={styles.emptyTitle}>{title}</h3>
      {children && <div className={styles.emptyText}>{children}</div>}
      {action && <div className={styles.emptyAction}>{action}</div>}
    </div>
  );
}

export function ErrorState({ title = "Something went wrong", message, onRetry }: { title?: string; message: string; onRetry?: () => void }) {
  return (
    <div className={styles.error} role="alert">
      <AlertIcon width={18} height={18} />
      <div>
        <strong>{title}</strong>
        <p>{message}</p>
      </div>
      {onRetry && (
        <Button size="small" onClick={onRetry}>
          <RefreshIcon width={14} height={14} /> Retry
        </Button>
      )}
    </div>
  );
}

export function Spinner({ label }: { label?: string }) {
  return <span className={styles.spinner} role={label ? "status" : undefined} aria-label={label} />;
}
