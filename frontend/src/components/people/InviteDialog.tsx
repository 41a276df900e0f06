import { useMutation } from "@apollo/client/react";
import { type FormEvent, useEffect, useState } from "react";
import { type InvitationFieldsFragment, InvitePersonDocument } from "../../gql/graphql";
import { formatDateTime } from "../../lib/format";
import { fieldErrorsOf } from "../../lib/results";
import { Button } from "../Button";
import { Dialog } from "../Dialog";
import { Field, Form, FormError, Switch, TextInput } from "../Field";
import { CopyField } from "./CopyField";

/** An invitation's link as the person will open it: on this server. */
export function absoluteLink(link: string, origin: string = window.location.origin): string {
  return new URL(link, origin).href;
}

/** The one-time link of an invitation or a reset, to hand to the person (shown once). */
export function InvitationLink({ invitation }: { invitation: InvitationFieldsFragment }) {
  return (
    <>
      <p>
        Send this link to <strong>{invitation.person.email}</strong>. It works once, until {formatDateTime(invitation.expiresAt)}; with it they choose
        their password and are signed in.
      </p>
      <CopyField value={absoluteLink(invitation.link)} label="One-time link" />
    </>
  );
}

/** Invite a person (administrators): email, name, administrator or not; then their one-time link. */
export function InviteDialog({ open, onClose }: { open: boolean; onClose: () => void }) {
  const [email, setEmail] = useState("");
  const [name, setName] = useState("");
  const [isAdmin, setIsAdmin] = useState(false);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [problem, setProblem] = useState<string | null>(null);
  const [invitation, setInvitation] = useState<InvitationFieldsFragment | null>(null);
  const [invite, { loading }] = useMutation(InvitePersonDocument, { refetchQueries: ["People"] });

  useEffect(() => {
    if (open) {
      setEmail("");
      setName("");
      setIsAdmin(false);
      setErrors({});
      setProblem(null);
      setInvitation(null);
    }
  }, [open]);

  async function submit(event: FormEvent) {
    event.preventDefault();
    setProblem(null);
    if (!email.includes("@")) return setErrors({ email: "Enter an email address." });
    setErrors({});
    const { data } = await invite({ variables: { email: email.trim(), name: name.trim(), isAdmin } });
    const result = data?.invitePerson;
    if (result?.__typename === "Invitation") return setInvitation(result);
    if (result?.__typename === "ValidationError") setErrors(fieldErrorsOf(result));
    setProblem(result && "message" in result ? result.message : "The invitation could not be made.");
  }

  if (invitation) {
    return (
      <Dialog open={open} onClose={onClose} title="Invitation" size="md" testId="invitation" footer={<Button variant="primary" onClick={onClose}>Done</Button>}>
        <InvitationLink invitation={invitation} />
      </Dialog>
    );
  }
  return (
    <Dialog
      open={open}
      onClose={onClose}
      title="Invite a person"
      size="sm"
      footer={
        <>
          <Button onClick={onClose}>Cancel</Button>
          <Button type="submit" form="invite-person" variant="primary" disabled={loading}>
            Invite
          </Button>
        </>
      }
    >
      <Form id="invite-person" onSubmit={(e) => void submit(e)} noValidate>
        <Field label="Email" error={errors.email}>
          <TextInput type="email" value={email} data-autofocus onChange={(e) => setEmail(e.target.value)} />
        </Field>
        <Field label="Name" error={errors.name}>
          <TextInput value={name} onChange={(e) => setName(e.target.value)} />
        </Field>
        <Switch label="Administrator" hint="Every knowledge base, and people." checked={isAdmin} onChange={setIsAdmin} />
        {problem && <FormError role="alert">{problem}</FormError>}
      </Form>
    </Dialog>
  );
}
