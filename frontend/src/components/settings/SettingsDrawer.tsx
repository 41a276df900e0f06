import { useMutation, useQuery } from "@apollo/client/react";
import { useCallback, useState } from "react";
import { ProvidersDocument, type SessionFieldsFragment, UpdateChatSessionDocument, type UpdateChatSessionInput } from "../../gql/graphql";
import { type FieldErrors, fieldErrorsOf } from "../../lib/results";
import { Button } from "../Button";
import { Dialog } from "../Dialog";
import { FormError } from "../Field";
import { RetrievalPreview } from "./RetrievalPreview";
import { SessionSettingsForm } from "./SessionSettingsForm";
import { type SettingsDraft, draftOf, parseThreshold, parseTopK } from "./settingsDraft";

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
  const [update, { loading }] = useMutation(UpdateChatSessionDocument);
  const [draft, setDraft] = useState<SettingsDraft>(() => draftOf(session));
  const onDraftChange = useCallback((d: SettingsDraft) => setDraft(d), []);

  async function save(input: UpdateChatSessionInput): Promise<FieldErrors | null> {
    if (Object.keys(input).length === 0) {
      onClose();
      return null;
    }
    try {
      const { data } = await update({ variables: { id: session.id, input } });
      const result = data?.updateChatSession;
      if (result?.__typename === "ChatSession") {
        onSaved?.();
        onClose();
        return null;
      }
      if (result?.__typename === "ValidationError") {
        const fields = fieldErrorsOf(result);
        return Object.keys(fields).length ? fields : { _form: result.message };
      }
      return { _form: result && "message" in result ? result.message : "The settings could not be saved." };
    } catch (err) {
      return { _form: err instanceof Error ? err.message : String(err) };
    }
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
      <SessionSettingsForm
        key={session.id}
        session={session}
        providers={providers.data?.providers}
        onSubmit={save}
        onDraftChange={onDraftChange}
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
