import { useMutation } from "@apollo/client/react";
import { type FormEvent, useState } from "react";
import { AuthCard, authStyles, enterApp } from "../components/people/AuthCard";
import { newPasswordProblems } from "../components/people/passwordCheck";
import { Button } from "../components/Button";
import { Field, Form, FormError, TextInput } from "../components/Field";
import { AcceptInvitationDocument } from "../gql/graphql";
import { fieldErrorsOf } from "../lib/results";
import { paths } from "../lib/router";

/** `/invite/:token`: a one-time link (an invitation or a password reset): set a password, signed in. */
export function InvitationPage({ token, onSignedIn = enterApp }: { token: string; onSignedIn?: (to: string) => void }) {
  const [password, setPassword] = useState("");
  const [again, setAgain] = useState("");
  const [errors, setErrors] = useState<{ password?: string; again?: string }>({});
  const [problem, setProblem] = useState<string | null>(null);
  const [accept, { loading }] = useMutation(AcceptInvitationDocument);

  async function submit(event: FormEvent) {
    event.preventDefault();
    const found = newPasswordProblems(password, again);
    setErrors(found);
    setProblem(null);
    if (Object.keys(found).length > 0) return;
    const { data } = await accept({ variables: { token, password } });
    const result = data?.acceptInvitation;
    if (result?.__typename === "Person") return onSignedIn(paths.home());
    const fields = result?.__typename === "ValidationError" ? fieldErrorsOf(result) : {};
    if (fields.password) return setErrors({ password: fields.password });
    // A used, expired or replaced link.
    setProblem(result && "message" in result ? `This link does not work: ${result.message}. Ask an administrator for a new one.` : "The server did not answer. Try again.");
  }

  return (
    <AuthCard title="Choose your password" lead="You were invited to this ragchat server (or your password was reset). The link works once.">
      <Form onSubmit={(e) => void submit(e)} noValidate aria-label="Choose your password">
        <Field label="Password" error={errors.password} hint="At least 10 characters.">
          <TextInput type="password" autoComplete="new-password" value={password} autoFocus onChange={(e) => setPassword(e.target.value)} />
        </Field>
        <Field label="Password again" error={errors.again}>
          <TextInput type="password" autoComplete="new-password" value={again} onChange={(e) => setAgain(e.target.value)} />
        </Field>
        {problem && <FormError role="alert">{problem}</FormError>}
        <Button type="submit" variant="primary" className={authStyles.submit} disabled={loading}>
          Set password and sign in
        </Button>
      </Form>
    </AuthCard>
  );
}
