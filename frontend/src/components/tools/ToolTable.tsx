import type { ReactNode } from "react";
import type { ToolFieldsFragment } from "../../gql/graphql";
import { Badge } from "../Badge";
import { IconButton } from "../Button";
import { Table } from "../Table";
import { PencilIcon, TrashIcon } from "../icons";
import styles from "./ToolTable.module.css";

const KIND_LABEL: Record<ToolFieldsFragment["kind"], string> = { BUILTIN: "built-in", HTTP: "HTTP", MCP: "MCP" };

export interface ToolTableProps {
  tools: readonly ToolFieldsFragment[];
  onEdit: (tool: ToolFieldsFragment) => void;
  onDelete: (tool: ToolFieldsFragment) => void;
  /** Extra actions per row (the Test button). */
  extraActions?: (tool: ToolFieldsFragment) => ReactNode;
  /** Knowledge base names by id, for the tools that belong to one. */
  knowledgeBaseNames?: ReadonlyMap<string, string>;
}

/** Every tool, by group then name: what it does, how it runs, and whether it changes the world. */
export function ToolTable({ tools, onEdit, onDelete, extraActions, knowledgeBaseNames = new Map() }: ToolTableProps) {
  return (
    <Table label="Tools">
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Group</th>
          <th scope="col">Belongs to</th>
          <th scope="col">Kind</th>
          <th scope="col">Request</th>
          <th scope="col">
            <span className="visually-hidden">Actions</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {tools.map((tool) => (
          <tr key={tool.id} data-testid="tool-row" data-tool={tool.name}>
            <td>
              <span className={styles.name}>{tool.name}</span>
              <span className={styles.description}>{tool.description}</span>
            </td>
            <td>
              <Badge mono>{tool.group}</Badge> {tool.core && <Badge tone="soft">core</Badge>}
            </td>
            <td data-testid="tool-owner">
              {tool.knowledgeBaseId ? (
                (knowledgeBaseNames.get(tool.knowledgeBaseId) ?? `Knowledge base ${tool.knowledgeBaseId}`)
              ) : (
                <span className="muted">the server</span>
              )}
            </td>
            <td>
              <Badge tone={tool.kind === "BUILTIN" ? "neutral" : "soft"}>{KIND_LABEL[tool.kind]}</Badge>{" "}
              {tool.sideEffects && (
                <Badge tone="warning" title="Previewed; runs only once the user approves">
                  side effects
                </Badge>
              )}
            </td>
            <td className={styles.request}>
              {tool.kind === "HTTP" ? (
                <code>
                  {tool.method} {tool.urlTemplate}
                </code>
              ) : tool.kind === "MCP" ? (
                <code title="Called through the MCP client on this server">MCP {tool.urlTemplate}</code>
              ) : (
                <span className="muted">inside ragchat</span>
              )}
            </td>
            <td className={styles.actions}>
              <span className={styles.buttons}>
                {extraActions?.(tool)}
                <IconButton size="small" aria-label={`Edit ${tool.name}`} title="Edit" onClick={() => onEdit(tool)}>
                  <PencilIcon width={15} height={15} />
                </IconButton>
                {tool.kind !== "BUILTIN" && (
                  <IconButton size="small" aria-label={`Delete ${tool.name}`} title="Delete" onClick={() => onDelete(tool)}>
                    <TrashIcon width={15} height={15} />
                  </IconButton>
                )}
              </span>
            </td>
          </tr>
        ))}
      </tbody>
    </Table>
  );
}
