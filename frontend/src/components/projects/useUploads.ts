import { useApolloClient } from "@apollo/client/react";
import { useCallback, useEffect, useRef, useState } from "react";
import { type FileStatus, UploadDocumentsDocument, type UploadDocumentsMutation } from "../../gql/graphql";
import { useServices } from "../../lib/services";
import { buildMultipartForm, HttpStatusError, postMultipart } from "../../lib/upload";

export type UploadPhase = "queued" | "uploading" | "processing" | "done" | "failed";

export interface UploadItem {
  id: string;
  name: string;
  size: number;
  phase: UploadPhase;
  /** 0..1 of the bytes sent. */
  progress: number;
  /** added, updated, unchanged or failed (per the server), once done. */
  /** What the server did with the file; null until it answered (or when the request itself failed). */
  outcome: FileStatus | null;
  chunks: number;
  error: string | null;
}

let counter = 0;

/**
 * Upload files to a knowledge base one request per file, in turn: each file gets its own progress
 * bar and its own result, and a file the server rejects outright (too large, unsupported type —
 * which rejects the whole request) does not take the others down with it.
 */
export function useUploads(projectId: string) {
  const client = useApolloClient();
  const { endpoints, keys } = useServices();
  const [items, setItems] = useState<UploadItem[]>([]);
  const files = useRef(new Map<string, File>());
  const running = useRef(false);
  const aborts = useRef(new Set<AbortController>());

  const update = useCallback((id: string, change: Partial<UploadItem>) => {
    setItems((all) => all.map((item) => (item.id === id ? { ...item, ...change } : item)));
  }, []);

  useEffect(() => {
    const pending = aborts.current;
    return () => pending.forEach((controller) => controller.abort());
  }, []);

  const uploadOne = useCallback(
    async (id: string, file: File) => {
      const controller = new AbortController();
      aborts.current.add(controller);
      update(id, { phase: "uploading", progress: 0 });
      try {
        const authorization = keys.authorization();
        const body = await postMultipart<{ data?: UploadDocumentsMutation; errors?: { message: string }[] }>({
          url: endpoints.httpUrl,
          form: buildMultipartForm({ query: UploadDocumentsDocument, operationName: "UploadDocuments", variables: { projectId }, files: [file] }),
          headers: authorization ? { Authorization: authorization } : {},
          signal: controller.signal,
          onProgress: ({ loaded, total, sent }) =>
            update(id, sent ? { phase: "processing", progress: 1 } : { progress: total ? loaded / total : 0 }),
        });
        const result = body.data?.uploadDocuments;
        if (!result) {
          update(id, { phase: "failed", error: body.errors?.[0]?.message ?? "The server sent no result." });
        } else if (result.__typename === "UploadReport") {
          const outcome = result.files[0];
          update(id, {
            phase: outcome?.status === "FAILED" ? "failed" : "done",
            outcome: outcome?.status ?? null,
            chunks: outcome?.chunks ?? 0,
            error: outcome?.error ?? null,
            progress: 1,
          });
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
        await uploadOne(next[0], next[1]);
        // Counts and the document list change with every file.
        await client.refetchQueries({ include: ["ProjectDetail", "Projects"] });
      }
    } finally {
      running.current = false;
    }
  }, [client, uploadOne]);

  const add = useCallback(
    (list: Iterable<File>) => {
      const added: UploadItem[] = [];
      for (const file of list) {
        const id = `u${++counter}`;
        files.current.set(id, file);
        added.push({ id, name: file.name, size: file.size, phase: "queued", progress: 0, outcome: null, chunks: 0, error: null });
      }
      if (added.length === 0) return;
      setItems((all) => [...all, ...added]);
      void drain();
    },
    [drain],
  );

  const clearFinished = useCallback(() => {
    setItems((all) => all.filter((item) => item.phase !== "done" && item.phase !== "failed"));
  }, []);

  return { items, add, clearFinished };
}
