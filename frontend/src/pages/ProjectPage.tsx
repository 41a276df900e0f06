import { useMutation, useQuery } from "@apollo/client/react";
import { useState } from "react";
import { cx } from "../lib/cx";
import { AppShell } from "../components/AppShell";
import { AppSidebar } from "../components/AppSidebar";
import { Badge } from "../components/Badge";
import { Button, IconButton, buttonClass } from "../components/Button";
import { ConfirmDialog } from "../components/Dialog";
import { Field, FormError, TextInput } from "../components/Field";
import { LoadMore } from "../components/LoadMore";
import { ChatIcon, DatabaseIcon, DownloadIcon, FileIcon, PencilIcon, PlusIcon, TrashIcon } from "../components/icons";
import { Page, PageHeader, Section } from "../components/Page";
import { DocumentTable } from "../components/projects/DocumentTable";
import { Dropzone } from "../components/projects/Dropzone";
import { ProjectFormDialog } from "../components/projects/ProjectFormDialog";
import { UploadList } from "../components/projects/UploadList";
import { useUploads } from "../components/projects/useUploads";
import { MembersPanel } from "../components/people/MembersPanel";
import { EmptyState, ErrorState, Skeleton } from "../components/States";
import { ChatSessionsDocument, DeleteProjectDocument, ProjectDetailDocument } from "../gql/graphql";
import { useServerAccess } from "../lib/access";
import { formatCount, formatRelative } from "../lib/format";
import { evictDeleted } from "../lib/evict";
import { Link, navigate, paths } from "../lib/router";
import { downloadArchive } from "../lib/archive";
import { useServices } from "../lib/services";
import { parseTags } from "../lib/tags";
import { useCreateChat } from "../lib/useCreateChat";
import shared from "../styles/shared.module.css";
import styles from "./ProjectPage.module.css";

/** `/projects/:id`: a knowledge base's documents (upload, list, delete) and its chats. */
export function ProjectPage({ projectId }: { projectId: string }) {
  const { data, loading, error, refetch, fetchMore } = useQuery(ProjectDetailDocument, { variables: { id: projectId } });
  const project = data?.project.__typename === "Project" ? data.project : null;
  const docs = project?.documents.__typename === "DocumentConnection" ? project.documents : null;
  const documents = docs?.edges.map((edge) => edge.node) ?? [];
  const [renaming, setRenaming] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [deleteProject] = useMutation(DeleteProjectDocument, {
    update(cache, { data }) {
      if (data?.deleteProject.__typename === "ProjectDeleted") evictDeleted(cache, data.deleteProject);
    },
    refetchQueries: ["Projects"],
    awaitRefetchQueries: true,
  });
  const uploads = useUploads(projectId);
  const [uploadTags, setUploadTags] = useState("");
  const [uploadTagsError, setUploadTagsError] = useState<string | null>(null);

  /** Files dropped or picked: sent with the tags typed above the drop zone (none typed: none sent). */
  function addFiles(files: Iterable<File>) {
    const { tags, problem } = parseTags(uploadTags);
    setUploadTagsError(problem);
    if (problem) return;
    uploads.add(files, tags.length > 0 ? tags : undefined);
  }
  const chat = useCreateChat();
  const { access } = useServerAccess();
  const { keys } = useServices();
  const [downloading, setDownloading] = useState(false);
  const [downloadProblem, setDownloadProblem] = useState<string | null>(null);

  async function download() {
    setDownloading(true);
    setDownloadProblem(null);
    try {
      const problem = await downloadArchive(projectId, keys.authorization());
      if (problem === 401) keys.requestKey();
      else if (problem) setDownloadProblem(problem);
    } finally {
      setDownloading(false);
    }
  }

  async function confirmDelete(): Promise<string | null> {
    const { data: result } = await deleteProject({ variables: { id: projectId } });
    if (result?.deleteProject.__typename !== "ProjectDeleted") {
      return result && "message" in result.deleteProject ? result.deleteProject.message : "It could not be deleted.";
    }
    setDeleting(false);
    navigate(paths.home(), { replace: true });
    return null;
  }

  const actions = project && (
    <>
      <IconButton aria-label="Edit knowledge base" title="Edit name and description" onClick={() => setRenaming(true)}>
        <PencilIcon width={18} height={18} />
      </IconButton>
      <IconButton aria-label="Download knowledge base" title="Download as an archive (owners)" onClick={() => void download()} disabled={downloading}>
        <DownloadIcon width={18} height={18} />
      </IconButton>
      <IconButton aria-label="Delete knowledge base" title="Delete" onClick={() => setDeleting(true)}>
        <TrashIcon width={18} height={18} />
      </IconButton>
      <Button variant="primary" className={styles.cta} onClick={() => void chat.start(projectId)} disabled={chat.creating}>
        <PlusIcon width={16} height={16} /> New chat
      </Button>
    </>
  );

  return (
    <AppShell title={project?.name ?? "Knowledge base"} sidebar={<AppSidebar activeProjectId={projectId} />} actions={actions}>
      <Page>
        {downloadProblem && <FormError role="alert">Could not download it: {downloadProblem}</FormError>}
        {loading && !data && <Skeleton lines={5} label="Loading the knowledge base" />}
        {error && !data && <ErrorState title="Could not load the knowledge base" message={error.message} onRetry={() => void refetch()} />}
        {data && !project && (
          <EmptyState icon={<DatabaseIcon width={26} height={26} />} title="Knowledge base not found" action={<Link to={paths.home()} className={buttonClass()}>All knowledge bases</Link>}>
            {"message" in data.project ? data.project.message : "It may have been deleted."}
          </EmptyState>
        )}
        {project && (
          <>
            <PageHeader title={project.name} lead={project.description}>
              <dl className={styles.stats} aria-label="Knowledge base statistics">
                <div className={cx(shared.box, styles.stat)}>
                  <dt>Documents</dt>
                  <dd data-testid="stat-documents">{project.documentCount}</dd>
                </div>
                <div className={cx(shared.box, styles.stat)}>
                  <dt>Chunks</dt>
                  <dd data-testid="stat-chunks">{project.chunkCount}</dd>
                </div>
                <div className={cx(shared.box, styles.stat, styles.wide)}>
                  <dt>Embedding space</dt>
                  <dd className={styles.statMono}>{project.embeddingSpace?.label ?? "— (set by the first upload)"}</dd>
                </div>
              </dl>
              {chat.error && <FormError role="alert">{chat.error}</FormError>}
            </PageHeader>

            <Section id="documents-title" title="Documents">
              <Field label="Tags for the files you upload" hint="Optional, separated by commas (e.g. policy, 2026); a chat's document filter can select by them." error={uploadTagsError}>
                <TextInput value={uploadTags} data-testid="upload-tags" onChange={(e) => (setUploadTags(e.target.value), setUploadTagsError(null))} />
              </Field>
              <Dropzone onFiles={addFiles} />
              <UploadList items={uploads.items} onClear={uploads.clearFinished} onCancel={uploads.cancel} onRetry={uploads.retry} />
              {documents.length > 0 ? (
                <>
                  <DocumentTable documents={documents} />
                  {docs?.pageInfo.hasNextPage && (
                    <LoadMore
                      label="More documents"
                      shown={documents.length}
                      total={docs.totalCount}
                      onLoad={() => fetchMore({ variables: { after: docs.pageInfo.endCursor } })}
                    />
                  )}
                </>
              ) : (
                <EmptyState compact icon={<FileIcon width={22} height={22} />} title="No documents yet">
                  Upload some to give your chats something to answer from.
                </EmptyState>
              )}
            </Section>

            <ProjectChats projectId={projectId} onNew={() => void chat.start(projectId)} />

            {access?.peopleExist && <MembersPanel knowledgeBaseId={projectId} />}
          </>
        )}
      </Page>
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
  const { data, loading, fetchMore } = useQuery(ChatSessionsDocument, { variables: { projectId } });
  const list = data?.chatSessions.__typename === "ChatSessionConnection" ? data.chatSessions : null;
  const sessions = list?.edges.map((edge) => edge.node) ?? [];
  return (
    <Section id="chats-title" title="Chats">
      {loading && !data && <Skeleton lines={2} label="Loading chats" />}
      {data && sessions.length === 0 && (
        <EmptyState compact icon={<ChatIcon width={22} height={22} />} title="No chats yet" action={<Button onClick={onNew}>Start a chat</Button>}>
          Each chat has its own retrieval settings.
        </EmptyState>
      )}
      {sessions.length > 0 && (
        <ul className={cx(shared.plainList, styles.sessions)}>
          {sessions.map((s) => (
            <li key={s.id}>
              <Link to={paths.session(s.id)} className={styles.session}>
                <ChatIcon width={18} height={18} />
                <span className={styles.sessionMain}>
                  <span className={styles.sessionTitle}>{s.title}</span>
                  <span className={cx(shared.ellipsis, styles.sessionPreview)}>{s.lastMessage ? s.lastMessage.content.slice(0, 140) : "No messages yet"}</span>
                </span>
                <span className={styles.sessionMeta}>
                  {s.shared && (
                    <Badge tone="soft" title="Shared read-only with the knowledge base's members">
                      Shared
                    </Badge>
                  )}
                  <Badge mono>{s.enableRag ? `top ${s.topK} · ≥ ${s.threshold.toFixed(2)}` : "RAG off"}</Badge>
                  <span className="muted" data-volatile>
                    {formatRelative(s.updatedAt)}
                  </span>
                </span>
              </Link>
            </li>
          ))}
        </ul>
      )}
      {list?.pageInfo.hasNextPage && (
        <LoadMore label="More chats" shown={sessions.length} total={list.totalCount} onLoad={() => fetchMore({ variables: { after: list.pageInfo.endCursor } })} />
      )}
    </Section>
  );
}
