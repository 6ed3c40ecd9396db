// The layer view: one layer (or a whole stage) on the shared graph pane, with its details panel,
// search, colour modes, hotspots and the per-stream kernel timeline, linked both ways (a node
// highlights its kernels; a kernel selects its node). Its run, stage, layer, selection and options
// live in the panel's store; the view follows them and writes back what the user does in it.
import { Api, ApiError } from "../api/client";
import type { LayerResponse, NodeKernel, RunInfo, TimelineKernel, TimelineResponse } from "../api/types";
import { adjacency, DetailsPanel, type Adjacency } from "../details/details";
import { GraphPane } from "../graph/pane";
import type { ColorMode, Paint } from "../graph/paint";
import { nodesText, t } from "../i18n";
import { GROUP_NAMES, groupColor, heatGradient, heatTime, hotspots, type Theme } from "../model/colors";
import { fmtUs } from "../model/format";
import {
  ancestors, expandedToDepth, isGroupKey, maxGroupDepth, publicId, revealKey, SCENE, skeletonExpanded, toggleGroup, decodeOpen, encodeOpen,
} from "../model/hierarchy";
import type { Viewport } from "../graph/viewport";
import { visibleGraph } from "../model/visible";
import { buildSearchIndex, search, stepHit, type SearchEntry, type SearchHit } from "../search/search";
import type { TimelineScope } from "../state/hash";
import { changedAny, layerNumbers, shownRun, type PanelState, type Store } from "../state/store";
import { makeLane, type Lane } from "../timeline/lod";
import { flaggedNodes, reportIndex, timelineMarks, type ReportIndex } from "../timing/model";
import { TimelineView, type BucketLane } from "../timeline/timeline";
import { activity } from "../ui/activity";
import { capture, clear, h, text } from "../ui/dom";
import { DoubtNotice } from "../ui/doubts";
import { storageGet, storageSet } from "../ui/storage";
import type { PanelView, ViewExport } from "../views/view";

// The backend accepts max_items in [1, 100000] (per stream); beyond, streams come back as buckets.
const MAX_TIMELINE_ITEMS = 100000;
const DEFAULT_HOT = 5;
const SPLIT_KEY = "adLayer.timelineHeight";

export interface Timing {
  seq: number;
  what: string;
  /** From the user's action (chooser change, toggle) to the graph drawn and painted. */
  totalMs: number;
  fetchMs: number;
  layoutMs: number;
  renderMs: number;
  leaves: number;
  edges: number;
  nodes: number;
}

export interface LayerViewCallbacks {
  onError(e: unknown): void;
  /** The view's status line changed (timings of the last draw). */
  onStatus(line: string): void;
}

export class LayerView implements PanelView {
  readonly el: HTMLDivElement;
  readonly pane: GraphPane;
  /** Toolbar groups that belong to this view (depth, colour, hotspots, search); fitting is the pane's (its button, F). */
  readonly toolbarItems: HTMLElement[];
  readonly searchInput: HTMLInputElement;
  private details = new DetailsPanel();
  /** The notice above the graph when the converter has doubts about the layer shown. */
  private doubts = new DoubtNotice("layer-doubts");
  private timeline: TimelineView;
  private legendEl: HTMLDivElement;
  private depthSel: HTMLSelectElement;
  private colorSeg: HTMLDivElement;
  private hotSel: HTMLSelectElement;
  private searchCount: HTMLSpanElement;
  private tlWrap!: HTMLDivElement;
  private tlInfo!: HTMLSpanElement;
  private tlScopeSeg!: HTMLDivElement;
  private theme: Theme = "light";
  private run: RunInfo | null = null;
  private layers: LayerResponse[] = [];
  private adj: Adjacency | null = null;
  private index: SearchEntry[] = [];
  private hovered: string | null = null;
  private hotK = DEFAULT_HOT;
  private hits: SearchHit[] = [];
  private hitIdx = -1;
  private kernelsByNode = new Map<string, number[]>();
  private nodeGroup = new Map<string, string>();
  private loadSeq = 0;
  private tlSeq = 0;
  private timing: Timing | null = null;
  private timingSeq = 0;
  private drawnWaiters: (() => void)[] = [];
  private tlDetailTimer = 0;
  private tlBase: { extent: [number, number]; lod: boolean } | null = null;
  private tlWindow: { t0: number; t1: number; lod: boolean } | null = null;
  /** The graph is out of date (run, stage or layer changed while the view was hidden). */
  dirty = true;
  /** The load under way (or the last one). */
  private pending: Promise<void> = Promise.resolve();
  /** The depth the graph was last expanded to by depth (null: by hand or by default). */
  private depthShown: number | null = null;
  /** Loading a layer (fetch and first draw). */
  loading = false;
  /** The run's report (api/report), indexed: tails on nodes, breakdowns in details, timeline marks. */
  private report: ReportIndex | null = null;
  private reportSeq = 0;
  /** Whether the timeline draws the critical path and exposed communication. */
  private marksOn = false;
  private marksBtn!: HTMLButtonElement;
  private marksLegend!: HTMLSpanElement;
  /** The first view's open groups (what the URL's `open` is relative to). */
  private baseExpanded: Set<string> | null = null;
  private viewTimer = 0;

  constructor(private readonly api: Api, private readonly store: Store<PanelState>, private readonly cb: LayerViewCallbacks) {
    this.pane = new GraphPane("graph", {
      onSelect: (k) => void this.select(k, { centre: false }),
      onToggle: (k) => void this.toggle(k),
      onHover: (k) => this.hover(k),
      onView: (_from, _to, auto) => {
        if (!auto) this.noteView();
      },
    }, () => this.paint(), { minimapTestid: "minimap" });
    this.timeline = new TimelineView({
      onKernelClick: (k) => void this.selectKernel(k),
      onKernelHover: (k) => this.pane.setHovered(k && k.node ? this.pane.keyForNode(k.node) : null),
      onViewChange: (a, b) => this.onTimelineView(a, b),
    });
    const gwrap = this.pane.el;
    this.legendEl = h("div", { class: "adl-legend", "data-testid": "legend" });
    gwrap.append(this.legendEl);
    const side = h("div", { class: "adl-side" });
    side.append(h("div", { class: "adl-maps" }, this.pane.minimap.el), this.details.el);
    const main = h("div", { class: "adl-main" });
    main.append(gwrap, side);
    this.el = h("div", { class: "adl-view adl-layerview", "data-testid": "layer-view" });
    this.el.append(this.doubts.el, main, this.buildSplitter(), this.buildTimeline());

    this.depthSel = h("select", { "data-testid": "depth-select", title: t("depthTitle") });
    this.depthSel.addEventListener("change", () => void this.onDepthChange());
    this.colorSeg = h("div", { class: "seg", role: "group", "data-testid": "color-mode" });
    for (const [mode, label] of [["group", t("colorGroup")], ["time", t("colorTime")]] as [ColorMode, string][]) {
      const b = h("button", { type: "button", "data-mode": mode, "data-testid": `color-${mode}`, "aria-pressed": String(mode === "group") });
      b.textContent = label;
      b.addEventListener("click", () => this.store.set({ color: mode }));
      this.colorSeg.appendChild(b);
    }
    this.hotSel = h("select", { "data-testid": "hotspots-select", title: t("hotspotsTitle", { k: "k" }) });
    for (const k of [0, 3, 5, 10, 20]) {
      const o = h("option", { value: k });
      o.textContent = k === 0 ? "–" : t("topK", { k });
      if (k === this.hotK) o.selected = true;
      this.hotSel.appendChild(o);
    }
    this.hotSel.addEventListener("change", () => {
      this.hotK = Number(this.hotSel.value);
      this.repaint();
    });
    this.searchInput = h("input", { type: "search", placeholder: t("searchPlaceholder"), "data-testid": "search-input", "aria-label": t("searchPlaceholder"), spellcheck: "false", autocomplete: "off" });
    this.searchInput.addEventListener("input", () => this.onSearchInput());
    this.searchInput.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") {
        ev.preventDefault();
        void this.stepSearch(ev.shiftKey ? -1 : 1);
      } else if (ev.key === "Escape") {
        this.searchInput.value = "";
        this.onSearchInput();
        this.searchInput.blur();
      }
    });
    const prev = h("button", { class: "btn iconbtn", type: "button", title: t("searchPrev"), "data-testid": "search-prev" }, "‹");
    const next = h("button", { class: "btn iconbtn", type: "button", title: t("searchNext"), "data-testid": "search-next" }, "›");
    prev.addEventListener("click", () => void this.stepSearch(-1));
    next.addEventListener("click", () => void this.stepSearch(1));
    this.searchCount = h("span", { class: "count", "data-testid": "search-count" });
    this.toolbarItems = [
      h("span", { class: "grp" }, text("label", t("depth")), this.depthSel),
      h("span", { class: "grp" }, text("label", t("colorBy")), this.colorSeg),
      h("span", { class: "grp" }, text("label", t("hotspots")), this.hotSel),
      h("span", { class: "grp search" }, this.searchInput, prev, next, this.searchCount),
    ];
    this.setTheme(store.get().theme);
  }

  /** Follows the store: theme, run, colour, timeline scope; a run, stage or layer to load; a selection. */
  follow(st: Readonly<PanelState>, changed: ReadonlySet<keyof PanelState>): void {
    if (changed.has("theme")) this.setTheme(st.theme);
    if (changedAny(changed, "run", "runs")) this.setRun(shownRun(st));
    if (changed.has("color")) {
      this.updateColorButtons();
      this.repaint();
    }
    const data = changedAny(changed, "run", "stage", "layer", "rank");
    if (changed.has("rank")) this.updateMarks();
    if (changed.has("tl") && !data) {
      this.updateScopeButtons();
      void this.loadTimeline();
    }
    if (data) this.dirty = true;
    if (st.view !== "layer") return;
    if (this.dirty && (data || changed.has("view"))) {
      const what = changed.has("run") ? "run" : changed.has("stage") ? "stage" : changed.has("layer") ? "layer" : changed.has("rank") ? "rank" : "view";
      this.pending = this.load(what);
      return;
    }
    if (changed.has("view")) this.shown();
    if (this.loading) return;
    // A depth or selection set while the view was hidden is applied when it shows.
    const shows = changed.has("view");
    if ((shows || changed.has("depth")) && st.depth !== null && st.depth !== this.depthShown) void this.setDepth(st.depth);
    else if ((shows || changed.has("selected")) && st.selected !== (this.pane.selected ? publicId(this.pane.selected) : null)) {
      const key = st.selected ? this.keyForNode(st.selected) : null;
      void this.select(key, { centre: true, reveal: true });
    }
  }

  // ---------------------------------------------------------------- construction

  private buildSplitter(): HTMLElement {
    const sp = h("div", { class: "adl-split", "data-testid": "splitter", role: "separator", "aria-orientation": "horizontal" });
    let start: { y: number; h: number } | null = null;
    sp.addEventListener("pointerdown", (ev) => {
      start = { y: ev.clientY, h: this.tlWrap.getBoundingClientRect().height };
      capture(sp, ev.pointerId);
    });
    sp.addEventListener("pointermove", (ev) => {
      if (!start) return;
      const hgt = Math.max(70, Math.min(window.innerHeight - 200, start.h - (ev.clientY - start.y)));
      this.tlWrap.style.height = `${hgt}px`;
    });
    sp.addEventListener("pointerup", () => {
      if (start) storageSet(SPLIT_KEY, String(Math.round(this.tlWrap.getBoundingClientRect().height)));
      start = null;
    });
    return sp;
  }

  private buildTimeline(): HTMLElement {
    this.tlWrap = h("div", { class: "adl-timeline", "data-testid": "timeline" });
    const saved = Number(storageGet(SPLIT_KEY));
    this.tlWrap.style.height = `${saved >= 70 ? saved : 190}px`;
    const bar = h("div", { class: "adl-tl-bar" });
    bar.appendChild(text("span", t("timeline"), { class: "title" }));
    this.tlScopeSeg = h("div", { class: "seg", role: "group", "data-testid": "timeline-scope" });
    for (const [scope, label] of [["layer", t("scopeLayer")], ["all", t("scopeAll")]] as [TimelineScope, string][]) {
      const b = h("button", { type: "button", "data-scope": scope, "data-testid": `timeline-scope-${scope}`, "aria-pressed": String(scope === "layer") });
      b.textContent = label;
      b.addEventListener("click", () => this.store.set({ tl: scope }));
      this.tlScopeSeg.appendChild(b);
    }
    const reset = h("button", { class: "btn", type: "button", "data-testid": "timeline-reset" });
    reset.textContent = t("timelineReset");
    reset.addEventListener("click", () => this.timeline.resetView());
    this.tlInfo = h("span", { class: "info", "data-testid": "timeline-info" });
    this.marksBtn = h("button", { class: "btn", type: "button", "data-testid": "timeline-critpath", "aria-pressed": "false", title: t("critPathTitle"), disabled: true });
    this.marksBtn.textContent = t("critPath");
    this.marksBtn.addEventListener("click", () => {
      this.marksOn = !this.marksOn;
      this.updateMarks();
    });
    this.marksLegend = h("span", { class: "cplegend", "data-testid": "timeline-critpath-legend", hidden: true },
      h("span", {}, h("span", { class: "sw path" }), t("critPath")), h("span", {}, h("span", { class: "sw exposed" }), t("exposedComm")));
    bar.append(this.tlScopeSeg, reset, this.marksBtn, this.marksLegend, text("span", t("timelineHint"), { class: "hint" }), this.tlInfo);
    this.tlWrap.append(bar, this.timeline.el);
    return this.tlWrap;
  }

  // ---------------------------------------------------------------- loading

  /** The run whose layers are shown (colour by time, hotspots and the timeline need its trace). */
  private setRun(run: RunInfo | null): void {
    if (this.run?.run !== run?.run) this.timeline.setData([], [], [0, 1], () => null);
    this.run = run;
    const has = !!run?.trace;
    if (!has && this.store.get().color === "time") this.store.set({ color: "group" });
    for (const b of Array.from(this.colorSeg.children) as HTMLButtonElement[]) {
      if (b.dataset.mode === "time") {
        b.disabled = !has;
        b.title = has ? "" : t("needsTrace");
      }
    }
    this.hotSel.disabled = !has;
    // Without a trace the timeline is one line that says so; the graph gets the height.
    this.el.classList.toggle("notrace", !!run && !has);
    this.updateColorButtons();
    void this.loadReport(run);
  }

  /** The run's report, for tails on nodes, breakdowns in details and marks on the timeline. */
  private async loadReport(run: RunInfo | null): Promise<void> {
    const seq = ++this.reportSeq;
    this.report = null;
    this.marksBtn.disabled = true;
    if (!run?.trace) {
      this.updateMarks();
      return;
    }
    try {
      const r = await activity.track(this.api.report(run.run));
      if (seq !== this.reportSeq) return;
      this.report = reportIndex(r);
    } catch {
      // The graph stays as it is without the report's figures (the Timing view reports the error).
      return;
    }
    this.marksBtn.disabled = false;
    this.repaint();
    this.updateDetails();
    this.updateMarks();
  }

  /**
   * The report's figures for what is shown: the report is the first rank's, so another rank of a
   * multi-GPU run shows its own kernels without them (the Ranks view compares the ranks).
   */
  private shownReport(): ReportIndex | null {
    return this.store.get().rank === null ? this.report : null;
  }

  /** The timeline's critical path and exposed communication for the shown scope, when asked for. */
  private updateMarks(): void {
    const st = this.store.get();
    const report = this.shownReport();
    this.marksBtn.disabled = !report;
    this.marksBtn.setAttribute("aria-pressed", String(this.marksOn));
    this.marksLegend.hidden = !this.marksOn || !report;
    if (!this.marksOn || !report) {
      this.timeline.setMarks(null);
      return;
    }
    const scope = st.tl === "layer" && st.layer !== "all" ? st.layer : "all";
    this.timeline.setMarks(timelineMarks(report, scope));
  }

  /**
   * Loads and draws the store's run, stage and layer (every layer of the stage for "all"), with
   * its selected node or group revealed; `what` names the change in the timing.
   */
  private async load(what: string): Promise<void> {
    const run = this.run;
    if (!run) return;
    const st = this.store.get();
    const node = st.selected;
    const layerNums = layerNumbers(st);
    this.dirty = false;
    const seq = ++this.loadSeq;
    const t0 = performance.now();
    this.loading = true;
    const end = activity.begin();
    try {
      this.pane.setBusy(t("loading"));
      const nums = st.layer === "all" ? layerNums : [st.layer];
      let layers: LayerResponse[];
      try {
        layers = await this.fetchLayers(run.run, st.stage, nums);
      } catch (e) {
        if (seq === this.loadSeq) {
          this.cb.onError(e);
          this.pane.setBusy(null);
          this.doubts.hide();
        }
        return;
      }
      if (seq !== this.loadSeq) return;
      const fetchMs = performance.now() - t0;
      this.layers = layers;
      const all = st.layer === "all";
      // Before the layout, which fits the graph to the space the notice leaves. A whole stage's
      // doubts are the panel's stage notice; its doubtful layers' boxes are marked.
      const one = all ? null : layers[0];
      this.doubts.show(one ? t("doubtsLayer", { n: one.layer }) : "", one?.doubts ?? []);
      let focus: string | null = null;
      let depth = st.depth;
      // The open groups and place the URL names (a reload, a link), for this layer only.
      let restored = false;
      const at = !all && depth === null && !node ? parseAt(st.at, st.layer) : null;
      const ok = await this.pane.setLayers(layers, (hh) => {
        if (depth === null && all) depth = 2;
        // One layer opens on its skeleton with its main group open; a whole stage by depth.
        let exp = depth === null ? skeletonExpanded(hh) : expandedToDepth(hh, depth);
        this.baseExpanded = exp;
        if (depth === null && !all && st.open) {
          const r = decodeOpen(hh, st.open, exp);
          if (r) {
            exp = r;
            restored = true;
          }
        }
        if (node) {
          const k = this.pane.keyForNodeIn(hh, node);
          if (k) {
            focus = k;
            return revealKey(hh, exp, k);
          }
        }
        return exp;
      }, { initial: "readable", draw: false });
      void ok;
      if (seq !== this.loadSeq) return;
      const hier = this.pane.hier!;
      this.adj = adjacency(hier);
      this.index = buildSearchIndex(hier);
      this.nodeGroup = new Map();
      for (const L of layers) for (const n of L.nodes) this.nodeGroup.set(n.id, n.group);
      this.pane.selected = focus;
      this.depthShown = depth;
      this.store.set({ depth: depth !== null && depth <= maxGroupDepth(hier) ? depth : st.depth === null ? null : depth, selected: focus ? publicId(focus) : null });
      this.fillDepth();
      this.hits = [];
      this.hitIdx = -1;
      if (this.searchInput.value.trim()) this.onSearchInput();
      this.updateScopeButtons();
      void this.loadTimeline();
      // A depth the user chose (in the URL) is kept as it is; the default view may collapse the
      // groups above the hottest one to bring it up.
      const place = at && (restored || !st.open) ? at : null;
      await this.relayout({ what, t0, fetchMs, centre: focus ?? undefined, initial: !focus && !place, keepExpanded: depth !== null || restored, at: place ?? undefined });
      if (seq === this.loadSeq && !restored && !place && (st.open !== null || st.at !== null)) this.store.set({ open: null, at: null });
    } finally {
      if (seq === this.loadSeq) this.loading = false;
      end();
    }
  }

  private async fetchLayers(run: string, stage: number, nums: number[]): Promise<LayerResponse[]> {
    const out: LayerResponse[] = new Array(nums.length);
    let next = 0;
    const worker = async () => {
      while (next < nums.length) {
        const i = next++;
        out[i] = await this.api.layer(run, stage, nums[i], undefined, this.store.get().rank);
      }
    };
    await Promise.all(Array.from({ length: Math.min(6, nums.length) }, worker));
    return out;
  }

  // ---------------------------------------------------------------- layout and drawing

  private async relayout(opts: { what: string; t0: number; fetchMs: number; centre?: string; anchor?: string; legible?: boolean; fit?: boolean; initial?: boolean; keepExpanded?: boolean; at?: Viewport }): Promise<void> {
    const hier = this.pane.hier;
    if (!hier) return;
    const ok = await this.pane.relayout({
      centre: opts.centre, anchor: opts.anchor, legible: opts.legible, fit: opts.fit, initial: opts.initial ? "readable" : undefined, collapsedAbove: opts.keepExpanded,
    });
    if (!ok) return;
    if (opts.at) this.pane.setViewport(opts.at);
    // What the user opened or closed goes into the URL, with where the view is now.
    if (!opts.initial && !opts.at && this.store.get().layer !== "all") this.noteOpen();
    this.pane.graph.setHits(this.hits.map((x) => x.key), this.hitIdx >= 0 ? this.hits[this.hitIdx]?.key ?? null : null);
    this.updateDetails();
    this.updateLegend();
    this.updateHighlight();
    const d = this.pane.lastDraw!;
    const nodes = hier.opKeys.length;
    const drawSeq = this.pane.draws;
    // "Drawn" = after the browser has painted the new DOM (next frame; a hidden tab gets no
    // frames, so a timer stands in).
    afterPaint(() => {
      if (drawSeq !== this.pane.draws) return;
      this.timing = {
        seq: ++this.timingSeq, what: opts.what, totalMs: performance.now() - opts.t0, fetchMs: opts.fetchMs, layoutMs: d.layoutMs,
        renderMs: d.renderMs, leaves: d.leaves, edges: d.edges, nodes,
      };
      this.cb.onStatus(t("statusLine", {
        nodes: nodesText(nodes), drawn: d.leaves, edges: t("edgesN", { n: d.edges }),
        fetch: opts.fetchMs.toFixed(0), layout: d.layoutMs.toFixed(0), worker: d.stats.totalMs.toFixed(0), cached: d.stats.cached,
        groups: d.stats.containers, draw: d.renderMs.toFixed(0), total: this.timing.totalMs.toFixed(0),
      }));
      const ws = this.drawnWaiters;
      this.drawnWaiters = [];
      for (const w of ws) w();
    });
  }

  /** The open groups (as they differ from the first view) and the view's place, into the store. */
  private noteOpen(): void {
    const hier = this.pane.hier;
    if (!hier || !this.baseExpanded) return;
    this.store.set({ open: encodeOpen(hier, this.pane.expanded, this.baseExpanded) || null, at: formatAt(this.store.get().layer, this.pane.getView()) });
  }

  /** The user moved the view: its place goes into the store (at most every 250 ms). */
  private noteView(): void {
    if (this.loading || this.store.get().layer === "all") return;
    clearTimeout(this.viewTimer);
    this.viewTimer = window.setTimeout(() => {
      if (!this.loading && this.pane.hier) this.store.set({ at: formatAt(this.store.get().layer, this.pane.getView()) });
    }, 250);
  }

  private paint(): Paint {
    const hier = this.pane.hier;
    const hot = hier && this.hotK > 0 && this.run?.trace ? hotspots(hier, this.hotK) : new Map<string, number>();
    return { mode: this.store.get().color, theme: this.theme, hot, tails: this.tailKeys() };
  }

  /** Keys of the shown nodes whose tail the report flags, on the stage it is of. */
  private tailKeys(): Set<string> {
    const out = new Set<string>();
    const report = this.shownReport();
    if (!report || report.stage !== this.store.get().stage) return out;
    for (const id of flaggedNodes(report, this.layers.map((L) => L.layer))) {
      const k = this.pane.keyForNode(id);
      if (k) out.add(k);
    }
    return out;
  }

  private repaint(): void {
    this.pane.repaint();
    this.updateLegend();
  }

  private async toggle(key: string): Promise<void> {
    const hier = this.pane.hier;
    if (!hier || key === SCENE) return;
    const t0 = performance.now();
    this.pane.expanded = toggleGroup(this.pane.expanded, key);
    // A selection hidden by the collapse moves to the group.
    const sel = this.pane.selected;
    if (sel && !this.pane.expanded.has(key) && ancestors(hier, sel).includes(key)) this.setSelected(key);
    this.markCustomDepth();
    await this.relayout({ what: "toggle", t0, fetchMs: 0, anchor: key, legible: this.pane.expanded.has(key) });
  }

  private async onDepthChange(): Promise<void> {
    const hier = this.pane.hier;
    if (!hier) return;
    const v = this.depthSel.value;
    const t0 = performance.now();
    const depth = v === "all" ? maxGroupDepth(hier) + 1 : Number(v);
    // The selection, or the group under the view's centre, stays on screen.
    const anchor = this.pane.graph.anchorKey() ?? undefined;
    const before = this.pane.expanded.size;
    this.pane.expanded = expandedToDepth(hier, depth);
    this.depthShown = depth;
    this.store.set({ depth });
    // A selection hidden by the new depth moves to the collapsed group that now shows it.
    const sel = this.pane.selected;
    if (sel) this.setSelected(visibleGraph(hier, this.pane.expanded).rep.get(sel) ?? null);
    await this.relayout({ what: "depth", t0, fetchMs: 0, anchor, legible: this.pane.expanded.size > before, fit: !anchor });
  }

  /** Collapses everything below depth `d` ("all": nothing). */
  async setDepth(d: number | "all"): Promise<void> {
    this.depthSel.value = String(d);
    await this.onDepthChange();
  }

  private markCustomDepth(): void {
    this.depthShown = null;
    this.store.set({ depth: null });
    this.depthSel.value = "";
  }

  private fillDepth(): void {
    const hier = this.pane.hier;
    if (!hier) return;
    clear(this.depthSel);
    const md = maxGroupDepth(hier);
    const names = [null, "depthLayers", "depthGroups", "depthSub"] as const;
    for (let d = 1; d <= md; d++) {
      const o = h("option", { value: d });
      const nm = names[d];
      o.textContent = nm ? t(nm, { d }) : String(d);
      this.depthSel.appendChild(o);
    }
    const all = h("option", { value: "all" });
    all.textContent = t("depthAll");
    this.depthSel.appendChild(all);
    const custom = h("option", { value: "", disabled: true, hidden: true });
    custom.textContent = t("depthCustom");
    this.depthSel.appendChild(custom);
    const depth = this.store.get().depth;
    this.depthSel.value = depth === null ? "" : depth > md ? "all" : String(depth);
  }

  // ---------------------------------------------------------------- selection, hover, details

  private setSelected(key: string | null): void {
    this.pane.selected = key;
    this.store.set({ selected: key ? publicId(key) : null });
  }

  keyForNode(id: string): string | null {
    return this.pane.keyForNode(id);
  }

  /** Selects a key; reveals it (expanding groups) and centres it when asked. */
  async select(key: string | null, opts: { centre?: boolean; reveal?: boolean } = {}): Promise<void> {
    const hier = this.pane.hier;
    this.setSelected(key);
    if (key && hier && opts.reveal && ancestors(hier, key).some((a) => !this.pane.expanded.has(a))) {
      this.markCustomDepth();
      this.pane.expanded = revealKey(hier, this.pane.expanded, key);
      await this.relayout({ what: "reveal", t0: performance.now(), fetchMs: 0, centre: key });
      return;
    }
    await this.pane.select(key, { centre: opts.centre });
    this.updateDetails();
    this.updateHighlight(true);
  }

  private hover(key: string | null): void {
    this.hovered = key;
    this.updateHighlight();
  }

  /**
   * The GPU time outside every layer, for the summary of a whole stage: the trace's, on the stage
   * it was mapped onto (the last); null for one layer, other stages and runs without a trace.
   */
  private outsideUs(): number | null {
    const st = this.store.get();
    const us = this.run?.trace?.outside_time_us;
    if (st.layer !== "all" || !this.run || st.stage !== this.run.default_stage) return null;
    return typeof us === "number" && Number.isFinite(us) && us > 0 ? us : null;
  }

  private updateDetails(): void {
    const hier = this.pane.hier;
    if (!hier || !this.adj) return;
    this.details.show({
      h: hier, adj: this.adj, key: this.pane.selected, layers: this.layers, expanded: this.pane.expanded, theme: this.theme,
      hasTrace: !!this.run?.trace,
      outsideUs: this.outsideUs(),
      report: this.shownReport()?.stage === this.store.get().stage ? this.shownReport() : null,
      onSelect: (k) => void this.select(k, { centre: true, reveal: true }),
      onToggle: (k) => void this.toggle(k),
      onKernel: (k, nodeKey) => this.focusNodeKernel(k, nodeKey),
    });
  }

  /** Kernel ids (timeline) of an op, or of every op under a group. */
  private kernelIdsOf(key: string | null): number[] {
    const hier = this.pane.hier;
    if (!key || !hier) return [];
    const it = hier.items.get(key);
    if (!it) return [];
    if (it.kind === "op") return this.kernelsByNode.get(it.node!.id) ?? [];
    if (it.kind !== "group") return [];
    const out: number[] = [];
    const stack = [key];
    while (stack.length) {
      const k = stack.pop()!;
      const c = hier.items.get(k)!;
      if (c.kind === "op") out.push(...(this.kernelsByNode.get(c.node!.id) ?? []));
      else if (c.kind === "group") stack.push(...c.children);
    }
    return out;
  }

  private updateHighlight(reveal = false): void {
    const key = this.hovered ?? this.pane.selected;
    const ids = this.kernelIdsOf(key);
    this.timeline.setHighlight(ids);
    if (reveal && ids.length && !this.hovered) this.timeline.reveal(ids);
  }

  private focusNodeKernel(k: NodeKernel, nodeKey: string): void {
    const it = this.pane.hier?.items.get(nodeKey);
    if (!it?.node) return;
    const ids = this.kernelsByNode.get(it.node.id) ?? [];
    const match = ids.find((id) => {
      const r = this.timeline.kernelById(id);
      return r && r.kernel.kernel === k.kernel && Math.abs(r.kernel.start_us - k.start_us) < 1e-3;
    });
    if (match !== undefined) {
      this.timeline.setHighlight(ids, match);
      const r = this.timeline.kernelById(match)!;
      const span = Math.max(r.kernel.duration_us * 30, 20);
      const mid = r.kernel.start_us + r.kernel.duration_us / 2;
      this.timeline.setView(mid - span / 2, mid + span / 2);
    }
  }

  /** Clicking a kernel: select its node (switching layer when needed), expand and centre. */
  async selectKernel(k: TimelineKernel): Promise<boolean> {
    if (!k.node) return false;
    const key = this.keyForNode(k.node);
    if (key) {
      await this.select(key, { centre: true, reveal: true });
      this.timeline.setHighlight(this.kernelIdsOf(key), k.id);
      return true;
    }
    const layer = this.store.get().layer;
    if (k.layer !== null && k.layer !== undefined && layer !== "all") {
      // Another layer: the store moves there with the kernel's node selected; the view loads it.
      this.store.set({ layer: k.layer, selected: k.node, depth: null });
      await this.pending;
      this.timeline.setHighlight(this.kernelIdsOf(this.pane.selected), k.id);
      return true;
    }
    return false;
  }

  // ---------------------------------------------------------------- search

  /** Typing highlights every hit without moving the view; Enter goes to the first, then the next. */
  private onSearchInput(): void {
    const q = this.searchInput.value;
    this.hits = search(this.index, q);
    this.hitIdx = -1;
    this.updateSearchCount();
    this.pane.graph.setHits(this.hits.map((x) => x.key), null);
  }

  private updateSearchCount(): void {
    const q = this.searchInput.value.trim();
    if (!q) this.searchCount.textContent = "";
    else if (!this.hits.length) this.searchCount.textContent = t("searchNone");
    else this.searchCount.textContent = t("searchCount", { i: this.hitIdx >= 0 ? this.hitIdx + 1 : "–", n: this.hits.length });
  }

  async stepSearch(dir: 1 | -1): Promise<void> {
    if (!this.hits.length) return;
    this.hitIdx = stepHit(this.hits.length, this.hitIdx, dir);
    const hit = this.hits[this.hitIdx];
    this.updateSearchCount();
    this.pane.graph.setHits(this.hits.map((x) => x.key), hit.key);
    await this.select(hit.key, { centre: true, reveal: true });
    this.pane.graph.setHits(this.hits.map((x) => x.key), hit.key);
  }

  // ---------------------------------------------------------------- colour, legend, theme

  private updateColorButtons(): void {
    const mode = this.store.get().color;
    for (const b of Array.from(this.colorSeg.children) as HTMLButtonElement[]) {
      b.setAttribute("aria-pressed", String(b.dataset.mode === mode));
    }
  }

  private updateLegend(): void {
    const el = this.legendEl;
    clear(el);
    const th = this.theme;
    if (this.store.get().color === "group") {
      const present = new Set<string>();
      for (const L of this.layers) for (const n of L.nodes) present.add(n.group);
      for (const g of GROUP_NAMES) {
        if (present.size && !present.has(g)) continue;
        const sw = h("span", { class: "sw" });
        const gc = groupColor(g, th);
        sw.style.background = gc.fill;
        sw.style.borderColor = gc.stroke;
        el.appendChild(h("span", {}, sw, g));
      }
    } else {
      let max = 0;
      const hier = this.pane.hier;
      for (const k of this.pane.vis?.leaves ?? []) max = Math.max(max, hier?.items.get(k)?.timeUs ?? 0);
      const box = h("span", {});
      box.appendChild(text("div", t("legendTime")));
      const grad = h("div", { class: "grad", "data-testid": "heat-legend" });
      grad.style.background = heatGradient(th);
      box.appendChild(grad);
      const ticks = h("div", { class: "ticks" });
      for (const v of [0, 0.5, 1]) ticks.appendChild(text("span", fmtUs(heatTime(v, max))));
      box.appendChild(ticks);
      el.appendChild(box);
      const none = h("span", { class: "sw" });
      none.style.background = th === "dark" ? "#2b2f36" : "#f4f5f7";
      none.style.borderColor = "#888";
      el.appendChild(h("span", {}, none, t("noTime")));
    }
    if (this.hotK > 0 && this.run?.trace) {
      el.appendChild(h("span", {}, h("span", { class: "hotsw" }), `${t("hotspots")} (${t("topK", { k: this.hotK })})`));
    }
  }

  private setTheme(th: Theme): void {
    this.theme = th;
    this.pane.setTheme(th);
    this.updateLegend();
    this.timeline.setTheme(th);
    this.updateDetails();
  }

  // ---------------------------------------------------------------- timeline

  private updateScopeButtons(): void {
    const st = this.store.get();
    const all = st.layer === "all";
    for (const b of Array.from(this.tlScopeSeg?.children ?? []) as HTMLButtonElement[]) {
      const scope = all ? "all" : st.tl;
      b.setAttribute("aria-pressed", String(b.dataset.scope === scope));
      if (b.dataset.scope === "layer") b.disabled = all;
    }
  }

  private async loadTimeline(): Promise<void> {
    const run = this.run;
    if (!run) return;
    const seq = ++this.tlSeq;
    if (!run.trace) {
      this.kernelsByNode.clear();
      this.timeline.setData([], [], [0, 1], () => null);
      this.timeline.setMessage(t("noTrace"));
      this.tlInfo.textContent = t("noTrace");
      return;
    }
    this.timeline.setMessage(null);
    const st = this.store.get();
    const layer = st.tl === "layer" && st.layer !== "all" ? st.layer : undefined;
    let res: TimelineResponse;
    try {
      res = await activity.track(this.api.timeline(run.run, { layer, maxItems: MAX_TIMELINE_ITEMS, rank: st.rank }));
    } catch (e) {
      if (seq === this.tlSeq) this.cb.onError(e);
      return;
    }
    if (seq !== this.tlSeq) return;
    this.tlBase = null;
    this.tlWindow = null;
    this.setTimelineData(res, false);
  }

  /** Applies a timeline response: the whole pass/layer, or (window = true) a zoomed window of it. */
  private setTimelineData(res: TimelineResponse, keepView: boolean, window = false): void {
    const lanes: Lane[] = [];
    const buckets: BucketLane[] = [];
    this.kernelsByNode = new Map();
    let lo = Infinity;
    let hi = -Infinity;
    let n = 0;
    for (const s of res.streams ?? []) {
      if (s.kernels?.length || !s.buckets?.length) {
        const lane = makeLane(s.stream, s.label || s.stream, s.kernels ?? [], s.busy_share);
        lanes.push(lane);
        n += lane.ids.length;
        if (lane.ids.length) {
          lo = Math.min(lo, lane.starts[0]);
          for (let i = 0; i < lane.ends.length; i++) if (lane.ends[i] > hi) hi = lane.ends[i];
        }
        for (const k of lane.kernels) {
          if (!k.node) continue;
          const arr = this.kernelsByNode.get(k.node);
          if (arr) arr.push(k.id);
          else this.kernelsByNode.set(k.node, [k.id]);
        }
      } else {
        buckets.push({ stream: s.stream, label: s.label || s.stream, busyShare: s.busy_share, buckets: s.buckets });
        lo = Math.min(lo, s.buckets[0].start_us);
        hi = Math.max(hi, s.buckets[s.buckets.length - 1].end_us);
      }
    }
    if (lo === Infinity) {
      lo = res.start_us ?? 0;
      hi = res.end_us ?? 1;
    }
    // A window keeps the whole extent, so the user can still pan and zoom out of it.
    if (window && this.tlBase) [lo, hi] = this.tlBase.extent;
    else this.tlBase = { extent: [lo, hi], lod: !!res.lod };
    this.timeline.setData(lanes, buckets, [lo, hi], (k) => (k.node ? this.nodeGroup.get(k.node) ?? null : null), keepView);
    this.timeline.setMessage(n === 0 && !buckets.length ? t("timelineEmpty") : null);
    this.timeline.setTheme(this.theme);
    this.updateMarks();
    this.tlInfo.textContent = `${lanes.length + buckets.length} ${t("streams").toLowerCase()} · ${t("kernels", { n })}${buckets.length ? ` · ${t("lodNote")}` : ""} · ${fmtUs(hi - lo)}`;
    this.updateHighlight();
  }

  private onTimelineView(t0: number, t1: number): void {
    // Server-side LOD: when some streams came back as merged buckets, fetch the zoomed window
    // (with a margin for panning) and show its kernels; zooming out fetches coarser data again.
    const run = this.run;
    if (!run || !this.tlBase?.lod) return;
    const w = this.tlWindow;
    const span = t1 - t0;
    if (w && t0 >= w.t0 && t1 <= w.t1 && (!w.lod || span > (w.t1 - w.t0) / 3)) return;
    clearTimeout(this.tlDetailTimer);
    const scopeSeq = this.tlSeq;
    this.tlDetailTimer = window.setTimeout(async () => {
      const st = this.store.get();
      const layer = st.tl === "layer" && st.layer !== "all" ? st.layer : undefined;
      const a = t0 - span / 2;
      const b = t1 + span / 2;
      try {
        const res = await this.api.timeline(run.run, { layer, startUs: a, endUs: b, maxItems: MAX_TIMELINE_ITEMS, rank: st.rank });
        if (run !== this.run || scopeSeq !== this.tlSeq) return;
        this.tlWindow = { t0: a, t1: b, lod: !!res.lod };
        this.setTimelineData(res, true, true);
      } catch (e) {
        // The coarse view stays; say why the detail is missing.
        if (!(e instanceof ApiError && e.status === 0)) this.cb.onError(e);
      }
    }, 200);
  }

  // ---------------------------------------------------------------- keyboard, export, test hook

  handleKey(ev: KeyboardEvent): boolean {
    if (ev.key === "/") {
      this.searchInput.focus();
      return true;
    }
    if (ev.key === "Escape") {
      void this.select(null);
      return true;
    }
    if (ev.key === "m" || ev.key === "M") {
      this.pane.minimap.setMode(this.pane.minimap.isShown() ? "off" : "on");
      return true;
    }
    return this.pane.graph.handleKey(ev);
  }

  focusSearch(): void {
    this.searchInput.focus();
    this.searchInput.select();
  }

  /** The graph area: the panel says there that it has no runs. */
  get emptySlot(): HTMLElement {
    return this.pane.el;
  }

  busy(): boolean {
    return this.loading;
  }

  hookState(): Record<string, unknown> {
    return { expanded: this.expandedIds() };
  }

  private expandedIds(): string[] {
    return [...this.pane.expanded].filter((k) => k !== SCENE).map(publicId);
  }

  exportParts(st: Readonly<PanelState>): ViewExport | null {
    const run = shownRun(st);
    const p = this.pane.graph.prepareExport();
    if (!p || !run) return null;
    const { stage, layer } = st;
    const s = run.stages.find((x) => x.index === stage);
    const title = `${run.run} · ${s?.file.replace(/\.txt$/, "") ?? stage} · ${layer === "all" ? t("allLayers") : t("layerTitle", { n: layer })}`;
    return { parts: [{ svg: p.svg, width: p.width, height: p.height, title }], restore: p.restore, name: [run.run, `stage${stage}`, layer === "all" ? "all" : `layer${layer}`] };
  }

  /** Shown again after another view: the graph keeps its view; the minimap re-measures. */
  private shown(): void {
    this.pane.minimap.schedule();
  }

  testHook() {
    const waitDrawn = () => new Promise<void>((r) => this.drawnWaiters.push(r));
    return {
      nextDraw: waitDrawn,
      timing: (): Timing | null => this.timing,
      expanded: () => this.expandedIds(),
      kernelsHighlighted: (): number[] => this.timeline.highlighted().sort((a, b) => a - b),
      selectKernel: async (id: number): Promise<boolean> => {
        const r = this.timeline.kernelById(id);
        return r ? this.selectKernel(r.kernel) : false;
      },
      selectNode: async (id: string): Promise<boolean> => {
        const k = this.keyForNode(id);
        if (!k) return false;
        await this.select(k, { centre: true, reveal: true });
        return true;
      },
      toggleGroup: (groupId: string) => this.toggle(`g:${groupId}`),
      setDepth: (d: number | "all") => this.setDepth(d),
      kernelAt: (x: number, y: number) => this.timeline.kernelAt(x, y)?.kernel ?? null,
      kernelPoint: (id: number) => this.timeline.pointOf(id),
      timelineView: () => this.timeline.getView(),
      setTimelineView: (a: number, b: number) => this.timeline.setView(a, b),
      timelineKernelCount: () => this.timeline.kernelCount(),
      timelineLanes: () => this.timeline.laneSummaries(),
      timelineFrameMs: () => this.timeline.lastFrameMs,
      timelineMarks: () => this.timeline.marksShown(),
      tailNodes: (): string[] => [...this.tailKeys()].map(publicId).sort(),
      graphView: () => this.pane.graph.getView(),
      setGraphScale: (k: number) => this.pane.graph.setScale(k),
      drawnNodeIds: () => this.pane.graph.drawnNodeIds(),
      searchHits: () => this.hits.map((x) => publicId(x.key)),
      layoutStats: () => this.pane.lastDraw?.stats ?? null,
      minimapShown: () => this.pane.minimap.isShown(),
      minimapPoint: (wx: number, wy: number) => this.pane.minimap.pointOf(wx, wy),
      isGroupKey,
    };
  }
}

function afterPaint(fn: () => void): void {
  let done = false;
  const fire = () => {
    if (done) return;
    done = true;
    fn();
  };
  requestAnimationFrame(() => setTimeout(fire, 0));
  setTimeout(fire, 250);
}

/** A view's place for the URL: "<layer>:x,y,k" (the layer it was on, so another layer ignores it). */
export function formatAt(layer: number | "all", v: Viewport): string | null {
  return layer === "all" ? null : `${layer}:${Math.round(v.x)},${Math.round(v.y)},${v.k.toFixed(3)}`;
}

/** The view's place of formatAt, when it is for `layer`; else null. */
export function parseAt(at: string | null, layer: number | "all"): Viewport | null {
  const m = at ? /^(\d+):(-?\d+(?:\.\d+)?),(-?\d+(?:\.\d+)?),(\d+(?:\.\d+)?)$/.exec(at) : null;
  if (!m || Number(m[1]) !== layer) return null;
  const k = Number(m[4]);
  return k > 0 ? { x: Number(m[2]), y: Number(m[3]), k } : null;
}
