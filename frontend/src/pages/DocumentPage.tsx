import { useQuery } from "@apollo/client/react";
import { useEffect, useRef, useState } from "react";
import { cx } from "../lib/cx";
import { AppShell } from "../components/AppShell";
import { AppSidebar } from "../components/AppSidebar";
import { Badge } from "../components/Badge";
import { Button, buttonClass } from "../components/Button";
import { DocumentTags } from "../components/projects/DocumentTable";
import { TagsDialog } from "../components/projects/TagsDialog";
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
  const [tagging, setTagging] = useState(false);
  // Opened from a citation (`?chunk=…&lines=a-b`): the cited chunk may be pages in, so load pages
  // until it (or a chunk past the cited lines) has arrived, then scroll it into view.
  const [target] = useState(() => parseTarget(window.location.search));
  const cited = target ? chunks.filter((chunk) => isCited(chunk, target)) : [];
  const reachedTarget =
    !target || cited.length > 0 || chunks.some((c) => target.lineEnd != null && c.location.lineStart != null && c.location.lineStart > target.lineEnd);
  const loadingMore = useRef(false);
  useEffect(() => {
    if (reachedTarget || !page?.pageInfo.hasNextPage || loadingMore.current) return;
    loadingMore.current = true;
    void fetchMore({ variables: { after: page.pageInfo.endCursor } }).finally(() => (loadingMore.current = false));
  }, [reachedTarget, page, fetchMore]);
  const firstCitedId = cited[0]?.id;
  const scrolled = useRef(false);
  useEffect(() => {
    if (!firstCitedId || scrolled.current) return;
    scrolled.current = true;
    const el = document.getElementById(`chunk-${firstCitedId}`);
    el?.scrollIntoView({ block: "start" });
    el?.focus({ preventScroll: true });
  }, [firstCitedId]);

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
              <p className={styles.facts} data-testid="document-tags">
                <span>Tags:</span>
                <DocumentTags tags={doc.tags} />
                <Button size="small" onClick={() => setTagging(true)}>
                  Edit tags
                </Button>
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
                    <ChunkItem key={chunk.id} chunk={chunk} cited={target != null && isCited(chunk, target)} />
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
      <TagsDialog document={tagging ? doc : null} onClose={() => setTagging(false)} />
    </AppShell>
  );
}

interface CitedTarget {
  chunkId: string | null;
  lineStart: number | null;
  lineEnd: number | null;
}

function parseTarget(search: string): CitedTarget | null {
  const query = new URLSearchParams(search);
  const chunkId = query.get("chunk");
  const lines = /^(\d+)-(\d+)$/.exec(query.get("lines") ?? "");
  if (!chunkId && !lines) return null;
  return { chunkId, lineStart: lines ? Number(lines[1]) : null, lineEnd: lines ? Number(lines[2]) : null };
}

/**
 * The cited chunk itself and the chunks inside the cited lines (a merged source spans several); a
 * neighbour that merely overlaps them (chunks overlap a little) is not cited. Without a chunk id,
 * any chunk sharing lines with the citation.
 */
function isCited(chunk: ChunkFieldsFragment, target: CitedTarget): boolean {
  if (target.chunkId === chunk.id) return true;
  const { lineStart, lineEnd } = chunk.location;
  if (target.lineStart == null || target.lineEnd == null || lineStart == null || lineEnd == null) return false;
  if (target.chunkId) return lineStart >= target.lineStart && lineEnd <= target.lineEnd;
  return lineStart <= target.lineEnd && lineEnd >= target.lineStart;
}

function ChunkItem({ chunk, cited }: { chunk: ChunkFieldsFragment; cited: boolean }) {
  const { location } = chunk;
  const heading = formatHeadingPath(location.headingPath);
  return (
    <li
      id={`chunk-${chunk.id}`}
      className={cx(shared.box, styles.chunk)}
      data-testid="chunk"
      data-cited={cited || undefined}
      aria-current={cited ? "location" : undefined}
      tabIndex={cited ? -1 : undefined}
    >
      <div className={styles.meta}>
        <Badge mono>#{chunk.ordinal + 1}</Badge>
        {cited && <Badge tone="soft">cited</Badge>}
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
