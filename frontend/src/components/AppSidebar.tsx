import { useQuery } from "@apollo/client/react";
import { useState } from "react";
import { ChatSessionsDocument, ProjectsDocument } from "../gql/graphql";
import { Link, paths } from "../lib/router";
import { cx } from "../lib/cx";
import { useCreateChat } from "../lib/useCreateChat";
import { Button, IconButton } from "./Button";
import { FormError } from "./Field";
import { LoadMore } from "./LoadMore";
import { ProjectFormDialog } from "./projects/ProjectFormDialog";
import { ServerStatus } from "./ServerStatus";
import { Sidebar } from "./Sidebar";
import { Badge } from "./Badge";
import { ChatIcon, DatabaseIcon, PlusIcon, WrenchIcon } from "./icons";
import { SidebarPerson } from "./people/SidebarPerson";
import shared from "../styles/shared.module.css";
import styles from "./AppSidebar.module.css";

export interface AppSidebarProps {
  activeProjectId?: string | null;
  activeSessionId?: string | null;
  /** The tools page is open. */
  activeTools?: boolean;
  /** One of the signed-in person's pages is open. */
  activePage?: "keys" | "people" | null;
}

/** Knowledge bases, the chats of the open one, "New chat", and the server status. */
export function AppSidebar({ activeProjectId = null, activeSessionId = null, activeTools = false, activePage = null }: AppSidebarProps) {
  const projects = useQuery(ProjectsDocument);
  const list = projects.data?.projects.__typename === "ProjectConnection" ? projects.data.projects : null;
  const chat = useCreateChat();
  const [creatingProject, setCreatingProject] = useState(false);

  return (
    <Sidebar
      footer={
        <>
          <ServerStatus />
          <SidebarPerson active={activePage} />
        </>
      }
    >
      {activeProjectId && (
        <Button variant="primary" className={styles.newChat} onClick={() => void chat.start(activeProjectId)} disabled={chat.creating}>
          <PlusIcon width={16} height={16} /> New chat
        </Button>
      )}
      {chat.error && (
        <FormError role="alert">{chat.error}</FormError>
      )}
      <div className={styles.section}>
        <div className={styles.sectionHead}>
          <h2 className={cx(shared.eyebrow, styles.sectionTitle)}>Knowledge bases</h2>
          <IconButton size="small" aria-label="New knowledge base" onClick={() => setCreatingProject(true)}>
            <PlusIcon width={16} height={16} />
          </IconButton>
        </div>
        {projects.loading && !projects.data && <p className={styles.note}>Loading…</p>}
        {projects.error && !projects.data && <p className={cx(styles.note, styles.noteError)}>Could not load: {projects.error.message}</p>}
        {list?.totalCount === 0 && <p className={styles.note}>None yet.</p>}
        <ul className={cx(shared.plainList, styles.list)} aria-label="Knowledge bases">
          {list?.edges.map(({ node: project }) => {
            const active = project.id === activeProjectId;
            return (
              <li key={project.id}>
                <Link
                  to={paths.project(project.id)}
                  className={styles.item}
                  aria-current={active && !activeSessionId ? "page" : undefined}
                  data-active={active || undefined}
                >
                  <DatabaseIcon width={16} height={16} />
                  <span className={cx(shared.ellipsis, styles.label)}>{project.name}</span>
                  <span className={styles.count} title={`${project.documentCount} documents`}>
                    {project.documentCount}
                  </span>
                </Link>
                {active && <SessionList projectId={project.id} activeSessionId={activeSessionId} />}
              </li>
            );
          })}
        </ul>
        {list?.pageInfo.hasNextPage && (
          <LoadMore
            className={styles.note}
            shown={list.edges.length}
            total={list.totalCount}
            onLoad={() => projects.fetchMore({ variables: { after: list.pageInfo.endCursor } })}
          />
        )}
      </div>
      <div className={styles.section}>
        <Link to={paths.tools()} className={styles.item} aria-current={activeTools ? "page" : undefined} data-active={activeTools || undefined}>
          <WrenchIcon width={16} height={16} />
          <span className={styles.label}>Tools</span>
        </Link>
      </div>
      <ProjectFormDialog open={creatingProject} onClose={() => setCreatingProject(false)} />
    </Sidebar>
  );
}

function SessionList({ projectId, activeSessionId }: { projectId: string; activeSessionId: string | null }) {
  const { data, loading, error, fetchMore } = useQuery(ChatSessionsDocument, { variables: { projectId } });
  if (loading && !data) return <p className={cx(styles.note, styles.noteNested)}>Loading chats…</p>;
  if (error && !data) return <p className={cx(styles.note, styles.noteNested, styles.noteError)}>Could not load chats.</p>;
  const list = data?.chatSessions.__typename === "ChatSessionConnection" ? data.chatSessions : null;
  const sessions = list?.edges.map((edge) => edge.node) ?? [];
  if (sessions.length === 0) return <p className={cx(styles.note, styles.noteNested)}>No chats yet.</p>;
  return (
    <>
      <ul className={cx(shared.plainList, styles.list, styles.nested)} aria-label="Chats">
        {sessions.map((session) => (
          <li key={session.id}>
            <Link
              to={paths.session(session.id)}
              className={cx(styles.item, styles.chat)}
              aria-current={session.id === activeSessionId ? "page" : undefined}
            >
              <ChatIcon width={15} height={15} />
              <span className={cx(shared.ellipsis, styles.label)}>{session.title}</span>
              {session.shared && <Badge tone="soft" title="Shared read-only with the knowledge base's members">Shared</Badge>}
            </Link>
          </li>
        ))}
      </ul>
      {list?.pageInfo.hasNextPage && (
        <LoadMore
          className={cx(styles.note, styles.noteNested)}
          label="More chats"
          shown={sessions.length}
          total={list.totalCount}
          onLoad={() => fetchMore({ variables: { after: list.pageInfo.endCursor } })}
        />
      )}
    </>
  );
}
