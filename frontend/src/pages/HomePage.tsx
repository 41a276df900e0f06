import { useQuery } from "@apollo/client/react";
import { useState } from "react";
import { AppShell } from "../components/AppShell";
import { AppSidebar } from "../components/AppSidebar";
import { DatabaseIcon, PlusIcon } from "../components/icons";
import { ProjectFormDialog } from "../components/projects/ProjectFormDialog";
import { EmptyState, ErrorState, Skeleton } from "../components/States";
import { ProjectsDocument } from "../gql/graphql";
import { formatCount, formatRelative } from "../lib/format";
import { Link, paths } from "../lib/router";

/** `/`: every knowledge base, with its counts and embedding space. */
export function HomePage() {
  const { data, loading, error, refetch } = useQuery(ProjectsDocument);
  const [creating, setCreating] = useState(false);
  const projects = data?.projects ?? [];

  const newButton = (
    <button type="button" className="button button--primary" onClick={() => setCreating(true)}>
      <PlusIcon width={16} height={16} /> New knowledge base
    </button>
  );

  return (
    <AppShell title="Knowledge bases" sidebar={<AppSidebar />} actions={projects.length > 0 ? newButton : undefined}>
      <div className="page">
        <div className="page__inner">
          <header className="page-header">
            <h2 className="page-header__title">Your knowledge bases</h2>
            <p className="page-header__lead">Upload documents into a knowledge base, then chat with them: every answer cites its sources.</p>
          </header>
          {loading && !data && <Skeleton lines={4} label="Loading knowledge bases" />}
          {error && !data && <ErrorState title="Could not load the knowledge bases" message={error.message} onRetry={() => void refetch()} />}
          {data && projects.length === 0 && (
            <EmptyState icon={<DatabaseIcon width={26} height={26} />} title="No knowledge bases yet" action={newButton}>
              Create one, drop your documents in, and start asking.
            </EmptyState>
          )}
          {projects.length > 0 && (
            <ul className="card-grid" aria-label="Knowledge base list">
              {projects.map((project) => (
                <li key={project.id}>
                  <Link to={paths.project(project.id)} className="card card--link" data-testid="project-card">
                    <span className="card__icon" aria-hidden="true">
                      <DatabaseIcon width={20} height={20} />
                    </span>
                    <h3 className="card__title">{project.name}</h3>
                    {project.description && <p className="card__text">{project.description}</p>}
                    <p className="card__stats">
                      {formatCount(project.documentCount, "document")} · {formatCount(project.chunkCount, "chunk")}
                    </p>
                    <p className="card__meta">
                      {project.embeddingSpace ? (
                        <span className="badge badge--mono" title="Embedding space">
                          {project.embeddingSpace.label}
                        </span>
                      ) : (
                        <span className="muted">No embeddings yet</span>
                      )}
                      <span className="muted" data-volatile>
                        Updated {formatRelative(project.updatedAt)}
                      </span>
                    </p>
                  </Link>
                </li>
              ))}
            </ul>
          )}
        </div>
      </div>
      <ProjectFormDialog open={creating} onClose={() => setCreating(false)} />
    </AppShell>
  );
}
