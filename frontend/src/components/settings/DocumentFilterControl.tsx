import type { FieldErrors } from "../../lib/results";
import { Field, FieldRow, Fieldset, Hint, Select, Switch, TextInput } from "../Field";
import { FILE_KINDS, type FilterDraft } from "./settingsDraft";

/** A tag of the knowledge base's documents, with how many have it. */
export interface TagOption {
  tag: string;
  documents: number;
}

export interface DocumentFilterControlProps {
  value: FilterDraft;
  onChange: (filter: FilterDraft) => void;
  /** The knowledge base's tags; undefined while loading. */
  tags: readonly TagOption[] | undefined;
  /** The form's errors, keyed as the server's (tagsAny, pathPrefix, kinds, dateTo, ...). */
  errors: FieldErrors;
  disabled?: boolean;
}

function toggled(list: readonly string[], item: string, on: boolean): string[] {
  return on ? [...new Set([...list, item])].sort() : list.filter((each) => each !== item);
}

/** Which documents a chat searches: by tags (any or all), folder, file type and date. Nothing set: every document. */
export function DocumentFilterControl({ value, onChange, tags, errors, disabled = false }: DocumentFilterControlProps) {
  const set = (change: Partial<FilterDraft>) => onChange({ ...value, ...change });
  // A tag the chat filters by stays listed (and can be turned off) even once no document has it.
  const options = [...(tags ?? [])];
  for (const tag of value.tags) if (!options.some((o) => o.tag === tag)) options.push({ tag, documents: 0 });
  const tagError = errors.tagsAny ?? errors.tagsAll;
  return (
    <Fieldset legend="Documents to search" data-testid="document-filter">
      <Hint>Narrow this chat to some documents; every condition set must hold. Nothing set: every document.</Hint>
      <div role="group" aria-label="Tags" data-testid="filter-tags">
        {tags === undefined && <Hint>Loading tags…</Hint>}
        {tags !== undefined && options.length === 0 && <Hint>No document has tags yet (set them on the knowledge base's page).</Hint>}
        {options.map(({ tag, documents }) => (
          <Switch
            key={tag}
            label={tag}
            checked={value.tags.includes(tag)}
            disabled={disabled}
            onChange={(on) => set({ tags: toggled(value.tags, tag, on) })}
            hint={`${documents} document${documents === 1 ? "" : "s"}`}
          />
        ))}
        {tagError && (
          <Hint role="alert" data-testid="filter-tags-error">
            {tagError}
          </Hint>
        )}
      </div>
      <FieldRow>
        <Field label="Tags must match" hint={value.tagMatch === "all" ? "A document needs every tag chosen." : "A document needs at least one tag chosen."}>
          <Select value={value.tagMatch} disabled={disabled} data-testid="filter-tag-match" onChange={(e) => set({ tagMatch: e.target.value === "all" ? "all" : "any" })}>
            <option value="any">Any</option>
            <option value="all">All</option>
          </Select>
        </Field>
        <Field label="Path starts with" error={errors.pathPrefix} hint='A folder, e.g. "runbooks/".'>
          <TextInput value={value.pathPrefix} maxLength={1000} disabled={disabled} data-testid="filter-path" onChange={(e) => set({ pathPrefix: e.target.value })} />
        </Field>
      </FieldRow>
      <div role="group" aria-label="File types" data-testid="filter-kinds">
        {FILE_KINDS.map(({ kind, label }) => (
          <Switch key={kind} label={label} checked={value.kinds.includes(kind)} disabled={disabled} onChange={(on) => set({ kinds: toggled(value.kinds, kind, on) })} />
        ))}
        {errors.kinds && <Hint role="alert">{errors.kinds}</Hint>}
      </div>
      <FieldRow>
        <Field label="Dated from" error={errors.dateFrom} hint="When the file last changed, else when it was added.">
          <TextInput type="date" value={value.dateFrom} disabled={disabled} data-testid="filter-date-from" onChange={(e) => set({ dateFrom: e.target.value })} />
        </Field>
        <Field label="Dated to" error={errors.dateTo} hint="That day included.">
          <TextInput type="date" value={value.dateTo} disabled={disabled} data-testid="filter-date-to" onChange={(e) => set({ dateTo: e.target.value })} />
        </Field>
      </FieldRow>
    </Fieldset>
  );
}
