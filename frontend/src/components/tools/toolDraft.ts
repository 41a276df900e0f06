import type { CreateToolInput, HttpMethod, ToolFieldsFragment, UpdateToolInput } from "../../gql/graphql";
import type { FieldErrorLike, FieldErrors } from "../../lib/results";

/** The tool form's values; numbers and JSON stay text while typed. */
export interface ToolDraft {
  name: string;
  description: string;
  group: string;
  core: boolean;
  /** One example query per line. */
  examples: string;
  /** The input's JSON Schema, as JSON text. */
  inputSchema: string;
  method: HttpMethod;
  urlTemplate: string;
  headers: { header: string; secret: string }[];
  timeoutSeconds: string;
  sideEffects: boolean;
  dryRun: boolean;
  dryRunMethod: HttpMethod;
  dryRunUrl: string;
  /** Whose it is: a knowledge base's id, or "" for the server's. Fixed once created. */
  knowledgeBaseId: string;
}

export const HTTP_METHODS: readonly HttpMethod[] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

// The server's limits (app/services/tools/definitions.py), checked before sending.
const NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
const GROUP = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const HEADER = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/;
const SECRET = /^[A-Za-z0-9_]+$/;
const DESCRIPTION_MAX = 2000;
const EXAMPLES_MAX = 10;
const EXAMPLE_MAX = 500;
const SCHEMA_MAX_CHARS = 20_000;
const URL_MAX = 2000;
export const TIMEOUT_MAX = 120;

const EMPTY_SCHEMA = '{\n  "type": "object",\n  "properties": {},\n  "required": []\n}';

export function emptyDraft(): ToolDraft {
  return {
    name: "",
    description: "",
    group: "default",
    core: false,
    examples: "",
    inputSchema: EMPTY_SCHEMA,
    method: "GET",
    urlTemplate: "",
    headers: [],
    timeoutSeconds: "10",
    sideEffects: false,
    dryRun: false,
    dryRunMethod: "GET",
    dryRunUrl: "",
    knowledgeBaseId: "",
  };
}

export function draftOfTool(tool: ToolFieldsFragment): ToolDraft {
  return {
    name: tool.name,
    description: tool.description,
    group: tool.group,
    core: tool.core,
    examples: tool.examples.join("\n"),
    inputSchema: JSON.stringify(tool.inputSchema, null, 2),
    method: tool.method ?? "GET",
    urlTemplate: tool.urlTemplate ?? "",
    headers: tool.headers.map((h) => ({ header: h.header, secret: h.secret })),
    timeoutSeconds: String(tool.timeoutSeconds),
    sideEffects: tool.sideEffects,
    dryRun: tool.dryRun != null,
    dryRunMethod: tool.dryRun?.method ?? "GET",
    dryRunUrl: tool.dryRun?.urlTemplate ?? "",
    knowledgeBaseId: tool.knowledgeBaseId ?? "",
  };
}

export function examplesOf(draft: ToolDraft): string[] {
  return draft.examples
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);
}

/** The parsed schema, or the reason it is not one the server takes. */
export function parseSchema(text: string): { schema: Record<string, unknown> } | { error: string } {
  if (text.length > SCHEMA_MAX_CHARS) return { error: `At most ${SCHEMA_MAX_CHARS} characters of JSON.` };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { error: `Not JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { error: "A JSON object (a JSON Schema)." };
  const schema = value as Record<string, unknown>;
  if (schema.type !== "object") return { error: 'It must describe an object ("type": "object"): a call\'s arguments are named.' };
  return { schema };
}

function propertiesOf(schema: Record<string, unknown>): Set<string> {
  const props = schema.properties;
  return new Set(typeof props === "object" && props !== null && !Array.isArray(props) ? Object.keys(props) : []);
}

/** The `{name}` placeholders of a URL template ("{{" is a literal brace). */
export function placeholders(template: string): string[] {
  const names: string[] = [];
  for (const match of template.replaceAll("{{", "").replaceAll("}}", "").matchAll(/\{([^{}]*)\}/g)) names.push(match[1]!);
  return names;
}

/** The server's URL template rules: literal http(s) scheme and host, placeholders that are input properties. */
export function checkUrl(template: string, properties: Set<string> | null): string | undefined {
  if (!template.trim()) return "Required: an http:// or https:// URL.";
  if (template.length > URL_MAX) return `At most ${URL_MAX} characters.`;
  const names = placeholders(template);
  const bad = names.find((name) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name));
  if (bad !== undefined) return `Placeholders are plain names like {order_id}, not {${bad}}.`;
  const match = /^(https?):\/\/([^/?#]*)/i.exec(template);
  if (!match || !match[2]) return "An http:// or https:// URL with a host.";
  if (/[{}]/.test(match[2])) return "The host cannot be a placeholder: a model must never choose where a call goes.";
  if (match[2].includes("@")) return "It cannot carry credentials: name a secret in the headers instead.";
  if (properties) {
    const unknown = names.filter((name) => !properties.has(name));
    if (unknown.length) return `Placeholders ${unknown.map((n) => `{${n}}`).join(", ")} are not properties of the input schema.`;
  }
  return undefined;
}

/** Every problem the server would name, keyed by the form's field (builtin: only the fields it can change). */
export function validateTool(draft: ToolDraft, builtin = false): FieldErrors {
  const errors: FieldErrors = {};
  if (!builtin && !NAME.test(draft.name)) errors.name = "1 to 64 letters, digits, '_' or '-', starting with a letter.";
  const description = draft.description.trim();
  if (!description || description.length > DESCRIPTION_MAX) errors.description = `Required: 1 to ${DESCRIPTION_MAX} characters.`;
  if (!GROUP.test(draft.group)) errors.group = "1 to 64 lower-case letters, digits, '_' or '-'.";
  const examples = examplesOf(draft);
  if (examples.length > EXAMPLES_MAX) errors.examples = `At most ${EXAMPLES_MAX} examples (one per line).`;
  else if (examples.some((e) => e.length > EXAMPLE_MAX)) errors.examples = `Each example at most ${EXAMPLE_MAX} characters.`;
  if (builtin) return errors;

  const parsed = parseSchema(draft.inputSchema);
  if ("error" in parsed) errors.inputSchema = parsed.error;
  const properties = "schema" in parsed ? propertiesOf(parsed.schema) : null;
  const url = checkUrl(draft.urlTemplate, properties);
  if (url) errors.urlTemplate = url;
  const badHeader = draft.headers.find((h) => !HEADER.test(h.header.trim()) || !SECRET.test(h.secret.trim()));
  if (badHeader) {
    errors.headers = !HEADER.test(badHeader.header.trim())
      ? `“${badHeader.header}” is not a header name.`
      : `The secret for ${badHeader.header}: letters, digits and '_' (its name, not its value).`;
  }
  const seen = new Set<string>();
  for (const h of draft.headers) {
    const key = h.header.trim().toLowerCase();
    if (seen.has(key)) errors.headers ??= `${h.header} is listed twice.`;
    seen.add(key);
  }
  const timeout = Number(draft.timeoutSeconds);
  if (!/^\s*(\d+(\.\d*)?|\.\d+)\s*$/.test(draft.timeoutSeconds) || !(timeout > 0 && timeout <= TIMEOUT_MAX)) {
    errors.timeoutSeconds = `Seconds, above 0 and at most ${TIMEOUT_MAX}.`;
  }
  if (draft.dryRun) {
    if (!draft.sideEffects) errors.dryRunUrl = "Only a tool with side effects has a dry run.";
    else {
      const dry = checkUrl(draft.dryRunUrl, properties);
      if (dry) errors.dryRunUrl = dry;
    }
  }
  return errors;
}

/** The create input (call after validateTool found nothing). */
export function createInputOf(draft: ToolDraft): CreateToolInput {
  const parsed = parseSchema(draft.inputSchema);
  return {
    name: draft.name.trim(),
    description: draft.description.trim(),
    group: draft.group,
    core: draft.core,
    examples: examplesOf(draft),
    inputSchema: "schema" in parsed ? parsed.schema : null,
    method: draft.method,
    urlTemplate: draft.urlTemplate.trim(),
    headers: draft.headers.map((h) => ({ header: h.header.trim(), secret: h.secret.trim() })),
    timeoutSeconds: Number(draft.timeoutSeconds),
    sideEffects: draft.sideEffects,
    dryRun: draft.sideEffects && draft.dryRun ? { method: draft.dryRunMethod, urlTemplate: draft.dryRunUrl.trim() } : null,
    knowledgeBaseId: draft.knowledgeBaseId || null,
  };
}

/** Only what changed, so a save never rewrites a field nobody touched (and a built-in's fixed ones stay out). */
export function updateInputOf(tool: ToolFieldsFragment, draft: ToolDraft): UpdateToolInput {
  const { knowledgeBaseId: _fixed, ...next } = createInputOf(draft);
  const input: UpdateToolInput = {};
  if (next.description !== tool.description) input.description = next.description;
  if (next.group !== tool.group) input.group = next.group;
  if (next.core !== tool.core) input.core = next.core;
  if (JSON.stringify(next.examples) !== JSON.stringify(tool.examples)) input.examples = next.examples;
  if (tool.kind === "BUILTIN") return input;
  if (next.name !== tool.name) input.name = next.name;
  if (tool.kind === "MCP") {
    // Its server URL, method and schema come from the server's listing: only its own settings change here.
    const sent = tool.headers.map((h) => ({ header: h.header, secret: h.secret }));
    if (JSON.stringify(next.headers) !== JSON.stringify(sent)) input.headers = next.headers;
    if (next.timeoutSeconds !== tool.timeoutSeconds) input.timeoutSeconds = next.timeoutSeconds;
    if (next.sideEffects !== tool.sideEffects) input.sideEffects = next.sideEffects;
    return input;
  }
  if (JSON.stringify(next.inputSchema) !== JSON.stringify(tool.inputSchema)) input.inputSchema = next.inputSchema;
  if (next.method !== tool.method) input.method = next.method;
  if (next.urlTemplate !== tool.urlTemplate) input.urlTemplate = next.urlTemplate;
  const headers = tool.headers.map((h) => ({ header: h.header, secret: h.secret }));
  if (JSON.stringify(next.headers) !== JSON.stringify(headers)) input.headers = next.headers;
  if (next.timeoutSeconds !== tool.timeoutSeconds) input.timeoutSeconds = next.timeoutSeconds;
  if (next.sideEffects !== tool.sideEffects) input.sideEffects = next.sideEffects;
  const dry = tool.dryRun ? { method: tool.dryRun.method, urlTemplate: tool.dryRun.urlTemplate } : null;
  if (next.dryRun && JSON.stringify(next.dryRun) !== JSON.stringify(dry)) input.dryRun = next.dryRun;
  return input;
}

/** A ValidationError's fields keyed by the form's fields: `dryRun.urlTemplate`, `headers.X-Key` and `examples[2]` included. */
export function toolFieldErrors(fields: readonly FieldErrorLike[]): FieldErrors {
  const out: FieldErrors = {};
  for (const { field, message } of fields) {
    let key: string;
    let text = message;
    if (field === "dryRun.method") key = "dryRunMethod";
    else if (field.startsWith("dryRun")) key = "dryRunUrl";
    else if (field.startsWith("headers.")) {
      key = "headers";
      text = `${field.slice("headers.".length)}: ${message}`;
    } else if (/^examples\[\d+\]$/.test(field)) {
      key = "examples";
      text = `Example ${Number(/\d+/.exec(field)![0]) + 1}: ${message}`;
    } else if (["name", "description", "group", "examples", "inputSchema", "method", "urlTemplate", "headers", "timeoutSeconds", "core", "sideEffects", "knowledgeBaseId"].includes(field)) {
      key = field;
    } else {
      key = "_form";
      text = `${field}: ${message}`;
    }
    out[key] ??= text;
  }
  return out;
}
