import { useMutation, useQuery } from "@apollo/client/react";
import { useState } from "react";
import { AppShell } from "../components/AppShell";
import { AppSidebar } from "../components/AppSidebar";
import { ConfirmDialog } from "../components/Dialog";
import { ChatIcon, DatabaseIcon, FileIcon, PencilIcon, PlusIcon, TrashIcon } from "../components/icons";
import { DocumentTable } from "../components/projects/DocumentTable";
import { Dropzone } from "../components/projects/Dropzone";
import { ProjectFormDialog } from "../components/projects/ProjectFormDialog";
import { UploadList } from "../components/projects/UploadList";
import { useUploads } from "../components/projects/useUploads";
import { EmptyState, ErrorState, Skeleton } from "../components/States";
import { ChatSessionsDocument, DeleteProjectDocument, ProjectDetailDocument } from "../gql/graphql";
import { formatCount, formatRelative } from "../lib/format";
import { Link, navigate, paths } from "../lib/router";
import { useCreateChat } from "../lib/useCreateChat";

/** `/projects/:id`: a knowledge base's documents (upload, list, delete) and its chats. */
export function ProjectPage({ projectId }: { projectId: string }) {
  const { data, loading, error, refetch } = useQuery(ProjectDetailDocument, { variables: { id: projectId } });
  const project = data?.project.__typename === "Project" ? data.project : null;
  const [renaming, setRenaming] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [deleteProject] = useMutation(DeleteProjectDocument, { refetchQueries: ["Projects"], awaitRefetchQueries: true });
  const uploads = useUploads(projectId);
  const chat = useCreateChat();

  async function confirmDelete(): Promise<string | null> {
    const { data: result } = await deleteProject({ variables: { id: projectId } });
    if (result?.deleteProject.__typename !== "Deleted") {
      return result && "message" in result.deleteProject ? result.deleteProject.message : "It could not be deleted.";
    }
    setDeleting(false);
    navigate(paths.home(), { replace: true });
    return null;
  }

  const actions = project && (
    <>
      <button type="button" className="icon-button" aria-label="Rename knowledge base" title="Rename" onClick={() => setRenaming(true)}>
        <PencilIcon width={18} height={18} />
      </button>
      <button type="button" className="icon-button" aria-label="Delete knowledge base" title="Delete" onClick={() => setDeleting(true)}>
        <TrashIcon width={18} height={18} />
      </button>
      <button type="button" className="button button--primary topbar__cta" onClick={() => void chat.start(projectId)} disabled={chat.creating}>
        <PlusIcon width={16} height={16} /> New chat
      </button>
    </>
  );

  return (
    <AppShell title={project?.name ?? "Knowledge base"} sidebar={<AppSidebar activeProjectId={projectId} />} actions={actions}>
      <div className="page">
        <div className="page__inner">
          {loading && !data && <Skeleton lines={5} label="Loading the knowledge base" />}
          {error && !data && <ErrorState title="Could not load the knowledge base" message={error.message} onRetry={() => void refetch()} />}
          {data && !project && (
            <EmptyState icon={<DatabaseIcon width={26} height={26} />} title="Knowledge base not found" action={<Link to={paths.home()} className="button">All knowledge bases</Link>}>
              {"message" in data.project ? data.project.message : "It may have been deleted."}
            </EmptyState>
          )}
          {project && (
            <>
              <header className="page-header">
                <h2 className="page-header__title">{project.name}</h2>
                {project.description && <p className="page-header__lead">{project.description}</p>}
                <dl className="stats" aria-label="Knowledge base statistics">
                  <div className="stats__item">
                    <dt>Documents</dt>
                    <dd data-testid="stat-documents">{project.documentCount}</dd>
                  </div>
                  <div className="stats__item">
                    <dt>Chunks</dt>
                    <dd data-testid="stat-chunks">{project.chunkCount}</dd>
                  </div>
                  <div className="stats__item stats__item--wide">
                    <dt>Embedding space</dt>
                    <dd className="mono">{project.embeddingSpace?.label ?? "— (set by the first upload)"}</dd>
                  </div>
                </dl>
                {chat.error && (
                  <p className="form-error" role="alert">
                    {chat.error}
                  </p>
                )}
              </header>

              <section className="section" aria-labelledby="documents-title">
                <div className="section__head">
                  <h3 id="documents-title" className="section-title">
                    Documents
                  </h3>
                </div>
                <Dropzone onFiles={uploads.add} />
                <UploadList items={uploads.items} onClear={uploads.clearFinished} />
                {project.documents.length > 0 ? (
                  <DocumentTable documents={project.documents} />
                ) : (
                  <EmptyState compact icon={<FileIcon width={22} height={22} />} title="No documents yet">
                    Upload some to give your chats something to answer from.
                  </EmptyState>
                )}
              </section>

              <ProjectChats projectId={projectId} onNew={() => void chat.start(projectId)} />
            </>
          )}
        </div>
      </div>
      <ProjectFormDialog open={renaming} onClose={() => setRenaming(false)} project={project} />
      <ConfirmDialog
        open={deleting}
        title="Delete knowledge base?"
        confirmLabel="Delete knowledge base"
        danger
        onConfirm={confirmDelete}
        onCancel={() => setDeleting(false)}
      >
        <p>
          <strong>{project?.name}</strong> will be deleted with its {formatCount(project?.documentCount ?? 0, "document")}, their
          vectors and all of its chats. This cannot be undone.
        </p>
      </ConfirmDialog>
    </AppShell>
  );
}

function ProjectChats({ projectId, onNew }: { projectId: string; onNew: () => void }) {
  const { data, loading } = useQuery(ChatSessionsDocument, { variables: { projectId } });
  const sessions = data?.chatSessions ?? [];
  return (
    <section className="section" aria-labelledby="chats-title">
      <div className="section__head">
        <h3 id="chats-title" className="section-title">
          Chats
        </h3>
      </div>
      {loading && !data && <Skeleton lines={2} label="Loading chats" />}
      {data && sessions.length === 0 && (
        <EmptyState compact icon={<ChatIcon width={22} height={22} />} title="No chats yet" action={<button type="button" className="button" onClick={onNew}>Start a chat</button>}>
          Each chat has its own retrieval settings.
        </EmptyState>
      )}
      {sessions.length > 0 && (
        <ul className="session-list">
          {sessions.map((s) => (
            <li key={s.id}>
              <Link to={paths.session(s.id)} className="session-row">
                <ChatIcon width={18} height={18} />
                <span className="session-row__main">
                  <span className="session-row__title">{s.title}</span>
                  <span className="session-row__preview">{s.lastMessage ? s.lastMessage.content.slice(0, 140) : "No messages yet"}</span>
                </span>
                <span className="session-row__meta">
                  <span className="badge badge--mono">{s.enableRag ? `top ${s.topK} · ≥ ${s.threshold.toFixed(2)}` : "RAG off"}</span>
                  <span className="muted" data-volatile>
                    {formatRelative(s.updatedAt)}
                  </span>
                </span>
              </Link>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
