import { formatBytes, formatCount } from "../../lib/format";
import { AlertIcon, CheckIcon, FileIcon } from "../icons";
import type { UploadItem } from "./useUploads";

const OUTCOME_LABELS: Record<string, string> = {
  added: "Added",
  updated: "Updated",
  unchanged: "Unchanged",
  failed: "Failed",
};

function statusText(item: UploadItem): string {
  switch (item.phase) {
    case "queued":
      return "Waiting…";
    case "uploading":
      return `Uploading ${Math.round(item.progress * 100)}%`;
    case "processing":
      return "Reading and embedding…";
    case "done":
      return item.outcome === "unchanged"
        ? "Unchanged: already up to date"
        : `${OUTCOME_LABELS[item.outcome ?? ""] ?? "Done"} · ${formatCount(item.chunks, "chunk")}`;
    case "failed":
      return "Failed";
  }
}

export interface UploadListProps {
  items: readonly UploadItem[];
  onClear?: () => void;
}

/** One row per file: a progress bar while it uploads, then what the server did with it. */
export function UploadList({ items, onClear }: UploadListProps) {
  if (items.length === 0) return null;
  const finished = items.filter((i) => i.phase === "done" || i.phase === "failed").length;
  return (
    <section className="upload-list" aria-label="Uploads">
      <div className="upload-list__head">
        <h3 className="section-title">
          Uploads <span className="muted">{finished}/{items.length} finished</span>
        </h3>
        {onClear && finished > 0 && (
          <button type="button" className="button button--ghost button--small" onClick={onClear}>
            Clear finished
          </button>
        )}
      </div>
      <ul className="upload-list__items">
        {items.map((item) => (
          <li key={item.id} className="upload-item" data-phase={item.phase} data-outcome={item.outcome ?? undefined} data-testid="upload-item">
            <span className="upload-item__icon" aria-hidden="true">
              {item.phase === "failed" ? <AlertIcon width={18} height={18} /> : item.phase === "done" ? <CheckIcon width={18} height={18} /> : <FileIcon width={18} height={18} />}
            </span>
            <div className="upload-item__main">
              <div className="upload-item__row">
                <span className="upload-item__name" title={item.name}>
                  {item.name}
                </span>
                <span className="upload-item__size">{formatBytes(item.size)}</span>
              </div>
              {(item.phase === "uploading" || item.phase === "processing" || item.phase === "queued") && (
                <div
                  className="progress"
                  role="progressbar"
                  aria-label={`Uploading ${item.name}`}
                  aria-valuemin={0}
                  aria-valuemax={100}
                  aria-valuenow={Math.round(item.progress * 100)}
                  data-indeterminate={item.phase === "processing" || undefined}
                >
                  <span className="progress__bar" style={{ width: `${Math.round(item.progress * 100)}%` }} />
                </div>
              )}
              <p className="upload-item__status" data-testid="upload-status">
                {statusText(item)}
              </p>
              {item.error && <p className="upload-item__error">{item.error}</p>}
            </div>
          </li>
        ))}
      </ul>
    </section>
  );
}
