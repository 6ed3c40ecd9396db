// The panel's side of TensorBoard's iframe-plugin host: URL plugin data and dark mode.
//
// TensorBoard 2.21 gives iframe plugins one message over its plugin channel (a MessagePort the
// guest sends with "experimental.bootstrap"): "experimental.GetURLPluginData", which answers the
// entries `p.<plugin>.<key>` of TensorBoard's own URL hash ("#ad_layer&p.ad_layer.run=x&..."). It
// has no message to write them, so the panel (same origin as TensorBoard) writes them into the
// parent's hash with history.replaceState, in the same form; a reload of TensorBoard then hands them
// back. TensorBoard marks its dark mode (its own setting, or the browser's when left at the default)
// with the class "dark-mode" on its body; the panel reads and observes it.

import { PLUGIN_NAME } from "../api/contract";

export const PLUGIN = PLUGIN_NAME;
const PREFIX = `p.${PLUGIN}.`;
const REPLY_TIMEOUT_MS = 1500;

/** The TensorBoard window around the panel, when there is one and it is reachable (same origin). */
export function hostWindow(): Window | null {
  try {
    if (window.parent === window) return null;
    // Throws for a cross-origin parent.
    void window.parent.location.href;
    return window.parent;
  } catch {
    return null;
  }
}

/** TensorBoard's hash as key/value pairs (its first, key-less token is the active tab). */
export function parseHostHash(hash: string): { tab: string | null; items: [string, string][] } {
  const items: [string, string][] = [];
  let tab: string | null = null;
  for (const tok of hash.replace(/^#/, "").split("&")) {
    if (!tok) continue;
    const kv = tok.split("=");
    if (kv.length === 1) tab = decodeURIComponent(kv[0]);
    else if (kv.length === 2) items.push([decodeURIComponent(kv[0]), decodeURIComponent(kv[1])]);
  }
  return { tab, items };
}

/** TensorBoard's hash with the panel's entries replaced by `params` (empty values dropped). */
export function hostHash(current: string, params: Record<string, string>): string {
  const { tab, items } = parseHostHash(current);
  const kept = items.filter(([k]) => !k.startsWith(PREFIX));
  for (const [k, v] of Object.entries(params)) if (v !== "") kept.push([PREFIX + k, v]);
  const parts = kept.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`);
  return `#${[tab ?? PLUGIN, ...parts].join("&")}`;
}

/** The panel's entries of a TensorBoard hash, without their prefix. */
export function pluginData(hash: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of parseHostHash(hash).items) if (k.startsWith(PREFIX)) out[k.slice(PREFIX.length)] = v;
  return out;
}

/**
 * Asks TensorBoard for the panel's URL plugin data over its plugin channel; when the host does not
 * answer (an older or newer TensorBoard, or none), reads the parent's hash directly.
 */
export async function readUrlPluginData(): Promise<Record<string, string> | null> {
  const host = hostWindow();
  if (!host) return null;
  const fromHash = () => pluginData(host.location.hash);
  try {
    const channel = new MessageChannel();
    const port = channel.port1;
    const reply = new Promise<Record<string, string> | null>((resolve) => {
      const timer = setTimeout(() => resolve(null), REPLY_TIMEOUT_MS);
      port.addEventListener("message", (ev: MessageEvent) => {
        try {
          const msg = JSON.parse(String(ev.data)) as { type?: string; isReply?: boolean; payload?: unknown; error?: unknown };
          if (msg.isReply && msg.type === "experimental.GetURLPluginData") {
            clearTimeout(timer);
            resolve(!msg.error && msg.payload && typeof msg.payload === "object" ? (msg.payload as Record<string, string>) : null);
          }
        } catch {
          /* not a plugin-channel message */
        }
      });
    });
    port.start();
    host.postMessage("experimental.bootstrap", window.location.origin, [channel.port2]);
    port.postMessage(JSON.stringify({ type: "experimental.GetURLPluginData", id: 0, payload: null, error: null, isReply: false }));
    const data = await reply;
    port.close();
    // A host that answers nothing (or an empty set) while its hash has entries: the hash wins.
    return data && Object.keys(data).length ? data : fromHash();
  } catch {
    return fromHash();
  }
}

/** Records the panel's view in TensorBoard's URL (so that a reload of TensorBoard restores it). */
export function writeUrlPluginData(params: Record<string, string>): void {
  const host = hostWindow();
  if (!host) return;
  const hsh = hostHash(host.location.hash, params);
  if (hsh === host.location.hash) return;
  try {
    host.history.replaceState(host.history.state, "", host.location.href.split("#")[0] + hsh);
  } catch {
    /* a host that refuses: the panel's own URL still carries the view */
  }
}

/**
 * A link that opens TensorBoard itself (not the bare panel) on this view. The panel's page is
 * TensorBoard's `<prefix>/data/plugin_entry.html`, so TensorBoard's root is `../` from it.
 */
export function tensorBoardLink(params: Record<string, string>): string {
  const host = hostWindow();
  const root = host ? host.location.href.split("#")[0] : new URL("../", window.location.href).href;
  return root + hostHash("", params);
}

/** TensorBoard's dark mode, or null outside TensorBoard. */
export function hostDarkMode(): boolean | null {
  const host = hostWindow();
  const body = host?.document?.body;
  return body ? body.classList.contains("dark-mode") : null;
}

/** Calls `fn` when TensorBoard's dark mode changes (its settings menu, or the browser's). */
export function observeHostDarkMode(fn: (dark: boolean) => void): void {
  const body = hostWindow()?.document?.body;
  if (!body || typeof MutationObserver === "undefined") return;
  let last = body.classList.contains("dark-mode");
  new MutationObserver(() => {
    const now = body.classList.contains("dark-mode");
    if (now !== last) {
      last = now;
      fn(now);
    }
  }).observe(body, { attributes: true, attributeFilter: ["class"] });
}
