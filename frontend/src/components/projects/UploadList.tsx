import { formatBytes, formatCount } from "../../lib/format";
import { Button } from "../Button";
import { cx } from "../../lib/cx";
import { AlertIcon, CheckIcon, FileIcon } from "../icons";
import type { FileStatus } from "../../gql/graphql";
import type { UploadItem } from "./useUploads";
import shared from "../../styles/shared.module.css";
import styles from "./UploadList.module.css";

const OUTCOME_LABELS: Record<FileStatus, string> = {
  ADDED: "Added",
  UPDATED: "Updated",
  UNCHANGED: "Unchanged",
  SKIPPED: "Skipped",
  FAILED: "Failed",
};

function statusText(item: UploadItem): string {
  switch (item.phase) {
    case "queued":
      return "Waiting…";
    case "uploading":
      return `Uploading ${Math.round(item.progress * 100)}%`;
    case "processing":
      switch (item.state) {
        case "QUEUED":
          return "Queued";
        case "PARSING":
          return "Reading…";
        case "EMBEDDING":
          return `Embedding ${item.chunks}/${item.chunksTotal ?? 0} chunks`;
        default:
          return "Sent; waiting for the server…";
      }
    case "done":
      if (item.outcome === "UNCHANGED") return "Unchanged: already up to date";
      if (item.outcome === "SKIPPED") return "Skipped: not indexed (the reason is below)";
      return `${item.outcome ? OUTCOME_LABELS[item.outcome] : "Done"} · ${formatCount(item.chunks, "chunk")}`;
    case "failed":
      return "Failed";
    case "cancelled":
      return "Cancelled";
  }
}

export interface UploadListProps {
  items: readonly UploadItem[];
  onClear?: () => void;
  /** Cancel a file the server has not finished (by the row's id). */
  onCancel?: (id: string) => void;
  /** Queue a failed or cancelled file again. */
  onRetry?: (id: string) => void;
}

const ENDED = new Set(["done", "failed", "cancelled"]);

/** One row per file: a progress bar while it uploads and while the server ingests it, then what the server did with it. */
export function UploadList({ items, onClear, onCancel, onRetry }: UploadListProps) {
  if (items.length === 0) return null;
  const finished = items.filter((i) => ENDED.has(i.phase)).length;
  return (
    <section className={styles.list} aria-label="Uploads">
      <div className={styles.head}>
        <h3 className={styles.title}>
          Uploads <span className="muted">{finished}/{items.length} finished</span>
        </h3>
        {onClear && finished > 0 && (
          <Button variant="ghost" size="small" onClick={onClear}>
            Clear finished
          </Button>
        )}
      </div>
      <ul className={cx(shared.plainList, styles.items)}>
        {items.map((item) => (
          <li key={item.id} className={cx(shared.box, styles.item)} data-phase={item.phase} data-outcome={item.outcome ?? undefined} data-testid="upload-item">
            <span className={styles.icon} aria-hidden="true">
              {item.phase === "failed" ? <AlertIcon width={18} height={18} /> : item.phase === "done" ? <CheckIcon width={18} height={18} /> : <FileIcon width={18} height={18} />}
            </span>
            <div className={styles.main}>
              <div className={styles.row}>
                <span className={cx(shared.ellipsis, styles.name)} title={item.name}>
                  {item.name}
                </span>
                <span className={styles.size}>{formatBytes(item.size)}</span>
              </div>
              {(item.phase === "uploading" || item.phase === "processing" || item.phase === "queued") && (
                <div
                  className={styles.progress}
                  role="progressbar"
                  aria-label={item.phase === "processing" ? `Ingesting ${item.name}` : `Uploading ${item.name}`}
                  aria-valuemin={0}
                  aria-valuemax={100}
                  aria-valuenow={Math.round(item.progress * 100)}
                  data-indeterminate={(item.phase === "processing" && item.state !== "EMBEDDING") || undefined}
                >
                  <span className={styles.bar} style={{ width: `${Math.round(item.progress * 100)}%` }} />
                </div>
              )}
              <p className={styles.status} data-testid="upload-status">
                {statusText(item)}
              </p>
              {item.error && <p className={styles.error}>{item.error}</p>}
            </div>
            {onCancel && item.itemId && item.phase === "processing" && (
              <Button variant="ghost" size="small" onClick={() => onCancel(item.id)} aria-label={`Cancel ${item.name}`}>
                Cancel
              </Button>
            )}
            {onRetry && item.itemId && (item.phase === "failed" || item.phase === "cancelled") && (
              <Button variant="ghost" size="small" onClick={() => onRetry(item.id)} aria-label={`Retry ${item.name}`}>
                Retry
              </Button>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}
