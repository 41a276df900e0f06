// The API key the server may require (RAGCHAT_API__API_KEYS). Kept in localStorage, sent as
// `Authorization: Bearer <key>` on HTTP and as `connectionParams.authorization` on the websocket.
// Anything that gets a 401 (or a 4403 websocket close) calls `requestKey()`, which opens the dialog.

const STORAGE_KEY = "ragchat.apiKey";

type Listener = () => void;

export interface ApiKeyState {
  key: string | null;
  /** Set when a request was refused for want of a (valid) key; the dialog shows while set. */
  /** Why the dialog is open: the server refused a request without a key (missing) or with this one
   * (rejected), or the user opened it (chosen); null: closed. */
  needed: "missing" | "rejected" | "chosen" | null;
}

export class ApiKeyStore {
  private state: ApiKeyState;
  private readonly listeners = new Set<Listener>();
  private readonly keyListeners = new Set<Listener>();

  constructor(private readonly storage: Pick<Storage, "getItem" | "setItem" | "removeItem"> | null = safeLocalStorage()) {
    this.state = { key: readKey(storage), needed: null };
  }

  getSnapshot = (): ApiKeyState => this.state;

  get key(): string | null {
    return this.state.key;
  }

  /** `Authorization` header value, or null without a key. */
  authorization(): string | null {
    return this.state.key ? `Bearer ${this.state.key}` : null;
  }

  subscribe = (listener: Listener): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  /** Called only when the key itself changes (the websocket client is rebuilt then). */
  onKeyChange(listener: Listener): () => void {
    this.keyListeners.add(listener);
    return () => this.keyListeners.delete(listener);
  }

  setKey(key: string | null): void {
    const clean = key?.trim() || null;
    const changed = clean !== this.state.key;
    try {
      if (clean) this.storage?.setItem(STORAGE_KEY, clean);
      else this.storage?.removeItem(STORAGE_KEY);
    } catch {
      // private mode or full storage: the key still works for this tab
    }
    this.update({ key: clean, needed: null });
    if (changed) for (const listener of [...this.keyListeners]) listener();
  }

  /** A request was refused with 401: ask the user for a key (once, until they answer). */
  requestKey(): void {
    if (this.state.needed) return;
    this.update({ ...this.state, needed: this.state.key ? "rejected" : "missing" });
  }

  /** Open the dialog without a failed request (the sidebar's "API key" button). */
  openDialog(): void {
    this.update({ ...this.state, needed: this.state.needed ?? "chosen" });
  }

  dismiss(): void {
    if (this.state.needed) this.update({ ...this.state, needed: null });
  }

  private update(next: ApiKeyState) {
    this.state = next;
    for (const listener of [...this.listeners]) listener();
  }
}

function readKey(storage: Pick<Storage, "getItem"> | null): string | null {
  try {
    return storage?.getItem(STORAGE_KEY) || null;
  } catch {
    return null;
  }
}

function safeLocalStorage(): Storage | null {
  try {
    return typeof window !== "undefined" ? window.localStorage : null;
  } catch {
    return null;
  }
}
