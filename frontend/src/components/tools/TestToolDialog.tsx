import { useMutation, useQuery } from "@apollo/client/react";
import { type FormEvent, useEffect, useState } from "react";
import { ProjectsDocument, TestToolDocument, type TestToolMutation, type ToolFieldsFragment } from "../../gql/graphql";
import { Badge } from "../Badge";
import { Button } from "../Button";
import { Dialog } from "../Dialog";
import { Field, Form, FormError, Select, TextArea } from "../Field";
import styles from "./ToolFormDialog.module.css";

type ToolTest = Extract<TestToolMutation["testTool"], { __typename: "ToolTest" }>;

type PropertySchema = {
  type?: unknown;
  default?: unknown;
  examples?: unknown[];
  example?: unknown;
  enum?: unknown[];
  const?: unknown;
  minLength?: number;
  minimum?: number;
  exclusiveMinimum?: number;
};

/** A value the property's own schema accepts where it says one: its default, an example, the first
 * allowed value, or an empty value of its type kept within its bounds. */
function startingValue(p: PropertySchema | undefined): unknown {
  if (!p) return "";
  if (p.default !== undefined) return p.default;
  if (Array.isArray(p.examples) && p.examples.length > 0) return p.examples[0];
  if (p.example !== undefined) return p.example;
  if (Array.isArray(p.enum) && p.enum.length > 0) return p.enum[0];
  if (p.const !== undefined) return p.const;
  switch (p.type) {
    case "integer":
    case "number": {
      const low = p.minimum ?? (p.exclusiveMinimum !== undefined ? p.exclusiveMinimum + 1 : 0);
      return p.type === "integer" ? Math.ceil(low) : low;
    }
    case "boolean":
      return false;
    case "array":
      return [];
    case "object":
      return {};
    default:
      return p.minLength ? "x".repeat(p.minLength) : "";
  }
}

/** Arguments to start from: the required properties, and the optional ones whose schema suggests a
 * value, each with a value its schema accepts where the schema says one (see startingValue). */
export function argumentsSkeleton(schema: unknown): string {
  const s = schema as { properties?: Record<string, PropertySchema>; required?: unknown } | null;
  const props = s?.properties ?? {};
  const required = new Set(Array.isArray(s?.required) ? (s.required as string[]) : []);
  const suggested = (p: PropertySchema) => p.default !== undefined || p.examples !== undefined || p.example !== undefined;
  const chosen = Object.entries(props).filter(([name, p]) => required.size === 0 || required.has(name) || suggested(p ?? {}));
  return JSON.stringify(Object.fromEntries(chosen.map(([name, p]) => [name, startingValue(p)])), null, 2);
}

/** Run a tool once with typed arguments and show what a model would read (a side-effecting tool: its preview only). */
export function TestToolDialog({ tool, onClose }: { tool: ToolFieldsFragment | null; onClose: () => void }) {
  const [args, setArgs] = useState("{}");
  const [projectId, setProjectId] = useState("");
  const [problem, setProblem] = useState<string | null>(null);
  const [outcome, setOutcome] = useState<ToolTest | null>(null);
  const builtin = tool?.kind === "BUILTIN";
  const projects = useQuery(ProjectsDocument, { skip: !builtin });
  const list = projects.data?.projects.__typename === "ProjectConnection" ? projects.data.projects.edges.map((e) => e.node) : [];
  const [testTool, { loading }] = useMutation(TestToolDocument);

  useEffect(() => {
    if (!tool) return;
    setArgs(argumentsSkeleton(tool.inputSchema));
    setProblem(null);
    setOutcome(null);
  }, [tool]);
  const firstProject = list[0]?.id;
  useEffect(() => {
    if (builtin && !projectId && firstProject) setProjectId(firstProject);
  }, [builtin, projectId, firstProject]);

  async function run(event: FormEvent) {
    event.preventDefault();
    if (!tool) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(args);
    } catch (err) {
      return setProblem(`Not JSON: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return setProblem("The arguments are a JSON object.");
    setProblem(null);
    setOutcome(null);
    try {
      const { data } = await testTool({ variables: { id: tool.id, arguments: parsed, projectId: builtin ? projectId || null : null } });
      const result = data?.testTool;
      if (result?.__typename === "ToolTest") setOutcome(result);
      else if (result?.__typename === "ValidationError") setProblem(result.fields.map((f) => `${f.field}: ${f.message}`).join("; ") || result.message);
      else setProblem(result?.message ?? "No answer from the server.");
    } catch (err) {
      setProblem(err instanceof Error ? err.message : String(err));
    }
  }

  return (
    <Dialog
      open={tool !== null}
      onClose={onClose}
      size="md"
      title={`Test ${tool?.name ?? ""}`}
      description={tool?.sideEffects ? "It changes the world, so only its preview runs (its dry run, or the request described)." : "It runs once; nothing is stored."}
      testId="tool-test"
      footer={
        <>
          <Button onClick={onClose}>Close</Button>
          <Button type="submit" form="test-tool" variant="primary" disabled={loading}>
            {loading ? "Running…" : "Run"}
          </Button>
        </>
      }
    >
      <Form id="test-tool" onSubmit={(event) => void run(event)} noValidate>
        <Field label="Arguments" error={problem} hint="A JSON object valid against the tool's input schema.">
          <TextArea rows={6} spellCheck={false} className={styles.code} value={args} data-autofocus onChange={(e) => setArgs(e.target.value)} />
        </Field>
        {builtin && (
          <Field label="Knowledge base" hint="A built-in tool runs over one knowledge base.">
            <Select value={projectId} onChange={(e) => setProjectId(e.target.value)}>
              {list.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name}
                </option>
              ))}
            </Select>
          </Field>
        )}
        {outcome && (
          <div className={styles.headers} data-testid="tool-test-output" data-ok={outcome.ok}>
            <span className={styles.headersTitle}>
              <Badge tone={outcome.ok ? "success" : "danger"}>{outcome.ok ? "ok" : "failed"}</Badge> {outcome.dryRun && <Badge tone="warning">preview only</Badge>}{" "}
              <span className="muted" data-volatile>
                {outcome.size} characters{outcome.truncated ? " (cut)" : ""} in {Math.round(outcome.ms)} ms
              </span>
            </span>
            {outcome.error && <FormError>{outcome.error}</FormError>}
            <pre className={styles.output}>{outcome.output}</pre>
          </div>
        )}
      </Form>
    </Dialog>
  );
}
