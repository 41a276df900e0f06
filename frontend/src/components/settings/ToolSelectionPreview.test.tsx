import { MockedProvider } from "@apollo/client/testing/react";
import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { createCache } from "../../apollo";
import { ToolSelectionDocument } from "../../gql/graphql";
import { ToolSelectionPreview } from "./ToolSelectionPreview";

const tool = (id: string, name: string, core = false, sideEffects = false) => ({ __typename: "Tool" as const, id, name, group: "shop", core, sideEffects });

const mock = {
  request: { query: ToolSelectionDocument, variables: { sessionId: "7", message: "cancel order 12" } },
  result: {
    data: {
      toolSelection: {
        __typename: "ToolSelection" as const,
        groups: ["shop"],
        topK: 1,
        minScore: null,
        degraded: null,
        candidates: [
          { score: 0.81, tool: tool("1", "cancel_order") },
          { score: 0.2, tool: tool("2", "order_status") },
          { score: 0.1, tool: tool("3", "shop_help") },
        ],
        selected: [
          { score: 0.81, reason: "RANKED" as const, tool: tool("1", "cancel_order", false, true) },
          { score: 0.1, reason: "CORE" as const, tool: tool("3", "shop_help", true) },
        ],
      },
    },
  },
};

describe("ToolSelectionPreview", () => {
  it("lists what a message would be offered: the ranked tools with their scores, then core ones", async () => {
    render(
      <MockedProvider cache={createCache()} mocks={[mock]}>
        <ToolSelectionPreview sessionId="7" savedGroups={["shop"]} initialMessage="cancel order 12" debounceMs={0} />
      </MockedProvider>,
    );
    expect(await screen.findByTestId("tool-selection-summary")).toHaveTextContent("Would offer 2 of 3 allowed tools (top 1, then core ones).");
    const rows = screen.getAllByTestId("selected-tool");
    expect(rows[0]).toHaveTextContent(/cancel_order.*similar.*side effects.*0\.810/);
    expect(rows[1]).toHaveTextContent(/shop_help.*core.*0\.100/);
  });

  it("asks for saved groups before it queries", () => {
    render(
      <MockedProvider mocks={[]}>
        <ToolSelectionPreview sessionId="7" savedGroups={[]} initialMessage="cancel" debounceMs={0} />
      </MockedProvider>,
    );
    expect(screen.getByText("Allow a tool group and save to preview the selection.")).toBeInTheDocument();
  });
});
