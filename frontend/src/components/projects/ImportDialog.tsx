import { useApolloClient } from "@apollo/client/react";
import { type FormEvent, useEffect, useState } from "react";
import {
  ImportKnowledgeBaseDocument,
  type ImportKnowledgeBaseMutation,
} from "../../gql/graphql";
import { navigate, paths } from "../../lib/router";
import { useServices } from "../../lib/services";
import {
  buildMultipartForm,
  HttpStatusError,
  postMultipart,
} from "../../lib/upload";
import { Button } from "../Button";
import { Dialog } from "../Dialog";
import { Field, Form, FormError, TextInput } from "../Field";

/** Bring in a knowledge base from an archive its owner downloaded (here or from another server). */
export function ImportDialog({
  open,
  onClose,
}: {
  open: boolean;
  onClose: () => void;
}) {
  const { endpoints, keys } = useServices();
  const client = useApolloClient();
  const [file, setFile] = useState<File | null>(null);
  const [name, setName] = useState("");
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (!open) return;
    setFile(null);
    setName("");
    setProblem(null);
  }, [open]);

  async function submit(event: FormEvent) {
    event.preventDefault();
    if (!file) return setProblem("Choose an archive (.ragchat.tar.gz) first.");
    setBusy(true);
    setProblem(null);
    try {
      const authorization = keys.authorization();
      const body = await postMultipart<{
        data?: ImportKnowledgeBaseMutation;
        errors?: { message: string }[];
      }>({
        url: endpoints.httpUrl,
        form: buildMultipartForm({
          query: ImportKnowledgeBaseDocument,
          operationName: "ImportKnowledgeBase",
          variables: { name: name.trim() || null },
          filesVariable: "file",
          single: true,
          files: [file],
        }),
        headers: authorization ? { Authorization: authorization } : {},
      });
      const result = body.data?.importKnowledgeBase;
      if (result?.__typename === "Project") {
        await client.refetchQueries({ include: ["Projects"] });
        onClose();
        navigate(paths.project(result.id));
        return;
      }
      setProblem(
        result && "message" in result
          ? result.message
          : (body.errors?.[0]?.message ?? "The server sent no result."),
      );
    } catch (err) {
      if (err instanceof HttpStatusError && err.status === 401)
        keys.requestKey();
      setProblem(
        err instanceof HttpStatusError && err.status === 413
          ? "The archive is larger than this server takes in one upload: ask its operator to run `ragchat import-project`."
          : err instanceof Error
            ? err.message
            : String(err),
      );
    } finally {
      setBusy(false);
    }
  }

  return (
    <Dialog
      open={open}
      onClose={onClose}
      title="Import a knowledge base"
      description="From an archive downloaded from a knowledge base's page, here or on another ragchat server: its documents, chats and citations come with it, and you become its owner."
      size="sm"
      footer={
        <>
          <Button onClick={onClose}>Cancel</Button>
          <Button
            type="submit"
            form="import-project"
            variant="primary"
            disabled={busy}
          >
            {busy ? "Importing…" : "Import"}
          </Button>
        </>
      }
    >
      <Form
        id="import-project"
        onSubmit={(event) => void submit(event)}
        noValidate
        aria-label="Import a knowledge base"
      >
        <Field label="Archive">
          <input
            type="file"
            accept=".gz,.tgz,application/gzip"
            data-autofocus
            onChange={(e) => setFile(e.target.files?.[0] ?? null)}
          />
        </Field>
        <Field
          label="Name"
          hint="Optional: the name it was exported with, if left empty."
        >
          <TextInput
            value={name}
            maxLength={200}
            onChange={(e) => setName(e.target.value)}
          />
        </Field>
        {problem && <FormError role="alert">{problem}</FormError>}
      </Form>
    </Dialog>
  );
}
