import { useMutation } from "@apollo/client/react";
import { useState } from "react";
import { cx } from "../../lib/cx";
import { DeleteDocumentDocument, type DocumentFieldsFragment } from "../../gql/graphql";
import { evictDeleted } from "../../lib/evict";
import { formatBytes, formatDateTime, formatRelative } from "../../lib/format";
import { Link, paths } from "../../lib/router";
import { Badge } from "../Badge";
import { IconButton } from "../Button";
import { TagsDialog } from "./TagsDialog";
import { ConfirmDialog } from "../Dialog";
import { Table, numeric } from "../Table";
import { PencilIcon, TrashIcon } from "../icons";
import shared from "../../styles/shared.module.css";
import styles from "./DocumentTable.module.css";

/** The documents of a knowledge base: status, size, kind, chunk count, tags; a name opens its chunks; tags edited, delete with confirmation. */
export function DocumentTable({ documents }: { documents: readonly DocumentFieldsFragment[] }) {
  const [doomed, setDoomed] = useState<DocumentFieldsFragment | null>(null);
  const [tagging, setTagging] = useState<DocumentFieldsFragment | null>(null);
  const [deleteDocument] = useMutation(DeleteDocumentDocument, {
    update(cache, { data }) {
      if (data?.deleteDocument.__typename === "DocumentDeleted") evictDeleted(cache, data.deleteDocument);
    },
    // The knowledge base's counts changed too.
    refetchQueries: ["ProjectDetail", "Projects"],
    awaitRefetchQueries: true,
  });

  async function confirmDelete(): Promise<string | null> {
    if (!doomed) return null;
    const { data } = await deleteDocument({ variables: { id: doomed.id } });
    const result = data?.deleteDocument;
    if (result?.__typename === "DocumentDeleted") {
      setDoomed(null);
      return null;
    }
    return result && "message" in result ? result.message : "The document could not be deleted.";
  }

  return (
    <>
      <Table label="Documents">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Status</th>
            <th scope="col" className={numeric}>
              Chunks
            </th>
            <th scope="col" className={numeric}>
              Size
            </th>
            <th scope="col">Kind</th>
            <th scope="col">Tags</th>
            <th scope="col">Added</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {documents.map((doc) => (
            <tr key={doc.id} data-testid="document-row">
              <th scope="row" className={cx(shared.ellipsis, styles.name)} title={doc.name}>
                <Link to={paths.document(doc.id)} aria-label={`${doc.name}: show its chunks`}>
                  {doc.name}
                </Link>
              </th>
              <td>
                <Badge tone={doc.status === "READY" ? "success" : "danger"} title={doc.error ?? undefined}>
                  {doc.status === "READY" ? "Ready" : "Failed"}
                </Badge>
                {doc.error && <span className={styles.error}>{doc.error}</span>}
              </td>
              <td className={numeric}>{doc.chunkCount}</td>
              <td className={numeric}>{formatBytes(doc.sizeBytes)}</td>
              <td>
                <Badge>{doc.kind.toLowerCase()}</Badge>
              </td>
              <td data-testid="document-tags">
                <DocumentTags tags={doc.tags} />
              </td>
              <td title={formatDateTime(doc.ingestedAt)} data-volatile>
                {formatRelative(doc.ingestedAt)}
              </td>
              <td className={styles.actions}>
                <IconButton size="small" aria-label={`Edit the tags of ${doc.name}`} onClick={() => setTagging(doc)}>
                  <PencilIcon width={16} height={16} />
                </IconButton>
                <IconButton size="small" aria-label={`Delete ${doc.name}`} onClick={() => setDoomed(doc)}>
                  <TrashIcon width={16} height={16} />
                </IconButton>
              </td>
            </tr>
          ))}
        </tbody>
      </Table>
      <TagsDialog document={tagging} onClose={() => setTagging(null)} />
      <ConfirmDialog
        open={doomed !== null}
        title="Delete document?"
        confirmLabel="Delete document"
        danger
        onConfirm={confirmDelete}
        onCancel={() => setDoomed(null)}
      >
        <p>
          <strong>{doomed?.name}</strong> and its {doomed?.chunkCount} chunks will be removed from the knowledge base. Answers
          already given keep their citations.
        </p>
      </ConfirmDialog>
    </>
  );
}

/** A document's tags as badges ("—" when it has none). */
export function DocumentTags({ tags }: { tags: readonly string[] }) {
  if (tags.length === 0) return <span className="muted">—</span>;
  return (
    <span className={styles.tags}>
      {tags.map((tag) => (
        <Badge key={tag} tone="soft">
          {tag}
        </Badge>
      ))}
    </span>
  );
}
