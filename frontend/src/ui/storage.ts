// The panel's remembered settings (theme, language, layer-view options) in localStorage. Storage
// may be unavailable (a sandboxed iframe, a browser with storage off): reads then find nothing and
// writes are dropped, so the panel works with its defaults instead of failing.

/** The stored value of `key`, or null when there is none or storage cannot be read. */
export function storageGet(key: string): string | null {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

/** Store `value` under `key`; nothing happens when storage cannot be written. */
export function storageSet(key: string, value: string): void {
  try {
    localStorage.setItem(key, value);
  } catch {
    /* storage unavailable: the setting lasts for this page only */
  }
}
