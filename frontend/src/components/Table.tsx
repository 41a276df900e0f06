import type { ReactNode } from "react";
import { cx } from "../lib/cx";
import styles from "./Table.module.css";

/** Right-aligned tabular figures, for the th and td of a number column. */
export const numeric = styles.num;

/** A bordered table that scrolls sideways when it does not fit. */
export function Table({ label, compact = false, children }: { label: string; compact?: boolean; children: ReactNode }) {
  return (
    <div className={styles.wrap}>
      <table className={cx(styles.table, compact && styles.compact)} aria-label={label}>
        {children}
      </table>
    </div>
  );
}
