import { useApolloClient } from "@apollo/client/react";
import { useCallback, useEffect, useRef, useState } from "react";
import {
  CancelIngestionDocument,
  type FileStatus,
  type IngestionItemFieldsFragment,
  IngestionProgressDocument,
  type ItemState,
  RetryIngestionDocument,
  UploadDocumentsDocument,
  type UploadDocumentsMutation,
} from "../../gql/graphql";
import { useServices } from "../../lib/services";
import { buildMultipartForm, HttpStatusError, postMultipart } from "../../lib/upload";

/**
 * queued: waiting to be sent; uploading: bytes on their way; processing: the server's job has it
 * (queued, parsing, embedding); done: ready; failed / cancelled: ended without being stored.
 */
export type UploadPhase = "queued" | "uploading" | "processing" | "done" | "failed" | "cancelled";

export interface UploadItem {
  id: string;
  name: string;
  size: number;
  phase: UploadPhase;
  /** 0..1 of the bytes sent, then of the chunks embedded. */
  progress: number;
  /** What the server did with the file (added, updated, unchanged, failed); null until it ended. */
  outcome: FileStatus | null;
  chunks: number;
  error: string | null;
  /** The server's job and item, once the upload request returned (or the item came from the subscription). */
  jobId?: string | null;
  itemId?: string | null;
  state?: ItemState | null;
  chunksTotal?: number;
}

let counter = 0;

function phaseOf(state: ItemState): UploadPhase {
  switch (state) {
    case "READY":
    case "SKIPPED":
      return "done";
    case "FAILED":
      return "failed";
    case "CANCELLED":
      return "cancelled";
    default:
      return "processing";
  }
}

/** A local row brought up to the server's word on its item. */
function merge(item: UploadItem, server: IngestionItemFieldsFragment): UploadItem {
  const embedding = server.state === "EMBEDDING" && server.chunksTotal > 0;
  return {
    ...item,
    name: server.name,
    size: server.sizeBytes,
    jobId: server.jobId,
    itemId: server.id,
    state: server.state,
    phase: phaseOf(server.state),
    outcome: server.outcome,
    error: server.state === "CANCELLED" ? null : server.error,
    chunks: server.chunksDone,
    chunksTotal: server.chunksTotal,
    progress: server.state === "READY" ? 1 : embedding ? server.chunksDone / server.chunksTotal : 0,
  };
}

/**
 * Upload files to a knowledge base one request per file, in turn: each file gets its own progress
 * bar while its bytes are sent. The request returns the server's ingestion job at once; from then on
 * the knowledge base's `ingestionProgress` subscription moves the row along (queued → embedding n/m →
 * ready, or failed with the reason). That subscription first sends the stored state of every
 * unfinished file, so after a reload the rows come back. Unfinished files can be cancelled, failed
 * and cancelled ones retried.
 */
export function useUploads(projectId: string) {
  const client = useApolloClient();
  const { endpoints, keys } = useServices();
  const [items, setItems] = useState<UploadItem[]>([]);
  // Each waiting file with the tags its document gets (undefined: a re-uploaded document keeps its own).
  const files = useRef(new Map<string, { file: File; tags?: string[] }>());
  const running = useRef(false);
  const aborts = useRef(new Set<AbortController>());
  const refetch = useRef<ReturnType<typeof setTimeout> | null>(null);

  const update = useCallback((id: string, change: Partial<UploadItem>) => {
    setItems((all) => all.map((item) => (item.id === id ? { ...item, ...change } : item)));
  }, []);

  /** Counts and the document list change as files become ready: refetch, at most every half second. */
  const refreshSoon = useCallback(() => {
    if (refetch.current) return;
    refetch.current = setTimeout(() => {
      refetch.current = null;
      void client.refetchQueries({ include: ["ProjectDetail", "Projects"] });
    }, 500);
  }, [client]);

  const fromServer = useCallback(
    (server: IngestionItemFieldsFragment) => {
      setItems((all) => {
        const index = all.findIndex((item) => item.itemId === server.id);
        if (index < 0) {
          // A file of a job this page did not send (or sent before a reload).
          const row: UploadItem = { id: `s${server.id}`, name: server.name, size: server.sizeBytes, phase: "processing", progress: 0, outcome: null, chunks: 0, error: null };
          return [...all, merge(row, server)];
        }
        const next = [...all];
        next[index] = merge(all[index]!, server);
        return next;
      });
      if (server.state === "READY") refreshSoon();
    },
    [refreshSoon],
  );

  useEffect(() => {
    const subscription = client
      .subscribe({ query: IngestionProgressDocument, variables: { projectId }, fetchPolicy: "no-cache" })
      .subscribe({
        next: ({ data }) => {
          const event = data?.ingestionProgress;
          if (event?.__typename === "IngestionItem") fromServer(event);
        },
      });
    return () => subscription.unsubscribe();
  }, [client, projectId, fromServer]);

  useEffect(() => {
    const pending = aborts.current;
    return () => {
      pending.forEach((controller) => controller.abort());
      if (refetch.current) clearTimeout(refetch.current);
    };
  }, []);

  const uploadOne = useCallback(
    async (id: string, file: File, tags?: string[]) => {
      const controller = new AbortController();
      aborts.current.add(controller);
      update(id, { phase: "uploading", progress: 0 });
      try {
        const authorization = keys.authorization();
        const body = await postMultipart<{ data?: UploadDocumentsMutation; errors?: { message: string }[] }>({
          url: endpoints.httpUrl,
          form: buildMultipartForm({ query: UploadDocumentsDocument, operationName: "UploadDocuments", variables: tags ? { projectId, tags } : { projectId }, files: [file] }),
          headers: authorization ? { Authorization: authorization } : {},
          signal: controller.signal,
          onProgress: ({ loaded, total, sent }) =>
            update(id, sent ? { phase: "processing", progress: 0 } : { progress: total ? loaded / total : 0 }),
        });
        const result = body.data?.uploadDocuments;
        if (!result) {
          update(id, { phase: "failed", error: body.errors?.[0]?.message ?? "The server sent no result." });
        } else if (result.__typename === "IngestionJob") {
          const server = result.items[0];
          if (server) {
            // The subscription may have reported this file already, under a row of its own: keep one.
            setItems((all) => all.filter((item) => item.itemId !== server.id || item.id === id).map((item) => (item.id === id ? merge(item, server) : item)));
          }
        } else {
          const detail = result.__typename === "ValidationError" ? result.fields.map((f) => f.message).join("; ") : "";
          update(id, { phase: "failed", outcome: "FAILED", error: detail || result.message });
        }
      } catch (err) {
        if (err instanceof HttpStatusError && err.status === 401) keys.requestKey();
        update(id, { phase: "failed", outcome: "FAILED", error: err instanceof Error ? err.message : String(err) });
      } finally {
        aborts.current.delete(controller);
        files.current.delete(id);
      }
    },
    [endpoints.httpUrl, keys, projectId, update],
  );

  const drain = useCallback(async () => {
    if (running.current) return;
    running.current = true;
    try {
      for (;;) {
        const next = [...files.current.entries()][0];
        if (!next) break;
        await uploadOne(next[0], next[1].file, next[1].tags);
      }
    } finally {
      running.current = false;
    }
  }, [uploadOne]);

  const add = useCallback(
    (list: Iterable<File>, tags?: string[]) => {
      const added: UploadItem[] = [];
      for (const file of list) {
        const id = `u${++counter}`;
        files.current.set(id, { file, tags });
        added.push({ id, name: file.name, size: file.size, phase: "queued", progress: 0, outcome: null, chunks: 0, error: null });
      }
      if (added.length === 0) return;
      setItems((all) => [...all, ...added]);
      void drain();
    },
    [drain],
  );

  /** Cancel (an unfinished file) or retry (a failed or cancelled one) on the server. */
  const change = useCallback(
    async (id: string, retry: boolean) => {
      const item = items.find((each) => each.id === id);
      if (!item?.jobId || !item.itemId) return;
      const variables = { jobId: item.jobId, itemIds: [item.itemId] };
      const { data } = retry
        ? await client.mutate({ mutation: RetryIngestionDocument, variables })
        : await client.mutate({ mutation: CancelIngestionDocument, variables });
      const result = data && ("retryIngestionJob" in data ? data.retryIngestionJob : data.cancelIngestionJob);
      if (result?.__typename === "IngestionJob") {
        const server = result.items.find((each) => each.id === item.itemId);
        if (server) fromServer(server);
      } else if (result && "message" in result) {
        update(id, { error: result.message });
      }
    },
    [client, fromServer, items, update],
  );

  const cancel = useCallback((id: string) => void change(id, false), [change]);
  const retry = useCallback((id: string) => void change(id, true), [change]);

  const clearFinished = useCallback(() => {
    setItems((all) => all.filter((item) => item.phase !== "done" && item.phase !== "failed" && item.phase !== "cancelled"));
  }, []);

  return { items, add, cancel, retry, clearFinished };
}
