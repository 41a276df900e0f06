import { describe, expect, it } from "vitest";
import type { ToolFieldsFragment } from "../../gql/graphql";
import { checkUrl, createInputOf, draftOfTool, emptyDraft, placeholders, toolFieldErrors, updateInputOf, validateTool } from "./toolDraft";

const schema = { type: "object", properties: { order_id: { type: "string" } }, required: ["order_id"] };

const tool: ToolFieldsFragment = {
  id: "9",
  name: "cancel_order",
  description: "Cancel an order.",
  inputSchema: schema,
  examples: ["cancel my order 12"],
  group: "shop",
  core: false,
  kind: "HTTP",
  method: "POST",
  urlTemplate: "https://shop.example/orders/{order_id}/cancel",
  headers: [{ header: "Authorization", secret: "shop_token" }],
  timeoutSeconds: 10,
  sideEffects: true,
  dryRun: { method: "GET", urlTemplate: "https://shop.example/orders/{order_id}" },
  createdAt: "2026-01-01T00:00:00",
  knowledgeBaseId: null,
  updatedAt: "2026-01-01T00:00:00",
};

describe("validateTool", () => {
  it("accepts a complete HTTP tool, and builds the input the server takes", () => {
    const draft = { ...draftOfTool(tool), name: "cancel_order2" };
    expect(validateTool(draft)).toEqual({});
    expect(createInputOf(draft)).toMatchObject({ name: "cancel_order2", inputSchema: schema, headers: [{ header: "Authorization", secret: "shop_token" }], dryRun: tool.dryRun, timeoutSeconds: 10 });
  });

  it("names every bad field at once, with the server's rules", () => {
    const errors = validateTool({
      ...emptyDraft(),
      name: "9lives",
      group: "Shop",
      inputSchema: '{"type": "array"}',
      urlTemplate: "https://{host}/x",
      timeoutSeconds: "121",
      headers: [{ header: "Bad Header", secret: "x" }],
    });
    expect(Object.keys(errors).sort()).toEqual(["description", "group", "headers", "inputSchema", "name", "timeoutSeconds", "urlTemplate"]);
    expect(errors.inputSchema).toMatch(/"type": "object"/);
    expect(errors.urlTemplate).toMatch(/host cannot be a placeholder/);
  });

  it("checks placeholders against the schema's properties and rejects JSON that is not JSON", () => {
    expect(checkUrl("https://api.example/{order}", new Set(["order_id"]))).toMatch(/\{order\} are not properties/);
    expect(checkUrl("ftp://api.example/", null)).toMatch(/http/);
    expect(checkUrl("https://user:pw@api.example/", null)).toMatch(/credentials/);
    expect(placeholders("https://a.example/{{literal}}/{id}?q={q}")).toEqual(["id", "q"]);
    expect(validateTool({ ...draftOfTool(tool), inputSchema: "{oops" }).inputSchema).toMatch(/^Not JSON/);
  });

  it("allows a dry run only for a tool with side effects", () => {
    expect(validateTool({ ...draftOfTool(tool), sideEffects: false }).dryRunUrl).toBe("Only a tool with side effects has a dry run.");
  });

  it("checks only the editable fields of a built-in tool", () => {
    expect(validateTool({ ...emptyDraft(), name: "", inputSchema: "", description: "Search.", group: "knowledge_base" }, true)).toEqual({});
  });
});

describe("updateInputOf", () => {
  it("sends only what changed", () => {
    expect(updateInputOf(tool, draftOfTool(tool))).toEqual({});
    const draft = { ...draftOfTool(tool), description: "Cancel an order now.", timeoutSeconds: "5", headers: [] };
    expect(updateInputOf(tool, draft)).toEqual({ description: "Cancel an order now.", timeoutSeconds: 5, headers: [] });
  });

  it("never sends a built-in tool's fixed fields", () => {
    const builtin = { ...tool, kind: "BUILTIN" as const, method: null, urlTemplate: null, headers: [], dryRun: null, sideEffects: false };
    const draft = { ...draftOfTool(builtin), name: "renamed", group: "kb", urlTemplate: "https://x.example/" };
    expect(updateInputOf(builtin, draft)).toEqual({ group: "kb" });
  });

  it("never sends what an MCP tool's server decides (its URL, method, schema)", () => {
    const mcp = { ...tool, kind: "MCP" as const, method: null, urlTemplate: "https://tools.example/mcp", dryRun: null };
    expect(updateInputOf(mcp, draftOfTool(mcp))).toEqual({});
    const draft = { ...draftOfTool(mcp), method: "POST" as const, urlTemplate: "https://x.example/", sideEffects: false };
    expect(updateInputOf(mcp, draft)).toEqual({ sideEffects: false });
  });
});

describe("whose tool", () => {
  it("a new tool is the server's unless a knowledge base is chosen, and it stays whose it is", () => {
    const ticket = draftOfTool(tool);
    expect(createInputOf({ ...ticket, knowledgeBaseId: "" }).knowledgeBaseId).toBeNull();
    expect(createInputOf({ ...ticket, knowledgeBaseId: "7" }).knowledgeBaseId).toBe("7");
    expect(updateInputOf(tool, { ...ticket, knowledgeBaseId: "7" })).toEqual({});
    expect(toolFieldErrors([{ field: "knowledgeBaseId", message: "not yours" }])).toEqual({ knowledgeBaseId: "not yours" });
  });
});

describe("toolFieldErrors", () => {
  it("puts the server's field paths next to the form's fields", () => {
    const errors = toolFieldErrors([
      { field: "dryRun.urlTemplate", message: "must be an http:// or https:// URL with a host" },
      { field: "dryRun.method", message: "must be one of GET, POST" },
      { field: "headers.X-Key", message: "secret 'nope' is not configured" },
      { field: "examples[2]", message: "must be 1 to 500 characters" },
      { field: "name", message: "taken" },
      { field: "somethingElse", message: "odd" },
    ]);
    expect(errors).toEqual({
      dryRunUrl: "must be an http:// or https:// URL with a host",
      dryRunMethod: "must be one of GET, POST",
      headers: "X-Key: secret 'nope' is not configured",
      examples: "Example 3: must be 1 to 500 characters",
      name: "taken",
      _form: "somethingElse: odd",
    });
  });
});
