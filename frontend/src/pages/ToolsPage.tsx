import { useMutation, useQuery } from "@apollo/client/react";
import { useState } from "react";
import { AppShell } from "../components/AppShell";
import { AppSidebar } from "../components/AppSidebar";
import { Button } from "../components/Button";
import { ConfirmDialog } from "../components/Dialog";
import { PlusIcon, SlidersIcon } from "../components/icons";
import { Page, PageHeader } from "../components/Page";
import { EmptyState, ErrorState, Skeleton } from "../components/States";
import { TestToolDialog } from "../components/tools/TestToolDialog";
import { ToolFormDialog } from "../components/tools/ToolFormDialog";
import { ToolTable } from "../components/tools/ToolTable";
import { Notice } from "../components/Notice";
import { DeleteToolDocument, ProjectsDocument, ToolCallingModelsDocument, type ToolFieldsFragment, ToolsDocument } from "../gql/graphql";
import { evictDeleted } from "../lib/evict";

/** `/tools`: the tools chat models may call: built-in ones and registered HTTP endpoints. */
export function ToolsPage() {
  const { data, loading, error, refetch } = useQuery(ToolsDocument);
  const tools = data?.tools ?? [];
  // The knowledge bases the caller sees: a tool may belong to one of them (the server checks the role).
  const projects = useQuery(ProjectsDocument);
  const knowledgeBases =
    projects.data?.projects.__typename === "ProjectConnection" ? projects.data.projects.edges.map((e) => ({ id: e.node.id, name: e.node.name })) : [];
  const knowledgeBaseNames = new Map(knowledgeBases.map((kb) => [kb.id, kb.name]));
  const calling = useQuery(ToolCallingModelsDocument).data;
  const [editing, setEditing] = useState<ToolFieldsFragment | null>(null);
  const [creating, setCreating] = useState(false);
  const [doomed, setDoomed] = useState<ToolFieldsFragment | null>(null);
  const [testing, setTesting] = useState<ToolFieldsFragment | null>(null);
  const [deleteTool] = useMutation(DeleteToolDocument, {
    update(cache, { data }) {
      if (data?.deleteTool.__typename === "ToolDeleted") evictDeleted(cache, data.deleteTool);
    },
    refetchQueries: ["Tools"],
    awaitRefetchQueries: true,
  });

  async function confirmDelete(): Promise<string | null> {
    if (!doomed) return null;
    const { data: result } = await deleteTool({ variables: { id: doomed.id } });
    if (result?.deleteTool.__typename === "ToolDeleted") {
      setDoomed(null);
      return null;
    }
    return result && "message" in result.deleteTool ? result.deleteTool.message : "The tool could not be deleted.";
  }

  const newButton = (
    <Button variant="primary" onClick={() => setCreating(true)}>
      <PlusIcon width={16} height={16} /> New HTTP tool
    </Button>
  );

  return (
    <AppShell title="Tools" sidebar={<AppSidebar activeTools />} actions={newButton}>
      <Page>
        <PageHeader
          title="Tools"
          lead="What a chat model may call while it answers. A chat offers the tools of the groups allowed in its settings — the server's, and its own knowledge base's — chosen for each message by similarity; a tool with side effects is only previewed until the user approves it."
        />
        {calling && <ToolCallingNotice defaults={calling.sessionDefaults} providers={calling.providers} />}
        {loading && !data && <Skeleton lines={4} label="Loading tools" />}
        {error && !data && <ErrorState title="Could not load the tools" message={error.message} onRetry={() => void refetch()} />}
        {data && tools.length === 0 && (
          <EmptyState icon={<SlidersIcon width={26} height={26} />} title="No tools" action={newButton}>
            Register an HTTP endpoint a model can call.
          </EmptyState>
        )}
        {tools.length > 0 && (
          <ToolTable
            tools={tools}
            onEdit={setEditing}
            onDelete={setDoomed}
            knowledgeBaseNames={knowledgeBaseNames}
            extraActions={(tool) => (
              <Button size="small" variant="ghost" aria-label={`Test ${tool.name}`} onClick={() => setTesting(tool)}>
                Test
              </Button>
            )}
          />
        )}
      </Page>
      <ToolFormDialog open={creating || editing != null} tool={editing} knowledgeBases={knowledgeBases} onClose={() => (setCreating(false), setEditing(null))} />
      <TestToolDialog tool={testing} onClose={() => setTesting(null)} />
      <ConfirmDialog open={doomed != null} title="Delete tool?" confirmLabel="Delete tool" danger onConfirm={confirmDelete} onCancel={() => setDoomed(null)}>
        <p>
          <strong>{doomed?.name}</strong> will no longer be offered to any chat. Calls already made stay in their chats.
        </p>
      </ConfirmDialog>
    </AppShell>
  );
}

/** Says so when the model new chats use cannot call tools, and which providers here can. */
export function ToolCallingNotice({
  defaults,
  providers,
}: {
  defaults: { provider: string; model: string };
  providers: readonly { provider: string; available: boolean; toolCalling: boolean }[];
}) {
  const byDefault = providers.find((p) => p.provider === defaults.provider);
  if (byDefault?.toolCalling) return null;
  const able = providers.filter((p) => p.available && p.toolCalling).map((p) => p.provider);
  return (
    <Notice tone="info" icon={<SlidersIcon width={18} height={18} />} data-testid="tool-calling-notice">
      New chats use {defaults.provider}/{defaults.model}, which cannot call tools.{" "}
      {able.length > 0
        ? `To use tools, choose a model of ${able.join(" or ")} in a chat's settings, then allow its tool groups.`
        : "No provider configured on this server can: set up an OpenAI-compatible server or Ollama (docs/CONFIGURATION.md)."}
    </Notice>
  );
}
