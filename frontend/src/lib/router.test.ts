import { describe, expect, it } from "vitest";
import { parseRoute, paths, safeNext } from "./router";

describe("parseRoute", () => {
  it.each([
    ["/", { name: "home" }],
    ["/projects/3", { name: "project", projectId: "3" }],
    ["/projects/3/", { name: "project", projectId: "3" }],
    ["/sessions/12", { name: "session", sessionId: "12" }],
    ["/documents/7", { name: "document", documentId: "7" }],
    ["/tools", { name: "tools" }],
    ["/tools/", { name: "tools" }],
    ["/sign-in", { name: "signIn" }],
    ["/first-run", { name: "firstRun" }],
    ["/invite/abc-123", { name: "invitation", token: "abc-123" }],
    ["/settings/keys", { name: "keys" }],
    ["/settings/people", { name: "people" }],
    ["/projects/1/chats/2", { name: "notFound", path: "/projects/1/chats/2" }],
  ])("%s", (path, route) => {
    expect(parseRoute(path)).toEqual(route);
  });

  it("builds the paths it parses", () => {
    expect(parseRoute(paths.session("5"))).toEqual({ name: "session", sessionId: "5" });
    expect(parseRoute(paths.document("8"))).toEqual({ name: "document", documentId: "8" });
    expect(parseRoute(paths.project("a b"))).toEqual({ name: "project", projectId: "a b" });
  });
});

describe("safeNext", () => {
  it("keeps a path on this site and nothing else", () => {
    expect(safeNext("/sessions/4?x=1")).toBe("/sessions/4?x=1");
    expect(safeNext(null)).toBe("/");
    expect(safeNext("https://evil.example/")).toBe("/");
    expect(safeNext("//evil.example/")).toBe("/");
    expect(safeNext("/\\evil.example/")).toBe("/");
  });

  it("round-trips through the sign-in path", () => {
    const next = new URL(paths.signIn("/projects/2"), "http://x").searchParams.get("next");
    expect(safeNext(next)).toBe("/projects/2");
    expect(paths.signIn("/")).toBe("/sign-in");
  });
});
