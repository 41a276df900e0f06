import { useMutation, useQuery } from "@apollo/client/react";
import { useState } from "react";
import { AppShell } from "../components/AppShell";
import { AppSidebar } from "../components/AppSidebar";
import { Badge } from "../components/Badge";
import { Button } from "../components/Button";
import { ConfirmDialog } from "../components/Dialog";
import { KeyIcon, PlusIcon } from "../components/icons";
import { Page, PageHeader } from "../components/Page";
import { CreateKeyDialog } from "../components/people/CreateKeyDialog";
import { EmptyState, ErrorState, Skeleton } from "../components/States";
import { Table } from "../components/Table";
import { type ApiKeyFieldsFragment, ApiKeysDocument, ProjectsDocument, RevokeApiKeyDocument } from "../gql/graphql";
import { formatDateTime, formatRelative, serverTime } from "../lib/format";
import styles from "../components/people/People.module.css";

/** Whether a key still works, in a word. */
export function keyState(key: ApiKeyFieldsFragment, now: Date = new Date()): "revoked" | "expired" | "active" {
  if (key.revokedAt) return "revoked";
  if (key.expiresAt && serverTime(key.expiresAt) <= now) return "expired";
  return "active";
}

/** What a key reaches, in words: its knowledge bases by name (ids the list has not loaded as such). */
export function keyScope(key: ApiKeyFieldsFragment, names: ReadonlyMap<string, string>): string {
  const where = key.knowledgeBaseIds === null || key.knowledgeBaseIds === undefined ? "All your knowledge bases" : key.knowledgeBaseIds.map((id) => names.get(id) ?? `#${id}`).join(", ");
  return `${where} · ${key.readOnly ? "read-only" : "read-write"}${key.manageUsers ? " · manages people" : ""}`;
}

/** `/settings/keys`: the signed-in person's API keys: list, create (the secret shown once), revoke. */
export function KeysPage() {
  const { data, loading, error, refetch } = useQuery(ApiKeysDocument, { fetchPolicy: "cache-and-network" });
  const projects = useQuery(ProjectsDocument);
  const names = new Map(
    projects.data?.projects.__typename === "ProjectConnection" ? projects.data.projects.edges.map(({ node }) => [node.id, node.name] as const) : [],
  );
  const [creating, setCreating] = useState(false);
  const [doomed, setDoomed] = useState<ApiKeyFieldsFragment | null>(null);
  const [revoke] = useMutation(RevokeApiKeyDocument);
  const keys = data?.apiKeys ?? [];

  async function confirmRevoke(): Promise<string | null> {
    if (!doomed) return null;
    const { data: result } = await revoke({ variables: { id: doomed.id } });
    if (result?.revokeApiKey.__typename === "ApiKey") {
      setDoomed(null);
      return null;
    }
    return result && "message" in result.revokeApiKey ? result.revokeApiKey.message : "The key could not be revoked.";
  }

  const newButton = (
    <Button variant="primary" onClick={() => setCreating(true)}>
      <PlusIcon width={16} height={16} /> New key
    </Button>
  );
  return (
    <AppShell title="API keys" sidebar={<AppSidebar activePage="keys" />} actions={newButton}>
      <Page>
        <PageHeader
          title="API keys"
          lead="Keys let scripts and other programs call this server as you. Each reaches only the knowledge bases you chose, never more than you may, and stops working when it expires, when you revoke it, or when your account is disabled."
        />
        {loading && !data && <Skeleton lines={3} label="Loading your keys" />}
        {error && !data && <ErrorState title="Could not load your keys" message={error.message} onRetry={() => void refetch()} />}
        {data && keys.length === 0 && (
          <EmptyState icon={<KeyIcon width={26} height={26} />} title="No keys yet" action={newButton}>
            Create one for each program that calls the API.
          </EmptyState>
        )}
        {keys.length > 0 && (
          <Table label="API keys">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Scope</th>
                <th scope="col">Last used</th>
                <th scope="col">Expires</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.map((key) => {
                const state = keyState(key);
                return (
                  <tr key={key.id} data-testid="api-key-row" data-state={state}>
                    <td>
                      {key.name} {state !== "active" && <Badge tone="danger">{state}</Badge>}
                      <code className={styles.sub}>{key.prefix}…</code>
                    </td>
                    <td>{keyScope(key, names)}</td>
                    <td data-volatile>{key.lastUsedAt ? formatRelative(key.lastUsedAt) : <span className="muted">never</span>}</td>
                    <td>{key.expiresAt ? formatDateTime(key.expiresAt) : <span className="muted">never</span>}</td>
                    <td className={styles.actions}>
                      {!key.revokedAt && (
                        <Button size="small" variant="ghost" aria-label={`Revoke ${key.name}`} onClick={() => setDoomed(key)}>
                          Revoke
                        </Button>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </Table>
        )}
      </Page>
      <CreateKeyDialog open={creating} onClose={() => setCreating(false)} />
      <ConfirmDialog open={doomed != null} title="Revoke key?" confirmLabel="Revoke key" danger onConfirm={confirmRevoke} onCancel={() => setDoomed(null)}>
        <p>
          <strong>{doomed?.name}</strong> stops working at once; whatever uses it gets 401 from now on.
        </p>
      </ConfirmDialog>
    </AppShell>
  );
}
