import { describe, expect, it, vi } from "vitest";
import { authFetch } from "../apollo";
import { ApiKeyStore } from "./apiKey";

function memoryStorage(initial: Record<string, string> = {}) {
  const data = new Map(Object.entries(initial));
  return {
    getItem: (k: string) => data.get(k) ?? null,
    setItem: (k: string, v: string) => void data.set(k, v),
    removeItem: (k: string) => void data.delete(k),
    data,
  };
}

describe("ApiKeyStore", () => {
  it("reads, saves and forgets the key in storage", () => {
    const storage = memoryStorage({ "ragchat.apiKey": "k1" });
    const keys = new ApiKeyStore(storage);
    expect(keys.authorization()).toBe("Bearer k1");
    keys.setKey("  k2 ");
    expect(storage.data.get("ragchat.apiKey")).toBe("k2");
    keys.setKey(null);
    expect(storage.data.has("ragchat.apiKey")).toBe(false);
    expect(keys.authorization()).toBeNull();
  });

  it("asks for a key once per refusal and tells key listeners only about real changes", () => {
    const keys = new ApiKeyStore(memoryStorage());
    const onKey = vi.fn();
    keys.onKeyChange(onKey);
    keys.requestKey();
    keys.requestKey();
    expect(keys.getSnapshot().needed).toBe("missing");
    keys.setKey("k");
    expect(keys.getSnapshot().needed).toBeNull();
    keys.setKey("k");
    expect(onKey).toHaveBeenCalledTimes(1);
    keys.requestKey();
    expect(keys.getSnapshot().needed).toBe("rejected");
  });

  it("opened by the user, the dialog says it was chosen, not that the server asked", () => {
    const keys = new ApiKeyStore(memoryStorage());
    keys.openDialog();
    expect(keys.getSnapshot().needed).toBe("chosen");
    keys.dismiss();
    keys.requestKey();
    keys.openDialog(); // already open because the server asked: it stays that
    expect(keys.getSnapshot().needed).toBe("missing");
  });
});

describe("authFetch", () => {
  it("sends the key as a Bearer token and asks for one on 401", async () => {
    const keys = new ApiKeyStore(memoryStorage({ "ragchat.apiKey": "secret" }));
    const base = vi.fn<typeof fetch>().mockResolvedValue(new Response("{}", { status: 401 }));
    const response = await authFetch(keys, base)("/graphql", { method: "POST", headers: { "content-type": "application/json" } });
    expect(response.status).toBe(401);
    const headers = base.mock.calls[0]![1]!.headers as Headers;
    expect(headers.get("authorization")).toBe("Bearer secret");
    expect(headers.get("content-type")).toBe("application/json");
    expect(keys.getSnapshot().needed).toBe("rejected");
  });

  it("sends no Authorization header without a key", async () => {
    const keys = new ApiKeyStore(memoryStorage());
    const base = vi.fn<typeof fetch>().mockResolvedValue(new Response("{}", { status: 200 }));
    await authFetch(keys, base)("/graphql", {});
    expect((base.mock.calls[0]![1]!.headers as Headers).has("authorization")).toBe(false);
    expect(keys.getSnapshot().needed).toBeNull();
  });
});
