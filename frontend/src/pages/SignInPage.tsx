import { useMutation } from "@apollo/client/react";
import { type FormEvent, useState } from "react";
import { AuthCard, authStyles, enterApp } from "../components/people/AuthCard";
import { Button, LinkButton } from "../components/Button";
import { Field, Form, FormError, TextInput } from "../components/Field";
import { SignInDocument, type SignInMutation } from "../gql/graphql";
import { useServerAccess } from "../lib/access";
import { safeNext } from "../lib/router";
import { useServices } from "../lib/services";

type Result = SignInMutation["signIn"];

/** What went wrong, in words; the server's wrong email and wrong password are one answer. */
export function signInProblem(result: Result | undefined): string | null {
  if (!result) return "The server did not answer. Try again.";
  switch (result.__typename) {
    case "Person":
      return null;
    case "TooManyAttemptsError":
      return `Too many attempts. Try again in ${result.retryAfterSeconds} s.`;
    case "ValidationError":
      return "Wrong email or password.";
    default:
      return result.message;
  }
}

/** `/sign-in`: email and password (and single sign-on when the server offers it). */
export function SignInPage({ onSignedIn = enterApp }: { onSignedIn?: (to: string) => void }) {
  const { access } = useServerAccess();
  const { keys } = useServices();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [problem, setProblem] = useState<string | null>(null);
  const [signIn, { loading }] = useMutation(SignInDocument);

  async function submit(event: FormEvent) {
    event.preventDefault();
    if (!email.trim() || !password) return setProblem("Enter your email and your password.");
    setProblem(null);
    try {
      const { data } = await signIn({ variables: { email: email.trim(), password } });
      const wrong = signInProblem(data?.signIn);
      if (wrong) return setProblem(wrong);
      onSignedIn(safeNext(new URLSearchParams(window.location.search).get("next")));
    } catch (error) {
      setProblem(error instanceof Error ? error.message : String(error));
    }
  }

  const sso = access?.singleSignOnUrl;
  return (
    <AuthCard
      title="Sign in"
      lead="This server knows its people: sign in to see your knowledge bases and chats."
      footer={
        <>
          {sso && (
            <a href={sso} data-testid="single-sign-on">
              Sign in with single sign-on
            </a>
          )}
          <LinkButton onClick={() => keys.openDialog()}>Use an API key instead</LinkButton>
        </>
      }
    >
      {access?.passwordSignIn !== false && (
        <Form onSubmit={(e) => void submit(e)} noValidate aria-label="Sign in">
          <Field label="Email">
            <TextInput type="email" autoComplete="username" value={email} data-autofocus autoFocus onChange={(e) => setEmail(e.target.value)} />
          </Field>
          <Field label="Password">
            <TextInput type="password" autoComplete="current-password" value={password} onChange={(e) => setPassword(e.target.value)} />
          </Field>
          {problem && <FormError role="alert">{problem}</FormError>}
          <Button type="submit" variant="primary" className={authStyles.submit} disabled={loading}>
            {loading ? "Signing in…" : "Sign in"}
          </Button>
        </Form>
      )}
    </AuthCard>
  );
}
