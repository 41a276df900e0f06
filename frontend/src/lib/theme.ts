// Light or dark: the system's choice (prefers-color-scheme) until the reader picks one with the
// toggle; the pick is kept in localStorage and shared with GraphiQL. The chosen theme is written to
// <html data-theme>, which global.css keys its dark tokens on.

import { useEffect, useState } from "react";

export type Theme = "light" | "dark";

const STORAGE_KEY = "ragchat:theme";
const DARK_QUERY = "(prefers-color-scheme: dark)";

/** The reader's own pick, or null to follow the system. */
export function storedTheme(): Theme | null {
  try {
    const value = window.localStorage.getItem(STORAGE_KEY);
    return value === "light" || value === "dark" ? value : null;
  } catch {
    return null; // storage blocked: follow the system
  }
}

function systemTheme(): Theme {
  return window.matchMedia?.(DARK_QUERY).matches ? "dark" : "light";
}

export function currentTheme(): Theme {
  return storedTheme() ?? systemTheme();
}

/** Write the theme to <html>; called once before the first render so no page flashes light. */
export function applyTheme(theme: Theme = currentTheme()): void {
  document.documentElement.dataset.theme = theme;
}

/** Call `listener` when the system's scheme changes; returns the unsubscribe. */
function onSystemChange(listener: () => void): () => void {
  const media = window.matchMedia?.(DARK_QUERY);
  if (!media) return () => {};
  media.addEventListener("change", listener);
  return () => media.removeEventListener("change", listener);
}

/**
 * Keep <html data-theme> following the system while the reader has not picked a theme, on every
 * page: the sign-in and first-run pages have no app shell (and no toggle) but must follow it too.
 * Called once at start-up, beside the first applyTheme().
 */
export function followSystemTheme(): () => void {
  return onSystemChange(() => storedTheme() === null && applyTheme());
}

/** The theme in effect, following the system while the reader has not picked one, and a setter that keeps the pick. */
export function useTheme(): [Theme, (theme: Theme) => void] {
  const [theme, setTheme] = useState<Theme>(currentTheme);
  useEffect(() => onSystemChange(() => setTheme(currentTheme())), []);
  const choose = (next: Theme) => {
    try {
      window.localStorage.setItem(STORAGE_KEY, next);
    } catch {
      // storage blocked: the pick lasts as long as the page
    }
    applyTheme(next);
    setTheme(next);
  };
  return [theme, choose];
}
