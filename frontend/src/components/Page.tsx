import type { ReactNode } from "react";
import shared from "../styles/shared.module.css";
import styles from "./Page.module.css";

/** The scrolling content of a page, centred and padded. */
export function Page({ children }: { children: ReactNode }) {
  return (
    <div className={styles.page}>
      <div className={styles.inner}>{children}</div>
    </div>
  );
}

/** A page's heading, its lead paragraph, and whatever belongs under them. */
export function PageHeader({ title, lead, children }: { title: ReactNode; lead?: ReactNode; children?: ReactNode }) {
  return (
    <header className={styles.header}>
      <h2 className={shared.display}>{title}</h2>
      {lead && <p className={styles.lead}>{lead}</p>}
      {children}
    </header>
  );
}

/** A titled part of a page; `id` names its heading (the section is labelled by it). */
export function Section({ id, title, children }: { id: string; title: ReactNode; children: ReactNode }) {
  return (
    <section className={styles.section} aria-labelledby={id}>
      <div className={styles.sectionHead}>
        <h3 id={id} className={styles.sectionTitle}>
          {title}
        </h3>
      </div>
      {children}
    </section>
  );
}
