import { useQuery } from "@apollo/client/react";
import { HealthDocument, type HealthQuery } from "../gql/graphql";
import { cx } from "../lib/cx";
import { IconButton } from "./Button";
import { CodeIcon, RefreshIcon } from "./icons";
import shared from "../styles/shared.module.css";
import styles from "./ServerStatus.module.css";

type Health = HealthQuery["health"];
type State = "loading" | "ok" | "migrate" | "error";

const LABELS: Record<State, string> = {
  loading: "Connecting…",
  ok: "Connected",
  migrate: "Database needs migrating",
  error: "Server unreachable",
};

export interface ServerStatusProps {
  /** How often to re-ask the server (ms); 0 turns polling off. */
  pollInterval?: number;
}

/** The server's health: reachable or not, versions, and whether the database is at the latest revision. */
export function ServerStatus({ pollInterval = 30_000 }: ServerStatusProps) {
  const { data, error, loading, refetch } = useQuery(HealthDocument, { pollInterval });
  const health = data?.health;
  const state: State = error ? "error" : health ? (health.ok ? "ok" : "migrate") : loading ? "loading" : "error";

  return (
    <section className={cx(shared.box, styles.status)} data-testid="server-status" data-state={state} aria-label="Server status">
      <div className={styles.head}>
        <span className={styles.dot} data-state={state} aria-hidden="true" />
        <span className={styles.label} role="status">
          {LABELS[state]}
        </span>
        {health && state !== "error" && <span className={styles.version}>v{health.version}</span>}
        {state === "error" && (
          <IconButton size="small" onClick={() => void refetch()} aria-label="Retry">
            <RefreshIcon width={16} height={16} />
          </IconButton>
        )}
      </div>
      {state === "error" && <p className={styles.note}>{error?.message ?? "No answer from /graphql."}</p>}
      {health && state !== "error" && <HealthDetails health={health} />}
      <a className={styles.link} href="/graphql" target="_blank" rel="noopener">
        <CodeIcon width={16} height={16} />
        GraphQL playground
      </a>
    </section>
  );
}

function HealthDetails({ health }: { health: Health }) {
  return (
    <>
      <dl className={styles.details}>
        <dt>SQLite</dt>
        <dd data-testid="sqlite-version">{health.sqliteVersion}</dd>
        <dt>sqlite-vec</dt>
        <dd data-testid="sqlite-vec-version">{health.sqliteVecVersion}</dd>
        <dt>Schema</dt>
        <dd data-testid="migration-state">
          {health.ok ? (
            <>
              {health.migrationRevision} <span className="muted">(latest)</span>
            </>
          ) : (
            <>
              {health.migrationRevision ?? "empty"} → {health.headRevision}
            </>
          )}
        </dd>
      </dl>
      {!health.ok && (
        <p className={styles.note}>
          Run <code>ragchat migrate</code>, then restart the server.
        </p>
      )}
    </>
  );
}
