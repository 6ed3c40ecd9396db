// The view state in the URL: a store subscriber writes it into the panel's own hash and, inside
// TensorBoard, into TensorBoard's URL plugin data (so a reload of TensorBoard or a copied link
// opens the same view); the view to start with is read back from either.
import { hostWindow, readUrlPluginData, tensorBoardLink, writeUrlPluginData } from "../host/tensorboard";
import { formatHash, parseHash, type ViewState } from "./hash";
import { shownRun, type PanelState, type Store } from "./store";
import { DEFAULT_VIEW, viewEntry } from "../views/table";

/** The view state as the URL carries it (defaults left out; the current view's own keys). */
export function viewState(st: Readonly<PanelState>): ViewState {
  const run = shownRun(st);
  const own = viewEntry(st.view)?.urlOf(st) ?? {};
  return {
    phase: st.phase,
    run: st.run ?? undefined,
    stage: run && st.stage !== run.default_stage ? st.stage : undefined,
    layer: st.layer,
    rank: run && st.rank !== null && st.rank !== run.ranks[0] ? st.rank : undefined,
    node: st.selected ?? undefined,
    color: st.color !== "group" ? st.color : undefined,
    depth: st.depth ?? undefined,
    tl: st.tl !== "layer" ? st.tl : undefined,
    view: st.view !== DEFAULT_VIEW ? st.view : undefined,
    ...own,
  };
}

/** The view state as flat string pairs (TensorBoard's URL plugin data, without its prefix). */
export function hashParams(vs: ViewState): Record<string, string> {
  return Object.fromEntries(new URLSearchParams(formatHash(vs).replace(/^#/, "")));
}

export class UrlSync {
  private last = "";

  /** Writes every change of the store into the URL; `onNavigate` hears a hash the user changed. */
  constructor(private readonly store: Store<PanelState>, private readonly onNavigate: (vs: ViewState) => void) {
    store.subscribe(() => this.write());
    window.addEventListener("hashchange", () => {
      const vs = parseHash(location.hash);
      const hsh = formatHash(vs);
      if (hsh === this.last) return;
      this.last = hsh;
      this.onNavigate(vs);
    });
  }

  /**
   * The view to open with: the panel's own hash; else, inside TensorBoard, TensorBoard's URL plugin
   * data (what a reload of TensorBoard or a copied link hands back).
   */
  async initial(): Promise<ViewState> {
    const own = parseHash(location.hash);
    if (own.run || own.view) return own;
    const data = await readUrlPluginData();
    if (!data) return own;
    const q = new URLSearchParams(data).toString();
    return q ? parseHash(`#${q}`) : own;
  }

  /** A URL that opens TensorBoard itself on this view (its tab, with the view in its URL). */
  link(): string {
    return tensorBoardLink(hashParams(viewState(this.store.get())));
  }

  private write(): void {
    const st = this.store.get();
    if (!st.run) return;
    const vs = viewState(st);
    const hsh = formatHash(vs);
    if (hsh === this.last) return;
    this.last = hsh;
    // An absolute URL: relative ones would resolve against <base href="plugin/ad_layer/">.
    try {
      history.replaceState(history.state, "", location.href.split("#")[0] + hsh);
    } catch {
      location.hash = hsh;
    }
    if (hostWindow()) writeUrlPluginData(hashParams(vs));
  }
}
