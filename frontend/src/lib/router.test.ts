import { describe, expect, it } from "vitest";
import { parseRoute, paths } from "./router";

describe("parseRoute", () => {
  it.each([
    ["/", { name: "home" }],
    ["/projects/3", { name: "project", projectId: "3" }],
    ["/projects/3/", { name: "project", projectId: "3" }],
    ["/sessions/12", { name: "session", sessionId: "12" }],
    ["/documents/7", { name: "document", documentId: "7" }],
    ["/tools", { name: "tools" }],
    ["/tools/", { name: "tools" }],
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
