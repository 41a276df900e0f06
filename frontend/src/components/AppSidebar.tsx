import { useQuery } from "@apollo/client/react";
import { useState } from "react";
import { ChatSessionsDocument, ProjectsDocument } from "../gql/graphql";
import { useServices } from "../lib/services";
import { Link, paths } from "../lib/router";
import { useCreateChat } from "../lib/useCreateChat";
import { ProjectFormDialog } from "./projects/ProjectFormDialog";
import { ServerStatus } from "./ServerStatus";
import { Sidebar } from "./Sidebar";
import { ChatIcon, DatabaseIcon, KeyIcon, PlusIcon } from "./icons";

export interface AppSidebarProps {
  activeProjectId?: string | null;
  activeSessionId?: string | null;
}

/** Knowledge bases, the chats of the open one, "New chat", and the server status. */
export function AppSidebar({ activeProjectId = null, activeSessionId = null }: AppSidebarProps) {
  const projects = useQuery(ProjectsDocument);
  const { keys } = useServices();
  const chat = useCreateChat();
  const [creatingProject, setCreatingProject] = useState(false);

  return (
    <Sidebar
      footer={
        <>
          <ServerStatus />
          <button type="button" className="sidebar__key" onClick={() => keys.openDialog()}>
            <KeyIcon width={16} height={16} /> API key
          </button>
        </>
      }
    >
      {activeProjectId && (
        <button
          type="button"
          className="button button--primary sidebar__new-chat"
          onClick={() => void chat.start(activeProjectId)}
          disabled={chat.creating}
        >
          <PlusIcon width={16} height={16} /> New chat
        </button>
      )}
      {chat.error && (
        <p className="form-error" role="alert">
          {chat.error}
        </p>
      )}
      <div className="nav-section">
        <div className="nav-section__head">
          <h2 className="nav-section__title">Knowledge bases</h2>
          <button
            type="button"
            className="icon-button icon-button--small"
            aria-label="New knowledge base"
            onClick={() => setCreatingProject(true)}
          >
            <PlusIcon width={16} height={16} />
          </button>
        </div>
        {projects.loading && !projects.data && <p className="nav-note">Loading…</p>}
        {projects.error && !projects.data && <p className="nav-note nav-note--error">Could not load: {projects.error.message}</p>}
        {projects.data?.projects.length === 0 && <p className="nav-note">None yet.</p>}
        <ul className="nav-list" aria-label="Knowledge bases">
          {projects.data?.projects.map((project) => {
            const active = project.id === activeProjectId;
            return (
              <li key={project.id}>
                <Link
                  to={paths.project(project.id)}
                  className="nav-item"
                  aria-current={active && !activeSessionId ? "page" : undefined}
                  data-active={active || undefined}
                >
                  <DatabaseIcon width={16} height={16} />
                  <span className="nav-item__label">{project.name}</span>
                  <span className="nav-item__count" title={`${project.documentCount} documents`}>
                    {project.documentCount}
                  </span>
                </Link>
                {active && <SessionList projectId={project.id} activeSessionId={activeSessionId} />}
              </li>
            );
          })}
        </ul>
      </div>
      <ProjectFormDialog open={creatingProject} onClose={() => setCreatingProject(false)} />
    </Sidebar>
  );
}

function SessionList({ projectId, activeSessionId }: { projectId: string; activeSessionId: string | null }) {
  const { data, loading, error } = useQuery(ChatSessionsDocument, { variables: { projectId } });
  if (loading && !data) return <p className="nav-note nav-note--nested">Loading chats…</p>;
  if (error && !data) return <p className="nav-note nav-note--nested nav-note--error">Could not load chats.</p>;
  const sessions = data?.chatSessions ?? [];
  if (sessions.length === 0) return <p className="nav-note nav-note--nested">No chats yet.</p>;
  return (
    <ul className="nav-list nav-list--nested" aria-label="Chats">
      {sessions.map((session) => (
        <li key={session.id}>
          <Link
            to={paths.session(session.id)}
            className="nav-item nav-item--chat"
            aria-current={session.id === activeSessionId ? "page" : undefined}
          >
            <ChatIcon width={15} height={15} />
            <span className="nav-item__label">{session.title}</span>
          </Link>
        </li>
      ))}
    </ul>
  );
}
