// First, so that every component's CSS module comes after them in the bundle: the tokens and
// reset, then the shared looks the modules compose (their own rules then win ties).
import "./styles/global.css";
import "./styles/shared.module.css";
import { ApolloProvider } from "@apollo/client/react";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { createApolloClient, endpointsFor } from "./apollo";
import { App } from "./App";
import { ApiKeyStore } from "./lib/apiKey";
import { ServicesProvider } from "./lib/services";
import { applyTheme, followSystemTheme } from "./lib/theme";

applyTheme();
followSystemTheme();

const endpoints = endpointsFor(window.location);
const keys = new ApiKeyStore();
const client = createApolloClient(endpoints, keys);

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <ServicesProvider value={{ endpoints, keys }}>
      <ApolloProvider client={client}>
        <App />
      </ApolloProvider>
    </ServicesProvider>
  </StrictMode>,
);
