// What components need besides Apollo: the API endpoints (uploads bypass Apollo) and the API key.

import { createContext, type ReactNode, useContext, useSyncExternalStore } from "react";
import type { Endpoints } from "../apollo";
import { type ApiKeyState, ApiKeyStore } from "./apiKey";

export interface Services {
  endpoints: Endpoints;
  keys: ApiKeyStore;
}

const ServicesContext = createContext<Services | null>(null);

export function ServicesProvider({ value, children }: { value: Services; children: ReactNode }) {
  return <ServicesContext.Provider value={value}>{children}</ServicesContext.Provider>;
}

const fallback: Services = {
  endpoints: { httpUrl: "/graphql", wsUrl: "/graphql" },
  keys: new ApiKeyStore(null),
};

export function useServices(): Services {
  return useContext(ServicesContext) ?? fallback;
}

export function useApiKeyState(): ApiKeyState {
  const { keys } = useServices();
  return useSyncExternalStore(keys.subscribe, keys.getSnapshot, keys.getSnapshot);
}
