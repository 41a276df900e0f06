import { useMutation } from "@apollo/client/react";
import { useState } from "react";
import { SignOutDocument } from "../../gql/graphql";
import { useServerAccess } from "../../lib/access";
import { cx } from "../../lib/cx";
import { Link, paths } from "../../lib/router";
import { useServices } from "../../lib/services";
import { enterApp } from "./AuthCard";
import { KeyIcon, LayersIcon } from "../icons";
import shared from "../../styles/shared.module.css";
import styles from "./SidebarPerson.module.css";

export interface SidebarPersonProps {
  /** Which of its pages is open. */
  active?: "keys" | "people" | null;
  onSignedOut?: (to: string) => void;
}

/**
 * The sidebar's foot: the signed-in person with their keys, the people page (administrators) and
 * Sign out; without a person (an open server, a server key) the API key button as before, and on
 * a fresh server the way to its first administrator.
 */
export function SidebarPerson({ active = null, onSignedOut = enterApp }: SidebarPersonProps) {
  const { access } = useServerAccess();
  const { keys } = useServices();
  const [signOut, { loading }] = useMutation(SignOutDocument);
  const [problem, setProblem] = useState<string | null>(null);
  const me = access?.me ?? null;

  async function leave() {
    try {
      await signOut();
      // A fresh page: the cache (another person's chats) and the websocket go with it.
      onSignedOut(paths.signIn());
    } catch (error) {
      setProblem(error instanceof Error ? error.message : String(error));
    }
  }

  if (!me) {
    return (
      <div className={styles.links}>
        <button type="button" className={styles.link} onClick={() => keys.openDialog()}>
          <KeyIcon width={16} height={16} /> API key
        </button>
        {access?.firstRunAvailable && (
          <Link to={paths.firstRun()} className={styles.link}>
            <LayersIcon width={16} height={16} /> Set up sign-in
          </Link>
        )}
      </div>
    );
  }
  return (
    <section className={cx(shared.box, styles.person)} aria-label="Signed in" data-testid="signed-in-person">
      <div className={styles.who}>
        <span className={styles.avatar} aria-hidden="true">
          {(me.name || me.email).slice(0, 1).toUpperCase()}
        </span>
        <span className={styles.names}>
          <span className={cx(shared.ellipsis, styles.name)}>{me.name || me.email}</span>
          <span className={cx(shared.ellipsis, styles.email)}>{me.email}</span>
        </span>
      </div>
      <div className={styles.links}>
        <Link to={paths.keys()} className={styles.link} aria-current={active === "keys" ? "page" : undefined}>
          <KeyIcon width={16} height={16} /> API keys
        </Link>
        {me.isAdmin && (
          <Link to={paths.people()} className={styles.link} aria-current={active === "people" ? "page" : undefined}>
            <LayersIcon width={16} height={16} /> People
          </Link>
        )}
        <button type="button" className={styles.link} onClick={() => void leave()} disabled={loading}>
          Sign out
        </button>
      </div>
      {problem && (
        <p className={styles.problem} role="alert">
          {problem}
        </p>
      )}
    </section>
  );
}
