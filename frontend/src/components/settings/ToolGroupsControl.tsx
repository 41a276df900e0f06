import type { ReactNode } from "react";
import { Fieldset, FormError, Hint, Switch } from "../Field";

/** A tool group and the names of its tools. */
export interface ToolGroupOption {
  group: string;
  tools: readonly string[];
}

/** Tools, grouped as the server lists them (by group then name). */
export function toolGroupsOf(tools: readonly { group: string; name: string }[]): ToolGroupOption[] {
  const byGroup = new Map<string, string[]>();
  for (const tool of tools) byGroup.set(tool.group, [...(byGroup.get(tool.group) ?? []), tool.name]);
  return [...byGroup].map(([group, names]) => ({ group, tools: names }));
}

export interface ToolGroupsControlProps {
  /** The groups the chat allows. */
  value: readonly string[];
  onChange: (groups: string[]) => void;
  /** Every group that holds a tool; undefined while loading. */
  options: readonly ToolGroupOption[] | undefined;
  /** The server's verdict (a group without tools, a model that cannot call tools). */
  error?: string;
  /** Shown under the groups (the selection preview). */
  children?: ReactNode;
}

/** Which tool groups a chat may use: none by default, tools are opt-in per chat. */
export function ToolGroupsControl({ value, onChange, options, error, children }: ToolGroupsControlProps) {
  // A group the chat allows stays listed (and can be turned off) even once its last tool is gone.
  const all = [...(options ?? [])];
  for (const group of value) if (!all.some((o) => o.group === group)) all.push({ group, tools: [] });
  const toggle = (group: string, on: boolean) => onChange(on ? [...new Set([...value, group])].sort() : value.filter((g) => g !== group));
  return (
    <Fieldset legend="Tools" data-testid="tool-groups" aria-describedby={error ? "tool-groups-error" : undefined}>
      <Hint>The model may call the tools of the groups allowed here (it needs a model that can call tools: openai, ollama). Side-effecting tools are previewed for your approval.</Hint>
      {options === undefined && <Hint>Loading tool groups…</Hint>}
      {options !== undefined && all.length === 0 && <Hint>No tools are registered.</Hint>}
      {all.map(({ group, tools }) => (
        <Switch
          key={group}
          label={group}
          checked={value.includes(group)}
          onChange={(on) => toggle(group, on)}
          hint={tools.length ? tools.join(", ") : "no tools left in this group"}
        />
      ))}
      {error && (
        <FormError role="alert" id="tool-groups-error">
          {error}
        </FormError>
      )}
      {children}
    </Fieldset>
  );
}
