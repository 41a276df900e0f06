import { ApolloProvider } from "@apollo/client/react";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { createApolloClient, endpointsFor } from "./apollo";
import { App } from "./App";
import { ApiKeyStore } from "./lib/apiKey";
import { ServicesProvider } from "./lib/services";
import "./styles/tokens.css";
import "./styles/base.css";
import "./styles/components.css";
import "./styles/forms.css";
import "./styles/pages.css";
import "./styles/chat.css";
import "./styles/trace.css";

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
