import type { ReactNode } from "react";
import { Link } from "../lib/router";
import { LogoMark } from "./icons";
import shared from "../styles/shared.module.css";
import styles from "./Sidebar.module.css";

export interface SidebarProps {
  /** Navigation: knowledge bases and their chat sessions. */
  children?: ReactNode;
  /** Pinned to the bottom (the server status). */
  footer?: ReactNode;
}

export function Sidebar({ children, footer }: SidebarProps) {
  return (
    <div className={styles.sidebar}>
      <Link className={styles.brand} to="/" aria-label="ragchat home">
        <span className={shared.brandTile}>
          <LogoMark width={18} height={18} />
        </span>
        <span className={styles.name}>ragchat</span>
      </Link>
      <nav className={styles.nav} aria-label="Knowledge bases and chats">
        {children}
      </nav>
      {footer && <div className={styles.footer}>{footer}</div>}
    </div>
  );
}
