import { type ReactNode, useEffect, useState } from "react";
import { usePathname } from "../lib/router";
import { cx } from "../lib/cx";
import { IconButton } from "./Button";
import { useTheme } from "../lib/theme";
import { CloseIcon, MenuIcon, MoonIcon, SunIcon } from "./icons";
import shared from "../styles/shared.module.css";
import styles from "./AppShell.module.css";

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
  const [theme, setTheme] = useTheme();

  // Following a link in the drawer closes it.
  useEffect(() => setDrawerOpen(false), [pathname]);

  useEffect(() => {
    if (!drawerOpen) return;
    const onKey = (event: KeyboardEvent) => event.key === "Escape" && setDrawerOpen(false);
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [drawerOpen]);

  return (
    <div className={styles.shell} data-drawer-open={drawerOpen} data-testid="app-shell">
      <aside id="sidebar" className={styles.sidebar} aria-label="Sidebar">
        <IconButton className={styles.drawerClose} onClick={() => setDrawerOpen(false)} aria-label="Close sidebar">
          <CloseIcon />
        </IconButton>
        {sidebar}
      </aside>
      <div className={styles.backdrop} onClick={() => setDrawerOpen(false)} aria-hidden="true" />
      <div className={styles.main}>
        <header className={styles.topbar}>
          <IconButton
            className={styles.menu}
            onClick={() => setDrawerOpen(true)}
            aria-label="Open sidebar"
            aria-controls="sidebar"
            aria-expanded={drawerOpen}
          >
            <MenuIcon />
          </IconButton>
          <h1 className={cx(shared.ellipsis, styles.title)}>{title}</h1>
          {actions && <div className={styles.actions}>{actions}</div>}
          <IconButton
            onClick={() => setTheme(theme === "dark" ? "light" : "dark")}
            aria-label="Dark mode"
            aria-pressed={theme === "dark"}
            title={theme === "dark" ? "Switch to light mode" : "Switch to dark mode"}
            data-testid="theme-toggle"
          >
            {theme === "dark" ? <SunIcon /> : <MoonIcon />}
          </IconButton>
        </header>
        <main className={styles.content}>{children}</main>
      </div>
    </div>
  );
}
