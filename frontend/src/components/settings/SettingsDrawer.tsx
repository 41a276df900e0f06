import { useMutation, useQuery } from "@apollo/client/react";
import { useCallback, useState } from "react";
import {
  ProjectTagsDocument,
  ProvidersDocument,
  type SessionFieldsFragment,
  SetChatSessionToolGroupsDocument,
  ToolsDocument,
  UpdateChatSessionDocument,
  type UpdateChatSessionInput,
} from "../../gql/graphql";
import { type FieldErrors, fieldErrorsOf } from "../../lib/results";
import { Button } from "../Button";
import { Dialog } from "../Dialog";
import { FormError } from "../Field";
import { RetrievalPreview } from "./RetrievalPreview";
import { SessionSettingsForm } from "./SessionSettingsForm";
import { type SettingsDraft, draftOf, parseThreshold, parseTopK } from "./settingsDraft";
import { toolGroupsOf } from "./ToolGroupsControl";
import { ToolSelectionPreview } from "./ToolSelectionPreview";

export interface SettingsDrawerProps {
  session: SessionFieldsFragment;
  open: boolean;
  onClose: () => void;
  /** Called after a successful save. */
  onSaved?: () => void;
  /** For the preview: the chat's last question. */
  lastQuestion?: string;
  /** A chat just created: say so, and name the button accordingly. */
  isNew?: boolean;
}

/** Edit a chat's settings at any time; they apply from the next message. */
export function SettingsDrawer({ session, open, onClose, onSaved, lastQuestion, isNew = false }: SettingsDrawerProps) {
  // Reachability changes (a server started or stopped): ask again each time the drawer opens.
  const providers = useQuery(ProvidersDocument, { skip: !open, fetchPolicy: "cache-and-network" });
  const tools = useQuery(ToolsDocument, { skip: !open, fetchPolicy: "cache-and-network" });
  // Tags change as documents are tagged elsewhere: asked again each time the drawer opens.
  const tags = useQuery(ProjectTagsDocument, { variables: { id: session.projectId }, skip: !open, fetchPolicy: "cache-and-network" });
  const project = tags.data?.project;
  const [update, updating] = useMutation(UpdateChatSessionDocument);
  const [setGroups, settingGroups] = useMutation(SetChatSessionToolGroupsDocument, {
    update(cache, { data }) {
      const result = data?.setChatSessionToolGroups;
      if (result?.__typename !== "SessionToolGroups") return;
      const id = cache.identify({ __typename: "ChatSession", id: result.sessionId });
      if (id) cache.modify({ id, fields: { toolGroups: () => result.groups } });
    },
  });
  const loading = updating.loading || settingGroups.loading;
  const [draft, setDraft] = useState<SettingsDraft>(() => draftOf(session));
  const onDraftChange = useCallback((d: SettingsDraft) => setDraft(d), []);

  /** The session's fields, then its tool groups; turning tools off goes first, so a model change that needs it is allowed. */
  async function save(input: UpdateChatSessionInput, groups?: string[]): Promise<FieldErrors | null> {
    if (Object.keys(input).length === 0 && groups === undefined) {
      onClose();
      return null;
    }
    try {
      const steps = groups?.length === 0 ? [() => saveGroups(groups), () => saveFields(input)] : [() => saveFields(input), () => saveGroups(groups)];
      for (const step of steps) {
        const problems = await step();
        if (problems) return problems;
      }
      onSaved?.();
      onClose();
      return null;
    } catch (err) {
      return { _form: err instanceof Error ? err.message : String(err) };
    }
  }

  async function saveFields(input: UpdateChatSessionInput): Promise<FieldErrors | null> {
    if (Object.keys(input).length === 0) return null;
    const { data } = await update({ variables: { id: session.id, input } });
    const result = data?.updateChatSession;
    if (result?.__typename === "ChatSession") return null;
    if (result?.__typename === "ValidationError") {
      const fields = fieldErrorsOf(result);
      return Object.keys(fields).length ? fields : { _form: result.message };
    }
    return { _form: result && "message" in result ? result.message : "The settings could not be saved." };
  }

  async function saveGroups(groups: string[] | undefined): Promise<FieldErrors | null> {
    if (groups === undefined) return null;
    const { data } = await setGroups({ variables: { sessionId: session.id, groups } });
    const result = data?.setChatSessionToolGroups;
    if (result?.__typename === "SessionToolGroups") return null;
    // Whatever the server names (groups, a group, the model), it is the tool groups' problem here.
    const message = result?.__typename === "ValidationError" ? result.fields.map((f) => f.message).join("; ") || result.message : result?.message;
    return { groups: message ?? "The tool groups could not be saved." };
  }

  return (
    <Dialog
      open={open}
      onClose={onClose}
      variant="drawer"
      size="md"
      title={isNew ? "Set up this chat" : "Chat settings"}
      description={isNew ? "Tune retrieval before you ask; you can change it at any time." : "Changes apply from the next message."}
      testId="settings-drawer"
      footer={
        <>
          <Button onClick={onClose}>{isNew ? "Use defaults" : "Cancel"}</Button>
          <Button type="submit" form="session-settings" variant="primary" disabled={loading}>
            {loading ? "Saving…" : "Save settings"}
          </Button>
        </>
      }
    >
      {providers.error && <FormError>Could not load the model list: {providers.error.message}</FormError>}
      {tools.error && <FormError>Could not load the tools: {tools.error.message}</FormError>}
      {tags.error && <FormError>Could not load the knowledge base's tags: {tags.error.message}</FormError>}
      <SessionSettingsForm
        key={session.id}
        session={session}
        providers={providers.data?.providers}
        onSubmit={save}
        onDraftChange={onDraftChange}
        toolGroupOptions={tools.data ? toolGroupsOf(tools.data.tools) : undefined}
        tagOptions={project?.__typename === "Project" ? project.documentTags : tags.error || project ? [] : undefined}
        toolsExtra={<ToolSelectionPreview sessionId={session.id} savedGroups={session.toolGroups} initialMessage={lastQuestion} />}
        retrievalExtra={
          <RetrievalPreview
            sessionId={session.id}
            topK={parseTopK(draft.topK)}
            threshold={parseThreshold(draft.threshold)}
            enabled={draft.enableRag}
            initialQuestion={lastQuestion}
          />
        }
      />
    </Dialog>
  );
}
