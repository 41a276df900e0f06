import type { AnswerMode, DocumentFilterInput, DocumentKind, ExpansionMode, Quality, RerankMode, RewriteMode, SessionFieldsFragment, UpdateChatSessionInput } from "../../gql/graphql";
import type { FieldErrors } from "../../lib/results";

/** The settings form's values; numbers stay text while typed so a half-typed "0." is allowed. */
export interface SettingsDraft {
  title: string;
  systemPrompt: string;
  provider: string;
  model: string;
  enableRag: boolean;
  topK: string;
  threshold: string;
  includeCitations: boolean;
  answerMode: AnswerMode;
  rerank: RerankMode;
  expansion: ExpansionMode;
  quality: Quality;
  rewrite: RewriteMode;
  /** The tool groups the chat allows (saved with setChatSessionToolGroups, not in UpdateChatSessionInput). */
  toolGroups: string[];
  /** Which documents the chat searches; every part empty: all of them. */
  filter: FilterDraft;
}

/** The document filter as the form edits it: dates as the date inputs' "YYYY-MM-DD" ("" for none). */
export interface FilterDraft {
  tags: string[];
  /** Whether a document needs any of the tags or all of them. */
  tagMatch: "any" | "all";
  pathPrefix: string;
  kinds: string[];
  dateFrom: string;
  dateTo: string;
}

// Every kind the schema has, labelled: a kind added to the schema's DocumentKind fails the type
// check here until the form offers it. UNKNOWN (a type the server could not tell) is no choice.
const KIND_LABELS: Record<Exclude<DocumentKind, "UNKNOWN">, string> = {
  MARKDOWN: "Markdown",
  TEXT: "Text",
  PDF: "PDF",
  HTML: "HTML",
  DOCX: "Word",
  PPTX: "PowerPoint",
  XLSX: "Excel",
  IMAGE: "Image",
  CODE: "Code",
};

/** The file types a filter can name (Document.kind's values, lower-case as the filter takes them), in the order the form offers them. */
export const FILE_KINDS: readonly { kind: string; label: string }[] = (Object.entries(KIND_LABELS) as [DocumentKind, string][]).map(
  ([kind, label]) => ({ kind: kind.toLowerCase(), label }),
);

const EMPTY_FILTER: FilterDraft = { tags: [], tagMatch: "any", pathPrefix: "", kinds: [], dateFrom: "", dateTo: "" };

export function filterDraftOf(saved: SessionFieldsFragment["documentFilter"]): FilterDraft {
  if (!saved) return { ...EMPTY_FILTER };
  const all = saved.tagsAll.length > 0 && saved.tagsAny.length === 0;
  return {
    tags: [...(all ? saved.tagsAll : saved.tagsAny)].sort(),
    tagMatch: all ? "all" : "any",
    pathPrefix: saved.pathPrefix ?? "",
    kinds: [...saved.kinds].sort(),
    dateFrom: saved.dateFrom ? String(saved.dateFrom).slice(0, 10) : "",
    dateTo: saved.dateTo ? String(saved.dateTo).slice(0, 10) : "",
  };
}

/** The filter to send: whole days in UTC, the end day included; {} (every document) when nothing is set. */
export function filterInputOf(draft: FilterDraft): DocumentFilterInput {
  const input: DocumentFilterInput = {};
  const tags = [...new Set(draft.tags)].sort();
  if (tags.length > 0) {
    if (draft.tagMatch === "all") input.tagsAll = tags;
    else input.tagsAny = tags;
  }
  if (draft.pathPrefix.trim()) input.pathPrefix = draft.pathPrefix.trim();
  if (draft.kinds.length > 0) input.kinds = [...new Set(draft.kinds)].sort();
  if (draft.dateFrom) input.dateFrom = `${draft.dateFrom}T00:00:00Z`;
  if (draft.dateTo) input.dateTo = `${draft.dateTo}T23:59:59Z`;
  return input;
}

function sameFilter(a: FilterDraft, b: FilterDraft): boolean {
  return JSON.stringify(filterInputOf(a)) === JSON.stringify(filterInputOf(b));
}

export const TOP_K_RANGE = [1, 50] as const;

/** The answer modes in the order the form offers them, each with its one-line help. */
export const ANSWER_MODES: readonly { mode: AnswerMode; label: string; help: string }[] = [
  { mode: "AUTO", label: "Auto", help: "The model writes when it is a reliable writer; otherwise answers are quoted from your documents." },
  { mode: "GENERATIVE", label: "Generative", help: "The model writes every answer; ragchat checks it and quotes your documents instead when it fails." },
  { mode: "EXTRACTIVE", label: "Extractive", help: "Answers are sentences quoted from your documents, each cited to its lines; no model writes." },
];

/**
 * A dropdown's choices keep a short `label` (a <select> cannot wrap, so long labels were cut
 * mid-word); the `detail` of the chosen one is said in the field's hint, which wraps.
 */
export function choiceHint(hint: string, choice: { label: string; detail?: string } | undefined): string {
  return choice?.detail ? `${choice.label}: ${choice.detail}. ${hint}` : hint;
}

/** The ranking stages' choices, in the order the form offers them. */
export const RERANK_MODES: readonly { mode: RerankMode; label: string; detail?: string }[] = [
  { mode: "AUTO", label: "Auto", detail: "the server's rerank endpoint, if it has one" },
  { mode: "OFF", label: "Off" },
  { mode: "ENDPOINT", label: "Rerank endpoint", detail: "a cross-encoder scores each candidate" },
  { mode: "JUDGE", label: "Model judges", detail: "the chat model judges the candidates (one more model call)" },
];
export const EXPANSION_MODES: readonly { mode: ExpansionMode; label: string; detail?: string }[] = [
  { mode: "OFF", label: "Off", detail: "search the question alone" },
  { mode: "ON", label: "On", detail: "the model proposes other phrasings (one more model call)" },
  { mode: "AUTO", label: "Auto", detail: "on for models that follow instructions reliably" },
];

/** How hard a turn searches: the most retrieval passes of evaluate-and-widen. */
export const QUALITIES: readonly { value: Quality; label: string; detail?: string }[] = [
  { value: "QUICK", label: "Quick", detail: "one search" },
  { value: "BALANCED", label: "Balanced", detail: "search again once when the sources look weak" },
  { value: "THOROUGH", label: "Thorough", detail: "up to four searches, each wider" },
];

/** Whether the chat model rewrites a follow-up into a standalone question before searching. */
export const REWRITE_MODES: readonly { value: RewriteMode; label: string; detail?: string }[] = [
  { value: "AUTO", label: "Auto", detail: "when the model says it can" },
  { value: "ON", label: "Always" },
  { value: "OFF", label: "Never", detail: "search with the conversation's recent questions" },
];

export function draftOf(session: SessionFieldsFragment): SettingsDraft {
  return {
    title: session.title,
    systemPrompt: session.systemPrompt,
    provider: session.provider,
    model: session.model,
    enableRag: session.enableRag,
    topK: String(session.topK),
    threshold: String(session.threshold),
    includeCitations: session.includeCitations,
    answerMode: session.answerMode,
    rerank: session.rerank,
    expansion: session.expansion,
    quality: session.quality,
    rewrite: session.rewrite,
    toolGroups: [...session.toolGroups].sort(),
    filter: filterDraftOf(session.documentFilter),
  };
}

export function parseTopK(text: string): number | null {
  if (!/^\s*\d+\s*$/.test(text)) return null;
  const n = Number(text);
  return n >= TOP_K_RANGE[0] && n <= TOP_K_RANGE[1] ? n : null;
}

export function parseThreshold(text: string): number | null {
  if (!/^\s*(\d+(\.\d*)?|\.\d+)\s*$/.test(text)) return null;
  const n = Number(text);
  return Number.isFinite(n) && n >= 0 && n <= 1 ? n : null;
}

/** The same rules the server applies (app/services/sessions.py), checked before sending. */
export function validateDraft(draft: SettingsDraft): FieldErrors {
  const errors: FieldErrors = {};
  const title = draft.title.trim();
  if (!title) errors.title = "Give the chat a title.";
  else if (title.length > 200) errors.title = "At most 200 characters.";
  if (draft.systemPrompt.length > 4000) errors.systemPrompt = "At most 4000 characters.";
  if (!draft.provider) errors.provider = "Choose a provider.";
  if (!draft.model.trim()) errors.model = "Choose a model.";
  if (parseTopK(draft.topK) === null) errors.topK = `A whole number from ${TOP_K_RANGE[0]} to ${TOP_K_RANGE[1]}.`;
  if (parseThreshold(draft.threshold) === null) errors.threshold = "A number from 0 to 1, e.g. 0.25.";
  // The server's rules for a filter (app/rag/search/document_filter.py): the same words.
  if (draft.filter.dateFrom && draft.filter.dateTo && draft.filter.dateFrom > draft.filter.dateTo) errors.dateTo = "The range ends before it starts.";
  if (draft.filter.pathPrefix.length > 1000) errors.pathPrefix = "At most 1000 characters.";
  return errors;
}

/** The tool groups to set, or null when they did not change. */
export function groupChangesOf(session: SessionFieldsFragment, draft: SettingsDraft): string[] | null {
  const next = [...new Set(draft.toolGroups)].sort();
  return next.join("\n") === [...session.toolGroups].sort().join("\n") ? null : next;
}

/** Only what changed, so a save never overwrites a field the user did not touch. */
export function changesOf(session: SessionFieldsFragment, draft: SettingsDraft): UpdateChatSessionInput {
  const input: UpdateChatSessionInput = {};
  if (draft.title.trim() !== session.title) input.title = draft.title.trim();
  if (draft.systemPrompt !== session.systemPrompt) input.systemPrompt = draft.systemPrompt;
  if (draft.provider !== session.provider) input.provider = draft.provider;
  if (draft.model.trim() !== session.model || draft.provider !== session.provider) input.model = draft.model.trim();
  if (draft.enableRag !== session.enableRag) input.enableRag = draft.enableRag;
  const topK = parseTopK(draft.topK);
  if (topK !== null && topK !== session.topK) input.topK = topK;
  const threshold = parseThreshold(draft.threshold);
  if (threshold !== null && threshold !== session.threshold) input.threshold = threshold;
  if (draft.includeCitations !== session.includeCitations) input.includeCitations = draft.includeCitations;
  if (draft.answerMode !== session.answerMode) input.answerMode = draft.answerMode;
  if (draft.rerank !== session.rerank) input.rerank = draft.rerank;
  if (draft.expansion !== session.expansion) input.expansion = draft.expansion;
  if (draft.quality !== session.quality) input.quality = draft.quality;
  if (draft.rewrite !== session.rewrite) input.rewrite = draft.rewrite;
  // An empty filter clears the chat's: every document again.
  if (!sameFilter(draft.filter, filterDraftOf(session.documentFilter))) input.documentFilter = filterInputOf(draft.filter);
  return input;
}
