import { useMutation } from "@apollo/client/react";
import { type FormEvent, useEffect, useState } from "react";
import { SetDocumentTagsDocument } from "../../gql/graphql";
import { fieldErrorsOf } from "../../lib/results";
import { parseTags } from "../../lib/tags";
import { Button } from "../Button";
import { Dialog } from "../Dialog";
import { Field, Form, TextInput } from "../Field";

export interface TagsDialogProps {
  /** The document whose tags are edited; null: closed. */
  document: { id: string; name: string; tags: readonly string[] } | null;
  onClose: () => void;
}

/** Replace a document's tags (an editor of its knowledge base may): one comma-separated line. */
export function TagsDialog({ document, onClose }: TagsDialogProps) {
  const [text, setText] = useState("");
  const [error, setError] = useState<string | null>(null);
  // The knowledge base's tag counts (the settings form's tag filter) change with them.
  const [setTags, saving] = useMutation(SetDocumentTagsDocument, { refetchQueries: ["ProjectTags"] });

  useEffect(() => {
    if (!document) return;
    setText(document.tags.join(", "));
    setError(null);
  }, [document]);

  async function submit(event: FormEvent) {
    event.preventDefault();
    if (!document) return;
    const { tags, problem } = parseTags(text);
    if (problem) return setError(problem);
    try {
      const { data } = await setTags({ variables: { id: document.id, tags } });
      const result = data?.setDocumentTags;
      if (result?.__typename === "Document") return onClose();
      setError(result?.__typename === "ValidationError" ? (Object.values(fieldErrorsOf(result))[0] ?? result.message) : (result?.message ?? "The tags could not be saved."));
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    }
  }

  return (
    <Dialog
      open={document !== null}
      onClose={onClose}
      title="Edit tags"
      description={document ? `Tags of ${document.name}: a chat's document filter can select by them.` : undefined}
      size="sm"
      footer={
        <>
          <Button onClick={onClose}>Cancel</Button>
          <Button type="submit" form="document-tags" variant="primary" disabled={saving.loading}>
            Save tags
          </Button>
        </>
      }
    >
      <Form id="document-tags" onSubmit={(event) => void submit(event)} noValidate>
        <Field label="Tags" hint="Separated by commas, e.g. policy, 2026. Empty: no tags." error={error}>
          <TextInput value={text} data-autofocus onChange={(e) => (setText(e.target.value), setError(null))} />
        </Field>
      </Form>
    </Dialog>
  );
}
