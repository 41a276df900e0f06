import { useMutation } from "@apollo/client/react";
import { type FormEvent, useState } from "react";
import { AuthCard, authStyles, enterApp } from "../components/people/AuthCard";
import { newPasswordProblems } from "../components/people/passwordCheck";
import { Button, buttonClass } from "../components/Button";
import { Field, Form, FormError, TextInput } from "../components/Field";
import { Skeleton } from "../components/States";
import { SetUpFirstAdministratorDocument } from "../gql/graphql";
import { useServerAccess } from "../lib/access";
import { fieldErrorsOf } from "../lib/results";
import { Link, paths } from "../lib/router";

/**
 * `/first-run`: the server's first person, its administrator. The server allows it only while it
 * has no people and only from its own machine; from anywhere else this page says what to run.
 */
export function FirstRunPage({ onSignedIn = enterApp }: { onSignedIn?: (to: string) => void }) {
  const { access, loading } = useServerAccess();
  const [email, setEmail] = useState("");
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  const [again, setAgain] = useState("");
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [problem, setProblem] = useState<string | null>(null);
  const [setUp, { loading: saving }] = useMutation(SetUpFirstAdministratorDocument);

  async function submit(event: FormEvent) {
    event.preventDefault();
    const found: Record<string, string> = { ...newPasswordProblems(password, again) };
    if (!email.includes("@")) found.email = "Enter an email address.";
    setErrors(found);
    setProblem(null);
    if (Object.keys(found).length > 0) return;
    const { data } = await setUp({ variables: { email: email.trim(), name: name.trim(), password } });
    const result = data?.setUpFirstAdministrator;
    if (result?.__typename === "Person") return onSignedIn(paths.home());
    if (result?.__typename === "ValidationError") setErrors(fieldErrorsOf(result));
    setProblem(result && "message" in result ? result.message : "The server did not answer. Try again.");
  }

  if (loading) return <AuthCard title="Set up ragchat"><Skeleton lines={3} label="Asking the server" /></AuthCard>;
  if (access && !access.firstRunAvailable) {
    return (
      <AuthCard
        title="Set up ragchat"
        footer={access.peopleExist ? <Link to={paths.signIn()} className={buttonClass()}>Sign in</Link> : <Link to={paths.home()}>Back to the app</Link>}
      >
        <p>
          {access.peopleExist
            ? "This server has its administrator already."
            : "The first administrator can only be created from the server's own machine. There, open this page on localhost, or run"}
        </p>
        {!access.peopleExist && <code>ragchat users create --admin --email you@example.com</code>}
      </AuthCard>
    );
  }
  return (
    <AuthCard
      title="Set up ragchat"
      lead="Create the first administrator. From then on, everyone signs in, and each person's chats are their own."
      footer={<Link to={paths.home()}>Not now: keep using it without people</Link>}
    >
      <Form onSubmit={(e) => void submit(e)} noValidate aria-label="First administrator">
        <Field label="Email" error={errors.email}>
          <TextInput type="email" autoComplete="username" value={email} autoFocus onChange={(e) => setEmail(e.target.value)} />
        </Field>
        <Field label="Name" error={errors.name}>
          <TextInput autoComplete="name" value={name} onChange={(e) => setName(e.target.value)} />
        </Field>
        <Field label="Password" error={errors.password} hint="At least 10 characters.">
          <TextInput type="password" autoComplete="new-password" value={password} onChange={(e) => setPassword(e.target.value)} />
        </Field>
        <Field label="Password again" error={errors.again}>
          <TextInput type="password" autoComplete="new-password" value={again} onChange={(e) => setAgain(e.target.value)} />
        </Field>
        {problem && <FormError role="alert">{problem}</FormError>}
        <Button type="submit" variant="primary" className={authStyles.submit} disabled={saving}>
          Create administrator
        </Button>
      </Form>
    </AuthCard>
  );
}
