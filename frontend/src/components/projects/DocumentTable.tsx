import { useMutation } from "@apollo/client/react";
import { useState } from "react";
import { DeleteDocumentDocument, type DocumentFieldsFragment } from "../../gql/graphql";
import { formatBytes, formatDateTime, formatRelative } from "../../lib/format";
import { ConfirmDialog } from "../Dialog";
import { TrashIcon } from "../icons";

/** The documents of a knowledge base: status, size, kind, chunk count; delete with confirmation. */
export function DocumentTable({ documents }: { documents: readonly DocumentFieldsFragment[] }) {
  const [doomed, setDoomed] = useState<DocumentFieldsFragment | null>(null);
  const [deleteDocument] = useMutation(DeleteDocumentDocument, { refetchQueries: ["ProjectDetail", "Projects"], awaitRefetchQueries: true });

  async function confirmDelete(): Promise<string | null> {
    if (!doomed) return null;
    const { data } = await deleteDocument({ variables: { id: doomed.id } });
    const result = data?.deleteDocument;
    if (result?.__typename === "Deleted") {
      setDoomed(null);
      return null;
    }
    return result && "message" in result ? result.message : "The document could not be deleted.";
  }

  return (
    <>
      <div className="table-wrap">
        <table className="table" aria-label="Documents">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Status</th>
              <th scope="col" className="num">
                Chunks
              </th>
              <th scope="col" className="num">
                Size
              </th>
              <th scope="col">Kind</th>
              <th scope="col">Added</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {documents.map((doc) => (
              <tr key={doc.id} data-testid="document-row">
                <th scope="row" className="table__name" title={doc.name}>
                  {doc.name}
                </th>
                <td>
                  <span className={`badge badge--${doc.status === "READY" ? "success" : "danger"}`} title={doc.error ?? undefined}>
                    {doc.status === "READY" ? "Ready" : "Failed"}
                  </span>
                  {doc.error && <span className="table__error">{doc.error}</span>}
                </td>
                <td className="num">{doc.chunkCount}</td>
                <td className="num">{formatBytes(doc.sizeBytes)}</td>
                <td>
                  <span className="badge">{doc.kind}</span>
                </td>
                <td title={formatDateTime(doc.ingestedAt)} data-volatile>
                  {formatRelative(doc.ingestedAt)}
                </td>
                <td className="table__actions">
                  <button type="button" className="icon-button icon-button--small" aria-label={`Delete ${doc.name}`} onClick={() => setDoomed(doc)}>
                    <TrashIcon width={16} height={16} />
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
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
