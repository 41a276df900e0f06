import { describe, expect, it } from "vitest";
import type { PersonFieldsFragment } from "../gql/graphql";
import { type Access, decide } from "./access";
import { parseRoute } from "./router";

const ada: PersonFieldsFragment = { id: "1", email: "ada@example.com", name: "Ada", isAdmin: true, disabled: false, createdAt: "2026-01-01T00:00:00Z" };
const open: Access = { peopleExist: false, firstRunAvailable: true, passwordSignIn: true, singleSignOnUrl: null, me: null };
const locked: Access = { ...open, peopleExist: true, firstRunAvailable: false };
const signedIn: Access = { ...locked, me: ada };

function at(path: string, access: Access | null, { hasKey = false, loading = false } = {}) {
  const url = new URL(path, "http://x");
  return decide(parseRoute(url.pathname), access, loading, hasKey, url);
}

describe("decide", () => {
  it("waits for the server's answer, and shows the app when there is none (a 401 opens the key dialog)", () => {
    expect(at("/", null, { loading: true })).toEqual({ show: "wait" });
    expect(at("/projects/1", null)).toEqual({ show: "page" });
  });

  it("changes nothing on an open server, and has no sign-in page there", () => {
    expect(at("/", open)).toEqual({ show: "page" });
    expect(at("/sessions/4", open)).toEqual({ show: "page" });
    expect(at("/first-run", open)).toEqual({ show: "page" });
    expect(at("/sign-in?next=%2Ftools", open)).toEqual({ redirect: "/tools" });
  });

  it("sends someone unknown to sign in, and back afterwards", () => {
    expect(at("/", locked)).toEqual({ redirect: "/sign-in" });
    expect(at("/sessions/4?setup=1", locked)).toEqual({ redirect: "/sign-in?next=%2Fsessions%2F4%3Fsetup%3D1" });
    expect(at("/settings/keys", locked)).toEqual({ redirect: "/sign-in?next=%2Fsettings%2Fkeys" });
    expect(at("/sign-in", locked)).toEqual({ show: "page" });
    expect(at("/invite/tok", locked)).toEqual({ show: "page" });
  });

  it("lets a signed-in person or a key holder in, and takes them off the ways in", () => {
    expect(at("/projects/2", signedIn)).toEqual({ show: "page" });
    expect(at("/projects/2", locked, { hasKey: true })).toEqual({ show: "page" });
    expect(at("/sign-in?next=%2Fprojects%2F2", signedIn)).toEqual({ redirect: "/projects/2" });
    expect(at("/sign-in?next=https%3A%2F%2Fevil.example", signedIn)).toEqual({ redirect: "/" });
    expect(at("/first-run", signedIn)).toEqual({ redirect: "/" });
  });
});
