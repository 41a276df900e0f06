import { useQuery } from "@apollo/client/react";
import { useState } from "react";
import { cx } from "../lib/cx";
import { AppShell } from "../components/AppShell";
import { AppSidebar } from "../components/AppSidebar";
import { Badge } from "../components/Badge";
import { Button } from "../components/Button";
import { DatabaseIcon, PlusIcon, UploadIcon } from "../components/icons";
import { Page, PageHeader } from "../components/Page";
import { LoadMore } from "../components/LoadMore";
import { ImportDialog } from "../components/projects/ImportDialog";
import { ProjectFormDialog } from "../components/projects/ProjectFormDialog";
import { EmptyState, ErrorState, Skeleton } from "../components/States";
import { ProjectsDocument } from "../gql/graphql";
import { formatCount, formatRelative } from "../lib/format";
import { Link, paths } from "../lib/router";
import shared from "../styles/shared.module.css";
import styles from "./HomePage.module.css";

/** `/`: every knowledge base, with its counts and embedding space. */
export function HomePage() {
  const { data, loading, error, refetch, fetchMore } = useQuery(ProjectsDocument);
  const [creating, setCreating] = useState(false);
  const list = data?.projects.__typename === "ProjectConnection" ? data.projects : null;
  const projects = list?.edges.map((edge) => edge.node) ?? [];

  const [importing, setImporting] = useState(false);
  const newButton = (
    <>
      <Button onClick={() => setImporting(true)}>
        <UploadIcon width={16} height={16} /> Import
      </Button>
      <Button variant="primary" onClick={() => setCreating(true)}>
        <PlusIcon width={16} height={16} /> New knowledge base
      </Button>
    </>
  );

  return (
    <AppShell title="Knowledge bases" sidebar={<AppSidebar />} actions={projects.length > 0 ? newButton : undefined}>
      <Page>
        <PageHeader title="Your knowledge bases" lead="Upload documents into a knowledge base, then chat with them: every answer cites its sources." />
        {loading && !data && <Skeleton lines={4} label="Loading knowledge bases" />}
        {error && !data && <ErrorState title="Could not load the knowledge bases" message={error.message} onRetry={() => void refetch()} />}
        {data && projects.length === 0 && (
          <EmptyState icon={<DatabaseIcon width={26} height={26} />} title="No knowledge bases yet" action={newButton}>
            Create one, drop your documents in, and start asking.
          </EmptyState>
        )}
        {projects.length > 0 && (
          <ul className={cx(shared.plainList, styles.grid)} aria-label="Knowledge base list">
            {projects.map((project) => (
              <li key={project.id}>
                <Link to={paths.project(project.id)} className={styles.card} data-testid="project-card">
                  <span className={cx(shared.accentTile, styles.icon)} aria-hidden="true">
                    <DatabaseIcon width={20} height={20} />
                  </span>
                  <h3 className={styles.title}>{project.name}</h3>
                  {project.description && <p className={styles.text}>{project.description}</p>}
                  <p className={styles.stats}>
                    {formatCount(project.documentCount, "document")} · {formatCount(project.chunkCount, "chunk")}
                  </p>
                  <p className={styles.meta}>
                    {project.embeddingSpace ? (
                      <Badge mono title="Embedding space">
                        {project.embeddingSpace.label}
                      </Badge>
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
        {list?.pageInfo.hasNextPage && (
          <LoadMore shown={projects.length} total={list.totalCount} onLoad={() => fetchMore({ variables: { after: list.pageInfo.endCursor } })} />
        )}
      </Page>
      <ProjectFormDialog open={creating} onClose={() => setCreating(false)} />
      <ImportDialog open={importing} onClose={() => setImporting(false)} />
    </AppShell>
  );
}
