import { useMutation } from "@apollo/client/react";
import { type FormEvent, useEffect, useState } from "react";
import { CreateToolDocument, type HttpMethod, type ToolFieldsFragment, UpdateToolDocument } from "../../gql/graphql";
import type { FieldErrors } from "../../lib/results";
import { Button, IconButton } from "../Button";
import { Dialog } from "../Dialog";
import { Field, FieldRow, Fieldset, Form, FormError, Hint, Select, Switch, TextArea, TextInput } from "../Field";
import { PlusIcon, TrashIcon } from "../icons";
import { HTTP_METHODS, TIMEOUT_MAX, type ToolDraft, createInputOf, draftOfTool, emptyDraft, toolFieldErrors, updateInputOf, validateTool } from "./toolDraft";
import styles from "./ToolFormDialog.module.css";

export interface ToolFormDialogProps {
  open: boolean;
  onClose: () => void;
  /** Edit this tool; without it the dialog registers a new HTTP tool. */
  tool?: ToolFieldsFragment | null;
  /** The knowledge bases a new tool may belong to (the caller's); its editors' tools. */
  knowledgeBases?: readonly { id: string; name: string }[];
}

type Problem = { __typename: string; message?: string; fields?: { field: string; message: string }[] } | undefined;

/** Register an HTTP tool or edit one; a built-in tool's name, schema and request are fixed. */
export function ToolFormDialog({ open, onClose, tool = null, knowledgeBases = [] }: ToolFormDialogProps) {
  const [draft, setDraft] = useState<ToolDraft>(emptyDraft);
  const [errors, setErrors] = useState<FieldErrors>({});
  const [createTool, creating] = useMutation(CreateToolDocument, { refetchQueries: ["Tools"], awaitRefetchQueries: true });
  const [updateTool, updating] = useMutation(UpdateToolDocument, { refetchQueries: ["Tools"] });
  const builtin = tool?.kind === "BUILTIN";
  // An MCP tool's schema, request and dry run are its server's: only how ragchat calls it changes here.
  const mcp = tool?.kind === "MCP";
  const busy = creating.loading || updating.loading;

  useEffect(() => {
    if (!open) return;
    setDraft(tool ? draftOfTool(tool) : emptyDraft());
    setErrors({});
  }, [open, tool]);

  function set<K extends keyof ToolDraft>(key: K, value: ToolDraft[K]) {
    setDraft((d) => ({ ...d, [key]: value }));
    // A message belongs to the value it judged; editing the field clears it.
    setErrors((e) => {
      const { [key]: _gone, _form: _f, ...rest } = e;
      return rest;
    });
  }

  async function submit(event: FormEvent) {
    event.preventDefault();
    const problems = validateTool(draft, builtin);
    if (Object.keys(problems).length > 0) {
      setErrors(problems);
      return;
    }
    try {
      if (tool) {
        const input = updateInputOf(tool, draft);
        if (Object.keys(input).length === 0) return onClose();
        const { data } = await updateTool({ variables: { id: tool.id, input } });
        if (data?.updateTool.__typename === "Tool") return onClose();
        setErrors(problemsOf(data?.updateTool));
      } else {
        const { data } = await createTool({ variables: { input: createInputOf(draft) } });
        if (data?.createTool.__typename === "Tool") return onClose();
        setErrors(problemsOf(data?.createTool));
      }
    } catch (err) {
      setErrors({ _form: err instanceof Error ? err.message : String(err) });
    }
  }

  const formId = tool ? "edit-tool" : "create-tool";
  const fixed = builtin ? "Fixed for a built-in tool." : undefined;
  return (
    <Dialog
      open={open}
      onClose={onClose}
      variant="drawer"
      size="md"
      title={tool ? `Edit ${tool.name}` : "New HTTP tool"}
      description={
        builtin
          ? "A built-in tool: its description, examples and group can change."
          : mcp
            ? "A tool of an MCP server: ragchat calls it there with the model's arguments."
            : "A model calls it with arguments that fill its URL template."
      }
      testId="tool-form"
      footer={
        <>
          <Button onClick={onClose}>Cancel</Button>
          <Button type="submit" form={formId} variant="primary" disabled={busy}>
            {busy ? "Saving…" : tool ? "Save" : "Create tool"}
          </Button>
        </>
      }
    >
      <Form id={formId} onSubmit={(event) => void submit(event)} noValidate>
        <FieldRow>
          <Field label="Name" error={errors.name} hint={fixed ?? "Letters, digits, '_' or '-': the name the model calls."}>
            <TextInput value={draft.name} maxLength={64} disabled={builtin} data-autofocus={builtin ? undefined : true} onChange={(e) => set("name", e.target.value)} />
          </Field>
          <Field label="Group" error={errors.group} hint="Sessions allow tools by group.">
            <TextInput value={draft.group} maxLength={64} onChange={(e) => set("group", e.target.value)} />
          </Field>
        </FieldRow>
        <Field
          label="Belongs to"
          error={errors.knowledgeBaseId}
          hint={
            tool
              ? "Fixed once created."
              : "The server's tools are for administrators to define; a knowledge base's, for its editors, and only its chats may call them."
          }
        >
          <Select value={draft.knowledgeBaseId} disabled={tool != null} onChange={(e) => set("knowledgeBaseId", e.target.value)}>
            <option value="">The server (every chat that allows its group)</option>
            {knowledgeBases.map((kb) => (
              <option key={kb.id} value={kb.id}>
                {kb.name}
              </option>
            ))}
            {tool?.knowledgeBaseId && !knowledgeBases.some((kb) => kb.id === tool.knowledgeBaseId) && (
              <option value={tool.knowledgeBaseId}>Knowledge base {tool.knowledgeBaseId}</option>
            )}
          </Select>
        </Field>
        <Field label="Description" error={errors.description} hint="What it does; the model reads it, and selection ranks by it.">
          <TextArea rows={3} value={draft.description} maxLength={2000} onChange={(e) => set("description", e.target.value)} />
        </Field>
        <Field label="Example requests" error={errors.examples} hint="One per line, as a user would ask (at most 10): embedded for selection.">
          <TextArea rows={3} value={draft.examples} onChange={(e) => set("examples", e.target.value)} />
        </Field>
        <Switch label="Core" checked={draft.core} onChange={(v) => set("core", v)} hint="Always offered to a session that allows its group, whatever the message." />

        {!builtin && (
          <>
            {!mcp && (
              <Field label="Input schema" error={errors.inputSchema} hint='JSON Schema (Draft 2020-12) of its arguments, "type": "object".'>
                <TextArea rows={8} spellCheck={false} className={styles.code} value={draft.inputSchema} onChange={(e) => set("inputSchema", e.target.value)} />
              </Field>
            )}
            <Fieldset legend="Request">
              <FieldRow>
                {!mcp && (
                  <Field label="Method" error={errors.method}>
                    <Select value={draft.method} onChange={(e) => set("method", e.target.value as HttpMethod)}>
                      {HTTP_METHODS.map((m) => (
                        <option key={m}>{m}</option>
                      ))}
                    </Select>
                  </Field>
                )}
                <Field label="Timeout (seconds)" error={errors.timeoutSeconds} hint={`Above 0, at most ${TIMEOUT_MAX}.`}>
                  <TextInput type="number" inputMode="decimal" min={0} max={TIMEOUT_MAX} step="any" value={draft.timeoutSeconds} onChange={(e) => set("timeoutSeconds", e.target.value)} />
                </Field>
              </FieldRow>
              {mcp ? (
                <Field label="MCP server" hint="Its tools keep their server's address: import them again to use another.">
                  <TextInput value={draft.urlTemplate} spellCheck={false} className={styles.code} disabled />
                </Field>
              ) : (
                <Field label="URL template" error={errors.urlTemplate} hint="https://host/path/{name}?q={query}: placeholders are input properties, never the host.">
                  <TextInput value={draft.urlTemplate} spellCheck={false} className={styles.code} onChange={(e) => set("urlTemplate", e.target.value)} />
                </Field>
              )}
              <HeaderRows headers={draft.headers} error={errors.headers} onChange={(headers) => set("headers", headers)} />
            </Fieldset>
            <Fieldset legend="Side effects">
              <Switch
                label="Changes the world"
                checked={draft.sideEffects}
                onChange={(v) => set("sideEffects", v)}
                hint="Never run during an answer: the user sees a preview and approves or rejects it."
              />
              {!mcp && (
              <Switch
                label="Dry run"
                checked={draft.dryRun}
                disabled={!draft.sideEffects || tool?.dryRun != null}
                onChange={(v) => set("dryRun", v)}
                hint={tool?.dryRun ? "A stored dry run can be changed, not removed." : "A request that shows what a call would do, for the preview."}
              />
              )}
              {!mcp && draft.sideEffects && draft.dryRun && (
                <FieldRow>
                  <Field label="Dry-run method" error={errors.dryRunMethod}>
                    <Select value={draft.dryRunMethod} onChange={(e) => set("dryRunMethod", e.target.value as HttpMethod)}>
                      {HTTP_METHODS.map((m) => (
                        <option key={m}>{m}</option>
                      ))}
                    </Select>
                  </Field>
                  <Field label="Dry-run URL template" error={errors.dryRunUrl}>
                    <TextInput value={draft.dryRunUrl} spellCheck={false} className={styles.code} onChange={(e) => set("dryRunUrl", e.target.value)} />
                  </Field>
                </FieldRow>
              )}
              {errors.dryRunUrl && !(draft.sideEffects && draft.dryRun) && <FormError>{errors.dryRunUrl}</FormError>}
            </Fieldset>
          </>
        )}
        {errors._form && <FormError role="alert">{errors._form}</FormError>}
      </Form>
    </Dialog>
  );
}

/** Headers as rows of header name → secret name (the secret's value lives in the server's settings). */
function HeaderRows({ headers, error, onChange }: { headers: ToolDraft["headers"]; error?: string; onChange: (headers: ToolDraft["headers"]) => void }) {
  const edit = (i: number, patch: Partial<ToolDraft["headers"][number]>) => onChange(headers.map((h, j) => (j === i ? { ...h, ...patch } : h)));
  return (
    <div className={styles.headers} data-testid="tool-headers">
      <span className={styles.headersTitle}>Headers</span>
      {headers.map((h, i) => (
        <div className={styles.headerRow} key={i}>
          <TextInput aria-label={`Header ${i + 1} name`} placeholder="Authorization" value={h.header} onChange={(e) => edit(i, { header: e.target.value })} />
          <span aria-hidden="true">←</span>
          <TextInput aria-label={`Header ${i + 1} secret`} placeholder="secret name" value={h.secret} onChange={(e) => edit(i, { secret: e.target.value })} />
          <IconButton size="small" aria-label={`Remove header ${i + 1}`} onClick={() => onChange(headers.filter((_, j) => j !== i))}>
            <TrashIcon width={14} height={14} />
          </IconButton>
        </div>
      ))}
      {error && <FormError role="alert">{error}</FormError>}
      <Hint>Each header carries a secret of the server's settings (RAGCHAT_TOOLS__SECRETS__NAME), named here, never shown.</Hint>
      <Button size="small" onClick={() => onChange([...headers, { header: "", secret: "" }])}>
        <PlusIcon width={14} height={14} /> Add header
      </Button>
    </div>
  );
}

function problemsOf(result: Problem): FieldErrors {
  if (!result) return { _form: "No answer from the server." };
  if (result.__typename === "ValidationError") {
    const fields = toolFieldErrors(result.fields ?? []);
    return Object.keys(fields).length ? fields : { _form: result.message ?? "Invalid." };
  }
  // A taken name is a ConflictError: it belongs next to the name.
  if (result.__typename === "ConflictError") return { name: result.message ?? "That name is taken." };
  return { _form: result.message ?? "It did not work." };
}
