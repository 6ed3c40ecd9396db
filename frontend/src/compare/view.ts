// The comparison view: (run, stage, layer) on each side, two panes that expand, collapse, pan and
// zoom together, node status colours with a legend and counts, duration deltas on matched nodes,
// the per-group / whole-layer delta table (sortable), the largest node deltas, and the unmatched
// nodes as lists that jump to the node. Every name is inserted as text.
import type { Api } from "../api/client";
import type { CompareMatch, CompareResponse, LayerResponse, LayerSummary, RunInfo } from "../api/types";
import { GraphPane } from "../graph/pane";
import { zoomAt } from "../graph/viewport";
import { SUMMARY_K } from "../graph/scene";
import type { LeafMark, Paint } from "../graph/paint";
import { nodesText, type StringKey, t } from "../i18n";
import { groupColor, type Theme } from "../model/colors";
import { fmtUs, shortDtype } from "../model/format";
import { decodeOpen, defaultExpanded, encodeOpen, expandedToDepth, isGroupKey, opKey, publicId, SCENE, toggleGroup, type Hierarchy } from "../model/hierarchy";
import { aggregateStatus, COMPARE_STATUSES, countsBadge, statusColor, type DiffStatus } from "../model/status";
import { changedAny, type ComparePanes, type PanelState, type Store } from "../state/store";
import { formatAt, parseAt } from "../layer/view";
import { activity } from "../ui/activity";
import { clear, fitToChoice, h, text } from "../ui/dom";
import { textField, type PanelView, type ViewExport } from "../views/view";
import type { ExportPart } from "../graph/export";
import {
  applyManualPairs, buildCompareModel, DEFAULT_DELTA_SORT, deltaBadge, deltaRows, formatPairs, keyForRel, listedNodes, mirrorExpanded, nextSort, parsePairs, relGroupPath,
  sortDeltaRows, statusByKey, stepIndex, topNodeDeltas, followView, type CompareModel, type DeltaRow, type DeltaSort, type ListedNode,
  type DeltaSortKey, type Side, type SideChoice,
} from "./model";

export interface CompareCallbacks {
  onError(e: unknown): void;
}

const STATUS_LABEL: Record<string, StringKey> = {
  same: "statusSame",
  changed: "statusChanged",
  only_a: "statusOnlyA",
  only_b: "statusOnlyB",
};

function sidesKey(a: SideChoice, b: SideChoice): string {
  return [a.run, a.stage, a.layer, b.run, b.stage, b.layer].join("\u0000");
}

export function fmtSignedUs(us: number): string {
  if (!Number.isFinite(us)) return "–";
  if (us === 0) return fmtUs(0);
  return `${us > 0 ? "+" : "−"}${fmtUs(Math.abs(us))}`;
}

export function fmtSignedPct(p: number | null): string {
  if (p === null || !Number.isFinite(p)) return "–";
  return `${p > 0 ? "+" : p < 0 ? "−" : ""}${Math.abs(p).toFixed(1)}%`;
}

/**
 * The URL fields of the panes' open groups and places: `aopen`, `bopen` (as the layer view's
 * `open`: "+id,-id" against the pane's first view) and `aat`, `bat` ("<layer>:x,y,k"), read only
 * when the URL shows the comparison.
 */
export function comparePaneFields() {
  return { aopen: textField("aopen", "compare"), bopen: textField("bopen", "compare"), aat: textField("aat", "compare"), bat: textField("bat", "compare") };
}

/** The panes' state as URL values (empty ones left out). */
export function comparePanesUrl(p: ComparePanes | undefined): { aopen?: string; bopen?: string; aat?: string; bat?: string } {
  return { aopen: p?.aopen || undefined, bopen: p?.bopen || undefined, aat: p?.aat || undefined, bat: p?.bat || undefined };
}

/** The panes' state the URL carries, if any. */
export function comparePanesOf(vs: { aopen?: string; bopen?: string; aat?: string; bat?: string }): ComparePanes | undefined {
  if (!vs.aopen && !vs.bopen && !vs.aat && !vs.bat) return undefined;
  return { aopen: vs.aopen ?? "", bopen: vs.bopen ?? "", aat: vs.aat ?? "", bat: vs.bat ?? "" };
}

/** Chooser of one side: run, stage, layer. */
class SideChooser {
  readonly el: HTMLElement;
  readonly runSel: HTMLSelectElement;
  readonly stageSel: HTMLSelectElement;
  readonly layerSel: HTMLSelectElement;
  private runs: RunInfo[] = [];

  constructor(readonly side: Side, private readonly api: Api, private readonly onChange: () => void) {
    const id = `adl-cmp-${side}`;
    this.runSel = h("select", { id, "data-testid": `compare-${side}-run`, "aria-label": `${t(side === "a" ? "sideA" : "sideB")} ${t("run")}` });
    this.stageSel = h("select", { "data-testid": `compare-${side}-stage`, "aria-label": `${t(side === "a" ? "sideA" : "sideB")} ${t("stage")}` });
    this.layerSel = h("select", { "data-testid": `compare-${side}-layer`, "aria-label": `${t(side === "a" ? "sideA" : "sideB")} ${t("layer")}` });
    this.runSel.addEventListener("change", async () => {
      const r = this.run();
      if (!r) return;
      const layer = Number(this.layerSel.value);
      await this.fill({ run: r.run, stage: r.default_stage, layer });
      this.onChange();
    });
    this.stageSel.addEventListener("change", async () => {
      await this.fill({ run: this.runSel.value, stage: Number(this.stageSel.value), layer: Number(this.layerSel.value) });
      this.onChange();
    });
    this.layerSel.addEventListener("change", () => this.onChange());
    const tag = text("span", side === "a" ? "A" : "B", { class: `sidetag ${side}` });
    tag.title = t(side === "a" ? "sideA" : "sideB");
    this.el = h("span", { class: "grp side", "data-testid": `compare-side-${side}` }, tag, this.runSel, this.stageSel, this.layerSel);
  }

  setRuns(runs: RunInfo[]): void {
    this.runs = runs;
    clear(this.runSel);
    for (const r of runs) {
      const o = h("option", { value: r.run });
      o.textContent = r.run;
      this.runSel.appendChild(o);
    }
  }

  run(): RunInfo | undefined {
    return this.runs.find((r) => r.run === this.runSel.value);
  }

  private async layersOf(run: RunInfo, stage: number): Promise<LayerSummary[]> {
    if (stage === run.default_stage) return run.layers;
    try {
      return (await this.api.overview(run.run, stage)).layers;
    } catch {
      return run.layers;
    }
  }

  /** Fills the selects for a choice (falls back to what exists) and returns what is selected. */
  async fill(c: SideChoice): Promise<SideChoice> {
    const run = this.runs.find((r) => r.run === c.run) ?? this.runs[0];
    if (!run) return c;
    this.runSel.value = run.run;
    clear(this.stageSel);
    const stages = [...run.stages].sort((x, y) => x.index - y.index);
    for (const s of stages) {
      const o = h("option", { value: s.index });
      o.textContent = `${s.file.replace(/\.txt$/, "")}${s.index === run.default_stage ? ` (${t("stageFinal")})` : ""}`;
      this.stageSel.appendChild(o);
    }
    const stage = stages.some((s) => s.index === c.stage) ? c.stage : run.default_stage;
    this.stageSel.value = String(stage);
    const layers = await this.layersOf(run, stage);
    clear(this.layerSel);
    for (const l of layers) {
      const o = h("option", { value: l.layer });
      o.textContent = t("layerOption", { n: l.layer, kind: l.kind });
      this.layerSel.appendChild(o);
    }
    const layer = layers.some((l) => l.layer === c.layer) ? c.layer : layers[0]?.layer ?? 0;
    this.layerSel.value = String(layer);
    for (const sel of [this.runSel, this.stageSel, this.layerSel]) fitToChoice(sel);
    return { run: run.run, stage, layer };
  }

  value(): SideChoice {
    return { run: this.runSel.value, stage: Number(this.stageSel.value), layer: Number(this.layerSel.value) };
  }
}

export class CompareView implements PanelView {
  readonly el: HTMLDivElement;
  readonly panes: Record<Side, GraphPane>;
  private choosers: Record<Side, SideChooser>;
  private legendEl: HTMLDivElement;
  private headEls: Record<Side, HTMLDivElement>;
  private sideEl: HTMLDivElement;
  private selEl: HTMLDivElement;
  private tableEl: HTMLDivElement;
  private topEl: HTMLDivElement;
  private listsEl: HTMLDivElement;
  private syncBox: HTMLInputElement;
  private runs: RunInfo[] = [];
  private theme: Theme = "light";
  /** The API's answer, and that answer with the user's manual pairs applied (what is shown). */
  private raw: CompareResponse | null = null;
  private res: CompareResponse | null = null;
  private manual: [string, string][] = [];
  /** The unmatched node last selected on each side (a manual pair in the making). */
  private pick: Record<Side, string | null> = { a: null, b: null };
  private model: CompareModel | null = null;
  private docs: Record<Side, LayerResponse | null> = { a: null, b: null };
  private sort: DeltaSort = DEFAULT_DELTA_SORT;
  private active: Side = "a";
  private loadSeq = 0;
  private unmatched: ListedNode[] = [];
  private unmatchedIdx = -1;
  private listTab: "only_a" | "only_b" | "changed" = "only_a";
  private loaded: { a: SideChoice; b: SideChoice } | null = null;
  private loading = false;
  /** Which sides have GPU times (a trace); deltas exist only where both do. */
  private timed: Record<Side, boolean> = { a: false, b: false };
  /** Each pane's first expansion (what its open groups in the URL are told against). */
  private base: Record<Side, Set<string> | null> = { a: null, b: null };
  private viewTimer = 0;

  /** The sides last asked for (loaded, or being loaded). */
  private requested = "";

  constructor(private readonly api: Api, private readonly store: Store<PanelState>, private readonly cb: CompareCallbacks) {
    this.el = h("div", { class: "adl-view adl-compare", "data-testid": "compare-view" });
    const bar = h("div", { class: "adl-vbar" });
    this.choosers = {
      a: new SideChooser("a", api, () => this.onChoose()),
      b: new SideChooser("b", api, () => this.onChoose()),
    };
    const swap = h("button", { class: "btn", type: "button", title: `${t("swapSides")} (X)`, "data-testid": "compare-swap" }, "⇄");
    swap.addEventListener("click", () => this.swap());
    this.syncBox = h("input", { type: "checkbox", checked: true, "data-testid": "compare-sync", id: "adl-cmp-sync" });
    const syncLbl = h("label", { class: "chk", for: "adl-cmp-sync", title: t("syncTitle") }, this.syncBox, t("syncPanes"));
    const expAll = h("button", { class: "btn", type: "button", "data-testid": "compare-expand-all" });
    expAll.textContent = t("expandAll");
    expAll.addEventListener("click", () => void this.setDepth(99));
    const colGroups = h("button", { class: "btn", type: "button", "data-testid": "compare-collapse" });
    colGroups.textContent = t("collapseToGroups");
    colGroups.title = t("collapseToGroupsTitle");
    colGroups.addEventListener("click", () => void this.setDepth(2));
    bar.append(this.choosers.a.el, swap, this.choosers.b.el, h("span", { class: "spacer" }), syncLbl, expAll, colGroups);
    this.el.appendChild(bar);
    this.legendEl = h("div", { class: "adl-clegend", "data-testid": "compare-legend" });
    this.el.appendChild(this.legendEl);

    const main = h("div", { class: "adl-vmain" });
    const panesEl = h("div", { class: "adl-cpanes" });
    this.headEls = { a: h("div", { class: "adl-phead a", "data-testid": "compare-head-a" }), b: h("div", { class: "adl-phead b", "data-testid": "compare-head-b" }) };
    const mk = (side: Side) =>
      new GraphPane(`compare-pane-${side}`, {
        onSelect: (k) => void this.onSelect(side, k),
        onToggle: (k) => void this.onToggle(side, k),
        onHover: (k) => this.onHover(side, k),
        onView: (from, to, auto) => this.onView(side, from, to, auto),
        onActivate: () => (this.active = side),
      }, () => this.paintFor(side));
    this.panes = { a: mk("a"), b: mk("b") };
    for (const side of ["a", "b"] as Side[]) {
      panesEl.appendChild(h("div", { class: `adl-cpane ${side}` }, this.headEls[side], this.panes[side].el));
    }
    this.sideEl = h("div", { class: "adl-side adl-cside", "data-testid": "compare-side" });
    this.selEl = h("div", { class: "sec", "data-testid": "compare-selection" });
    this.tableEl = h("div", { class: "sec", "data-testid": "compare-deltas" });
    this.topEl = h("div", { class: "sec", "data-testid": "compare-top" });
    this.listsEl = h("div", { class: "sec", "data-testid": "compare-unmatched" });
    this.sideEl.append(h("div", { class: "adl-maps" }, this.panes.a.minimap.el, this.panes.b.minimap.el), this.selEl, this.tableEl, this.listsEl, this.topEl);
    main.append(panesEl, this.sideEl);
    this.el.appendChild(main);
    this.theme = store.get().theme;
  }

  /** Follows the store: the theme, the run list; while shown, the sides and the pairs matched by hand. */
  follow(st: Readonly<PanelState>, changed: ReadonlySet<keyof PanelState>): void {
    if (changed.has("theme")) this.setTheme(st.theme);
    if (changed.has("runs")) this.setRuns(st.runs);
    if (st.view !== "compare" || !st.compare || !changedAny(changed, "view", "compare", "runs")) return;
    void activity.track(this.open(st.compare.a, st.compare.b, parsePairs(st.compare.mp)));
  }

  /** Records the sides and the pairs matched by hand in the store (and so in the URL). */
  private record(a: SideChoice, b: SideChoice, panes?: ComparePanes): void {
    // The panes' state goes with the sides it was recorded on.
    const cur = this.store.get().compare;
    const keep = panes ?? (cur && sidesKey(cur.a, cur.b) === sidesKey(a, b) ? cur.panes : undefined);
    this.store.set({ compare: keep ? { a, b, mp: formatPairs(this.manual), panes: keep } : { a, b, mp: formatPairs(this.manual) } });
  }

  /** Each pane's open groups and place into the store (and so the URL), after the user changed them. */
  private notePanes(): void {
    const cur = this.loaded;
    if (!cur || this.loading) return;
    const side = (x: Side) => {
      const p = this.panes[x];
      const base = this.base[x];
      return {
        open: p.hier && base ? encodeOpen(p.hier, p.expanded, base) : "",
        at: p.hier ? formatAt(cur[x].layer, p.getView()) ?? "" : "",
      };
    };
    const a = side("a");
    const b = side("b");
    this.record(cur.a, cur.b, { aopen: a.open, bopen: b.open, aat: a.at, bat: b.at });
  }

  /** The user moved a pane: the places go into the store (at most every 250 ms). */
  private noteView(): void {
    clearTimeout(this.viewTimer);
    this.viewTimer = window.setTimeout(() => this.notePanes(), 250);
  }

  private setRuns(runs: RunInfo[]): void {
    this.runs = runs;
    this.choosers.a.setRuns(runs);
    this.choosers.b.setRuns(runs);
  }

  private setTheme(th: Theme): void {
    this.theme = th;
    this.panes.a.setTheme(th);
    this.panes.b.setTheme(th);
    this.renderLegend();
    this.renderSide();
  }

  /** The sides shown (or being loaded). */
  current(): { a: SideChoice; b: SideChoice } | null {
    return this.loaded;
  }

  isLoading(): boolean {
    return this.loading;
  }

  /**
   * Opens a comparison (no reload when it is shown or being loaded); `pairs`: manual matches to
   * apply. Sides the choosers cannot offer (a layer a stage lacks) fall back to what exists.
   */
  private async open(a: SideChoice, b: SideChoice, pairs: [string, string][]): Promise<void> {
    const want = sidesKey(a, b);
    if (want === this.requested && (this.loading || this.res)) {
      if (!this.loading && JSON.stringify(pairs) !== JSON.stringify(this.manual)) this.setManual(pairs);
      return;
    }
    this.requested = want;
    const fa = await this.choosers.a.fill(a);
    const fb = await this.choosers.b.fill(b);
    if (want !== this.requested) return;
    this.requested = sidesKey(fa, fb);
    await this.load(fa, fb, pairs);
  }

  /** Node pairs matched by hand. */
  manualPairs(): [string, string][] {
    return this.manual.map(([x, y]) => [x, y]);
  }

  /** Replaces the manual pairs and shows the comparison with them. */
  setManual(pairs: [string, string][]): void {
    this.manual = pairs.map(([x, y]) => [x, y]);
    this.pick = { a: null, b: null };
    this.recompute();
    this.panes.a.repaint();
    this.panes.b.repaint();
    this.renderLegend();
    this.renderSide();
    const cur = this.loaded;
    if (cur) this.record(cur.a, cur.b);
  }

  private recompute(): void {
    if (!this.raw) return;
    this.res = applyManualPairs(this.raw, this.manual, this.docs.a, this.docs.b);
    // Keep only the pairs that applied (a pair whose nodes are gone is dropped).
    const applied = new Set((this.res.matches ?? []).filter((m) => m.manual).map((m) => `${m.a}\u0000${m.b}`));
    this.manual = this.manual.filter(([x, y]) => applied.has(`${x}\u0000${y}`));
    this.model = buildCompareModel(this.res);
    const lists = listedNodes(this.model, this.docs.a, this.docs.b);
    this.unmatched = [...lists.onlyA, ...lists.onlyB];
    this.unmatchedIdx = -1;
  }

  private onChoose(): void {
    this.manual = [];
    this.record(this.choosers.a.value(), this.choosers.b.value());
  }

  private swap(): void {
    this.manual = [];
    this.record(this.choosers.b.value(), this.choosers.a.value());
  }

  private async load(a: SideChoice, b: SideChoice, pairs: [string, string][] = []): Promise<void> {
    const seq = ++this.loadSeq;
    this.loaded = { a, b };
    this.manual = pairs;
    this.pick = { a: null, b: null };
    this.loading = true;
    // The panes' open groups and places the URL names for these sides (a reload, a link).
    const st = this.store.get().compare;
    const want = st && sidesKey(st.a, st.b) === sidesKey(a, b) ? st.panes : undefined;
    this.record(a, b);
    // Keep the user's expansion (by in-layer path) across reloads.
    const prevHier = this.panes.a.hier;
    const prevExpanded = this.panes.a.expanded;
    this.panes.a.setBusy(t("loading"));
    this.panes.b.setBusy(t("loading"));
    let res: CompareResponse;
    let da: LayerResponse;
    let db: LayerResponse;
    try {
      [res, da, db] = await Promise.all([this.api.compare(a, b), this.api.layer(a.run, a.stage, a.layer), this.api.layer(b.run, b.stage, b.layer)]);
    } catch (e) {
      if (seq !== this.loadSeq) return;
      this.loading = false;
      this.panes.a.setBusy(null);
      this.panes.b.setBusy(null);
      this.cb.onError(e);
      return;
    }
    if (seq !== this.loadSeq) return;
    this.raw = res;
    this.docs = { a: da, b: db };
    // Kernel times are the stage's, not the run's: a run's trace is mapped onto one stage only.
    const hasTrace = (_c: SideChoice, d: LayerResponse) => layerTimed(d);
    this.timed = { a: hasTrace(a, da), b: hasTrace(b, db) };
    this.recompute();
    const lists = listedNodes(this.model!, da, db);
    this.listTab = lists.onlyA.length ? "only_a" : lists.onlyB.length ? "only_b" : "changed";
    if (this.manual.length !== pairs.length) this.record(a, b);
    const expandFor = (side: Side) => (hh: Hierarchy): Set<string> => {
      const base = defaultExpanded(hh);
      this.base[side] = base;
      const code = want?.[side === "a" ? "aopen" : "bopen"];
      const restored = code ? decodeOpen(hh, code, base) : null;
      if (restored) return restored;
      if (prevHier) return mirrorExpanded(prevExpanded, prevHier, hh, base);
      return base;
    };
    this.renderHeads();
    this.renderLegend();
    this.renderSide();
    // Both open readable (node text at full size) with every group of the default expansion open
    // (the statuses of all nodes show) and the hottest group in view.
    const opts = { initial: "readable" as const, keepExpanded: true };
    await Promise.all([this.panes.a.setLayers([da], expandFor("a"), opts), this.panes.b.setLayers([db], expandFor("b"), opts)]);
    if (seq !== this.loadSeq) return;
    const at = { a: parseAt(want?.aat ?? null, a.layer), b: parseAt(want?.bat ?? null, b.layer) };
    if (at.a || at.b) {
      for (const side of ["a", "b"] as Side[]) {
        const v = at[side];
        if (v) this.panes[side].setViewport(v);
      }
    } else this.alignPanes();
    this.loading = false;
  }

  // ---------------------------------------------------------------- painting

  private paintFor(side: Side): Paint {
    const pane = this.panes[side];
    const marks = new Map<string, LeafMark>();
    const m = this.model;
    const hier = pane.hier;
    const vis = pane.vis;
    const order: DiffStatus[] = side === "a" ? ["same", "changed", "only_a"] : ["same", "changed", "only_b"];
    if (m && hier && vis) {
      const st = statusByKey(m, side, hier);
      const agg = aggregateStatus(hier, st);
      const hasTime = this.bothTimed();
      for (const k of vis.leaves) {
        const it = hier.items.get(k);
        if (!it) continue;
        if (it.kind === "op" && it.node) {
          const status = st.get(k) ?? "same";
          const mark: LeafMark = { status };
          if (hasTime && (status === "same" || status === "changed")) {
            const d = m.match[side].get(it.node.id)?.delta_us ?? null;
            const b = deltaBadge(d, fmtUs);
            if (b) mark.badge = b;
          }
          marks.set(k, mark);
        } else if (it.kind === "group") {
          const counts = agg.get(k);
          if (counts) {
            const txt = countsBadge(counts, order);
            marks.set(k, { counts, badge: txt ? { text: txt, tone: "diff" } : undefined });
          }
        }
      }
      for (const c of vis.containers) {
        if (c.key === SCENE) continue;
        const counts = agg.get(c.key);
        const txt = countsBadge(counts, order);
        if (counts) marks.set(c.key, { counts, badge: txt ? { text: txt, tone: "diff" } : undefined });
      }
    }
    return { mode: "status", theme: this.theme, hot: new Map(), marks, statusOrder: COMPARE_STATUSES };
  }

  private bothTimed(): boolean {
    return this.timed.a && this.timed.b;
  }

  /** "A (run)" for each side without a trace. */
  private untimedSides(): string[] {
    const out: string[] = [];
    for (const side of ["a", "b"] as Side[]) if (!this.timed[side]) out.push(`${side.toUpperCase()} (${this.loaded?.[side].run ?? ""})`);
    return out;
  }

  // ---------------------------------------------------------------- synchronisation

  private other(side: Side): Side {
    return side === "a" ? "b" : "a";
  }

  private synced(): boolean {
    return this.syncBox.checked;
  }

  private onView(side: Side, from: { x: number; y: number; k: number }, to: { x: number; y: number; k: number }, auto: boolean): void {
    if (auto) return;
    this.noteView();
    if (!this.synced()) return;
    const o = this.panes[this.other(side)];
    if (!o.vis) return;
    const prev = o.getView();
    o.setViewport(followView(from, to, prev));
    if (o.graph.readableNow()) return;
    // Followed, the other pane would show nothing readable (its layer differs). A zoom out stops
    // there (its text would vanish); a zoom in is the same zoom about its own centre.
    if (to.k < from.k) {
      o.setViewport(prev);
      return;
    }
    if (to.k !== from.k) {
      const { w, h } = o.graph.viewSize();
      const f = to.k / from.k;
      const mid = zoomAt(prev, f, w / 2, h / 2);
      o.setViewport(mid);
      // Nothing there either: about its layer's left edge (the same factor in every case).
      if (!o.graph.readableNow()) {
        o.setViewport(zoomAt(prev, f, Math.max(16, Math.min(w / 2, o.graph.leftEdgeX() ?? w / 2)), h / 2));
        if (!o.graph.readableNow()) {
          // Still nothing: zoomed about its centre and moved across (never rescaled: both panes
          // zoom by one factor) to the nearest text that reads at that zoom.
          o.setViewport(mid);
          o.graph.panToReadable();
        }
      }
    }
  }

  private async onToggle(side: Side, key: string): Promise<void> {
    const pane = this.panes[side];
    if (!pane.hier || key === SCENE) return;
    pane.expanded = toggleGroup(pane.expanded, key);
    const open = pane.expanded.has(key);
    const jobs = [pane.relayout({ anchor: key, legible: open })];
    if (this.synced()) {
      const o = this.panes[this.other(side)];
      const rel = relGroupPath(key);
      const ok = o.hier && rel !== null ? keyForRel(o.hier, rel) : null;
      if (ok && o.expanded.has(ok) !== open) {
        o.expanded = toggleGroup(o.expanded, ok);
        jobs.push(o.relayout({ anchor: ok, legible: open }));
      }
    }
    await Promise.all(jobs);
    this.notePanes();
  }

  private async setDepth(depth: number): Promise<void> {
    const jobs: Promise<boolean>[] = [];
    for (const side of ["a", "b"] as Side[]) {
      const p = this.panes[side];
      if (!p.hier) continue;
      // What is under each pane's centre stays on screen.
      const anchor = p.graph.anchorKey() ?? undefined;
      const before = p.expanded.size;
      p.expanded = expandedToDepth(p.hier, depth);
      jobs.push(p.relayout({ anchor, legible: p.expanded.size > before, fit: !anchor }));
    }
    await Promise.all(jobs);
    this.notePanes();
  }

  /**
   * After a load, synchronised panes open aligned: the other pane takes the leading pane's zoom and
   * moves so that a node both draw is at the same place on screen in both (then a pan or zoom
   * moves the two alike from the start). The leading pane is the side with a trace when only one
   * has one (its readable view shows the hottest group), else A. The node is the matched one in
   * the leading pane's view nearest its upper middle; without one, a group both sides have.
   * Unsynchronised panes keep their own views.
   */
  private alignPanes(): void {
    if (!this.synced()) return;
    const lead: Side = !this.timed.a && this.timed.b ? "b" : "a";
    const other = this.other(lead);
    const lp = this.panes[lead];
    const op = this.panes[other];
    const pair = this.alignmentPair(lead);
    const v = lp.getView();
    if (!pair) {
      // Nothing in common: the same zoom at least, each from its layer's top-left.
      const ov = op.getView();
      if (ov.k !== v.k) op.setViewport({ k: v.k, x: ov.x, y: ov.y });
      op.showLeftEdge(null);
      return;
    }
    const at = lp.graph.screenOf(pair[0]);
    const ob = op.graph.boxOf(pair[1]);
    if (!at || !ob) return;
    op.setViewport({ k: v.k, x: at.x - ob.x * v.k, y: at.y - ob.y * v.k });
    // Aligned, the other layer may start left of its pane: both panes move across alike (they
    // stay aligned) for its left edge to come in, where the leading layer's edge stays in view.
    const dx = op.graph.leftEdgeShift();
    if (dx !== 0) {
      const lv = lp.getView();
      const moved = { ...lv, x: lv.x + dx };
      lp.setViewport(moved);
      const ov = op.getView();
      if (lp.graph.leftEdgeShift() === 0) op.setViewport({ ...ov, x: ov.x + dx });
      // The other pane moved across shows no text: both moved up or down alike, the least that
      // brings text into it with both layers' left edges and the leading pane's text still in view
      // (the aligned node kept on screen where that can be).
      if (lp.graph.leftEdgeShift() === 0 && lp.graph.readableNow() && !op.graph.readableNow()) this.moveBothDown(lp, op, pair[0]);
      // Kept only where both still show text.
      if (lp.graph.leftEdgeShift() !== 0 || !op.graph.readableNow() || !lp.graph.readableNow()) {
        lp.setViewport(lv);
        op.setViewport(ov);
        // Else the other pane alone, where it still shows text (the panes then differ across).
        // (A shift of a few dozen px keeps nearly all of what was in view: always made.)
        const shift = op.graph.leftEdgeShift();
        op.setViewport({ ...ov, x: ov.x + shift });
        if (Math.abs(shift) > 48 && !op.graph.readableNow()) op.setViewport(ov);
      }
    }
    // The other layer's edge still out (it starts further left than the view is wide): both
    // zoomed out alike about one point on screen (they stay aligned, at one zoom) for it to come
    // in, where both still show text.
    const out = op.graph.leftEdgeX();
    // (Not below the zoom where nodes are drawn: the aligned nodes would no longer show.)
    if (op.graph.leftEdgeShift() !== 0 && out !== null && out < 16) {
      const { w, h } = op.graph.viewSize();
      const f = (w / 2 - 16) / (w / 2 - out);
      const lv = lp.getView();
      const ov = op.getView();
      lp.setViewport(zoomAt(lv, f, w / 2, h / 3));
      op.setViewport(zoomAt(ov, f, w / 2, h / 3));
      if (!lp.graph.readableNow() || !op.graph.readableNow()) this.moveBothDown(lp, op, pair[0], true);
      if (lv.k * f < SUMMARY_K || !lp.graph.readableNow() || !op.graph.readableNow() || lp.graph.leftEdgeShift() !== 0 || op.graph.leftEdgeShift() !== 0) {
        lp.setViewport(lv);
        op.setViewport(ov);
      }
    }
    // Never an empty pane: the other pane zooms out to its titles if it shows nothing readable.
    if (!op.graph.readableNow()) op.graph.ensureReadable();
    // A layer's left edge a few dozen px out (zooming out to the titles can leave it there): moved
    // across for it, then (if that leaves nothing readable) zoomed out about that edge, which stays
    // in view, to the titles. (Further out, the panes stay aligned at one zoom.)
    const edge = op.graph.leftEdgeShift();
    if (edge !== 0 && Math.abs(edge) <= 48) {
      const ov = op.getView();
      op.setViewport({ ...ov, x: ov.x + edge });
      if (!op.graph.readableNow()) op.graph.ensureReadable();
    }
  }

  /**
   * Moves both panes up or down by one amount (they stay aligned, at one zoom) for the other pane
   * `op` to show text, keeping both layers' left edges and the leading pane's text in view; the
   * least move that also keeps node `keep` on screen in the leading pane, else (unless `keepOnly`)
   * the least one.
   * Nothing moves where no such move exists.
   */
  private moveBothDown(lp: GraphPane, op: GraphPane, keep: string, keepOnly = false): void {
    const lv = lp.getView();
    const ov = op.getView();
    const { w, h } = lp.graph.viewSize();
    const shifts = op.graph.readableShiftsDown().slice(0, 60);
    const kept = (): boolean => {
      const at = lp.graph.screenOf(keep);
      const b = lp.graph.boxOf(keep);
      if (!at || !b) return false;
      const k = lp.getView().k;
      return at.x + b.w * k > 0 && at.y + b.h * k > 0 && at.x < w && at.y < h;
    };
    for (const needKeep of keepOnly ? [true] : [true, false]) {
      for (const dy of shifts) {
        lp.setViewport({ ...lv, y: lv.y + dy });
        op.setViewport({ ...ov, y: ov.y + dy });
        if (op.graph.readableNow() && lp.graph.readableNow() && lp.graph.leftEdgeShift() === 0 && op.graph.leftEdgeShift() === 0 && (!needKeep || kept())) return;
      }
    }
    lp.setViewport(lv);
    op.setViewport(ov);
  }

  /**
   * The keys (leading side, other side) of the node to align the panes on: of the op nodes both
   * panes draw and the comparison matched, the one in the leading pane's view nearest the point a
   * third down its middle; else the innermost group under that view's centre and its counterpart.
   */
  private alignmentPair(lead: Side): [string, string] | null {
    const lp = this.panes[lead];
    const op = this.panes[this.other(lead)];
    const { w, h } = lp.graph.viewSize();
    const cx = w / 2;
    const cy = h / 3;
    let best: [string, string] | null = null;
    let bestD = Infinity;
    for (const key of lp.vis?.leaves ?? []) {
      if (!key.startsWith("n:")) continue;
      const pk = this.partnerKey(lead, key);
      if (!pk || !op.isDrawn(pk)) continue;
      const at = lp.graph.screenOf(key);
      const b = lp.graph.boxOf(key);
      if (!at || !b) continue;
      const bw = b.w * lp.getView().k;
      const bh = b.h * lp.getView().k;
      if (at.x + bw < 0 || at.y + bh < 0 || at.x > w || at.y > h) continue;
      const dx = Math.max(at.x - cx, 0, cx - at.x - bw);
      const dy = Math.max(at.y - cy, 0, cy - at.y - bh);
      const d = dx * dx + dy * dy;
      if (d < bestD) {
        bestD = d;
        best = [key, pk];
      }
    }
    if (best) return best;
    const g = lp.graph.anchorKey();
    const pg = g && isGroupKey(g) ? this.partnerKey(lead, g) : null;
    return g && pg && op.graph.boxOf(pg) ? [g, pg] : null;
  }

  private partnerKey(side: Side, key: string | null): string | null {
    if (!key || !this.model) return null;
    const o = this.other(side);
    if (key.startsWith("n:")) {
      const id = this.model.partner[side].get(key.slice(2));
      return id ? opKey(id) : null;
    }
    if (isGroupKey(key)) {
      const rel = relGroupPath(key);
      const oh = this.panes[o].hier;
      return oh && rel !== null ? keyForRel(oh, rel) : null;
    }
    return null;
  }

  private onHover(side: Side, key: string | null): void {
    this.panes[this.other(side)].setHovered(this.partnerKey(side, key));
  }

  private async onSelect(side: Side, key: string | null, centreSelf = false): Promise<void> {
    const pane = this.panes[side];
    const o = this.other(side);
    const id = key && key.startsWith("n:") ? key.slice(2) : null;
    const st = id ? this.model?.status[side].get(id) : undefined;
    const unmatched = st === "only_a" || st === "only_b";
    this.pick[side] = unmatched ? id : null;
    const pk = this.partnerKey(side, key);
    const jobs: Promise<void>[] = [pane.select(key, { centre: centreSelf, reveal: centreSelf })];
    if (pk) {
      this.pick[o] = null;
      jobs.push(this.panes[o].select(pk, { centre: true, reveal: true }));
    } else if (!(unmatched && this.pick[o])) {
      // An unmatched node keeps the other side's unmatched selection: the two can be matched by hand.
      this.pick[o] = null;
      jobs.push(this.panes[o].select(null));
    }
    await Promise.all(jobs);
    this.active = side;
    this.renderSelection(side, key);
  }

  /** Selects a node by id on one side (reveals and centres it there, and its partner opposite). */
  async jumpTo(side: Side, id: string): Promise<boolean> {
    const k = this.panes[side].keyForNode(id);
    if (!k) return false;
    this.active = side;
    await this.onSelect(side, k, true);
    return true;
  }

  /** Both panes side by side. */
  exportParts(): ViewExport | null {
    const cur = this.current();
    if (!cur) return null;
    const parts: ExportPart[] = [];
    const restores: (() => void)[] = [];
    for (const side of ["a", "b"] as const) {
      const p = this.panes[side].graph.prepareExport();
      if (!p) continue;
      restores.push(p.restore);
      const c = cur[side];
      parts.push({ svg: p.svg, width: p.width, height: p.height, title: `${side.toUpperCase()} · ${c.run} · ${t("stage")} ${c.stage} · ${t("layerTitle", { n: c.layer })}` });
    }
    const restore = () => restores.forEach((f) => f());
    if (!parts.length) return null;
    return { parts, restore, name: ["compare", cur.a.run, `s${cur.a.stage}`, `L${cur.a.layer}`, "vs", cur.b.run, `s${cur.b.stage}`, `L${cur.b.layer}`] };
  }

  // ---------------------------------------------------------------- keyboard

  handleKey(ev: KeyboardEvent): boolean {
    const k = ev.key;
    if (k === "n" || k === "N") {
      if (!this.unmatched.length) return true;
      this.unmatchedIdx = stepIndex(this.unmatched.length, this.unmatchedIdx, ev.shiftKey ? -1 : 1);
      const it = this.unmatched[this.unmatchedIdx];
      void this.jumpTo(it.side, it.id);
      return true;
    }
    if (k === "x" || k === "X") {
      this.swap();
      return true;
    }
    if (k === "Escape") {
      void this.onSelect(this.active, null);
      return true;
    }
    if (k === "m" || k === "M") {
      for (const p of [this.panes.a, this.panes.b]) p.minimap.setMode(p.minimap.isShown() ? "off" : "on");
      return true;
    }
    if (k === "f" || k === "F") {
      this.panes.a.graph.fit(true);
      this.panes.b.graph.fit(true);
      return true;
    }
    return this.panes[this.active].graph.handleKey(ev);
  }

  // ---------------------------------------------------------------- headers, legend, side panel

  private renderHeads(): void {
    const res = this.res;
    for (const side of ["a", "b"] as Side[]) {
      const el = this.headEls[side];
      clear(el);
      const c = res?.[side];
      const doc = this.docs[side];
      if (!c || !doc) continue;
      const run = this.runs.find((r) => r.run === c.run);
      const stage = run?.stages.find((s) => s.index === c.stage);
      el.appendChild(text("span", side === "a" ? "A" : "B", { class: `sidetag ${side}` }));
      el.appendChild(text("span", c.run, { class: "run mono" }));
      el.appendChild(text("span", `${stage ? stage.transform : c.stage}`, { class: "dim" }));
      el.appendChild(text("span", `${t("layerOption", { n: c.layer, kind: doc.kind })}`, {}));
      el.appendChild(text("span", nodesText(doc.nodes.length), { class: "dim" }));
      if (this.timed[side]) el.appendChild(text("span", fmtUs(c.time_us ?? 0), { class: "time" }));
      else el.appendChild(text("span", t("noTraceShort"), { class: "notrace", "data-testid": `compare-notrace-${side}` }));
    }
  }

  private renderLegend(): void {
    const el = this.legendEl;
    clear(el);
    const res = this.res;
    const counts = this.model?.counts;
    for (const s of COMPARE_STATUSES) {
      const sc = statusColor(s, this.theme);
      const sw = h("span", { class: "sw" });
      sw.style.background = sc.fill;
      sw.style.borderColor = sc.stroke;
      const n = text("b", String(counts ? counts[s as keyof typeof counts] : 0), { "data-testid": `compare-count-${s}` });
      const item = h("span", { class: "item", "data-status": s }, sw, `${t(STATUS_LABEL[s])} `, n);
      el.appendChild(item);
    }
    el.appendChild(h("span", { class: "sep" }));
    const slower = h("span", { class: "pill slower" }, "+");
    const faster = h("span", { class: "pill faster" }, "−");
    el.appendChild(h("span", { class: "item" }, slower, t("slowerInB")));
    el.appendChild(h("span", { class: "item" }, faster, t("fasterInB")));
    el.appendChild(h("span", { class: "item" }, text("span", "~2 −3", { class: "pill diff" }), t("countsOnGroups")));
    if (res) {
      const L = deltaRows(res).whole;
      const tot = h("span", { class: "item total", "data-testid": "compare-layer-delta" });
      const side = (v: number, timed: boolean) => (timed ? fmtUs(v) : t("noTraceShort"));
      tot.append(`${t("layerTime")}: ${side(L.a, this.timed.a)} → ${side(L.b, this.timed.b)} `);
      if (this.bothTimed()) tot.appendChild(text("b", `${fmtSignedUs(L.delta)} (${fmtSignedPct(L.pct)})`, { class: L.delta > 0 ? "slower" : L.delta < 0 ? "faster" : "" }));
      else tot.dataset.missing = this.untimedSides().join(" ");
      el.appendChild(tot);
    }
  }

  private renderSide(): void {
    this.renderSelection(this.active, this.panes[this.active].selected);
    this.renderTable();
    this.renderLists();
    this.renderTop();
  }

  private renderTable(): void {
    const el = this.tableEl;
    clear(el);
    el.appendChild(text("h3", t("deltaTable")));
    const res = this.res;
    if (!res) return;
    const { groups, whole } = deltaRows(res);
    const both = this.bothTimed();
    const missing = this.untimedSides();
    if (missing.length === 2) el.appendChild(text("p", t("compareNoTrace"), { class: "hint", "data-testid": "compare-missing" }));
    else if (missing.length === 1) el.appendChild(text("p", t("compareNoTraceSide", { side: missing[0] }), { class: "hint", "data-testid": "compare-missing" }));
    const rows = sortDeltaRows(groups, this.sort);
    const table = h("table", { class: "tbl deltas", "data-testid": "delta-table" });
    const head = h("tr");
    const cols: [DeltaSortKey, string][] = [
      ["group", t("group")], ["a", "A"], ["b", "B"], ["delta", "Δ"], ["pct", "Δ%"],
    ];
    for (const [key, label] of cols) {
      const th = h("th", { "aria-sort": this.sort.key === key ? (this.sort.dir > 0 ? "ascending" : "descending") : "none" });
      const btn = h("button", { class: "sortbtn", type: "button", "data-sort": key, "data-testid": `delta-sort-${key}`, title: t("sortBy") });
      btn.textContent = `${label}${this.sort.key === key ? (this.sort.dir > 0 ? " ▲" : " ▼") : ""}`;
      btn.addEventListener("click", () => {
        this.sort = nextSort(this.sort, key);
        this.renderTable();
      });
      th.appendChild(btn);
      head.appendChild(th);
    }
    table.appendChild(h("thead", {}, head));
    const maxAbs = Math.max(1e-9, ...rows.map((r) => Math.abs(r.delta)), Math.abs(whole.delta));
    const val = (v: number, side: Side) => (this.timed[side] ? fmtUs(v) : t("noTraceShort"));
    const row = (r: DeltaRow) => {
      const tr = h("tr", { "data-group": r.whole ? "" : r.group });
      if (both) tr.dataset.delta = r.delta.toFixed(3);
      else tr.dataset.missing = missing.join(" ");
      if (r.whole) tr.setAttribute("data-testid", "delta-layer");
      else tr.setAttribute("data-testid", "delta-row");
      const name = h("td", {});
      if (!r.whole) {
        const chip = h("span", { class: "dot" });
        chip.style.background = groupColor(r.group, this.theme).bar;
        name.append(chip, r.group);
      } else name.textContent = t("wholeLayer");
      const dcell = h("td", { class: `num ${r.delta > 0 ? "slower" : r.delta < 0 ? "faster" : ""}` });
      const bar = h("span", { class: "dbar" });
      const fill = h("span", { class: r.delta > 0 ? "fill slower" : "fill faster" });
      fill.style.width = `${Math.min(100, (Math.abs(r.delta) / maxAbs) * 100).toFixed(1)}%`;
      bar.appendChild(fill);
      if (both) dcell.append(fmtSignedUs(r.delta), bar);
      else dcell.append("–");
      tr.append(name, text("td", val(r.a, "a"), { class: "num" }), text("td", val(r.b, "b"), { class: "num" }), dcell,
        text("td", both ? fmtSignedPct(r.pct) : "–", { class: `num ${both && r.delta > 0 ? "slower" : both && r.delta < 0 ? "faster" : ""}` }));
      return tr;
    };
    const body = h("tbody");
    for (const r of rows) body.appendChild(row(r));
    table.appendChild(body);
    table.appendChild(h("tfoot", {}, row(whole)));
    el.appendChild(table);
  }

  private renderTop(): void {
    const el = this.topEl;
    clear(el);
    const res = this.res;
    if (!res || !this.bothTimed()) return;
    const top = topNodeDeltas(res, 10);
    if (!top.length) return;
    el.appendChild(text("h3", t("topNodeDeltas")));
    const ul = h("ul", { class: "links", "data-testid": "top-deltas" });
    for (const m of top) {
      const a = this.docs.a?.nodes.find((n) => n.id === m.a);
      const btn = h("button", { class: "link", type: "button" });
      btn.append(text("span", a?.label || m.op || m.a, {}), text("span", ` %${m.a}`, { class: "dim mono" }));
      btn.addEventListener("click", () => void this.jumpTo("a", m.a));
      const li = h("li", {}, btn, text("span", ` ${fmtSignedUs(m.delta_us)}`, { class: `tag ${m.delta_us > 0 ? "slower" : "faster"}` }));
      ul.appendChild(li);
    }
    el.appendChild(ul);
  }

  private renderLists(): void {
    const el = this.listsEl;
    clear(el);
    const m = this.model;
    if (!m) return;
    const lists = listedNodes(m, this.docs.a, this.docs.b);
    el.appendChild(text("h3", t("unmatchedTitle")));
    const seg = h("div", { class: "seg", role: "tablist" });
    const tabs: ["only_a" | "only_b" | "changed", string, ListedNode[]][] = [
      ["only_a", t("statusOnlyA"), lists.onlyA],
      ["only_b", t("statusOnlyB"), lists.onlyB],
      ["changed", t("statusChanged"), lists.changed],
    ];
    for (const [key, label, items] of tabs) {
      const b = h("button", { type: "button", role: "tab", "aria-pressed": String(this.listTab === key), "data-testid": `unmatched-tab-${key}` });
      b.textContent = `${label} (${items.length})`;
      b.addEventListener("click", () => {
        this.listTab = key;
        this.renderLists();
      });
      seg.appendChild(b);
    }
    el.appendChild(seg);
    const items = tabs.find((x) => x[0] === this.listTab)![2];
    const ul = h("ul", { class: "links nodelist", "data-testid": `unmatched-list-${this.listTab}` });
    if (!items.length) ul.appendChild(text("li", t("none"), { class: "dim" }));
    for (const it of items) {
      const btn = h("button", { class: "link", type: "button", "data-testid": "unmatched-item", "data-side": it.side, "data-node-id": it.id });
      const sw = h("span", { class: "dot" });
      sw.style.background = statusColor(it.status, this.theme).solid;
      btn.append(sw, text("span", it.label, {}), text("span", ` %${it.id}`, { class: "dim mono" }));
      if (it.group) btn.appendChild(text("span", ` · ${it.group}`, { class: "dim" }));
      btn.addEventListener("click", () => void this.jumpTo(it.side, it.id));
      ul.appendChild(h("li", {}, btn));
    }
    el.appendChild(ul);
    if (this.unmatched.length) el.appendChild(text("p", t("unmatchedHint"), { class: "hint" }));
    if (this.manual.length) {
      el.appendChild(text("h3", `${t("manualPairs")} (${this.manual.length})`));
      const ml = h("ul", { class: "links", "data-testid": "compare-manual-list" });
      for (const [x, y] of this.manual) {
        const go = h("button", { class: "link", type: "button" });
        go.append(text("span", `%${x}`, { class: "mono" }), " ↔ ", text("span", `%${y}`, { class: "mono" }));
        go.addEventListener("click", () => void this.jumpTo("a", x));
        const un = h("button", { class: "btn xs", type: "button", title: t("manualUnmatch"), "aria-label": t("manualUnmatch") }, "×");
        un.addEventListener("click", () => this.setManual(this.manual.filter(([p, q]) => !(p === x && q === y))));
        ml.appendChild(h("li", {}, go, " ", un));
      }
      el.appendChild(ml);
    }
  }

  private renderSelection(side: Side, key: string | null): void {
    const el = this.selEl;
    clear(el);
    const m = this.model;
    if (!m || !key) {
      el.appendChild(text("h3", t("compareSelection")));
      el.appendChild(text("p", t("compareHint"), { class: "hint" }));
      return;
    }
    const pane = this.panes[side];
    const it = pane.hier?.items.get(key);
    el.appendChild(text("h3", t("compareSelection")));
    if (!it) return;
    if (this.pick.a && this.pick.b) {
      const [pa, pb] = [this.pick.a, this.pick.b];
      const card = h("div", { class: "manual", "data-testid": "compare-manual" });
      card.appendChild(text("div", t("manualPairTitle"), { class: "sub" }));
      const la = this.docs.a?.nodes.find((n) => n.id === pa);
      const lb = this.docs.b?.nodes.find((n) => n.id === pb);
      card.appendChild(h("div", { class: "pairline" }, text("span", "A", { class: "sidetag a" }), text("span", ` ${la?.label ?? pa} `, {}), text("span", `%${pa}`, { class: "mono dim" })));
      card.appendChild(h("div", { class: "pairline" }, text("span", "B", { class: "sidetag b" }), text("span", ` ${lb?.label ?? pb} `, {}), text("span", `%${pb}`, { class: "mono dim" })));
      const btn = h("button", { class: "btn", type: "button", "data-testid": "compare-manual-match" });
      btn.textContent = t("manualMatch");
      btn.addEventListener("click", () => this.setManual([...this.manual, [pa, pb]]));
      card.appendChild(btn);
      el.appendChild(card);
      return;
    }
    if (it.kind !== "op" || !it.node) {
      // A group: its counts on both sides.
      el.appendChild(text("div", publicId(key), { class: "mono" }));
      const o = this.other(side);
      const pk = this.partnerKey(side, key);
      const ca = aggregateStatus(pane.hier!, statusByKey(m, side, pane.hier!)).get(key);
      const oh = this.panes[o].hier;
      const cb = pk && oh ? aggregateStatus(oh, statusByKey(m, o, oh)).get(pk) : undefined;
      const line = (s: Side, c: typeof ca) => text("div", `${s.toUpperCase()}: ${c ? COMPARE_STATUSES.filter((x) => c[x]).map((x) => `${t(STATUS_LABEL[x])} ${c[x]}`).join(" · ") : t("none")}`, { class: "sub" });
      el.append(line(side, ca), line(o, cb));
      return;
    }
    const id = it.node.id;
    const match: CompareMatch | undefined = m.match[side].get(id);
    const status = m.status[side].get(id) ?? "same";
    const aId = side === "a" ? id : match?.a;
    const bId = side === "b" ? id : match?.b;
    const na = aId ? this.docs.a?.nodes.find((n) => n.id === aId) : undefined;
    const nb = bId ? this.docs.b?.nodes.find((n) => n.id === bId) : undefined;
    const chip = h("span", { class: "chip", "data-testid": "compare-selection-status" });
    const sc = statusColor(status, this.theme);
    chip.style.background = sc.fill;
    chip.style.borderColor = sc.stroke;
    chip.textContent = t(STATUS_LABEL[status]);
    el.appendChild(chip);
    const table = h("table", { class: "tbl pair" });
    table.appendChild(h("tr", {}, h("th"), text("th", "A"), text("th", "B")));
    const changes = new Set(match?.changes ?? []);
    const row = (label: string, va: string, vb: string, field?: string) => {
      const tr = h("tr", {}, text("td", label, { class: "dim" }), text("td", va, { class: "mono wrap" }), text("td", vb, { class: "mono wrap" }));
      if (field && changes.has(field)) tr.classList.add("diffrow");
      table.appendChild(tr);
    };
    row(t("nodeId"), na ? `%${na.id}` : "—", nb ? `%${nb.id}` : "—");
    row(t("opTarget"), na?.op ?? "—", nb?.op ?? "—", "op");
    row(t("output"), na ? na.shape : "—", nb ? nb.shape : "—", "shape");
    row("dtype", na ? shortDtype(na.dtype) : "—", nb ? shortDtype(nb.dtype) : "—", "dtype");
    row(t("weights"), na ? String(na.weights?.length ?? 0) : "—", nb ? String(nb.weights?.length ?? 0) : "—", "weights");
    row(t("inputs"), na ? String(na.inputs?.length ?? 0) : "—", nb ? String(nb.inputs?.length ?? 0) : "—", "inputs");
    row(t("gpuTime"), na ? (this.timed.a ? fmtUs(na.time_us) : t("noTraceShort")) : "—", nb ? (this.timed.b ? fmtUs(nb.time_us) : t("noTraceShort")) : "—");
    el.appendChild(table);
    if (!match && (status === "only_a" || status === "only_b")) {
      el.appendChild(text("p", t("manualHint"), { class: "hint" }));
    }
    if (match?.manual) {
      const un = h("button", { class: "btn", type: "button", "data-testid": "compare-manual-unmatch" });
      un.textContent = t("manualUnmatch");
      un.addEventListener("click", () => this.setManual(this.manual.filter(([x, y]) => !(x === match.a && y === match.b))));
      el.appendChild(h("div", { class: "sub" }, text("span", `${t("manualMatched")} `, { class: "dim" }), un));
    }
    if (match && this.bothTimed()) {
      const d = match.delta_us;
      el.appendChild(text("div", `Δ ${fmtSignedUs(d)}`, { class: `sub ${d > 0 ? "slower" : d < 0 ? "faster" : ""}`, "data-testid": "compare-selection-delta" }));
      if (match.changes?.length) el.appendChild(text("div", `${t("whatChanged")}: ${match.changes.join(", ")}`, { class: "sub" }));
    }
    const kern = (n: typeof na) => (n?.kernels ?? []).map((k) => `${k.kernel} ${fmtUs(k.stats?.median_us ?? k.duration_us)}`).join("\n");
    if ((na?.kernels?.length ?? 0) + (nb?.kernels?.length ?? 0) > 0) {
      const kt = h("table", { class: "tbl pair" });
      kt.appendChild(h("tr", {}, text("td", t("kernelsTitle"), { class: "dim" }), text("td", kern(na), { class: "mono wrap pre" }), text("td", kern(nb), { class: "mono wrap pre" })));
      el.appendChild(kt);
    }
  }

  // ---------------------------------------------------------------- test hook

  testState() {
    return {
      loading: this.loading,
      sides: this.loaded,
      counts: this.model?.counts ?? null,
      manual: this.manualPairs(),
      drawn: { a: this.panes.a.draws, b: this.panes.b.draws },
      selected: { a: this.panes.a.selected ? publicId(this.panes.a.selected) : null, b: this.panes.b.selected ? publicId(this.panes.b.selected) : null },
      expanded: { a: [...this.panes.a.expanded].filter((k) => k !== SCENE).map(publicId), b: [...this.panes.b.expanded].filter((k) => k !== SCENE).map(publicId) },
      views: { a: this.panes.a.getView(), b: this.panes.b.getView() },
      timed: { ...this.timed },
    };
  }
}

/** Whether a layer document has kernel times (its stage is the one its run's trace was mapped onto). */
export function layerTimed(d: LayerResponse): boolean {
  return !!d.trace_summary || d.nodes.some((n) => (n.kernels?.length ?? 0) > 0);
}
