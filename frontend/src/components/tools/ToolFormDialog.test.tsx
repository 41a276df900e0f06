import type { MockLink } from "@apollo/client/testing";
import { MockedProvider } from "@apollo/client/testing/react";
import { render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { createCache } from "../../apollo";
import { CreateToolDocument, type CreateToolMutation, type ToolFieldsFragment } from "../../gql/graphql";
import { ToolFormDialog } from "./ToolFormDialog";

const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };

function createMock(result: CreateToolMutation["createTool"]): MockLink.MockedResponse<CreateToolMutation> {
  return {
    request: {
      query: CreateToolDocument,
      variables: {
        input: {
          name: "weather",
          description: "The weather in a city.",
          group: "default",
          core: false,
          examples: ["weather in Paris"],
          inputSchema: schema,
          method: "GET",
          urlTemplate: "https://weather.example/now?city={city}",
          headers: [{ header: "X-Key", secret: "weather_key" }],
          timeoutSeconds: 10,
          sideEffects: false,
          dryRun: null,
          knowledgeBaseId: null,
        },
      },
    },
    result: { data: { createTool: result } },
  };
}

/** Type into a field by pasting: one input event, so the test does not depend on the machine's speed. */
async function put(user: ReturnType<typeof userEvent.setup>, label: string, text: string) {
  await user.click(screen.getByLabelText(label));
  await user.paste(text);
}

async function fill(user: ReturnType<typeof userEvent.setup>) {
  await put(user, "Name", "weather");
  await put(user, "Description", "The weather in a city.");
  await put(user, "Example requests", "weather in Paris");
  await user.clear(screen.getByLabelText("Input schema"));
  await put(user, "Input schema", JSON.stringify(schema));
  await put(user, "URL template", "https://weather.example/now?city={city}");
  await user.click(screen.getByRole("button", { name: "Add header" }));
  await put(user, "Header 1 name", "X-Key");
  await put(user, "Header 1 secret", "weather_key");
}

function describedError(input: HTMLElement): string {
  const ids = input.getAttribute("aria-describedby")?.split(" ") ?? [];
  return ids.map((id) => document.getElementById(id)?.textContent ?? "").join(" ").trim();
}

describe("ToolFormDialog", () => {
  it("checks the fields before sending anything", async () => {
    const user = userEvent.setup();
    render(
      <MockedProvider cache={createCache()} mocks={[]}>
        <ToolFormDialog open onClose={vi.fn()} />
      </MockedProvider>,
    );
    await put(user, "Name", "1bad");
    await put(user, "URL template", "https://{host}/x");
    await user.click(screen.getByRole("button", { name: "Create tool" }));
    expect(describedError(screen.getByLabelText("Name"))).toMatch(/starting with a letter/);
    expect(describedError(screen.getByLabelText("Description"))).toMatch(/Required/);
    expect(describedError(screen.getByLabelText("URL template"))).toMatch(/host cannot be a placeholder/);
    expect(screen.getByLabelText("URL template")).toHaveAttribute("aria-invalid", "true");
  });

  it("shows the server's verdict at the field it names", async () => {
    const user = userEvent.setup();
    const onClose = vi.fn();
    const rejected = createMock({
      __typename: "ValidationError",
      message: "Invalid input",
      fields: [{ field: "headers.X-Key", message: "secret 'weather_key' is not configured: set RAGCHAT_TOOLS__SECRETS__WEATHER_KEY" }],
    });
    render(
      <MockedProvider cache={createCache()} mocks={[rejected]}>
        <ToolFormDialog open onClose={onClose} />
      </MockedProvider>,
    );
    await fill(user);
    await user.click(screen.getByRole("button", { name: "Create tool" }));
    const alert = await screen.findByText(/X-Key: secret 'weather_key' is not configured/);
    expect(screen.getByTestId("tool-headers")).toContainElement(alert);
    expect(onClose).not.toHaveBeenCalled();
  });

  it("puts a taken name next to the name", async () => {
    const user = userEvent.setup();
    render(
      <MockedProvider cache={createCache()} mocks={[createMock({ __typename: "ConflictError", message: "a tool named 'weather' already exists" })]}>
        <ToolFormDialog open onClose={vi.fn()} />
      </MockedProvider>,
    );
    await fill(user);
    await user.click(screen.getByRole("button", { name: "Create tool" }));
    await screen.findByText("a tool named 'weather' already exists");
    expect(describedError(screen.getByLabelText("Name"))).toBe("a tool named 'weather' already exists");
  });
});

describe("ToolFormDialog for an MCP server's tool", () => {
  it("shows its server's address without a way to change it, and no request fields of an HTTP tool", () => {
    const tool: ToolFieldsFragment = {
      id: "9",
      name: "docs_search",
      description: "Search the docs.",
      inputSchema: { type: "object" },
      examples: [],
      group: "docs",
      core: false,
      kind: "MCP",
      method: null,
      urlTemplate: "https://mcp.example/mcp",
      headers: [],
      timeoutSeconds: 10,
      sideEffects: false,
      dryRun: null,
      knowledgeBaseId: null,
      createdAt: "2026-11-29T00:00:00Z",
      updatedAt: "2026-11-29T00:00:00Z",
    };
    render(
      <MockedProvider cache={createCache()} mocks={[]}>
        <ToolFormDialog open onClose={vi.fn()} tool={tool} />
      </MockedProvider>,
    );
    expect(screen.getByLabelText("MCP server")).toHaveValue("https://mcp.example/mcp");
    expect(screen.getByLabelText("MCP server")).toBeDisabled();
    for (const gone of ["Method", "URL template", "Input schema"]) expect(screen.queryByLabelText(gone)).toBeNull();
    expect(screen.queryByRole("switch", { name: "Dry run" })).toBeNull();
    expect(screen.getByLabelText("Timeout (seconds)")).toHaveValue(10);
  });
});
