import type { MockLink } from "@apollo/client/testing";
import { MockedProvider } from "@apollo/client/testing/react";
import { render, screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { createCache } from "../../apollo";
import {
  ProjectTagsDocument,
  ProvidersDocument,
  type SessionFieldsFragment,
  SetChatSessionToolGroupsDocument,
  ToolsDocument,
  UpdateChatSessionDocument,
} from "../../gql/graphql";
import { SettingsDrawer } from "./SettingsDrawer";

const session: SessionFieldsFragment = {
  id: "7",
  projectId: "1",
  title: "Tickets",
  systemPrompt: "",
  provider: "openai",
  model: "gpt-4o",
  enableRag: true,
  topK: 5,
  threshold: 0.25,
  includeCitations: true,
  answerMode: "AUTO",
  rerank: "AUTO",
  expansion: "OFF",
  quality: "BALANCED",
  rewrite: "AUTO",
  toolGroups: ["ops"],
  documentFilter: null,
  shared: false,
  owner: null,
  createdAt: "2026-01-01T10:00:00",
  updatedAt: "2026-01-01T10:00:00",
};

const tool = {
  __typename: "Tool" as const, id: "3", name: "create_ticket", description: "Open a ticket", inputSchema: { type: "object" }, examples: [], group: "ops", core: false,
  kind: "HTTP" as const, method: "POST" as const, urlTemplate: "https://t.example/", headers: [], timeoutSeconds: 10, sideEffects: true, dryRun: null,
  createdAt: "2026-01-01T10:00:00", updatedAt: "2026-01-01T10:00:00",
};

const provider = (name: string, models: string[]) => ({ __typename: "ProviderInfo" as const, provider: name, available: true, reachable: true, reason: null, models, openEnded: false, defaultModel: models[0]! });

function mocks(order: string[]): MockLink.MockedResponse[] {
  return [
    { request: { query: ProvidersDocument }, result: { data: { providers: [provider("openai", ["gpt-4o"]), provider("local", ["SmolLM2"])] } }, maxUsageCount: 5 },
    { request: { query: ToolsDocument }, result: { data: { tools: [tool] } }, maxUsageCount: 5 },
    {
      request: { query: ProjectTagsDocument, variables: { id: "1" } },
      result: { data: { project: { __typename: "Project" as const, id: "1", documentTags: [{ __typename: "TagCount" as const, tag: "policy", documents: 2 }] } } },
      maxUsageCount: 5,
    },
    {
      request: { query: SetChatSessionToolGroupsDocument, variables: { sessionId: "7", groups: [] } },
      result: () => {
        order.push("groups");
        return { data: { setChatSessionToolGroups: { __typename: "SessionToolGroups" as const, sessionId: "7", groups: [] } } };
      },
    },
    {
      request: { query: UpdateChatSessionDocument, variables: { id: "7", input: { provider: "local", model: "SmolLM2" } } },
      result: () => {
        order.push("fields");
        return { data: { updateChatSession: { __typename: "ChatSession" as const, ...session, provider: "local", model: "SmolLM2", toolGroups: [] } } };
      },
    },
  ];
}

describe("SettingsDrawer", () => {
  it("turns the tool groups off before switching to a model that cannot call tools", async () => {
    const user = userEvent.setup();
    const order: string[] = [];
    const onClose = vi.fn();
    render(
      <MockedProvider cache={createCache()} mocks={mocks(order)}>
        <SettingsDrawer session={session} open onClose={onClose} />
      </MockedProvider>,
    );
    const ops = await screen.findByRole("switch", { name: "ops" });
    expect(ops).toBeChecked();
    await user.click(ops);
    await waitFor(() => expect(screen.getByRole("option", { name: "local" })).toBeInTheDocument());
    await user.selectOptions(screen.getByLabelText("Provider"), "local");
    await user.click(screen.getByRole("button", { name: "Save settings" }));
    await waitFor(() => expect(onClose).toHaveBeenCalled());
    expect(order).toEqual(["groups", "fields"]);
  });

  it("saves the model before adding tool groups, and shows the groups' refusal in the Tools section", async () => {
    const user = userEvent.setup();
    const order: string[] = [];
    const onClose = vi.fn();
    const local = { ...session, provider: "local", model: "SmolLM2", toolGroups: [] };
    const refusal = "no tool is in group 'ops'";
    const [providers, tools] = mocks([]);
    render(
      <MockedProvider
        cache={createCache()}
        mocks={[
          providers!,
          tools!,
          {
            request: { query: UpdateChatSessionDocument, variables: { id: "7", input: { provider: "openai", model: "gpt-4o" } } },
            result: () => {
              order.push("fields");
              return { data: { updateChatSession: { __typename: "ChatSession" as const, ...local, provider: "openai", model: "gpt-4o" } } };
            },
          },
          {
            request: { query: SetChatSessionToolGroupsDocument, variables: { sessionId: "7", groups: ["ops"] } },
            result: () => {
              order.push("groups");
              return { data: { setChatSessionToolGroups: { __typename: "ValidationError" as const, message: "Invalid input", fields: [{ field: "groups", message: refusal }] } } };
            },
          },
        ]}
      >
        <SettingsDrawer session={local} open onClose={onClose} />
      </MockedProvider>,
    );
    await user.click(await screen.findByRole("switch", { name: "ops" }));
    await waitFor(() => expect(screen.getByRole("option", { name: "openai" })).toBeInTheDocument());
    await user.selectOptions(screen.getByLabelText("Provider"), "openai");
    await user.click(screen.getByRole("button", { name: "Save settings" }));
    const alert = await screen.findByText(refusal);
    expect(screen.getByRole("group", { name: "Tools" })).toContainElement(alert);
    expect(order).toEqual(["fields", "groups"]);
    expect(onClose).not.toHaveBeenCalled();
  });
});
