import type { ReactNode } from "react";
import { Link } from "../lib/router";
import { LogoMark } from "./icons";

export interface SidebarProps {
  /** Navigation: knowledge bases and their chat sessions. */
  children?: ReactNode;
  /** Pinned to the bottom (the server status). */
  footer?: ReactNode;
}

export function Sidebar({ children, footer }: SidebarProps) {
  return (
    <div className="sidebar">
      <Link className="sidebar__brand" to="/" aria-label="ragchat home">
        <span className="sidebar__logo">
          <LogoMark width={18} height={18} />
        </span>
        <span className="sidebar__name">ragchat</span>
      </Link>
      <nav className="sidebar__nav" aria-label="Knowledge bases and chats">
        {children}
      </nav>
      {footer && <div className="sidebar__footer">{footer}</div>}
    </div>
  );
}
