// The GraphQL multipart request spec (https://github.com/jaydenseric/graphql-multipart-request-spec),
// sent with XMLHttpRequest because fetch cannot report upload progress. Apollo Client 4 has no
// upload link, and Strawberry refuses multipart requests without a preflight-forcing header
// (CSRF protection), hence `Apollo-Require-Preflight`.

import { type DocumentNode, print } from "graphql";

export interface MultipartOperation {
  query: DocumentNode | string;
  operationName?: string;
  /** Variables without the files; the files go under `filesVariable`. */
  variables: Record<string, unknown>;
  /** The list variable the files fill (`files: [Upload!]!`). */
  filesVariable?: string;
  /** One file for a single `Upload!` variable (`file: Upload!`) rather than a list. */
  single?: boolean;
  files: readonly Blob[];
}

/** operations + map + one part per file, in that order (the spec requires files last). */
export function buildMultipartForm({
  query,
  operationName,
  variables,
  filesVariable = "files",
  single = false,
  files,
}: MultipartOperation): FormData {
  const form = new FormData();
  const text = typeof query === "string" ? query : print(query);
  const slots = single ? null : files.map(() => null);
  form.append("operations", JSON.stringify({ query: text, operationName, variables: { ...variables, [filesVariable]: slots } }));
  const path = (i: number) => (single ? `variables.${filesVariable}` : `variables.${filesVariable}.${i}`);
  form.append("map", JSON.stringify(Object.fromEntries(files.map((_, i) => [String(i), [path(i)]]))));
  files.forEach((file, i) => form.append(String(i), file, file instanceof File ? file.name : `upload-${i}`));
  return form;
}

export interface UploadProgress {
  /** Bytes sent so far and in total (the whole multipart body). */
  loaded: number;
  total: number;
  /** True once every byte is sent and the server is working on the files. */
  sent: boolean;
}

export class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "HttpStatusError";
  }
}

export interface PostOptions {
  url: string;
  form: FormData;
  headers?: Record<string, string>;
  onProgress?: (progress: UploadProgress) => void;
  signal?: AbortSignal;
  /** Factory for tests. */
  createXhr?: () => XMLHttpRequest;
}

/** POST a multipart GraphQL request; resolves with the parsed JSON body of a 2xx response. */
export function postMultipart<T = unknown>({
  url,
  form,
  headers = {},
  onProgress,
  signal,
  createXhr = () => new XMLHttpRequest(),
}: PostOptions): Promise<T> {
  return new Promise((resolve, reject) => {
    const xhr = createXhr();
    xhr.open("POST", url);
    xhr.setRequestHeader("Apollo-Require-Preflight", "true");
    xhr.setRequestHeader("Accept", "application/graphql-response+json, application/json");
    for (const [name, value] of Object.entries(headers)) xhr.setRequestHeader(name, value);
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress?.({ loaded: event.loaded, total: event.total, sent: false });
    };
    xhr.upload.onload = () => onProgress?.({ loaded: 1, total: 1, sent: true });
    xhr.onload = () => {
      let body: unknown = null;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        // not JSON: reported below by status
      }
      if (xhr.status >= 200 && xhr.status < 300 && body) {
        resolve(body as T);
        return;
      }
      const detail = (body as { errors?: { message?: string }[] } | null)?.errors?.[0]?.message;
      reject(new HttpStatusError(xhr.status, detail ?? `the server answered ${xhr.status} ${xhr.statusText}`.trim()));
    };
    xhr.onerror = () => reject(new Error("the upload failed: the server could not be reached"));
    xhr.onabort = () => reject(new DOMException("the upload was cancelled", "AbortError"));
    signal?.addEventListener("abort", () => xhr.abort(), { once: true });
    xhr.send(form);
  });
}
