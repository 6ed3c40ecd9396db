// The panel's wiring: the toolbar (views, run/stage/layer choosers, link, downloads, theme,
// language, help), the four views, the shared store, and the view state in the URL (the panel's
// own hash, and TensorBoard's URL plugin data when the panel runs inside TensorBoard).
import { Api, ApiError, downloadUrl } from "./api/client";
import type { RunInfo } from "./api/types";
import { CompareView } from "./compare/view";
import { defaultPair, formatPairs, parsePairs, type SideChoice } from "./compare/model";
import { exportView } from "./export_view";
import { hostWindow, readUrlPluginData, tensorBoardLink, writeUrlPluginData } from "./host/tensorboard";
import { detectLang, getLang, type Lang, nodesText, setLang, t } from "./i18n";
import { LayerView } from "./layer/view";
import { fmtUs } from "./model/format";
import { OverviewView } from "./overview/view";
import { formatHash, parseHash, runsForPhase, VIEWS, type PhaseFilter, type ViewName, type ViewState } from "./state/hash";
import { initialPanelState, Store, type PanelState } from "./state/store";
import { StageView } from "./stages/view";
import { activity } from "./ui/activity";
import { clear, h, text } from "./ui/dom";
import { HelpOverlay } from "./ui/help";
import { ThemeController } from "./ui/theme";

const LANG_KEY = "adLayer.lang";

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
    /* storage may be unavailable in sandboxed iframes */
  }
}

export class App {
  private api = new Api();
  readonly store = new Store<PanelState>(initialPanelState());
  private theme = new ThemeController();
  private layerView: LayerView;
  private compareView: CompareView;
  private stageView: StageView;
  private overviewView: OverviewView;
  private help: HelpOverlay;
  private viewEls = new Map<ViewName, HTMLElement>();
  private tabBar!: HTMLDivElement;
  private toolbarEl!: HTMLDivElement;
  private layerStatus = "";
  private root!: HTMLDivElement;
  private runSel!: HTMLSelectElement;
  private phaseSel!: HTMLSelectElement;
  private stageSel!: HTMLSelectElement;
  private layerSel!: HTMLSelectElement;
  private errorEl!: HTMLDivElement;
  private emptyEl!: HTMLDivElement;
  private statusEl!: HTMLDivElement;
  private dlLinks!: HTMLDivElement;
  private runs: RunInfo[] = [];
  private run: RunInfo | null = null;
  private layerNums: number[] = [];
  private lastHash = "";

  constructor() {
    setLang(detectLang(storageGet(LANG_KEY), typeof navigator !== "undefined" ? navigator.language : undefined));
    this.help = new HelpOverlay();
    this.layerView = new LayerView(this.api, this.store, {
      onError: (e) => this.showError(e),
      onStatus: (line) => {
        this.layerStatus = line;
        if (this.store.get().view === "layer") this.statusEl.textContent = line;
      },
      onLayer: (n) => {
        this.layerSel.value = String(n);
      },
    });
    this.compareView = new CompareView(this.api, {
      onChange: (a, b) => this.store.set({ compare: { a, b, mp: formatPairs(this.compareView.manualPairs()) } }),
      onError: (e) => this.showError(e),
    });
    this.stageView = new StageView(this.api, {
      onStage: () => this.writeUrl(),
      onCompare: (run, layer, prev, cur) => void this.openCompare({ run, stage: prev, layer }, { run, stage: cur, layer }),
      onError: (e) => this.showError(e),
    });
    this.overviewView = new OverviewView(this.api, {
      onOpenLayer: (n) => void this.openLayer(n),
      onError: (e) => this.showError(e),
    });
    this.theme.onChange((th) => this.onTheme(th));
    this.onTheme(this.theme.current);
    this.store.subscribe(() => this.writeUrl());
  }

  // ---------------------------------------------------------------- UI construction

  mount(body: HTMLElement): void {
    clear(body);
    this.root = h("div", { class: "adl-root", "data-testid": "ad-layer-root", "data-view": "layer" });
    activity.attach(this.root);
    this.root.appendChild(this.buildToolbar());
    this.errorEl = h("div", { class: "adl-error", "data-testid": "error", role: "alert" });
    this.root.appendChild(this.errorEl);
    this.emptyEl = h("div", { class: "adl-empty", "data-testid": "empty" });
    this.layerView.pane.el.appendChild(this.emptyEl);
    this.viewEls.set("layer", this.layerView.el);
    this.viewEls.set("compare", this.compareView.el);
    this.viewEls.set("stages", this.stageView.el);
    this.viewEls.set("overview", this.overviewView.el);
    for (const [v, el] of this.viewEls) {
      el.hidden = v !== "layer";
      this.root.appendChild(el);
    }
    this.statusEl = h("div", { class: "adl-status", "data-testid": "status" });
    this.root.appendChild(this.statusEl);
    this.root.appendChild(this.help.el);
    body.appendChild(this.root);
    document.addEventListener("keydown", (ev) => this.onKey(ev));
    window.addEventListener("hashchange", () => void this.onHashChange());
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
      const b = h("button", { type: "button", role: "tab", "data-view": v, "data-testid": `view-${v}`, "aria-pressed": String(v === "layer"), title: `${t(tabNames[v])} (${i + 1})` });
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
    for (const el of this.layerView.toolbarItems) {
      el.dataset.views = "layer";
      tb.appendChild(el);
    }
    tb.appendChild(h("span", { class: "spacer" }));
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
    tb.append(linkBtn, this.dlLinks, themeBtn, langBtn, helpBtn);
    return tb;
  }

  /** A URL that opens TensorBoard itself on this view (its tab, with the view in its URL). */
  linkUrl(): string {
    return tensorBoardLink(hashParams(this.viewState()));
  }

  private async copyLink(btn: HTMLButtonElement): Promise<void> {
    const url = this.linkUrl();
    btn.dataset.url = url;
    try {
      await navigator.clipboard.writeText(url);
      btn.textContent = t("copied");
    } catch {
      btn.textContent = t("copyFailed");
    }
    this.statusEl.textContent = url;
    setTimeout(() => (btn.textContent = t("copyLink")), 1500);
  }

  // ---------------------------------------------------------------- startup and choosers

  async start(): Promise<void> {
    const end = activity.begin();
    try {
      await this.startNow();
    } finally {
      end();
    }
  }

  private async startNow(): Promise<void> {
    let runs;
    try {
      runs = await this.api.runs();
    } catch (e) {
      this.showError(e);
      return;
    }
    // Runs whose store cannot be read come as {run, error}: there is nothing to show of them.
    this.runs = (runs.runs ?? []).filter((r): r is RunInfo => r.error === null);
    if (!this.runs.length) {
      this.emptyEl.textContent = t("noRuns");
      this.emptyEl.classList.add("on");
      return;
    }
    const st = await this.initialState();
    this.phaseSel.value = st.phase ?? "";
    this.store.set({ phase: st.phase });
    const shown = this.fillRunChooser();
    const run = shown.find((r) => r.run === st.run) ?? this.runs.find((r) => r.run === st.run) ?? shown[0] ?? this.runs[0];
    this.store.set({ color: st.color ?? "group", tl: st.tl ?? "layer", stageSide: st.sv ?? "after" });
    this.compareView.setRuns(this.runs);
    this.applyViewChrome(st.view ?? "layer");
    await this.openRun(run, st);
    if (st.view === "compare") await this.showCompare(st.a, st.b, st.mp);
  }

  /**
   * The view to open with: the panel's own hash; else, inside TensorBoard, TensorBoard's URL plugin
   * data (what a reload of TensorBoard or a copied link hands back).
   */
  private async initialState(): Promise<ViewState> {
    const own = parseHash(location.hash);
    if (own.run || own.view) return own;
    const data = await readUrlPluginData();
    if (!data) return own;
    const q = new URLSearchParams(data).toString();
    return q ? parseHash(`#${q}`) : own;
  }

  private async openRun(run: RunInfo, st: ViewState): Promise<void> {
    this.run = run;
    this.runSel.value = run.run;
    this.layerView.setRun(run);
    clear(this.stageSel);
    const stages = [...run.stages].sort((a, b) => a.index - b.index);
    for (const s of stages) {
      const o = h("option", { value: s.index });
      const fin = s.index === run.default_stage ? ` (${t("stageFinal")})` : "";
      o.textContent = `${s.file.replace(/\.txt$/, "")}${fin}`;
      o.dataset.base = o.textContent;
      this.stageSel.appendChild(o);
    }
    const stage = st.stage !== undefined && stages.some((s) => s.index === st.stage) ? st.stage : run.default_stage;
    this.stageSel.value = String(stage);
    this.store.set({ run: run.run, stage });
    await this.loadOverview();
    let layer: number | "all";
    if (st.layer === "all") layer = "all";
    else if (st.layer !== undefined && this.layerNums.includes(st.layer)) layer = st.layer;
    else layer = this.layerNums[0] ?? 0;
    this.layerSel.value = String(layer);
    this.store.set({ layer, depth: st.depth ?? null, selected: st.node ?? null });
    await this.loadLayer("layer", st.node ?? null, st.ss);
  }

  private async loadOverview(): Promise<void> {
    const run = this.run;
    if (!run) return;
    let layers = run.layers;
    try {
      layers = (await this.api.overview(run.run, this.store.get().stage)).layers;
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 404)) this.showError(e);
    }
    this.layerNums = layers.map((l) => l.layer);
    clear(this.layerSel);
    for (const l of layers) {
      const o = h("option", { value: l.layer });
      const time = typeof l.gpu_time_us === "number" ? ` · ${fmtUs(l.gpu_time_us)}` : "";
      o.textContent = `${t("layerOption", { n: l.layer, kind: l.kind })} · ${nodesText(l.node_count)}${time}`;
      this.layerSel.appendChild(o);
    }
    const all = h("option", { value: "all" });
    all.textContent = t("allLayers");
    this.layerSel.appendChild(all);
  }

  /** Fill the run chooser with the runs of the chosen phase; returns them. */
  private fillRunChooser(): RunInfo[] {
    const shown = runsForPhase(this.runs, this.store.get().phase);
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
    this.store.set({ phase: (this.phaseSel.value || undefined) as PhaseFilter | undefined });
    const shown = this.fillRunChooser();
    if (shown.length && !shown.some((r) => r.run === this.run?.run)) {
      this.runSel.value = shown[0].run;
      await this.onRunChange();
    }
  }

  /** The run list again: a run converted again while the tab is open shows what it holds now. */
  private async refreshRuns(): Promise<void> {
    try {
      const runs = ((await this.api.runs()).runs ?? []).filter((r): r is RunInfo => r.error === null);
      if (runs.length) {
        this.runs = runs;
        this.compareView.setRuns(runs);
      }
    } catch (e) {
      this.showError(e);
    }
  }

  private async onRunChange(): Promise<void> {
    const name = this.runSel.value;
    await activity.track(this.refreshRuns());
    this.fillRunChooser();
    const run = this.runs.find((r) => r.run === name);
    if (!run) return;
    const layer = this.store.get().layer;
    await this.openRun(run, { layer: typeof layer === "number" ? layer : undefined });
  }

  private async onStageChange(): Promise<void> {
    const st = this.store.get();
    this.store.set({ stage: Number(this.stageSel.value) });
    await this.loadOverview();
    let layer = st.layer;
    if (layer !== "all" && !this.layerNums.includes(layer)) layer = this.layerNums[0] ?? 0;
    this.layerSel.value = String(layer);
    this.store.set({ layer });
    // The selected node stays selected in the new stage when it is there.
    const node = st.selected && !st.selected.includes("/") ? st.selected : null;
    await this.loadLayer("stage", node);
  }

  private async onLayerChange(): Promise<void> {
    const v = this.layerSel.value;
    this.store.set({ layer: v === "all" ? "all" : Number(v), selected: null, depth: null });
    await this.loadLayer("layer", null);
  }

  /** Loads the store's layer into the layer view, or marks it out of date while another view shows. */
  private async loadLayer(what: string, node: string | null, stageViewStage?: number): Promise<void> {
    if (!this.run) return;
    this.updateDownloads();
    void this.loadStageDiffs();
    if (this.store.get().view !== "layer") {
      // The layer graph is laid out when its view is shown again (a hidden view has no size).
      this.layerView.dirty = true;
      await this.refreshView(stageViewStage);
      return;
    }
    await this.layerView.load(what, this.layerNums, node);
  }

  private async loadStageDiffs(): Promise<void> {
    const run = this.run;
    const layer = this.store.get().layer;
    if (!run || layer === "all") {
      this.annotateStages(null);
      return;
    }
    try {
      const d = await this.api.stages(run.run, layer);
      if (this.run?.run === run.run && this.store.get().layer === layer) this.annotateStages(d.stages);
    } catch {
      this.annotateStages(null);
    }
  }

  private annotateStages(stages: { index: number; added: string[]; removed: string[]; changed: string[] }[] | null): void {
    const by = new Map((stages ?? []).map((s) => [s.index, s]));
    for (const o of Array.from(this.stageSel.options)) {
      const base = o.dataset.base ?? o.textContent ?? "";
      const s = by.get(Number(o.value));
      const n = s ? s.added.length + s.removed.length + s.changed.length : 0;
      o.textContent = s && n > 0 ? `${base}  [${t("stageDiff", { a: s.added.length, r: s.removed.length, c: s.changed.length })}]` : base;
    }
  }

  // ---------------------------------------------------------------- views

  private onTheme(th: "light" | "dark"): void {
    this.layerView.setTheme(th);
    this.compareView.setTheme(th);
    this.stageView.setTheme(th);
    this.overviewView.setTheme(th);
  }

  /** Tabs, toolbar groups and containers for a view (no loading). */
  private applyViewChrome(v: ViewName): void {
    this.store.set({ view: v });
    if (this.root) this.root.dataset.view = v;
    for (const b of Array.from(this.tabBar?.children ?? []) as HTMLButtonElement[]) b.setAttribute("aria-pressed", String(b.dataset.view === v));
    for (const el of Array.from(this.toolbarEl?.querySelectorAll<HTMLElement>("[data-views]") ?? [])) {
      el.hidden = !(el.dataset.views ?? "").split(" ").includes(v);
    }
    for (const [name, el] of this.viewEls) el.hidden = name !== v;
    if (this.statusEl) this.statusEl.textContent = v === "layer" ? this.layerStatus : "";
  }

  async setView(v: ViewName): Promise<void> {
    const end = activity.begin();
    try {
      if (this.help.open) this.help.close();
      this.showError(null);
      this.applyViewChrome(v);
      this.updateDownloads();
      if (v === "layer") {
        if (this.layerView.dirty) await this.layerView.load("layer", this.layerNums, this.store.get().selected);
        else this.layerView.shown();
      } else if (v === "compare") {
        await this.showCompare();
      } else {
        await this.refreshView();
      }
      this.updateDownloads();
      this.writeUrl();
    } finally {
      end();
    }
  }

  /** Brings the shown side view (stages, overview) up to date with the run, stage and layer. */
  private async refreshView(stageViewStage?: number): Promise<void> {
    const run = this.run;
    if (!run) return;
    const st = this.store.get();
    if (st.view === "stages") {
      const layer = st.layer === "all" ? this.layerNums[0] ?? 0 : st.layer;
      // The stage view keeps its own stage: it starts at the panel's and steps without moving it.
      const cur = this.stageView.current();
      const stage = stageViewStage ?? (cur.run === run.run && cur.layer === layer ? cur.stage : st.stage);
      await activity.track(this.stageView.open(run, layer, stage));
      if (st.stageSide === "before") await this.stageView.setSide("before");
    } else if (st.view === "overview") {
      await activity.track(this.overviewView.open(run, st.stage, st.layer));
    }
  }

  /** The comparison view: the given sides, what it already shows, or a useful default pair. */
  private async showCompare(a?: SideChoice, b?: SideChoice, mp?: string): Promise<void> {
    if (a && b) {
      await activity.track(this.compareView.open(a, b, parsePairs(mp)));
      return;
    }
    if (this.compareView.current()) return;
    const run = this.run;
    if (!run) return;
    const st = this.store.get();
    const layer = st.layer === "all" ? this.layerNums[0] ?? 0 : st.layer;
    const pair = defaultPair({ run: run.run, stage: st.stage, layer }, this.runs);
    await activity.track(this.compareView.open(pair.a, pair.b));
  }

  private async openCompare(a: SideChoice, b: SideChoice): Promise<void> {
    this.applyViewChrome("compare");
    this.updateDownloads();
    await activity.track(this.compareView.open(a, b));
    this.updateDownloads();
  }

  /** Opens a layer in the layer view (from the overview). */
  private async openLayer(n: number): Promise<void> {
    this.layerSel.value = String(n);
    this.store.set({ layer: n, selected: null, depth: null });
    this.layerView.dirty = true;
    void this.loadStageDiffs();
    await this.setView("layer");
  }

  // ---------------------------------------------------------------- export (SVG / PNG)

  /** Exports the current view as a self-contained SVG or a PNG file. */
  async exportView(kind: "svg" | "png"): Promise<string | null> {
    const st = this.store.get();
    const res = await exportView(kind, {
      view: st.view, run: this.run, stage: st.stage, layer: st.layer, layerGraph: this.layerView.pane.graph,
      compare: this.compareView, stages: this.stageView, overview: this.overviewView,
    });
    if (res.error) this.showError(new Error(res.error));
    else this.statusEl.textContent = res.status;
    return res.name;
  }

  // ---------------------------------------------------------------- URL state

  /** The view state as the URL carries it. */
  private viewState(): ViewState {
    const st = this.store.get();
    const run = this.run;
    const sv = this.stageView.current();
    return {
      phase: st.phase,
      run: st.run ?? undefined,
      stage: run && st.stage !== run.default_stage ? st.stage : undefined,
      layer: st.layer,
      node: st.selected ?? undefined,
      color: st.color !== "group" ? st.color : undefined,
      depth: st.depth ?? undefined,
      tl: st.tl !== "layer" ? st.tl : undefined,
      view: st.view !== "layer" ? st.view : undefined,
      a: st.view === "compare" ? st.compare?.a : undefined,
      b: st.view === "compare" ? st.compare?.b : undefined,
      sv: st.view === "stages" && sv.side === "before" ? "before" : undefined,
      ss: st.view === "stages" && sv.run && sv.stage !== st.stage ? sv.stage : undefined,
      mp: st.view === "compare" ? st.compare?.mp || undefined : undefined,
    };
  }

  /** Writes the view into the panel's URL and, inside TensorBoard, into TensorBoard's. */
  private writeUrl(): void {
    if (!this.run) return;
    const vs = this.viewState();
    const hsh = formatHash(vs);
    if (hsh === this.lastHash) return;
    this.lastHash = hsh;
    // An absolute URL: relative ones would resolve against <base href="plugin/ad_layer/">.
    try {
      history.replaceState(history.state, "", location.href.split("#")[0] + hsh);
    } catch {
      location.hash = hsh;
    }
    if (hostWindow()) writeUrlPluginData(hashParams(vs));
  }

  private async onHashChange(): Promise<void> {
    const st = parseHash(location.hash);
    if (formatHash(st) === this.lastHash) return;
    // A link without a run (e.g. only a comparison) keeps the run shown.
    const run = this.runs.find((r) => r.run === st.run) ?? (st.run ? undefined : this.run ?? this.runs[0]);
    if (!run) return;
    this.lastHash = formatHash(st);
    const end = activity.begin();
    try {
      if (st.phase !== this.store.get().phase) {
        this.store.set({ phase: st.phase });
        this.phaseSel.value = st.phase ?? "";
        this.fillRunChooser();
      }
      this.store.set({ color: st.color ?? "group", stageSide: st.sv ?? "after" });
      this.applyViewChrome(st.view ?? "layer");
      await this.openRun(run, st);
      if (st.view === "compare") await this.showCompare(st.a, st.b, st.mp);
    } finally {
      end();
    }
  }

  // ---------------------------------------------------------------- keys, downloads, errors

  private onKey(ev: KeyboardEvent): void {
    if (this.help.open) return;
    const view = this.store.get().view;
    const tgt = ev.target as HTMLElement | null;
    const typing = tgt && (tgt.tagName === "INPUT" || tgt.tagName === "SELECT" || tgt.tagName === "TEXTAREA" || tgt.isContentEditable);
    // Enter on a focused button or link is that control's own.
    if (ev.key === "Enter" && tgt?.closest("button, a")) return;
    if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) {
      if ((ev.ctrlKey || ev.metaKey) && ev.key.toLowerCase() === "f" && view === "layer") {
        ev.preventDefault();
        this.layerView.searchInput.focus();
        this.layerView.searchInput.select();
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
    let handled = false;
    if (view === "compare") handled = this.compareView.handleKey(ev);
    else if (view === "stages") {
      handled = this.stageView.handleKey(ev);
      this.writeUrl();
    } else if (view === "layer") handled = this.layerView.handleKey(ev);
    if (handled) ev.preventDefault();
  }

  private updateDownloads(): void {
    if (!this.dlLinks) return;
    clear(this.dlLinks);
    const run = this.run;
    if (!run) return;
    const st = this.store.get();
    this.dlLinks.appendChild(text("label", t("download")));
    const add = (label: string, href: string, id: string, title?: string) => {
      const a = h("a", { class: "btn", href, download: "", "data-testid": id, title: title ?? "" });
      a.textContent = label;
      this.dlLinks.appendChild(a);
    };
    if (st.view === "compare") {
      const cur = this.compareView.current();
      if (cur) {
        for (const side of ["a", "b"] as const) {
          const c = cur[side];
          add(`${side.toUpperCase()} ${t("dlJson")}`, downloadUrl("layer.json", { run: c.run, stage: c.stage, layer: c.layer }), `download-json-${side}`, t("dlJsonTitle"));
        }
      }
    } else if (st.view !== "overview" && st.layer !== "all") {
      const stage = st.view === "stages" ? this.stageView.current().stage : st.stage;
      const layer = st.view === "stages" ? this.stageView.current().layer : st.layer;
      const p = { run: run.run, stage, layer };
      add(t("dlJson"), downloadUrl("layer.json", p), "download-json", t("dlJsonTitle"));
      add(t("dlDot"), downloadUrl("layer.dot", p), "download-dot", t("dlDotTitle"));
    }
    if (run.trace && st.view !== "compare") add(t("dlTrace"), downloadUrl("trace.json", { run: run.run }), "download-trace", t("dlTraceTitle"));
    const svgBtn = h("button", { class: "btn", type: "button", "data-testid": "export-svg", title: t("exportSvgTitle") });
    svgBtn.textContent = "SVG";
    svgBtn.addEventListener("click", () => void this.exportView("svg"));
    const pngBtn = h("button", { class: "btn", type: "button", "data-testid": "export-png", title: t("exportPngTitle") });
    pngBtn.textContent = "PNG";
    pngBtn.addEventListener("click", () => void this.exportView("png"));
    this.dlLinks.append(svgBtn, pngBtn);
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
    const L = this.layerView.testHook();
    return {
      version: 2,
      ...L,
      /** Whether the panel is idle and painted (the root's data-state="ready"). */
      ready: () => this.root?.dataset.state === "ready",
      state: () => {
        const st = this.store.get();
        return {
          ...this.viewState(),
          selected: st.selected,
          expanded: L.expanded(),
          theme: this.theme.current,
          colorMode: st.color,
          busy: this.layerView.loading || activity.isBusy(),
          timelineScope: st.tl,
          stage: st.stage,
          depth: st.depth ?? undefined,
        };
      },
      linkUrl: () => this.linkUrl(),
      view: (): ViewName => this.store.get().view,
      setView: (v: ViewName) => this.setView(v),
      compare: () => this.compareView.testState(),
      openCompare: (a: SideChoice, b: SideChoice) => this.openCompare(a, b),
      compareJump: (side: "a" | "b", id: string) => this.compareView.jumpTo(side, id),
      stages: () => this.stageView.testState(),
      overview: () => this.overviewView.testState(),
      helpOpen: () => this.help.open,
    };
  }
}

/** The view state as flat string pairs (TensorBoard's URL plugin data, without its prefix). */
function hashParams(vs: ViewState): Record<string, string> {
  return Object.fromEntries(new URLSearchParams(formatHash(vs).replace(/^#/, "")));
}
