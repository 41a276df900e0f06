import type { TraceFieldsFragment } from "../../gql/graphql";
import { formatMs, formatScore } from "../../lib/format";
import { Badge } from "../Badge";
import { Table, numeric } from "../Table";
import styles from "./TracePanel.module.css";

type Tools = NonNullable<TraceFieldsFragment["tools"]>;

const REASONS = { RANKED: "similar", CORE: "core", ALL: "all (degraded)" } as const;

/** Tool selection's three stages (allowed groups, similarity, core tools) and every call the model made. */
export function ToolsDetails({ tools }: { tools: Tools }) {
  const offered = new Map(tools.selected.map((s) => [s.name, s.reason]));
  return (
    <>
      <dl className={styles.kv} data-testid="trace-tools">
        <dt>Groups</dt>
        <dd>{tools.groups.join(", ")}</dd>
        <dt>Offered</dt>
        <dd>
          {tools.selected.length} of {tools.candidates.length} (top {tools.topK}
          {tools.minScore != null && `, score ≥ ${formatScore(tools.minScore)}`}, then core tools)
        </dd>
        <dt>Rounds</dt>
        <dd>{tools.rounds}</dd>
        {tools.degraded && (
          <>
            <dt>Degraded</dt>
            <dd>{tools.degraded}</dd>
          </>
        )}
        {tools.stopped && (
          <>
            <dt>Stopped</dt>
            <dd>{tools.stopped}</dd>
          </>
        )}
      </dl>
      <Table label="Tools considered" compact>
        <thead>
          <tr>
            <th scope="col">Tool</th>
            <th scope="col" className={numeric}>
              Score
            </th>
            <th scope="col">Offered</th>
          </tr>
        </thead>
        <tbody>
          {tools.candidates.map((c) => (
            <tr key={c.name} data-testid="trace-tool-candidate">
              <td className="mono">{c.name}</td>
              <td className={numeric}>{c.score != null ? formatScore(c.score) : "—"}</td>
              <td>{offered.has(c.name) ? <Badge tone="success">{REASONS[offered.get(c.name)!]}</Badge> : <span className="muted">no</span>}</td>
            </tr>
          ))}
        </tbody>
      </Table>
      {tools.calls.length > 0 && (
        <Table label="Tool calls" compact>
          <thead>
            <tr>
              <th scope="col">Call</th>
              <th scope="col">Status</th>
              <th scope="col" className={numeric}>
                Result
              </th>
              <th scope="col" className={numeric}>
                Time
              </th>
            </tr>
          </thead>
          <tbody>
            {tools.calls.map((call) => (
              <tr key={call.callId} data-testid="trace-tool-call" data-status={call.status}>
                <td>
                  <span className="mono">{call.name}</span> <span className="muted mono">{call.arguments}</span>
                </td>
                <td>
                  {call.status.toLowerCase()}
                  {call.error && <span className="muted"> — {call.error}</span>}
                </td>
                <td className={numeric}>
                  {call.resultSize} chars{call.truncated ? " (cut)" : ""}
                </td>
                <td className={numeric}>{formatMs(call.ms)}</td>
              </tr>
            ))}
          </tbody>
        </Table>
      )}
    </>
  );
}
