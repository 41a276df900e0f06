import { useMutation } from "@apollo/client/react";
import { type FormEvent, useEffect, useState } from "react";
import { CreateProjectDocument, UpdateProjectDocument } from "../../gql/graphql";
import { type FieldErrors, fieldErrorsOf } from "../../lib/results";
import { navigate, paths } from "../../lib/router";
import { Button } from "../Button";
import { Dialog } from "../Dialog";
import { Field, Form, FormError, TextArea, TextInput } from "../Field";

export interface ProjectFormDialogProps {
  open: boolean;
  onClose: () => void;
  /** Edit this knowledge base; without it the dialog creates one. */
  project?: { id: string; name: string; description: string } | null;
}

/** Create a knowledge base (name + description) or edit one's. */
export function ProjectFormDialog({ open, onClose, project = null }: ProjectFormDialogProps) {
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [errors, setErrors] = useState<FieldErrors>({});
  const [createProject, creating] = useMutation(CreateProjectDocument, { refetchQueries: ["Projects"] });
  const [updateProject, updating] = useMutation(UpdateProjectDocument);
  const busy = creating.loading || updating.loading;

  useEffect(() => {
    if (!open) return;
    setName(project?.name ?? "");
    setDescription(project?.description ?? "");
    setErrors({});
  }, [open, project]);

  async function submit(event: FormEvent) {
    event.preventDefault();
    const trimmed = name.trim();
    if (!trimmed) {
      setErrors({ name: "Give the knowledge base a name." });
      return;
    }
    try {
      if (project) {
        const input = { name: trimmed, description: description.trim() };
        const { data } = await updateProject({ variables: { id: project.id, input } });
        const result = data?.updateProject;
        if (result?.__typename === "Project") return onClose();
        setErrors(problemsOf(result));
      } else {
        const { data } = await createProject({ variables: { input: { name: trimmed, description: description.trim() } } });
        const result = data?.createProject;
        if (result?.__typename === "Project") {
          onClose();
          navigate(paths.project(result.id));
          return;
        }
        setErrors(problemsOf(result));
      }
    } catch (err) {
      setErrors({ _form: err instanceof Error ? err.message : String(err) });
    }
  }

  const formId = project ? "edit-project" : "create-project";
  return (
    <Dialog
      open={open}
      onClose={onClose}
      title={project ? "Edit knowledge base" : "New knowledge base"}
      description={project ? undefined : "A collection of documents your chats answer from."}
      size="sm"
      footer={
        <>
          <Button onClick={onClose}>Cancel</Button>
          <Button type="submit" form={formId} variant="primary" disabled={busy}>
            {project ? "Save" : "Create"}
          </Button>
        </>
      }
    >
      <Form id={formId} onSubmit={(event) => void submit(event)} noValidate>
        <Field label="Name" error={errors.name}>
          <TextInput value={name} maxLength={200} data-autofocus onChange={(e) => setName(e.target.value)} />
        </Field>
        <Field label="Description" hint="Optional: what is in it." error={errors.description}>
          <TextArea rows={3} value={description} maxLength={2000} onChange={(e) => setDescription(e.target.value)} />
        </Field>
        {errors._form && <FormError role="alert">{errors._form}</FormError>}
      </Form>
    </Dialog>
  );
}

function problemsOf(result: { __typename: string; message?: string; fields?: { field: string; message: string }[] } | undefined): FieldErrors {
  if (!result) return { _form: "No answer from the server." };
  if (result.__typename === "ValidationError") {
    const fields = fieldErrorsOf(result);
    return Object.keys(fields).length ? fields : { _form: result.message ?? "Invalid." };
  }
  // A duplicate name is a ConflictError: it belongs next to the name.
  if (result.__typename === "ConflictError") return { name: result.message ?? "That name is taken." };
  return { _form: result.message ?? "It did not work." };
}
