import { useMutation, useQuery } from "@apollo/client/react";
import { type FormEvent, useEffect, useState } from "react";
import { CreateApiKeyDocument, ProjectsDocument } from "../../gql/graphql";
import { useMe } from "../../lib/access";
import { fieldErrorsOf } from "../../lib/results";
import { Button } from "../Button";
import { Dialog } from "../Dialog";
import { Field, Fieldset, Form, FormError, Hint, Switch, TextInput } from "../Field";
import { Notice } from "../Notice";
import { KeyIcon } from "../icons";
import { CopyField } from "./CopyField";
import styles from "./People.module.css";

/** The end of the day `date` (yyyy-mm-dd) names, in this browser's time zone, as ISO 8601. */
export function endOfDay(date: string): string {
  return new Date(`${date}T23:59:59`).toISOString();
}

/**
 * A new key for oneself: a name, the knowledge bases it reaches (none ticked: all of one's own),
 * read-only, managing people (administrators), an expiry. The secret is shown once, with a copy
 * button; the server keeps only its hash.
 */
export function CreateKeyDialog({ open, onClose }: { open: boolean; onClose: () => void }) {
  const me = useMe();
  const projects = useQuery(ProjectsDocument, { skip: !open });
  const list = projects.data?.projects.__typename === "ProjectConnection" ? projects.data.projects.edges.map((e) => e.node) : [];
  const [name, setName] = useState("");
  const [chosen, setChosen] = useState<string[]>([]);
  const [readOnly, setReadOnly] = useState(false);
  const [manageUsers, setManageUsers] = useState(false);
  const [expires, setExpires] = useState("");
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [problem, setProblem] = useState<string | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const [create, { loading }] = useMutation(CreateApiKeyDocument, { refetchQueries: ["ApiKeys"], awaitRefetchQueries: true });

  useEffect(() => {
    if (open) {
      setName("");
      setChosen([]);
      setReadOnly(false);
      setManageUsers(false);
      setExpires("");
      setErrors({});
      setProblem(null);
      setSecret(null);
    }
  }, [open]);

  async function submit(event: FormEvent) {
    event.preventDefault();
    const found: Record<string, string> = {};
    if (!name.trim()) found.name = "Name the key after what will use it.";
    if (expires && new Date(endOfDay(expires)) <= new Date()) found.expiresAt = "Pick a day after today.";
    setErrors(found);
    setProblem(null);
    if (Object.keys(found).length > 0) return;
    const input = {
      name: name.trim(),
      knowledgeBaseIds: chosen.length > 0 ? chosen : null,
      readOnly,
      manageUsers,
      expiresAt: expires ? endOfDay(expires) : null,
    };
    const { data } = await create({ variables: { input } });
    const result = data?.createApiKey;
    if (result?.__typename === "CreatedApiKey") return setSecret(result.secret);
    if (result?.__typename === "ValidationError") setErrors(fieldErrorsOf(result));
    setProblem(result && "message" in result ? result.message : "The key could not be created.");
  }

  const toggle = (id: string, on: boolean) => setChosen((ids) => (on ? [...ids, id] : ids.filter((x) => x !== id)));

  if (secret) {
    return (
      <Dialog open={open} onClose={onClose} title="Your new API key" size="md" testId="new-key" footer={<Button variant="primary" onClick={onClose}>Done</Button>}>
        <Notice tone="warning" icon={<KeyIcon width={16} height={16} />} role="note">
          Copy it now: it is shown this once. Send it as <code>Authorization: Bearer &lt;key&gt;</code>.
        </Notice>
        <CopyField value={secret} label="API key" />
      </Dialog>
    );
  }
  return (
    <Dialog
      open={open}
      onClose={onClose}
      title="New API key"
      size="md"
      footer={
        <>
          <Button onClick={onClose}>Cancel</Button>
          <Button type="submit" form="new-api-key" variant="primary" disabled={loading}>
            Create key
          </Button>
        </>
      }
    >
      <Form id="new-api-key" onSubmit={(e) => void submit(e)} noValidate>
        <Field label="Name" error={errors.name} hint="What uses it: a script, a notebook, an integration.">
          <TextInput value={name} maxLength={100} data-autofocus onChange={(e) => setName(e.target.value)} />
        </Field>
        <Fieldset legend="Knowledge bases">
          <Hint>None ticked: all of yours, now and later. It never reaches more than you may.</Hint>
          {errors.knowledgeBaseIds && <FormError>{errors.knowledgeBaseIds}</FormError>}
          <div className={styles.choices} role="group" aria-label="Knowledge bases the key reaches">
            {list.map((project) => (
              <label key={project.id} className={styles.choice}>
                <input type="checkbox" checked={chosen.includes(project.id)} onChange={(e) => toggle(project.id, e.target.checked)} />
                {project.name}
              </label>
            ))}
            {projects.data && list.length === 0 && <Hint>You have no knowledge bases yet.</Hint>}
          </div>
        </Fieldset>
        <Switch label="Read-only" hint="Search, chat and lists; no changes." checked={readOnly} onChange={setReadOnly} />
        {me?.isAdmin && <Switch label="May manage people" hint="Invite, disable and reset people, as you can." checked={manageUsers} onChange={setManageUsers} />}
        <Field label="Expires" error={errors.expiresAt} hint="Leave empty for a key that does not expire.">
          <TextInput type="date" value={expires} onChange={(e) => setExpires(e.target.value)} />
        </Field>
        {problem && <FormError role="alert">{problem}</FormError>}
      </Form>
    </Dialog>
  );
}
