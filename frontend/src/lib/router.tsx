// A small client-side router: the History API, a handful of routes, and <Link>. ragchat serves
// index.html for any path without a dot, so deep links and reloads work.

import { type AnchorHTMLAttributes, type MouseEvent, useSyncExternalStore } from "react";

export type Route =
  | { name: "home" }
  | { name: "project"; projectId: string }
  | { name: "session"; sessionId: string }
  | { name: "document"; documentId: string }
  | { name: "tools" }
  | { name: "signIn" }
  | { name: "firstRun" }
  | { name: "invitation"; token: string }
  | { name: "keys" }
  | { name: "people" }
  | { name: "notFound"; path: string };

const NAVIGATE_EVENT = "ragchat:navigate";

export function parseRoute(pathname: string): Route {
  const path = pathname.replace(/\/+$/, "") || "/";
  if (path === "/") return { name: "home" };
  if (path === "/tools") return { name: "tools" };
  if (path === "/sign-in") return { name: "signIn" };
  if (path === "/first-run") return { name: "firstRun" };
  if (path === "/settings/keys") return { name: "keys" };
  if (path === "/settings/people") return { name: "people" };
  const invitation = /^\/invite\/([^/]+)$/.exec(path);
  if (invitation) return { name: "invitation", token: decodeURIComponent(invitation[1]!) };
  const project = /^\/projects\/([^/]+)$/.exec(path);
  if (project) return { name: "project", projectId: decodeURIComponent(project[1]!) };
  const session = /^\/sessions\/([^/]+)$/.exec(path);
  if (session) return { name: "session", sessionId: decodeURIComponent(session[1]!) };
  const document = /^\/documents\/([^/]+)$/.exec(path);
  if (document) return { name: "document", documentId: decodeURIComponent(document[1]!) };
  return { name: "notFound", path };
}

export const paths = {
  home: () => "/",
  project: (id: string) => `/projects/${encodeURIComponent(id)}`,
  session: (id: string) => `/sessions/${encodeURIComponent(id)}`,
  document: (id: string) => `/documents/${encodeURIComponent(id)}`,
  /** A document opened at a citation: the viewer highlights the cited chunk and lines and scrolls to them. */
  cited: (id: string, { chunkId, lineStart, lineEnd }: { chunkId?: string | null; lineStart?: number | null; lineEnd?: number | null }) => {
    const query = new URLSearchParams();
    if (chunkId) query.set("chunk", chunkId);
    if (lineStart != null) query.set("lines", `${lineStart}-${lineEnd ?? lineStart}`);
    const search = query.toString();
    return `/documents/${encodeURIComponent(id)}${search ? `?${search}` : ""}`;
  },
  tools: () => "/tools",
  /** `next`: where to go once signed in (a path on this site). */
  signIn: (next?: string) => (next && next !== "/" ? `/sign-in?next=${encodeURIComponent(next)}` : "/sign-in"),
  firstRun: () => "/first-run",
  keys: () => "/settings/keys",
  people: () => "/settings/people",
};

/** The pages anyone may see on a server with people: the ways in. */
export function isPublicRoute(route: Route): boolean {
  return route.name === "signIn" || route.name === "firstRun" || route.name === "invitation";
}

/** A `next` parameter, kept only when it is a path on this site (never another origin). */
export function safeNext(value: string | null): string {
  return value && value.startsWith("/") && !value.startsWith("//") && !value.startsWith("/\\") ? value : "/";
}

export function navigate(to: string, { replace = false }: { replace?: boolean } = {}): void {
  if (to === window.location.pathname + window.location.search) return;
  if (replace) window.history.replaceState(null, "", to);
  else window.history.pushState(null, "", to);
  window.dispatchEvent(new Event(NAVIGATE_EVENT));
}

function subscribe(onChange: () => void) {
  window.addEventListener("popstate", onChange);
  window.addEventListener(NAVIGATE_EVENT, onChange);
  return () => {
    window.removeEventListener("popstate", onChange);
    window.removeEventListener(NAVIGATE_EVENT, onChange);
  };
}

const currentPath = () => window.location.pathname;

/** The current path; re-renders on navigation (links, back/forward). */
export function usePathname(): string {
  return useSyncExternalStore(subscribe, currentPath, currentPath);
}

export function useRoute(): Route {
  return parseRoute(usePathname());
}

export interface LinkProps extends AnchorHTMLAttributes<HTMLAnchorElement> {
  to: string;
}

/** An <a> that navigates without a reload (new tab / modifier clicks keep browser behaviour). */
export function Link({ to, onClick, ...props }: LinkProps) {
  function handle(event: MouseEvent<HTMLAnchorElement>) {
    onClick?.(event);
    if (event.defaultPrevented || event.button !== 0) return;
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(to);
  }
  return <a href={to} onClick={handle} {...props} />;
}
