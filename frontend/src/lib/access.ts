// Who is using the app, and which page the server's access rules send them to.

import { useQuery } from "@apollo/client/react";
import { type PersonFieldsFragment, ServerAccessDocument, type ServerAccessQuery } from "../gql/graphql";
import { type Route, isPublicRoute, paths, safeNext } from "./router";

export type Access = ServerAccessQuery["serverAccess"];

/** serverAccess from the cache once asked (the gate asks first; the sidebar and pages reuse it). */
export function useServerAccess() {
  const { data, loading, error } = useQuery(ServerAccessDocument);
  return { access: data?.serverAccess ?? null, loading: loading && !data, error };
}

/** The signed-in person (null on an open server, or for a server key). */
export function useMe(): PersonFieldsFragment | null {
  return useServerAccess().access?.me ?? null;
}

export type GateDecision = { show: "wait" } | { show: "page" } | { redirect: string };

/**
 * What the app shows for `route`:
 * - an open server (no people) or a server asking for server keys: the app as it always was (a
 *   refused key opens the API key dialog, as before); the sign-in page is not there;
 * - a server with people: someone neither signed in nor holding a key goes to /sign-in (and back
 *   to where they were going afterwards); a signed-in person sent to the ways in goes home.
 */
export function decide(route: Route, access: Access | null, loading: boolean, hasKey: boolean, location: Pick<Location, "pathname" | "search">): GateDecision {
  if (!access) return loading ? { show: "wait" } : { show: "page" };
  const next = safeNext(new URLSearchParams(location.search).get("next"));
  if (!access.peopleExist) return route.name === "signIn" ? { redirect: next } : { show: "page" };
  const known = access.me !== null || hasKey;
  if (!known) return isPublicRoute(route) ? { show: "page" } : { redirect: paths.signIn(location.pathname + location.search) };
  if (route.name === "signIn" || route.name === "firstRun") return { redirect: next };
  return { show: "page" };
}
