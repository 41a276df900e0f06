import { MockedProvider } from "@apollo/client/testing/react";
import { render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { createCache } from "../../apollo";
import { TestToolDocument, type ToolFieldsFragment } from "../../gql/graphql";
import { TestToolDialog, argumentsSkeleton } from "./TestToolDialog";

const tool: ToolFieldsFragment = {
  id: "9",
  name: "weather",
  description: "The weather in a city.",
  inputSchema: { type: "object", properties: { city: { type: "string" }, days: { type: "integer" } } },
  examples: [],
  group: "default",
  core: false,
  kind: "HTTP",
  method: "GET",
  urlTemplate: "https://weather.example/{city}",
  headers: [],
  timeoutSeconds: 10,
  sideEffects: false,
  dryRun: null,
  createdAt: "2026-01-01T00:00:00",
  knowledgeBaseId: null,
  updatedAt: "2026-01-01T00:00:00",
};

describe("TestToolDialog", () => {
  it("starts from the schema's properties", () => {
    expect(JSON.parse(argumentsSkeleton(tool.inputSchema))).toEqual({ city: "", days: 0 });
    expect(argumentsSkeleton(null)).toBe("{}");
    // Values the schema accepts where it says one; optional properties only when it suggests a value.
    const schema = {
      type: "object",
      required: ["city", "days", "units", "code"],
      properties: {
        city: { type: "string", examples: ["Paris"] },
        days: { type: "integer", minimum: 1, maximum: 14 },
        units: { type: "string", enum: ["metric", "imperial"] },
        code: { type: "string", minLength: 3 },
        detail: { type: "boolean", default: true },
        note: { type: "string" },
      },
    };
    expect(JSON.parse(argumentsSkeleton(schema))).toEqual({ city: "Paris", days: 1, units: "metric", code: "xxx", detail: true });
  });

  it("refuses arguments that are not a JSON object, then shows what the tool returned", async () => {
    const user = userEvent.setup();
    const mock = {
      request: { query: TestToolDocument, variables: { id: "9", arguments: { city: "Paris", days: 0 }, projectId: null } },
      result: { data: { testTool: { __typename: "ToolTest" as const, toolId: "9", dryRun: false, ok: true, output: '{"forecast": "sunny"}', error: null, size: 21, truncated: false, ms: 12 } } },
    };
    render(
      <MockedProvider cache={createCache()} mocks={[mock]}>
        <TestToolDialog tool={tool} onClose={vi.fn()} />
      </MockedProvider>,
    );
    const args = screen.getByLabelText("Arguments");
    await user.clear(args);
    await user.click(args);
    await user.paste("[1]");
    await user.click(screen.getByRole("button", { name: "Run" }));
    expect(screen.getByText("The arguments are a JSON object.")).toBeInTheDocument();
    await user.clear(args);
    await user.paste('{"city": "Paris", "days": 0}');
    await user.click(screen.getByRole("button", { name: "Run" }));
    const output = await screen.findByTestId("tool-test-output");
    expect(output).toHaveAttribute("data-ok", "true");
    expect(output).toHaveTextContent('{"forecast": "sunny"}');
    expect(output).not.toHaveTextContent("preview only");
  });
});
