import { useQuery } from "@apollo/client/react";
import { cx } from "../lib/cx";
import { AppShell } from "../components/AppShell";
import { AppSidebar } from "../components/AppSidebar";
import { Badge } from "../components/Badge";
import { buttonClass } from "../components/Button";
import { LoadMore } from "../components/LoadMore";
import { FileIcon } from "../components/icons";
import { Page, PageHeader, Section } from "../components/Page";
import { EmptyState, ErrorState, Skeleton } from "../components/States";
import { type ChunkFieldsFragment, DocumentChunksDocument } from "../gql/graphql";
import { formatBytes, formatHeadingPath, formatPlace } from "../lib/format";
import { Link, paths } from "../lib/router";
import shared from "../styles/shared.module.css";
import styles from "./DocumentPage.module.css";

/** `/documents/:id`: a document and its chunks as retrieval sees them (headings, pages, offsets, tokens). */
export function DocumentPage({ documentId }: { documentId: string }) {
  const { data, loading, error, refetch, fetchMore } = useQuery(DocumentChunksDocument, { variables: { id: documentId } });
  const doc = data?.document.__typename === "Document" ? data.document : null;
  const page = doc?.chunks.__typename === "ChunkConnection" ? doc.chunks : null;
  const chunks = page?.edges.map((edge) => edge.node) ?? [];

  return (
    <AppShell title={doc?.name ?? "Document"} sidebar={<AppSidebar activeProjectId={doc?.projectId} />}>
      <Page>
        {loading && !data && <Skeleton lines={5} label="Loading the document" />}
        {error && !data && <ErrorState title="Could not load the document" message={error.message} onRetry={() => void refetch()} />}
        {data && !doc && (
          <EmptyState icon={<FileIcon width={26} height={26} />} title="Document not found" action={<Link to={paths.home()} className={buttonClass()}>All knowledge bases</Link>}>
            {"message" in data.document ? data.document.message : "It may have been deleted."}
          </EmptyState>
        )}
        {doc && (
          <>
            <PageHeader
              title={doc.name}
              lead={
                <>
                  <Link to={paths.project(doc.projectId)}>Back to the knowledge base</Link>
                  {doc.sourceUrl && (
                    <>
                      {" · fetched from "}
                      <a href={doc.sourceUrl} rel="noreferrer noopener" target="_blank" className={styles.source}>
                        {doc.sourceUrl}
                      </a>
                    </>
                  )}
                </>
              }
            >
              <p className={styles.facts}>
                <Badge tone={doc.status === "READY" ? "success" : "danger"}>{doc.status === "READY" ? "Ready" : "Failed"}</Badge>
                <Badge>{doc.kind.toLowerCase()}</Badge>
                <span>{formatBytes(doc.sizeBytes)}</span>
                <span data-testid="chunk-total">{doc.chunkCount} chunks</span>
              </p>
              {doc.error && <p className={styles.error}>{doc.error}</p>}
            </PageHeader>
            <Section id="chunks-title" title="Chunks">
              {page === null && doc.chunks.__typename !== "ChunkConnection" && <ErrorState message={doc.chunks.message} />}
              {page && chunks.length === 0 && (
                <EmptyState compact icon={<FileIcon width={22} height={22} />} title="No chunks">
                  Nothing of this document is searchable.
                </EmptyState>
              )}
              {chunks.length > 0 && (
                <ol className={cx(shared.plainList, styles.chunks)} aria-label="Chunks in document order">
                  {chunks.map((chunk) => (
                    <ChunkItem key={chunk.id} chunk={chunk} />
                  ))}
                </ol>
              )}
              {page?.pageInfo.hasNextPage && (
                <LoadMore label="More chunks" shown={chunks.length} total={page.totalCount} onLoad={() => fetchMore({ variables: { after: page.pageInfo.endCursor } })} />
              )}
            </Section>
          </>
        )}
      </Page>
    </AppShell>
  );
}

function ChunkItem({ chunk }: { chunk: ChunkFieldsFragment }) {
  const { location } = chunk;
  const heading = formatHeadingPath(location.headingPath);
  return (
    <li className={cx(shared.box, styles.chunk)} data-testid="chunk">
      <div className={styles.meta}>
        <Badge mono>#{chunk.ordinal + 1}</Badge>
        {heading && <span className={styles.heading}>{heading}</span>}
        <span>{formatPlace(location)}</span>
        <span className={styles.mono}>
          chars {location.charStart}–{location.charEnd}
        </span>
        <span>{chunk.tokenCount} tokens</span>
      </div>
      <pre className={styles.text}>{chunk.text}</pre>
    </li>
  );
}
