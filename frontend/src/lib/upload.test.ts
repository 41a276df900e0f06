import { describe, expect, it, vi } from "vitest";
import { buildMultipartForm, HttpStatusError, postMultipart } from "./upload";

describe("buildMultipartForm", () => {
  it("follows the GraphQL multipart request spec: operations, map, then the files", async () => {
    const files = [new File(["one"], "a.md"), new File(["two"], "b.txt")];
    const form = buildMultipartForm({ query: "mutation U($projectId: ID!, $files: [Upload!]!) { x }", operationName: "U", variables: { projectId: "3" }, files });
    expect([...form.keys()]).toEqual(["operations", "map", "0", "1"]);
    expect(JSON.parse(form.get("operations") as string)).toEqual({
      query: "mutation U($projectId: ID!, $files: [Upload!]!) { x }",
      operationName: "U",
      variables: { projectId: "3", files: [null, null] },
    });
    expect(JSON.parse(form.get("map") as string)).toEqual({ 0: ["variables.files.0"], 1: ["variables.files.1"] });
    expect((form.get("1") as File).name).toBe("b.txt");
    expect(await (form.get("0") as File).text()).toBe("one");
  });
});

class FakeXhr {
  static last: FakeXhr;
  headers: Record<string, string> = {};
  upload: { onprogress?: (e: Partial<ProgressEvent>) => void; onload?: () => void } = {};
  onload?: () => void;
  onerror?: () => void;
  onabort?: () => void;
  status = 0;
  statusText = "";
  responseText = "";
  body: unknown;
  constructor() {
    FakeXhr.last = this;
  }
  open = vi.fn();
  setRequestHeader(name: string, value: string) {
    this.headers[name] = value;
  }
  send(body: unknown) {
    this.body = body;
  }
  abort() {
    this.onabort?.();
  }
  respond(status: number, body: unknown) {
    this.status = status;
    this.responseText = JSON.stringify(body);
    this.onload?.();
  }
}

const createXhr = () => new FakeXhr() as unknown as XMLHttpRequest;

describe("postMultipart", () => {
  it("sends the preflight and auth headers, reports progress, resolves with the JSON body", async () => {
    const progress = vi.fn();
    const done = postMultipart({ url: "/graphql", form: new FormData(), headers: { Authorization: "Bearer k" }, onProgress: progress, createXhr });
    const xhr = FakeXhr.last;
    expect(xhr.open).toHaveBeenCalledWith("POST", "/graphql");
    expect(xhr.headers).toMatchObject({ "Apollo-Require-Preflight": "true", Authorization: "Bearer k" });
    xhr.upload.onprogress?.({ lengthComputable: true, loaded: 50, total: 200 });
    xhr.upload.onload?.();
    expect(progress.mock.calls).toEqual([[{ loaded: 50, total: 200, sent: false }], [{ loaded: 1, total: 1, sent: true }]]);
    xhr.respond(200, { data: { ok: true } });
    await expect(done).resolves.toEqual({ data: { ok: true } });
  });

  it("rejects with the status and the server's message on a 401", async () => {
    const done = postMultipart({ url: "/graphql", form: new FormData(), createXhr });
    FakeXhr.last.respond(401, { errors: [{ message: "an API key is required" }] });
    await expect(done).rejects.toEqual(new HttpStatusError(401, "an API key is required"));
  });

  it("can be cancelled", async () => {
    const controller = new AbortController();
    const done = postMultipart({ url: "/graphql", form: new FormData(), signal: controller.signal, createXhr });
    controller.abort();
    await expect(done).rejects.toThrow("cancelled");
  });
});
