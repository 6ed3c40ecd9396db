// The panel controller: choosers, URL-hash state, loading, layout requests, and the links between
// graph, details, search and timeline.
import { Api, ApiError, downloadUrl } from "./api/client";
import type { LayerResponse, NodeKernel, OverviewResponse, RunInfo, StagesResponse, TimelineKernel, TimelineResponse } from "./api/types";
import { adjacency, DetailsPanel, type Adjacency } from "./details/details";
import { GraphView, type ColorMode } from "./graph/renderer";
import { getLang, setLang, t, detectLang, type Lang } from "./i18n";
import { LayoutClient, Superseded } from "./layout/client";
import type { LayoutResult } from "./layout/protocol";
import { buildLayoutRequest } from "./layout/request";
import { GROUP_NAMES, groupColor, heatGradient, heatTime, hotspots, type Theme } from "./model/colors";
import { fmtUs } from "./model/format";
import {
  ancestors, buildHierarchy, expandedToDepth, inputKey, isGroupKey, maxGroupDepth, opKey, publicId, revealKey, SCENE,
  toggleGroup, type Hierarchy,
} from "./model/hierarchy";
import { visibleGraph, type VisibleGraph } from "./model/visible";
import { buildSearchIndex, search, stepHit, type SearchEntry, type SearchHit } from "./search/search";
import { formatHash, parseHash, runsForPhase, type PhaseFilter, type TimelineScope, type ViewState } from "./state/hash";
import { makeLane, type Lane } from "./timeline/lod";
import { TimelineView, type BucketLane } from "./timeline/timeline";
import { capture, clear, h, text } from "./ui/dom";
import { ThemeController } from "./ui/theme";
import { CompareView } from "./compare/view";
import { defaultPair, formatPairs, parsePairs, type SideChoice } from "./compare/model";
import { StageView } from "./stages/view";
import { OverviewView } from "./overview/view";
import { Minimap } from "./graph/minimap";
import { exportFileName, exportSvg, saveBlob, svgToPng, type ExportPart } from "./graph/export";
import { HelpOverlay } from "./ui/help";
import { VIEWS, type ViewName } from "./state/hash";

// The backend accepts max_items in [1, 100000] (per stream); beyond, streams come back as buckets.
const MAX_TIMELINE_ITEMS = 100000;
const DEFAULT_HOT = 5;
const LANG_KEY = "adLayer.lang";
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

function storageGet(k: string): string | null {
  try {
    return localStorage.getItem(k);
  } catch {
    return null;
  }
}

function storageSet(k: string, v: string): void {
  try {
    localStorage.setItem(k, v);
  } catch {
    /* ignore */
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

export class App {
  private api = new Api();
  private layoutClient: LayoutClient;
  private theme = new ThemeController();
  private graph: GraphView;
  private details = new DetailsPanel();
  private timeline: TimelineView;
  private minimap: Minimap;
  private compareView: CompareView;
  private stageView: StageView;
  private overviewView: OverviewView;
  private help: HelpOverlay;
  private view: ViewName = "layer";
  /** The layer view's graph is out of date (the run, stage or layer changed while it was hidden). */
  private layerDirty = true;
  private viewEls = new Map<ViewName, HTMLElement>();
  private tabBar!: HTMLDivElement;
  private toolbarEl!: HTMLDivElement;
  private pendingStageSide: "before" | "after" | null = null;
  /** The layer view's status line (timings), shown while that view is. */
  private layerStatus = "";

  // DOM
  private root!: HTMLDivElement;
  private runSel!: HTMLSelectElement;
  private phaseSel!: HTMLSelectElement;
  private stageSel!: HTMLSelectElement;
  private layerSel!: HTMLSelectElement;
  private depthSel!: HTMLSelectElement;
  private colorSeg!: HTMLDivElement;
  private hotSel!: HTMLSelectElement;
  private searchInput!: HTMLInputElement;
  private searchCount!: HTMLSpanElement;
  private errorEl!: HTMLDivElement;
  private busyEl!: HTMLDivElement;
  private emptyEl!: HTMLDivElement;
  private legendEl!: HTMLDivElement;
  private statusEl!: HTMLDivElement;
  private tlWrap!: HTMLDivElement;
  private tlInfo!: HTMLSpanElement;
  private tlScopeSeg!: HTMLDivElement;
  private dlLinks!: HTMLDivElement;

  // state
  private runs: RunInfo[] = [];
  private phase: PhaseFilter | undefined;
  private run: RunInfo | null = null;
  private stage = 0;
  private layerChoice: number | "all" = 0;
  private overview: OverviewResponse | null = null;
  private layers: LayerResponse[] = [];
  private hier: Hierarchy | null = null;
  private adj: Adjacency | null = null;
  private index: SearchEntry[] = [];
  private expanded = new Set<string>([SCENE]);
  private depth: number | null = null;
  private vis: VisibleGraph | null = null;
  private layoutRes: LayoutResult | null = null;
  private selected: string | null = null;
  private hovered: string | null = null;
  private colorMode: ColorMode = "group";
  private hotK = DEFAULT_HOT;
  private hits: SearchHit[] = [];
  private hitIdx = -1;
  private tlScope: TimelineScope = "layer";
  private kernelsByNode = new Map<string, number[]>();
  private nodeGroup = new Map<string, string>();
  private loadSeq = 0;
  private layoutSeq = 0;
  private tlSeq = 0;
  private timing: Timing | null = null;
  private timingSeq = 0;
  private drawnWaiters: (() => void)[] = [];
  private busy = false;
  private pendingHashNode: string | null = null;
  private tlDetailTimer = 0;
  private tlBase: { extent: [number, number]; lod: boolean } | null = null;
  private tlWindow: { t0: number; t1: number; lod: boolean } | null = null;

  constructor() {
    setLang(detectLang(storageGet(LANG_KEY), typeof navigator !== "undefined" ? navigator.language : undefined));
    this.help = new HelpOverlay();
    this.layoutClient = new LayoutClient("static/layout_worker.js");
    this.graph = new GraphView({
      onSelect: (k) => this.select(k, { centre: false }),
      onToggle: (k) => void this.toggle(k),
      onHover: (k) => this.hover(k),
      onView: () => this.minimap.schedule(),
    });
    this.minimap = new Minimap(this.graph, "minimap");
    this.compareView = new CompareView(this.api, {
      onChange: () => this.writeHash(),
      onError: (e) => this.showError(e),
    });
    this.stageView = new StageView(this.api, {
      onStage: (index) => this.onStageStep(index),
      onCompare: (run, layer, prev, cur) => void this.openCompare({ run, stage: prev, layer }, { run, stage: cur, layer }),
      onError: (e) => this.showError(e),
    });
    this.overviewView = new OverviewView(this.api, {
      onOpenLayer: (n) => void this.openLayer(n),
      onError: (e) => this.showError(e),
    });
    this.timeline = new TimelineView({
      onKernelClick: (k) => void this.selectKernel(k),
      onKernelHover: (k) => this.graph.setHovered(k && k.node ? this.keyForNode(k.node) : null),
      onViewChange: (a, b) => this.onTimelineView(a, b),
    });
    this.theme.onChange((th) => this.onTheme(th));
    for (const v of [this.compareView, this.stageView, this.overviewView]) v.setTheme(this.theme.current);
    this.minimap.setTheme(this.theme.current);
  }

  // ---------------------------------------------------------------- UI construction

  mount(body: HTMLElement): void {
    clear(body);
    this.root = h("div", { class: "adl-root", "data-testid": "ad-layer-root", "data-view": this.view });
    this.root.appendChild(this.buildToolbar());
    this.errorEl = h("div", { class: "adl-error", "data-testid": "error", role: "alert" });
    this.root.appendChild(this.errorEl);
    const main = h("div", { class: "adl-main" });
    const gwrap = this.graph.el;
    this.busyEl = h("div", { class: "adl-busy", "data-testid": "busy" });
    this.emptyEl = h("div", { class: "adl-empty", "data-testid": "empty" });
    this.legendEl = h("div", { class: "adl-legend", "data-testid": "legend" });
    const zoom = h("div", { class: "adl-zoom" });
    const zi = h("button", { class: "btn iconbtn", type: "button", title: "W", "data-testid": "zoom-in" }, "+");
    const zo = h("button", { class: "btn iconbtn", type: "button", title: "S", "data-testid": "zoom-out" }, "−");
    zi.addEventListener("click", () => this.graph.zoomBy(1.25));
    zo.addEventListener("click", () => this.graph.zoomBy(0.8));
    zoom.append(zi, zo);
    gwrap.append(this.busyEl, this.emptyEl, this.legendEl, this.minimap.el, zoom);
    const side = h("div", { class: "adl-side" });
    side.appendChild(this.details.el);
    main.append(gwrap, side);
    const layerView = h("div", { class: "adl-view adl-layerview", "data-testid": "layer-view" });
    layerView.append(main, this.buildSplitter(), this.buildTimeline());
    this.viewEls.set("layer", layerView);
    this.viewEls.set("compare", this.compareView.el);
    this.viewEls.set("stages", this.stageView.el);
    this.viewEls.set("overview", this.overviewView.el);
    for (const [v, el] of this.viewEls) {
      el.hidden = v !== this.view;
      this.root.appendChild(el);
    }
    this.statusEl = h("div", { class: "adl-status", "data-testid": "status" });
    this.root.appendChild(this.statusEl);
    this.root.appendChild(this.help.el);
    body.appendChild(this.root);
    document.addEventListener("keydown", (ev) => this.onKey(ev));
    window.addEventListener("hashchange", () => void this.onHashChange());
    this.updateLegend();
  }

  private buildToolbar(): HTMLElement {
    const tb = h("div", { class: "adl-toolbar", "data-testid": "toolbar" });
    this.toolbarEl = tb;
    tb.appendChild(text("span", t("appTitle"), { class: "title" }));
    this.tabBar = h("div", { class: "seg tabs", role: "tablist", "aria-label": t("views"), "data-testid": "view-tabs" });
    const tabNames: Record<ViewName, "viewLayer" | "viewCompare" | "viewStages" | "viewOverview"> = {
      layer: "viewLayer", compare: "viewCompare", stages: "viewStages", overview: "viewOverview",
    };
    VIEWS.forEach((v, i) => {
      const b = h("button", { type: "button", role: "tab", "data-view": v, "data-testid": `view-${v}`, "aria-pressed": String(v === this.view), title: `${t(tabNames[v])} (${i + 1})` });
      b.textContent = t(tabNames[v]);
      b.addEventListener("click", () => void this.setView(v));
      this.tabBar.appendChild(b);
    });
    tb.appendChild(this.tabBar);
    this.phaseSel = h("select", { "data-testid": "phase-select", "aria-label": t("phase") });
    for (const [value, label] of [["", t("phaseAll")], ["decode", t("phaseDecode")], ["prefill", t("phasePrefill")], ["none", t("phaseNone")]]) {
      const o = h("option", { value });
      o.textContent = label;
      this.phaseSel.appendChild(o);
    }
    this.phaseSel.addEventListener("change", () => void this.onPhaseChange());
    this.runSel = h("select", { id: "adl-run", "data-testid": "run-select", "aria-label": t("run") });
    this.stageSel = h("select", { "data-testid": "stage-select", "aria-label": t("stage") });
    this.layerSel = h("select", { "data-testid": "layer-select", "aria-label": t("layer") });
    this.runSel.addEventListener("change", () => void this.onRunChange());
    this.stageSel.addEventListener("change", () => void this.onStageChange());
    this.layerSel.addEventListener("change", () => void this.onLayerChange());
    tb.append(
      h("span", { class: "grp", "data-views": "layer stages overview" }, text("label", t("phase")), this.phaseSel),
      h("span", { class: "grp", "data-views": "layer stages overview" }, h("label", { for: "adl-run" }, t("run")), this.runSel),
      h("span", { class: "grp", "data-views": "layer overview" }, text("label", t("stage")), this.stageSel),
      h("span", { class: "grp", "data-views": "layer stages overview" }, text("label", t("layer")), this.layerSel),
    );
    this.depthSel = h("select", { "data-testid": "depth-select", title: t("depthTitle") });
    this.depthSel.addEventListener("change", () => void this.onDepthChange());
    tb.appendChild(h("span", { class: "grp", "data-views": "layer" }, text("label", t("depth")), this.depthSel));
    this.colorSeg = h("div", { class: "seg", role: "group", "data-testid": "color-mode" });
    for (const [mode, label] of [["group", t("colorGroup")], ["time", t("colorTime")]] as [ColorMode, string][]) {
      const b = h("button", { type: "button", "data-mode": mode, "data-testid": `color-${mode}`, "aria-pressed": String(mode === this.colorMode) });
      b.textContent = label;
      b.addEventListener("click", () => this.setColorMode(mode));
      this.colorSeg.appendChild(b);
    }
    tb.appendChild(h("span", { class: "grp", "data-views": "layer" }, text("label", t("colorBy")), this.colorSeg));
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
    tb.appendChild(h("span", { class: "grp", "data-views": "layer" }, text("label", t("hotspots")), this.hotSel));
    // search
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
    tb.appendChild(h("span", { class: "grp search", "data-views": "layer" }, this.searchInput, prev, next, this.searchCount));
    tb.appendChild(h("span", { class: "spacer" }));
    const fitBtn = h("button", { class: "btn", type: "button", title: t("fitTitle"), "data-testid": "fit-button", "data-views": "layer" });
    fitBtn.textContent = t("fit");
    fitBtn.addEventListener("click", () => this.graph.fit(true));
    this.dlLinks = h("div", { class: "grp", "data-testid": "downloads" });
    const themeBtn = h("button", { class: "btn iconbtn", type: "button", title: t("themeToggle"), "aria-label": t("themeToggle"), "data-testid": "theme-toggle" });
    const setThemeIcon = () => (themeBtn.textContent = this.theme.current === "dark" ? "☀" : "☾");
    setThemeIcon();
    themeBtn.addEventListener("click", () => this.theme.toggle());
    this.theme.onChange(setThemeIcon);
    const langBtn = h("button", { class: "btn", type: "button", title: t("langToggleTitle"), "data-testid": "lang-toggle" });
    langBtn.textContent = t("langToggle");
    langBtn.addEventListener("click", () => {
      const next: Lang = getLang() === "en" ? "zh" : "en";
      storageSet(LANG_KEY, next);
      location.reload();
    });
    const linkBtn = h("button", { class: "btn", type: "button", title: t("copyLinkTitle"), "data-testid": "copy-link" });
    linkBtn.textContent = t("copyLink");
    linkBtn.addEventListener("click", () => void this.copyLink(linkBtn));
    const helpBtn = h("button", { class: "btn iconbtn", type: "button", title: `${t("helpTitle")} (?)`, "aria-label": t("helpTitle"), "data-testid": "help-button" }, "?");
    helpBtn.addEventListener("click", () => this.help.toggle());
    tb.append(fitBtn, linkBtn, this.dlLinks, themeBtn, langBtn, helpBtn);
    return tb;
  }

  /** The panel's own URL (TensorBoard serves it standalone) carries the view in its hash. */
  private async copyLink(btn: HTMLButtonElement): Promise<void> {
    const url = location.href;
    try {
      await navigator.clipboard.writeText(url);
      btn.textContent = t("copied");
    } catch {
      this.statusEl.textContent = url;
      btn.textContent = t("copyFailed");
    }
    setTimeout(() => (btn.textContent = t("copyLink")), 1500);
  }

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
      const b = h("button", { type: "button", "data-scope": scope, "data-testid": `timeline-scope-${scope}`, "aria-pressed": String(scope === this.tlScope) });
      b.textContent = label;
      b.addEventListener("click", () => void this.setTimelineScope(scope));
      this.tlScopeSeg.appendChild(b);
    }
    const reset = h("button", { class: "btn", type: "button", "data-testid": "timeline-reset" });
    reset.textContent = t("timelineReset");
    reset.addEventListener("click", () => this.timeline.resetView());
    this.tlInfo = h("span", { class: "info", "data-testid": "timeline-info" });
    bar.append(this.tlScopeSeg, reset, text("span", t("timelineHint"), { class: "hint" }), this.tlInfo);
    this.tlWrap.append(bar, this.timeline.el);
    return this.tlWrap;
  }

  // ---------------------------------------------------------------- startup and choosers

  async start(): Promise<void> {
    this.setBusy(t("loading"));
    let runs;
    try {
      runs = await this.api.runs();
    } catch (e) {
      this.showError(e);
      this.setBusy(null);
      return;
    }
    // Runs whose store cannot be read come as {run, error}: there is nothing to show of them.
    this.runs = (runs.runs ?? []).filter((r): r is RunInfo => r.error === null);
    if (!this.runs.length) {
      this.setBusy(null);
      this.emptyEl.textContent = t("noRuns");
      this.emptyEl.classList.add("on");
      return;
    }
    const st = this.readHash();
    this.phase = st.phase;
    this.phaseSel.value = this.phase ?? "";
    const shown = this.fillRunChooser();
    const run = shown.find((r) => r.run === st.run) ?? this.runs.find((r) => r.run === st.run) ?? shown[0] ?? this.runs[0];
    this.colorMode = st.color ?? (run.trace ? this.colorMode : "group");
    this.updateColorButtons();
    if (st.tl) this.tlScope = st.tl;
    this.updateScopeButtons();
    this.compareView.setRuns(this.runs);
    this.applyViewChrome(st.view ?? "layer");
    if (st.sv) this.pendingStageSide = st.sv;
    await this.openRun(run, st);
    if (this.view === "compare") await this.showCompare(st.a, st.b, st.mp);
  }

  private readHash(): ViewState {
    let st = parseHash(location.hash);
    if (!st.run) {
      // When embedded, a state passed in the parent page's hash (same origin) is honoured too.
      try {
        const ph = window.parent !== window ? window.parent.location.hash : "";
        const ps = parseHash(ph.replace(/^#[^&=]*&/, "#"));
        if (ps.run) st = ps;
      } catch {
        /* cross-origin parent */
      }
    }
    return st;
  }

  private async openRun(run: RunInfo, st: ViewState): Promise<void> {
    this.run = run;
    this.runSel.value = run.run;
    this.updateTraceControls();
    clear(this.stageSel);
    const stages = [...run.stages].sort((a, b) => a.index - b.index);
    for (const s of stages) {
      const o = h("option", { value: s.index });
      const fin = s.index === run.default_stage ? ` (${t("stageFinal")})` : "";
      o.textContent = `${s.file.replace(/\.txt$/, "")}${fin}`;
      o.dataset.base = o.textContent;
      this.stageSel.appendChild(o);
    }
    this.stage = st.stage !== undefined && stages.some((s) => s.index === st.stage) ? st.stage : run.default_stage;
    this.stageSel.value = String(this.stage);
    await this.loadOverview();
    const layerNums = this.layerList().map((l) => l.layer);
    if (st.layer === "all") this.layerChoice = "all";
    else if (st.layer !== undefined && layerNums.includes(st.layer)) this.layerChoice = st.layer;
    else this.layerChoice = layerNums[0] ?? 0;
    this.layerSel.value = String(this.layerChoice);
    this.depth = st.depth ?? null;
    this.pendingHashNode = st.node ?? null;
    await this.loadView("layer");
  }

  private layerList() {
    return this.overview?.layers ?? this.run?.layers ?? [];
  }

  private async loadOverview(): Promise<void> {
    if (!this.run) return;
    try {
      this.overview = await this.api.overview(this.run.run, this.stage);
    } catch (e) {
      this.overview = null;
      if (!(e instanceof ApiError && e.status === 404)) this.showError(e);
    }
    clear(this.layerSel);
    for (const l of this.layerList()) {
      const o = h("option", { value: l.layer });
      const time = l.gpu_time_us !== null && l.gpu_time_us !== undefined ? ` · ${fmtUs(l.gpu_time_us)}` : "";
      o.textContent = `${t("layerOption", { n: l.layer, kind: l.kind })} · ${t("nodes", { n: l.node_count })}${time}`;
      this.layerSel.appendChild(o);
    }
    const all = h("option", { value: "all" });
    all.textContent = t("allLayers");
    this.layerSel.appendChild(all);
  }

  /** Fill the run chooser with the runs of the chosen phase; returns them. */
  private fillRunChooser(): RunInfo[] {
    const shown = runsForPhase(this.runs, this.phase);
    clear(this.runSel);
    for (const r of shown.length ? shown : this.runs) {
      const o = h("option", { value: r.run });
      const phase = r.trace?.phase ? ` · ${r.trace.phase}` : "";
      o.textContent = (r.model ? `${r.run} · ${r.model}` : r.run) + phase;
      this.runSel.appendChild(o);
    }
    if (this.run) this.runSel.value = this.run.run;
    return shown;
  }

  private async onPhaseChange(): Promise<void> {
    this.phase = (this.phaseSel.value || undefined) as PhaseFilter | undefined;
    const shown = this.fillRunChooser();
    if (shown.length && !shown.some((r) => r.run === this.run?.run)) {
      this.runSel.value = shown[0].run;
      await this.onRunChange();
    } else {
      this.writeHash();
    }
  }

  private async onRunChange(): Promise<void> {
    const run = this.runs.find((r) => r.run === this.runSel.value);
    if (!run) return;
    this.selected = null;
    await this.openRun(run, { layer: typeof this.layerChoice === "number" ? this.layerChoice : undefined });
  }

  private async onStageChange(): Promise<void> {
    this.stage = Number(this.stageSel.value);
    await this.loadOverview();
    const nums = this.layerList().map((l) => l.layer);
    if (this.layerChoice !== "all" && !nums.includes(this.layerChoice)) this.layerChoice = nums[0] ?? 0;
    this.layerSel.value = String(this.layerChoice);
    this.pendingHashNode = this.selected && !isGroupKey(this.selected) ? publicId(this.selected) : null;
    await this.loadView("stage");
  }

  private async onLayerChange(): Promise<void> {
    const v = this.layerSel.value;
    this.layerChoice = v === "all" ? "all" : Number(v);
    this.selected = null;
    this.depth = null;
    await this.loadView("layer");
  }

  private async onDepthChange(): Promise<void> {
    if (!this.hier) return;
    const v = this.depthSel.value;
    const t0 = performance.now();
    this.depth = v === "all" ? maxGroupDepth(this.hier) + 1 : Number(v);
    this.expanded = expandedToDepth(this.hier, this.depth);
    // A selection hidden by the new depth moves to the collapsed group that now shows it.
    if (this.selected) this.selected = visibleGraph(this.hier, this.expanded).rep.get(this.selected) ?? null;
    this.writeHash();
    await this.relayout({ what: "depth", t0, fetchMs: 0, fit: true });
  }

  private markCustomDepth(): void {
    this.depth = null;
    this.depthSel.value = "";
  }

  private fillDepth(): void {
    if (!this.hier) return;
    clear(this.depthSel);
    const md = maxGroupDepth(this.hier);
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
    const cur = this.depth === null || this.depth > md ? "all" : String(this.depth);
    this.depthSel.value = cur;
  }

  // ---------------------------------------------------------------- loading a view

  private async loadView(what: string): Promise<void> {
    if (!this.run) return;
    if (this.view !== "layer") {
      // The layer graph is laid out when its view is shown again (a hidden view has no size).
      this.layerDirty = true;
      this.updateDownloads();
      this.writeHash();
      await this.refreshView();
      return;
    }
    this.layerDirty = false;
    const seq = ++this.loadSeq;
    const t0 = performance.now();
    this.showError(null);
    this.setBusy(t("loading"));
    const run = this.run;
    const nums = this.layerChoice === "all" ? this.layerList().map((l) => l.layer) : [this.layerChoice];
    let layers: LayerResponse[];
    try {
      layers = await this.fetchLayers(run.run, this.stage, nums);
    } catch (e) {
      if (seq === this.loadSeq) {
        this.showError(e);
        this.setBusy(null);
      }
      return;
    }
    if (seq !== this.loadSeq) return;
    const fetchMs = performance.now() - t0;
    this.layers = layers;
    this.hier = buildHierarchy(layers);
    this.adj = adjacency(this.hier);
    this.index = buildSearchIndex(this.hier);
    this.nodeGroup = new Map();
    for (const L of layers) for (const n of L.nodes) this.nodeGroup.set(n.id, n.group);
    const md = maxGroupDepth(this.hier);
    if (this.depth === null) this.depth = this.layerChoice === "all" ? 2 : md + 1;
    this.expanded = expandedToDepth(this.hier, this.depth);
    this.fillDepth();
    // Node from the URL (or kept across a stage change).
    let focus: string | null = null;
    if (this.pendingHashNode) {
      const k = this.keyForNode(this.pendingHashNode);
      if (k) {
        focus = k;
        this.expanded = revealKey(this.hier, this.expanded, k);
      }
      this.pendingHashNode = null;
    }
    this.selected = focus;
    this.hits = [];
    this.hitIdx = -1;
    if (this.searchInput.value.trim()) this.onSearchInput(false);
    this.updateDownloads();
    this.updateScopeButtons();
    this.writeHash();
    void this.loadStageDiffs();
    void this.loadTimeline();
    await this.relayout({ what, t0, fetchMs, fit: !focus, centre: focus ?? undefined });
  }

  private async fetchLayers(run: string, stage: number, nums: number[]): Promise<LayerResponse[]> {
    const out: LayerResponse[] = new Array(nums.length);
    let next = 0;
    const worker = async () => {
      while (next < nums.length) {
        const i = next++;
        out[i] = await this.api.layer(run, stage, nums[i]);
      }
    };
    await Promise.all(Array.from({ length: Math.min(6, nums.length) }, worker));
    return out;
  }

  private async loadStageDiffs(): Promise<void> {
    if (!this.run || this.layerChoice === "all") {
      this.annotateStages(null);
      return;
    }
    const run = this.run.run;
    const layer = this.layerChoice;
    try {
      const d = await this.api.stages(run, layer);
      if (this.run?.run === run && this.layerChoice === layer) this.annotateStages(d);
    } catch {
      this.annotateStages(null);
    }
  }

  private annotateStages(d: StagesResponse | null): void {
    const by = new Map((d?.stages ?? []).map((s) => [s.index, s]));
    for (const o of Array.from(this.stageSel.options)) {
      const base = o.dataset.base ?? o.textContent ?? "";
      const s = by.get(Number(o.value));
      const n = s ? s.added.length + s.removed.length + s.changed.length : 0;
      o.textContent = s && n > 0 ? `${base}  [${t("stageDiff", { a: s.added.length, r: s.removed.length, c: s.changed.length })}]` : base;
    }
  }

  // ---------------------------------------------------------------- layout and drawing

  private async relayout(opts: { what: string; t0: number; fetchMs: number; fit?: boolean; centre?: string; anchor?: string }): Promise<void> {
    if (!this.hier) return;
    const seq = ++this.layoutSeq;
    const hier = this.hier;
    this.vis = visibleGraph(hier, this.expanded);
    const { req, labels, headers } = buildLayoutRequest(hier, this.vis, seq);
    if (this.vis.leaves.length > 400) this.setBusy(t("layingOut", { n: this.vis.leaves.length }));
    // Remember where the anchor (a toggled group) is on screen, to keep it still.
    const anchorScreen = opts.anchor ? this.graph.screenOf(opts.anchor) : null;
    const tl = performance.now();
    let res: LayoutResult;
    try {
      res = await this.layoutClient.layout(req);
    } catch (e) {
      if (e instanceof Superseded) return;
      this.showError(new Error(t("layoutFailed", { msg: String((e as Error)?.message ?? e) })));
      this.setBusy(null);
      return;
    }
    if (seq !== this.layoutSeq || hier !== this.hier) return;
    const layoutMs = performance.now() - tl;
    const tr = performance.now();
    this.layoutRes = res;
    this.graph.render({ h: hier, vis: this.vis, layout: res, labels, headers }, this.paint());
    this.graph.setSelected(this.selected);
    this.graph.setHits(this.hits.map((x) => x.key), this.hitIdx >= 0 ? this.hits[this.hitIdx]?.key ?? null : null);
    if (opts.centre && this.vis.rep.get(opts.centre)) this.graph.centreOn(this.vis.rep.get(opts.centre)!, false);
    else if (anchorScreen && opts.anchor) {
      const d = this.graph.shiftToKeep(opts.anchor, this.vis.rep.get(opts.anchor), anchorScreen);
      if (d) this.graph.panBy(d.dx, d.dy);
    } else if (opts.fit) this.graph.fit(false, true);
    this.setBusy(null);
    this.minimap.schedule();
    this.updateDetails();
    this.updateLegend();
    this.updateHighlight();
    const renderMs = performance.now() - tr;
    const nodes = hier.opKeys.length;
    // "Drawn" = after the browser has painted the new DOM (next frame; a hidden tab gets no
    // frames, so a timer stands in).
    afterPaint(() => {
      {
        if (seq !== this.layoutSeq) return;
        this.timing = {
          seq: ++this.timingSeq, what: opts.what, totalMs: performance.now() - opts.t0, fetchMs: opts.fetchMs, layoutMs, renderMs,
          leaves: this.vis?.leaves.length ?? 0, edges: this.vis?.edges.length ?? 0, nodes,
        };
        this.layerStatus = t("statusLine", {
          nodes: t("nodes", { n: nodes }), drawn: this.vis?.leaves.length ?? 0, edges: t("edgesN", { n: this.vis?.edges.length ?? 0 }),
          fetch: opts.fetchMs.toFixed(0), layout: layoutMs.toFixed(0), worker: res.stats.totalMs.toFixed(0), cached: res.stats.cached,
          groups: res.stats.containers, draw: renderMs.toFixed(0), total: this.timing.totalMs.toFixed(0),
        });
        if (this.view === "layer") this.statusEl.textContent = this.layerStatus;
        const ws = this.drawnWaiters;
        this.drawnWaiters = [];
        for (const w of ws) w();
      }
    });
  }

  private paint() {
    const hot = this.hier && this.hotK > 0 ? hotspots(this.hier, this.hotK) : new Map<string, number>();
    return { mode: this.colorMode, theme: this.theme.current, hot };
  }

  private repaint(): void {
    this.graph.applyPaint(this.paint());
    this.updateLegend();
  }

  private async toggle(key: string): Promise<void> {
    if (!this.hier || key === SCENE) return;
    const t0 = performance.now();
    this.expanded = toggleGroup(this.expanded, key);
    // A selection hidden by the collapse moves to the group.
    if (this.selected && !this.expanded.has(key) && ancestors(this.hier, this.selected).includes(key)) this.selected = key;
    this.markCustomDepth();
    this.writeHash();
    await this.relayout({ what: "toggle", t0, fetchMs: 0, anchor: key });
  }

  // ---------------------------------------------------------------- selection, hover, details

  keyForNode(id: string): string | null {
    if (!this.hier) return null;
    if (this.hier.items.has(opKey(id))) return opKey(id);
    if (this.hier.items.has(inputKey(id))) return inputKey(id);
    const g = `g:${id}`;
    if (this.hier.items.has(g)) return g;
    return null;
  }

  /** Selects a key; reveals it (expanding groups) and centres it when asked. */
  async select(key: string | null, opts: { centre?: boolean; reveal?: boolean } = {}): Promise<void> {
    this.selected = key;
    this.writeHash();
    if (key && this.hier && opts.reveal) {
      const hidden = ancestors(this.hier, key).some((a) => !this.expanded.has(a));
      if (hidden) {
        this.expanded = revealKey(this.hier, this.expanded, key);
        this.markCustomDepth();
        this.writeHash();
        await this.relayout({ what: "reveal", t0: performance.now(), fetchMs: 0, centre: key });
        return;
      }
    }
    this.graph.setSelected(key);
    if (key && opts.centre) {
      const rep = this.vis?.rep.get(key);
      if (rep) this.graph.centreOn(rep);
    }
    this.updateDetails();
    this.updateHighlight(true);
  }

  private hover(key: string | null): void {
    this.hovered = key;
    this.updateHighlight();
  }

  private updateDetails(): void {
    if (!this.hier || !this.adj) return;
    this.details.show({
      h: this.hier, adj: this.adj, key: this.selected, layers: this.layers, expanded: this.expanded, theme: this.theme.current,
      hasTrace: !!this.run?.trace,
      onSelect: (k) => void this.select(k, { centre: true, reveal: true }),
      onToggle: (k) => void this.toggle(k),
      onKernel: (k, nodeKey) => this.focusNodeKernel(k, nodeKey),
    });
  }

  /** Kernel ids (timeline) of an op, or of every op under a group. */
  private kernelIdsOf(key: string | null): number[] {
    if (!key || !this.hier) return [];
    const it = this.hier.items.get(key);
    if (!it) return [];
    if (it.kind === "op") return this.kernelsByNode.get(it.node!.id) ?? [];
    if (it.kind !== "group") return [];
    const out: number[] = [];
    const stack = [key];
    while (stack.length) {
      const k = stack.pop()!;
      const c = this.hier.items.get(k)!;
      if (c.kind === "op") out.push(...(this.kernelsByNode.get(c.node!.id) ?? []));
      else if (c.kind === "group") stack.push(...c.children);
    }
    return out;
  }

  private updateHighlight(reveal = false): void {
    const key = this.hovered ?? this.selected;
    const ids = this.kernelIdsOf(key);
    this.timeline.setHighlight(ids);
    if (reveal && ids.length && !this.hovered) this.timeline.reveal(ids);
  }

  private focusNodeKernel(k: NodeKernel, nodeKey: string): void {
    const it = this.hier?.items.get(nodeKey);
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
    if (k.layer !== null && k.layer !== undefined && this.layerChoice !== "all" && this.layerList().some((l) => l.layer === k.layer)) {
      this.layerChoice = k.layer;
      this.layerSel.value = String(k.layer);
      this.pendingHashNode = k.node;
      await this.loadView("kernel");
      this.timeline.setHighlight(this.kernelIdsOf(this.selected), k.id);
      return true;
    }
    return false;
  }

  // ---------------------------------------------------------------- search

  private onSearchInput(jump = true): void {
    const q = this.searchInput.value;
    this.hits = search(this.index, q);
    this.hitIdx = -1;
    this.updateSearchCount();
    this.graph.setHits(this.hits.map((x) => x.key), null);
    if (jump && this.hits.length && q.trim().length >= 2) {
      // Preview the first hit without stealing focus.
      void this.stepSearch(1);
    }
  }

  private updateSearchCount(): void {
    const q = this.searchInput.value.trim();
    if (!q) this.searchCount.textContent = "";
    else if (!this.hits.length) this.searchCount.textContent = t("searchNone");
    else this.searchCount.textContent = t("searchCount", { i: this.hitIdx >= 0 ? this.hitIdx + 1 : "–", n: this.hits.length });
  }

  private async stepSearch(dir: 1 | -1): Promise<void> {
    if (!this.hits.length) return;
    this.hitIdx = stepHit(this.hits.length, this.hitIdx, dir);
    const hit = this.hits[this.hitIdx];
    this.updateSearchCount();
    this.graph.setHits(this.hits.map((x) => x.key), hit.key);
    await this.select(hit.key, { centre: true, reveal: true });
    this.graph.setHits(this.hits.map((x) => x.key), hit.key);
  }

  // ---------------------------------------------------------------- colour, legend, theme

  private setColorMode(mode: ColorMode): void {
    this.colorMode = mode;
    this.updateColorButtons();
    this.writeHash();
    this.repaint();
  }

  /** Colour by time, hotspots and the timeline need a trace. */
  private updateTraceControls(): void {
    const has = !!this.run?.trace;
    if (!has && this.colorMode === "time") this.colorMode = "group";
    for (const b of Array.from(this.colorSeg.children) as HTMLButtonElement[]) {
      if (b.dataset.mode === "time") {
        b.disabled = !has;
        b.title = has ? "" : t("needsTrace");
      }
    }
    this.hotSel.disabled = !has;
    this.updateColorButtons();
  }

  private updateColorButtons(): void {
    for (const b of Array.from(this.colorSeg?.children ?? []) as HTMLButtonElement[]) {
      b.setAttribute("aria-pressed", String(b.dataset.mode === this.colorMode));
    }
  }

  private updateLegend(): void {
    const el = this.legendEl;
    if (!el) return;
    clear(el);
    const th = this.theme.current;
    if (this.colorMode === "group") {
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
      for (const k of this.vis?.leaves ?? []) max = Math.max(max, this.hier?.items.get(k)?.timeUs ?? 0);
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

  private onTheme(th: Theme): void {
    this.repaint();
    this.timeline.setTheme(th);
    this.minimap.setTheme(th);
    this.compareView.setTheme(th);
    this.stageView.setTheme(th);
    this.overviewView.setTheme(th);
    this.updateDetails();
  }

  // ---------------------------------------------------------------- views (layer, compare, stages, overview)

  /** Tabs, toolbar groups and containers for a view (no loading). */
  private applyViewChrome(v: ViewName): void {
    this.view = v;
    if (this.root) this.root.dataset.view = v;
    for (const b of Array.from(this.tabBar?.children ?? []) as HTMLButtonElement[]) b.setAttribute("aria-pressed", String(b.dataset.view === v));
    for (const el of Array.from(this.toolbarEl?.querySelectorAll<HTMLElement>("[data-views]") ?? [])) {
      el.hidden = !(el.dataset.views ?? "").split(" ").includes(v);
    }
    for (const [name, el] of this.viewEls) el.hidden = name !== v;
    if (this.statusEl) this.statusEl.textContent = v === "layer" ? this.layerStatus : "";
  }

  async setView(v: ViewName): Promise<void> {
    if (this.help.open) this.help.close();
    this.showError(null);
    this.applyViewChrome(v);
    this.updateDownloads();
    this.writeHash();
    if (v === "layer") {
      if (this.layerDirty || !this.hier) await this.loadView("layer");
      else {
        // Shown again: the graph keeps its view; the timeline and minimap re-measure.
        this.minimap.schedule();
      }
    } else if (v === "compare") {
      await this.showCompare();
    } else {
      await this.refreshView();
    }
    this.writeHash();
  }

  /** Brings the shown side view (stages, overview) up to date with the run, stage and layer. */
  private async refreshView(): Promise<void> {
    const run = this.run;
    if (!run) return;
    if (this.view === "stages") {
      const layer = this.layerChoice === "all" ? this.layerList()[0]?.layer ?? 0 : this.layerChoice;
      await this.stageView.open(run, layer, this.stage);
      if (this.pendingStageSide) {
        const side = this.pendingStageSide;
        this.pendingStageSide = null;
        await this.stageView.setSide(side);
      }
    } else if (this.view === "overview") {
      await this.overviewView.open(run, this.stage, this.layerChoice);
    }
  }

  /** The comparison view: the given sides, what it already shows, or a useful default pair. */
  private async showCompare(a?: SideChoice, b?: SideChoice, mp?: string): Promise<void> {
    if (a && b) {
      await this.compareView.open(a, b, parsePairs(mp));
      return;
    }
    if (this.compareView.current()) return;
    const run = this.run;
    if (!run) return;
    const layer = this.layerChoice === "all" ? this.layerList()[0]?.layer ?? 0 : this.layerChoice;
    const pair = defaultPair({ run: run.run, stage: this.stage, layer }, this.runs);
    await this.compareView.open(pair.a, pair.b);
  }

  private async openCompare(a: SideChoice, b: SideChoice): Promise<void> {
    this.applyViewChrome("compare");
    this.updateDownloads();
    await this.compareView.open(a, b);
    this.writeHash();
  }

  /** The stage view stepped: the panel's stage follows (the layer view reloads when shown). */
  private onStageStep(index: number): void {
    if (!this.run) return;
    this.stage = index;
    this.stageSel.value = String(index);
    this.layerDirty = true;
    this.writeHash();
    void this.loadOverview().then(() => {
      this.layerSel.value = String(this.layerChoice);
    });
  }

  /** Opens a layer in the layer view (from the overview). */
  private async openLayer(n: number): Promise<void> {
    this.layerChoice = n;
    this.layerSel.value = String(n);
    this.selected = null;
    this.depth = null;
    this.layerDirty = true;
    await this.setView("layer");
  }

  // ---------------------------------------------------------------- export (SVG / PNG)

  private exportParts(): { parts: ExportPart[]; restore: () => void; name: (string | number)[] } | null {
    const run = this.run;
    const restores: (() => void)[] = [];
    const restore = () => restores.forEach((f) => f());
    if (this.view === "layer") {
      const p = this.graph.prepareExport();
      if (!p || !run) return null;
      restores.push(p.restore);
      const st = run.stages.find((x) => x.index === this.stage);
      const title = `${run.run} · ${st?.file.replace(/\.txt$/, "") ?? this.stage} · ${this.layerChoice === "all" ? t("allLayers") : t("layerTitle", { n: this.layerChoice })}`;
      return { parts: [{ svg: p.svg, width: p.width, height: p.height, title }], restore, name: [run.run, `stage${this.stage}`, this.layerChoice === "all" ? "all" : `layer${this.layerChoice}`] };
    }
    if (this.view === "compare") {
      const cur = this.compareView.current();
      if (!cur) return null;
      const parts: ExportPart[] = [];
      for (const side of ["a", "b"] as const) {
        const p = this.compareView.panes[side].graph.prepareExport();
        if (!p) continue;
        restores.push(p.restore);
        const c = cur[side];
        parts.push({ svg: p.svg, width: p.width, height: p.height, title: `${side.toUpperCase()} · ${c.run} · ${t("stage")} ${c.stage} · ${t("layerTitle", { n: c.layer })}` });
      }
      if (!parts.length) return null;
      return { parts, restore, name: ["compare", cur.a.run, `s${cur.a.stage}`, `L${cur.a.layer}`, "vs", cur.b.run, `s${cur.b.stage}`, `L${cur.b.layer}`] };
    }
    if (this.view === "stages") {
      const p = this.stageView.pane.graph.prepareExport();
      const c = this.stageView.current();
      if (!p || !run) return null;
      restores.push(p.restore);
      const st = run.stages.find((x) => x.index === c.stage);
      return {
        parts: [{ svg: p.svg, width: p.width, height: p.height, title: `${run.run} · ${t("layerTitle", { n: c.layer })} · ${st?.transform ?? c.stage} (${t(c.side === "after" ? "showAfter" : "showBefore")})` }],
        restore, name: [run.run, `layer${c.layer}`, `stage${c.stage}`, c.side],
      };
    }
    const p = this.overviewView.exportPart();
    if (!p || !run) return null;
    return { parts: [{ ...p, title: `${t("overview")} · ${run.run}` }], restore, name: [run.run, "overview", `stage${this.stage}`] };
  }

  /** Exports the current view as a self-contained SVG or a PNG file. */
  async exportView(kind: "svg" | "png"): Promise<string | null> {
    const ex = this.exportParts();
    if (!ex) {
      this.statusEl.textContent = t("exportNothing");
      return null;
    }
    const css = getComputedStyle(document.documentElement);
    const bg = css.getPropertyValue("--bg").trim() || "#ffffff";
    const fg = css.getPropertyValue("--fg").trim() || "#1d2329";
    const font = css.getPropertyValue("--sans").trim() || "sans-serif";
    let res;
    try {
      res = exportSvg(ex.parts, { background: bg, foreground: fg, font });
    } finally {
      ex.restore();
    }
    const name = exportFileName(ex.name, kind);
    try {
      if (kind === "svg") saveBlob(new Blob([res.svg], { type: "image/svg+xml;charset=utf-8" }), name);
      else saveBlob(await svgToPng(res.svg, res.width, res.height, bg), name);
    } catch (e) {
      this.showError(new Error(t("exportFailed", { msg: String((e as Error)?.message ?? e) })));
      return null;
    }
    this.statusEl.textContent = t("exported", { name, w: res.width, h: res.height });
    return name;
  }

  // ---------------------------------------------------------------- timeline

  private async setTimelineScope(scope: TimelineScope): Promise<void> {
    this.tlScope = scope;
    this.updateScopeButtons();
    this.writeHash();
    await this.loadTimeline();
  }

  private updateScopeButtons(): void {
    const all = this.layerChoice === "all";
    for (const b of Array.from(this.tlScopeSeg?.children ?? []) as HTMLButtonElement[]) {
      const scope = all ? "all" : this.tlScope;
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
      this.tlInfo.textContent = t("noTraceShort");
      return;
    }
    this.timeline.setMessage(null);
    const layer = this.tlScope === "layer" && this.layerChoice !== "all" ? this.layerChoice : undefined;
    let res: TimelineResponse;
    try {
      res = await this.api.timeline(run.run, { layer, maxItems: MAX_TIMELINE_ITEMS });
    } catch (e) {
      if (seq === this.tlSeq) this.showError(e);
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
    this.timeline.setTheme(this.theme.current);
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
      const layer = this.tlScope === "layer" && this.layerChoice !== "all" ? this.layerChoice : undefined;
      const a = t0 - span / 2;
      const b = t1 + span / 2;
      try {
        const res = await this.api.timeline(run.run, { layer, startUs: a, endUs: b, maxItems: MAX_TIMELINE_ITEMS });
        if (run !== this.run || scopeSeq !== this.tlSeq) return;
        this.tlWindow = { t0: a, t1: b, lod: !!res.lod };
        this.setTimelineData(res, true, true);
      } catch {
        /* keep the coarse view */
      }
    }, 200);
  }

  // ---------------------------------------------------------------- hash, keys, misc

  private currentState(): ViewState {
    return {
      phase: this.phase,
      run: this.run?.run,
      stage: this.run && this.stage !== this.run.default_stage ? this.stage : undefined,
      layer: this.layerChoice,
      node: this.selected ? publicId(this.selected) : undefined,
      color: this.colorMode !== "group" ? this.colorMode : undefined,
      depth: this.depth !== null && this.hier && this.depth <= maxGroupDepth(this.hier) ? this.depth : undefined,
      tl: this.tlScope !== "layer" ? this.tlScope : undefined,
      view: this.view !== "layer" ? this.view : undefined,
      a: this.view === "compare" ? this.compareView.current()?.a : undefined,
      b: this.view === "compare" ? this.compareView.current()?.b : undefined,
      sv: this.view === "stages" && this.stageView.current().side === "before" ? "before" : undefined,
      mp: this.view === "compare" ? formatPairs(this.compareView.manualPairs()) || undefined : undefined,
    };
  }

  private lastHash = "";

  private writeHash(): void {
    const hsh = formatHash(this.currentState());
    if (hsh === this.lastHash) return;
    this.lastHash = hsh;
    // An absolute URL: relative ones would resolve against <base href="plugin/ad_layer/">.
    const url = location.href.split("#")[0] + hsh;
    try {
      history.replaceState(history.state, "", url);
    } catch {
      location.hash = hsh;
    }
  }

  private async onHashChange(): Promise<void> {
    const st = parseHash(location.hash);
    if (formatHash(st) === this.lastHash) return;
    // A link without a run (e.g. only a comparison) keeps the run shown.
    const run = this.runs.find((r) => r.run === st.run) ?? (st.run ? undefined : this.run ?? this.runs[0]);
    if (!run) return;
    this.lastHash = formatHash(st);
    if (st.phase !== this.phase) {
      this.phase = st.phase;
      this.phaseSel.value = this.phase ?? "";
      this.fillRunChooser();
    }
    if (st.color) this.colorMode = st.color;
    this.updateColorButtons();
    this.applyViewChrome(st.view ?? "layer");
    if (st.sv) this.pendingStageSide = st.sv;
    await this.openRun(run, st);
    if (this.view === "compare") await this.showCompare(st.a, st.b, st.mp);
  }

  private onKey(ev: KeyboardEvent): void {
    if (this.help.open) return;
    const tgt = ev.target as HTMLElement | null;
    const typing = tgt && (tgt.tagName === "INPUT" || tgt.tagName === "SELECT" || tgt.tagName === "TEXTAREA" || tgt.isContentEditable);
    if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) {
      if ((ev.ctrlKey || ev.metaKey) && ev.key.toLowerCase() === "f") {
        ev.preventDefault();
        this.searchInput.focus();
        this.searchInput.select();
      }
      return;
    }
    if (ev.key === "?") {
      ev.preventDefault();
      this.help.toggle();
      return;
    }
    const vi = ["1", "2", "3", "4"].indexOf(ev.key);
    if (vi >= 0) {
      ev.preventDefault();
      void this.setView(VIEWS[vi]);
      return;
    }
    if (this.view === "compare") {
      if (this.compareView.handleKey(ev)) ev.preventDefault();
      return;
    }
    if (this.view === "stages") {
      if (this.stageView.handleKey(ev)) ev.preventDefault();
      this.writeHash();
      return;
    }
    if (this.view === "overview") return;
    if (ev.key === "/") {
      ev.preventDefault();
      this.searchInput.focus();
      return;
    }
    if (ev.key === "Escape") {
      void this.select(null);
      return;
    }
    if (ev.key === "m" || ev.key === "M") {
      ev.preventDefault();
      this.minimap.setMode(this.minimap.isShown() ? "off" : "on");
      return;
    }
    if (this.graph.handleKey(ev)) ev.preventDefault();
  }

  private updateDownloads(): void {
    if (!this.dlLinks) return;
    clear(this.dlLinks);
    if (!this.run) return;
    this.dlLinks.appendChild(text("label", t("download")));
    const add = (label: string, href: string, id: string, title?: string) => {
      const a = h("a", { class: "btn", href, download: "", "data-testid": id, title: title ?? "" });
      a.textContent = label;
      this.dlLinks.appendChild(a);
    };
    if (this.view === "compare") {
      const cur = this.compareView.current();
      if (cur) {
        for (const side of ["a", "b"] as const) {
          const c = cur[side];
          add(`${side.toUpperCase()} ${t("dlJson")}`, downloadUrl("layer.json", { run: c.run, stage: c.stage, layer: c.layer }), `download-json-${side}`, t("dlJsonTitle"));
        }
      }
    } else if (this.view !== "overview" && this.layerChoice !== "all") {
      const stage = this.view === "stages" ? this.stageView.current().stage : this.stage;
      const layer = this.view === "stages" ? this.stageView.current().layer : this.layerChoice;
      const p = { run: this.run.run, stage, layer };
      add(t("dlJson"), downloadUrl("layer.json", p), "download-json", t("dlJsonTitle"));
      add(t("dlDot"), downloadUrl("layer.dot", p), "download-dot", t("dlDotTitle"));
    }
    if (this.run.trace && this.view !== "compare") add(t("dlTrace"), downloadUrl("trace.json", { run: this.run.run }), "download-trace", t("dlTraceTitle"));
    const svgBtn = h("button", { class: "btn", type: "button", "data-testid": "export-svg", title: t("exportSvgTitle") });
    svgBtn.textContent = "SVG";
    svgBtn.addEventListener("click", () => void this.exportView("svg"));
    const pngBtn = h("button", { class: "btn", type: "button", "data-testid": "export-png", title: t("exportPngTitle") });
    pngBtn.textContent = "PNG";
    pngBtn.addEventListener("click", () => void this.exportView("png"));
    this.dlLinks.append(svgBtn, pngBtn);
  }

  private setBusy(msg: string | null): void {
    this.busy = msg !== null;
    if (!this.busyEl) return;
    this.busyEl.textContent = msg ?? "";
    this.busyEl.classList.toggle("on", this.busy);
  }

  private showError(e: unknown): void {
    if (!this.errorEl) return;
    if (e === null) {
      this.errorEl.textContent = "";
      this.errorEl.classList.remove("on");
      return;
    }
    const msg = e instanceof Error ? e.message : String(e);
    let extra = "";
    if (e instanceof ApiError && e.known?.length) extra = ` (${e.known.slice(0, 12).map(String).join(", ")}${e.known.length > 12 ? ", …" : ""})`;
    this.errorEl.textContent = t("error", { msg: msg + extra });
    this.errorEl.classList.add("on");
  }

  // ---------------------------------------------------------------- test hook

  testHook() {
    const waitDrawn = () => new Promise<void>((r) => this.drawnWaiters.push(r));
    return {
      version: 1,
      /** Resolves after the next graph draw (layout + DOM + paint). */
      nextDraw: waitDrawn,
      timing: (): Timing | null => this.timing,
      state: () => ({
        ...this.currentState(),
        selected: this.selected ? publicId(this.selected) : null,
        expanded: [...this.expanded].filter((k) => k !== SCENE).map(publicId),
        theme: this.theme.current,
        colorMode: this.colorMode,
        busy: this.busy,
        timelineScope: this.tlScope,
      }),
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
      setDepth: async (d: number | "all") => {
        this.depthSel.value = String(d);
        await this.onDepthChange();
      },
      kernelAt: (x: number, y: number) => this.timeline.kernelAt(x, y)?.kernel ?? null,
      kernelPoint: (id: number) => this.timeline.pointOf(id),
      timelineView: () => this.timeline.getView(),
      setTimelineView: (a: number, b: number) => this.timeline.setView(a, b),
      timelineKernelCount: () => this.timeline.kernelCount(),
      timelineLanes: () => this.timeline.laneSummaries(),
      timelineFrameMs: () => this.timeline.lastFrameMs,
      setTimelineScope: (s: TimelineScope) => this.setTimelineScope(s),
      graphView: () => this.graph.getView(),
      setGraphScale: (k: number) => this.graph.setScale(k),
      drawnNodeIds: () => this.graph.drawnNodeIds(),
      searchHits: () => this.hits.map((x) => publicId(x.key)),
      layoutStats: () => this.layoutRes?.stats ?? null,
      view: (): ViewName => this.view,
      setView: (v: ViewName) => this.setView(v),
      compare: () => this.compareView.testState(),
      openCompare: (a: SideChoice, b: SideChoice) => this.openCompare(a, b),
      compareJump: (side: "a" | "b", id: string) => this.compareView.jumpTo(side, id),
      stages: () => this.stageView.testState(),
      overview: () => this.overviewView.testState(),
      minimapShown: () => this.minimap.isShown(),
      minimapPoint: (wx: number, wy: number) => this.minimap.pointOf(wx, wy),
      helpOpen: () => this.help.open,
    };
  }
}
