import { useState } from "react";
import { Button } from "./Button";

export interface LoadMoreProps {
  /** How many items are shown and how many the list has (the connection's totalCount). */
  shown: number;
  total: number;
  /** Fetch the next page (Apollo's fetchMore with `after: pageInfo.endCursor`). */
  onLoad: () => Promise<unknown>;
  label?: string;
  className?: string;
}

/** "Load more" under a paged list; shown while the connection says it has a next page. */
export function LoadMore({ shown, total, onLoad, label = "Load more", className }: LoadMoreProps) {
  const [loading, setLoading] = useState(false);
  const [failed, setFailed] = useState(false);

  async function load() {
    setLoading(true);
    setFailed(false);
    try {
      await onLoad();
    } catch {
      setFailed(true);
    } finally {
      setLoading(false);
    }
  }

  return (
    <div className={className}>
      <Button variant="ghost" size="small" onClick={() => void load()} disabled={loading} data-testid="load-more">
        {loading ? "Loading…" : `${label} (${shown} of ${total})`}
      </Button>
      {failed && <span role="alert"> Could not load more; try again.</span>}
    </div>
  );
}
