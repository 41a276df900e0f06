import { type ReactNode, useEffect, useState } from "react";
import { usePathname } from "../lib/router";
import { CloseIcon, MenuIcon } from "./icons";

export interface AppShellProps {
  sidebar: ReactNode;
  /** Shown in the top bar of the main area. */
  title: ReactNode;
  /** Buttons at the right of the top bar. */
  actions?: ReactNode;
  children: ReactNode;
}

/**
 * Sidebar + main area. On wide windows the sidebar is a column; on narrow ones it is a drawer
 * opened from the top bar and closed by the backdrop, its close button or Escape.
 */
export function AppShell({ sidebar, title, actions, children }: AppShellProps) {
  const [drawerOpen, setDrawerOpen] = useState(false);
  const pathname = usePathname();

  // Following a link in the drawer closes it.
  useEffect(() => setDrawerOpen(false), [pathname]);

  useEffect(() => {
    if (!drawerOpen) return;
    const onKey = (event: KeyboardEvent) => event.key === "Escape" && setDrawerOpen(false);
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [drawerOpen]);

  return (
    <div className="app-shell" data-drawer-open={drawerOpen} data-testid="app-shell">
      <aside id="sidebar" className="app-shell__sidebar" aria-label="Sidebar">
        <button
          type="button"
          className="icon-button app-shell__drawer-close"
          onClick={() => setDrawerOpen(false)}
          aria-label="Close sidebar"
        >
          <CloseIcon />
        </button>
        {sidebar}
      </aside>
      <div className="app-shell__backdrop" onClick={() => setDrawerOpen(false)} aria-hidden="true" />
      <div className="app-shell__main">
        <header className="topbar">
          <button
            type="button"
            className="icon-button topbar__menu"
            onClick={() => setDrawerOpen(true)}
            aria-label="Open sidebar"
            aria-controls="sidebar"
            aria-expanded={drawerOpen}
          >
            <MenuIcon />
          </button>
          <h1 className="topbar__title">{title}</h1>
          {actions && <div className="topbar__actions">{actions}</div>}
        </header>
        <main className="app-shell__content">{children}</main>
      </div>
    </div>
  );
}
