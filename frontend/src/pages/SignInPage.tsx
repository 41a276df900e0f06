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

/** Why single sign-on sent the browser back here (`/sign-in?error=<reason>`), in words. */
const SINGLE_SIGN_ON_PROBLEMS: Record<string, string> = {
  state: "That sign-in expired or was started in another browser. Try again.",
  denied: "Sign-in was cancelled at the provider.",
  provider: "The sign-in provider could not be reached. Try again, or tell an administrator.",
  token: "The sign-in provider's answer could not be verified. Tell an administrator.",
  signature: "The sign-in provider's answer could not be verified. Tell an administrator.",
  email: "The sign-in provider did not say which email address is yours.",
  domain: "Your email address is not of a domain that may sign in here.",
  unverified:
    "An account with your email address exists, but the sign-in provider has not verified that the address is yours.",
  linked: "Your email address already signs in here through another single sign-on account.",
  no_account: "You have no account here yet: ask an administrator to invite you.",
  disabled: "Your account is disabled: ask an administrator.",
  not_configured: "Single sign-on is not set up on this server.",
};

export function singleSignOnProblem(reason: string | null): string | null {
  if (!reason) return null;
  return SINGLE_SIGN_ON_PROBLEMS[reason] ?? "Single sign-on did not sign you in. Try again.";
}

/** `/sign-in`: email and password (and single sign-on when the server offers it). */
export function SignInPage({ onSignedIn = enterApp }: { onSignedIn?: (to: string) => void }) {
  const { access } = useServerAccess();
  const { keys } = useServices();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [problem, setProblem] = useState<string | null>(() =>
    singleSignOnProblem(new URLSearchParams(window.location.search).get("error")),
  );
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
      {access?.passwordSignIn === false && problem && <FormError role="alert">{problem}</FormError>}
    </AuthCard>
  );
}
