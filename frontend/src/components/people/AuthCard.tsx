import type { ReactNode } from "react";
import { cx } from "../../lib/cx";
import { LogoMark } from "../icons";
import shared from "../../styles/shared.module.css";
import styles from "./AuthCard.module.css";

/** The ways in (sign in, first run, an invitation): a card in the middle of the window, no sidebar. */
export function AuthCard({ title, lead, children, footer }: { title: string; lead?: ReactNode; children: ReactNode; footer?: ReactNode }) {
  return (
    <main className={styles.screen}>
      <section className={cx(shared.box, styles.card)} aria-labelledby="auth-title">
        <div className={styles.brand}>
          <span className={shared.brandTile}>
            <LogoMark width={18} height={18} />
          </span>
          ragchat
        </div>
        <div>
          <h1 id="auth-title" className={shared.display}>
            {title}
          </h1>
          {lead && <p className={styles.lead}>{lead}</p>}
        </div>
        {children}
        {footer && <div className={styles.alternatives}>{footer}</div>}
      </section>
    </main>
  );
}

export const authStyles = { submit: styles.submit };

/** The app after signing in starts afresh: a new websocket (it carries the cookie from its
 * handshake) and an empty cache, so nothing of the previous visitor stays. */
export function enterApp(to: string): void {
  window.location.assign(to);
}

/** Passwords the server accepts (it checks again). */
export const MIN_PASSWORD = 10;
