import { type FormEvent, type ReactNode, useEffect, useState } from "react";
import type { ExpansionMode, ProvidersQuery, RerankMode, SessionFieldsFragment, UpdateChatSessionInput } from "../../gql/graphql";
import type { FieldErrors } from "../../lib/results";
import { Field, FieldRow, Fieldset, Form, FormError, Range, Select, Switch, TextArea, TextInput } from "../Field";
import { AnswerModeControl } from "./AnswerModeControl";
import { DocumentFilterControl, type TagOption } from "./DocumentFilterControl";
import { SearchControl } from "./SearchControl";
import { EXPANSION_MODES, RERANK_MODES, type SettingsDraft, choiceHint, TOP_K_RANGE, changesOf, draftOf, groupChangesOf, parseThreshold, parseTopK, validateDraft } from "./settingsDraft";
import { type ToolGroupOption, ToolGroupsControl } from "./ToolGroupsControl";
import styles from "./SessionSettingsForm.module.css";

type Provider = ProvidersQuery["providers"][number];

// The document filter's errors, keyed as the server names its fields (documentFilter.tagsAny -> tagsAny).
const FILTER_ERRORS = ["tagsAny", "tagsAll", "pathPrefix", "kinds", "dateFrom", "dateTo", "documentFilter"] as const;

function filterErrorsOf(errors: FieldErrors): FieldErrors {
  return Object.fromEntries(Object.entries(errors).filter(([key]) => (FILTER_ERRORS as readonly string[]).includes(key)));
}

export interface SessionSettingsFormProps {
  session: SessionFieldsFragment;
  providers: readonly Provider[] | undefined;
  /** Save the changes (and the tool groups to set, only when they changed); resolve to field errors (from a ValidationError) or null when saved. */
  onSubmit: (input: UpdateChatSessionInput, groups?: string[]) => Promise<FieldErrors | null>;
  /** Every edit, so a preview can follow the draft before it is saved. */
  onDraftChange?: (draft: SettingsDraft) => void;
  /** Shown under the retrieval settings (the retrieval preview). */
  retrievalExtra?: ReactNode;
  /** The tool groups that hold tools; undefined while loading. */
  toolGroupOptions?: readonly ToolGroupOption[];
  /** Shown under the tool groups (the tool selection preview). */
  toolsExtra?: ReactNode;
  /** The knowledge base's tags, for the document filter; undefined while loading. */
  tagOptions?: readonly TagOption[];
  formId?: string;
}

/** A chat's title, model and RAG settings; errors show next to their input. */
export function SessionSettingsForm({ session, providers, onSubmit, onDraftChange, retrievalExtra, toolGroupOptions, toolsExtra, tagOptions, formId = "session-settings" }: SessionSettingsFormProps) {
  const [draft, setDraft] = useState<SettingsDraft>(() => draftOf(session));
  const [errors, setErrors] = useState<FieldErrors>({});
  const [touched, setTouched] = useState<Set<keyof SettingsDraft>>(new Set());

  useEffect(() => onDraftChange?.(draft), [draft, onDraftChange]);

  function set<K extends keyof SettingsDraft>(key: K, value: SettingsDraft[K]) {
    setDraft((d) => ({ ...d, [key]: value }));
    setTouched((t) => new Set(t).add(key));
    // A server error belongs to the value it judged; editing the field clears it.
    setErrors((e) => {
      // The groups' error is the server's verdict on the groups with this model: either change answers it.
      const groups = key === "toolGroups" || key === "provider" || key === "model";
      const filter = key === "filter" && FILTER_ERRORS.some((k) => k in e);
      if (!(key in e) && !("_form" in e) && !(groups && "groups" in e) && !filter) return e;
      const rest: FieldErrors = { ...e };
      delete rest[key];
      delete rest._form;
      if (groups) delete rest.groups;
      if (key === "filter") for (const k of FILTER_ERRORS) delete rest[k];
      return rest;
    });
  }

  // Client-side checks show once a field was edited (or on submit).
  const clientErrors = validateDraft(draft);
  const shown = (key: keyof SettingsDraft) => errors[key] ?? (touched.has(key) ? clientErrors[key] : undefined);

  async function submit(event: FormEvent) {
    event.preventDefault();
    if (Object.keys(clientErrors).length > 0) {
      setErrors(clientErrors);
      return;
    }
    const groups = groupChangesOf(session, draft);
    const problems = await (groups ? onSubmit(changesOf(session, draft), groups) : onSubmit(changesOf(session, draft)));
    setErrors(problems ?? {});
  }

  const provider = providers?.find((p) => p.provider === draft.provider);
  const providerOptions = providers ? [...providers] : [];
  if (!providerOptions.some((p) => p.provider === draft.provider)) {
    providerOptions.push({ provider: draft.provider, available: true, reachable: true, reason: null, models: [draft.model], openEnded: true, defaultModel: null });
  }
  const models = provider ? [...new Set([...(provider.models ?? []), ...(draft.provider === session.provider ? [session.model] : [])])] : [draft.model];
  // Shown, not hidden: a user should learn why a provider cannot be chosen.
  const problems = providerOptions.filter((p) => !p.available || !p.reachable);

  function chooseProvider(name: string) {
    const next = providers?.find((p) => p.provider === name);
    set("provider", name);
    setDraft((d) => ({ ...d, provider: name, model: name === session.provider ? session.model : (next?.defaultModel ?? next?.models[0] ?? "") }));
    setTouched((t) => new Set(t).add("model"));
  }

  const topK = parseTopK(draft.topK);
  const threshold = parseThreshold(draft.threshold);

  return (
    <Form id={formId} onSubmit={(event) => void submit(event)} noValidate>
      <Field label="Title" error={shown("title")}>
        <TextInput value={draft.title} maxLength={240} onChange={(e) => set("title", e.target.value)} />
      </Field>

      <Fieldset legend="Retrieval">
        <Switch
          label="Answer from the knowledge base (RAG)"
          checked={draft.enableRag}
          onChange={(v) => set("enableRag", v)}
          hint="Off: the model answers from its own knowledge, without your documents."
        />
        <FieldRow>
          <Field
            label="Top K"
            error={shown("topK")}
            hint={`Passages given to the model (${TOP_K_RANGE[0]}–${TOP_K_RANGE[1]}).`}
            aside={
              <Range
                min={TOP_K_RANGE[0]}
                max={TOP_K_RANGE[1]}
                step={1}
                value={topK ?? session.topK}
                onChange={(e) => set("topK", e.target.value)}
                disabled={!draft.enableRag}
                tabIndex={-1}
                aria-hidden="true"
              />
            }
          >
            <TextInput type="number" inputMode="numeric" min={TOP_K_RANGE[0]} max={TOP_K_RANGE[1]} step={1} value={draft.topK} disabled={!draft.enableRag} onChange={(e) => set("topK", e.target.value)} />
          </Field>
          <Field
            label="Threshold"
            error={shown("threshold")}
            hint="Minimum similarity (0–1) a passage needs."
            aside={
              <Range
                min={0}
                max={1}
                step={0.01}
                value={threshold ?? session.threshold}
                onChange={(e) => set("threshold", e.target.value)}
                disabled={!draft.enableRag}
                tabIndex={-1}
                aria-hidden="true"
              />
            }
          >
            <TextInput type="number" inputMode="decimal" min={0} max={1} step={0.01} value={draft.threshold} disabled={!draft.enableRag} onChange={(e) => set("threshold", e.target.value)} />
          </Field>
        </FieldRow>
        <Switch
          label="Cite sources"
          checked={draft.includeCitations}
          onChange={(v) => set("includeCitations", v)}
          hint="Ask for [n] markers and keep the cited passages with the answer."
          disabled={!draft.enableRag}
        />
        <FieldRow>
          <Field label="Reranking" hint={choiceHint("Reorders the first candidates; the trace shows each one's rerank score.", RERANK_MODES.find((r) => r.mode === draft.rerank))}>
            <Select value={draft.rerank} disabled={!draft.enableRag} onChange={(e) => set("rerank", e.target.value as RerankMode)} data-testid="rerank">
              {RERANK_MODES.map((r) => (
                <option key={r.mode} value={r.mode}>
                  {r.label}
                </option>
              ))}
            </Select>
          </Field>
          <Field label="Query expansion" hint={choiceHint("Searches alternative phrasings too; the trace lists them.", EXPANSION_MODES.find((x) => x.mode === draft.expansion))}>
            <Select value={draft.expansion} disabled={!draft.enableRag} onChange={(e) => set("expansion", e.target.value as ExpansionMode)} data-testid="expansion">
              {EXPANSION_MODES.map((x) => (
                <option key={x.mode} value={x.mode}>
                  {x.label}
                </option>
              ))}
            </Select>
          </Field>
        </FieldRow>
        {retrievalExtra}
      </Fieldset>

      <DocumentFilterControl
        value={draft.filter}
        onChange={(filter) => set("filter", filter)}
        tags={tagOptions}
        errors={{ ...(touched.has("filter") ? filterErrorsOf(clientErrors) : {}), ...filterErrorsOf(errors) }}
        disabled={!draft.enableRag}
      />

      <AnswerModeControl value={draft.answerMode} onChange={(mode) => set("answerMode", mode)} />

      <SearchControl
        quality={draft.quality}
        rewrite={draft.rewrite}
        disabled={!draft.enableRag}
        onQuality={(quality) => set("quality", quality)}
        onRewrite={(rewrite) => set("rewrite", rewrite)}
      />

      <Fieldset legend="Model">
        <FieldRow>
          <Field label="Provider" error={shown("provider")} hint={problems.length > 0 ? <ProviderProblems problems={problems} /> : undefined}>
            <Select value={draft.provider} onChange={(e) => chooseProvider(e.target.value)}>
              {providerOptions.map((p) => (
                <option key={p.provider} value={p.provider} disabled={(!p.available || !p.reachable) && p.provider !== session.provider}>
                  {p.provider}
                  {p.available ? (p.reachable ? "" : " (unreachable)") : " (unavailable)"}
                </option>
              ))}
            </Select>
          </Field>
          <Field label="Model" error={shown("model")}>
            {provider?.openEnded || models.length === 0 ? (
              <TextInput value={draft.model} list="model-suggestions" onChange={(e) => set("model", e.target.value)} />
            ) : (
              <Select value={draft.model} onChange={(e) => set("model", e.target.value)}>
                {models.map((m) => (
                  <option key={m} value={m}>
                    {m}
                  </option>
                ))}
              </Select>
            )}
          </Field>
          {provider?.openEnded && (
            <datalist id="model-suggestions">
              {models.map((m) => (
                <option key={m} value={m} />
              ))}
            </datalist>
          )}
        </FieldRow>
        <Field label="System prompt" error={shown("systemPrompt")} hint="Optional instructions added to every question in this chat.">
          <TextArea rows={3} value={draft.systemPrompt} onChange={(e) => set("systemPrompt", e.target.value)} />
        </Field>
      </Fieldset>

      <ToolGroupsControl value={draft.toolGroups} onChange={(groups) => set("toolGroups", groups)} options={toolGroupOptions} error={errors.groups}>
        {toolsExtra}
      </ToolGroupsControl>

      {errors._form && <FormError role="alert">{errors._form}</FormError>}
    </Form>
  );
}

/** One line per provider that cannot be chosen, with the server's reason. */
function ProviderProblems({ problems }: { problems: readonly Provider[] }) {
  return (
    <span data-testid="provider-problems">
      {problems.map((p) => (
        <span key={p.provider} className={styles.problem}>
          {p.provider} is {p.available ? "unreachable" : "unavailable"}
          {p.reason ? `: ${p.reason}` : ""}
        </span>
      ))}
    </span>
  );
}
