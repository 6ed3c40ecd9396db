// The panel's wiring: one store, the views of the table that follow it, the toolbar (views, run,
// stage and layer choosers, link, downloads, theme, language, help) that writes user choices through
// the actions and shows what the store holds, the URL that follows the store, keys and the test hook.
// Nothing here names a view: what differs between views is their entry in views/table.ts.
import { Api, ApiError } from "./api/client";
import type { UnreadableRun } from "./api/types";
import { exportView } from "./export_view";
import { detectLang, getLang, nodesText, setLang, t } from "./i18n";
import { ellipsizeMiddle, fmtUs, runLabel } from "./model/format";
import { PanelActions } from "./state/actions";
import { runsForPhase, type PhaseFilter, type ViewName } from "./state/hash";
import { changedAny, initialPanelState, shownRun, Store, type PanelState } from "./state/store";
import { UrlSync, viewState } from "./state/url";
import { activity } from "./ui/activity";
import { clear, fitToChoice, h, text } from "./ui/dom";
import { DoubtNotice, doubtfulLayers, stageDoubts } from "./ui/doubts";
import { HelpOverlay } from "./ui/help";
import { ThemeController } from "./ui/theme";
import { storageGet, storageSet } from "./ui/storage";
import { DEFAULT_VIEW, viewEntries, viewEntry, type AnyViewEntry } from "./views/table";
import { CHOOSERS, type Chooser, type PanelView, type ViewContext } from "./views/view";

const LANG_KEY = "adLayer.lang";
/** Characters of an unreadable run's reason shown in the run chooser (the whole reason is its tooltip). */
const REASON_CHARS = 90;

export class App {
  private api = new Api();
  readonly store: Store<PanelState>;
  private actions: PanelActions;
  private url: UrlSync;
  private theme = new ThemeController();
  /** The views of the table, in its order, with what the app built them with. */
  private views: { entry: AnyViewEntry; view: PanelView; ctx: ViewContext }[] = [];
  private help: HelpOverlay;
  /** Each view's status line (shown while it is the current view). */
  private statusOf = new Map<ViewName, string>();
  private root: HTMLDivElement;
  private tabBar!: HTMLDivElement;
  private toolbarEl!: HTMLDivElement;
  private runSel!: HTMLSelectElement;
  private phaseSel!: HTMLSelectElement;
  private stageSel!: HTMLSelectElement;
  private layerSel!: HTMLSelectElement;
  private rankSel!: HTMLSelectElement;
  private rankGrp!: HTMLElement;
  private errorEl: HTMLDivElement;
  /** The notice under the toolbar when the converter has doubts about the shown stage's layers. */
  private stageDoubts = new DoubtNotice("stage-doubts");
  private emptyEl: HTMLDivElement;
  private statusEl: HTMLDivElement;
  private dlLinks!: HTMLDivElement;
  /** What the download links were last built for (they are built again only when it changes). */
  private dlShown = "";
  private diffSeq = 0;

  constructor() {
    setLang(detectLang(storageGet(LANG_KEY), typeof navigator !== "undefined" ? navigator.language : undefined));
    this.help = new HelpOverlay();
    this.store = new Store<PanelState>(initialPanelState(this.theme.current, getLang()));
    const onError = (e: unknown) => this.showError(e);
    this.actions = new PanelActions(this.api, this.store, onError);
    for (const entry of viewEntries()) {
      const ctx: ViewContext = {
        api: this.api, store: this.store, actions: this.actions, onError,
        onStatus: (line) => {
          this.statusOf.set(entry.id, line);
          if (this.store.get().view === entry.id) this.statusEl.textContent = line;
        },
      };
      const view = entry.create(ctx);
      this.store.subscribe((st, changed) => view.follow(st, changed));
      this.views.push({ entry, view, ctx });
    }
    this.theme.onChange((theme) => this.store.set({ theme }));
    this.root = h("div", { class: "adl-root", "data-testid": "ad-layer-root", "data-view": DEFAULT_VIEW });
    this.errorEl = h("div", { class: "adl-error", "data-testid": "error", role: "alert" });
    this.emptyEl = h("div", { class: "adl-empty", "data-testid": "empty" });
    this.statusEl = h("div", { class: "adl-status", "data-testid": "status" });
    this.store.subscribe((st, changed) => this.follow(st, changed));
    // After the views: the URL is written once they have taken a change in.
    this.url = new UrlSync(this.store, (vs) => void activity.track(this.actions.apply(vs, true)));
  }

  // ---------------------------------------------------------------- UI construction

  mount(body: HTMLElement): void {
    clear(body);
    activity.attach(this.root);
    this.root.append(this.buildToolbar(), this.errorEl, this.stageDoubts.el);
    this.views.find((v) => v.view.emptySlot)?.view.emptySlot?.appendChild(this.emptyEl);
    for (const { entry, view } of this.views) {
      view.el.hidden = entry.id !== DEFAULT_VIEW;
      this.root.appendChild(view.el);
    }
    this.root.append(this.statusEl, this.help.el);
    body.appendChild(this.root);
    document.addEventListener("keydown", (ev) => this.onKey(ev));
  }

  /**
   * Two rows: what is shown (views, phase, run, stage, layer) and how (the layer view's depth,
   * colour, hotspots, search; downloads, link, theme, language, help). Each row wraps on its own
   * in a narrow window; in the comparison view, which has its own choosers, they share one row.
   */
  private buildToolbar(): HTMLElement {
    const tb = h("div", { class: "adl-toolbar", "data-testid": "toolbar" });
    this.toolbarEl = tb;
    tb.appendChild(text("span", t("appTitle"), { class: "title" }));
    this.tabBar = h("div", { class: "seg tabs", role: "tablist", "aria-label": t("views"), "data-testid": "view-tabs" });
    for (const { id, tab, key } of viewEntries()) {
      const b = h("button", { type: "button", role: "tab", "data-view": id, "data-testid": `view-${id}`, "aria-pressed": String(id === DEFAULT_VIEW), title: `${t(tab)} (${key})` });
      b.textContent = t(tab);
      b.addEventListener("click", () => this.setView(id));
      this.tabBar.appendChild(b);
    }
    tb.appendChild(this.tabBar);
    this.phaseSel = h("select", { "data-testid": "phase-select", "aria-label": t("phase"), title: t("phase") });
    for (const [value, label] of [["", t("phaseAll")], ["decode", t("phaseDecode")], ["prefill", t("phasePrefill")], ["none", t("phaseNone")]]) {
      const o = h("option", { value });
      o.textContent = label;
      this.phaseSel.appendChild(o);
    }
    this.runSel = h("select", { id: "adl-run", "data-testid": "run-select", "aria-label": t("run") });
    this.stageSel = h("select", { "data-testid": "stage-select", "aria-label": t("stage") });
    this.layerSel = h("select", { "data-testid": "layer-select", "aria-label": t("layer") });
    this.rankSel = h("select", { "data-testid": "rank-select", "aria-label": t("rank"), title: t("rankTitle") });
    const act = (p: Promise<void>) => void activity.track(p);
    this.phaseSel.addEventListener("change", () => act(this.actions.choosePhase((this.phaseSel.value || undefined) as PhaseFilter | undefined)));
    this.runSel.addEventListener("change", () => act(this.actions.chooseRun(this.runSel.value)));
    this.stageSel.addEventListener("change", () => act(this.actions.chooseStage(Number(this.stageSel.value))));
    this.layerSel.addEventListener("change", () => this.actions.chooseLayer(this.layerSel.value === "all" ? "all" : Number(this.layerSel.value)));
    this.rankSel.addEventListener("change", () => this.actions.chooseRank(Number(this.rankSel.value)));
    // Each chooser shows with the views whose entry lists it; the row ends with the last of them.
    const showing = (c: Chooser) => viewEntries().filter((e) => e.choosers.includes(c)).map((e) => e.id).join(" ");
    const label: Record<Chooser, HTMLElement> = {
      phase: text("label", t("phase"), { class: "sr" }), run: h("label", { for: "adl-run" }, t("run")), stage: text("label", t("stage")), layer: text("label", t("layer")),
      rank: text("label", t("rank")),
    };
    const sel: Record<Chooser, HTMLSelectElement> = { phase: this.phaseSel, run: this.runSel, stage: this.stageSel, layer: this.layerSel, rank: this.rankSel };
    for (const c of CHOOSERS) {
      const grp = h("span", { class: "grp", "data-views": showing(c) }, label[c], sel[c]);
      if (c === "rank") {
        grp.dataset.testid = "rank-chooser";
        this.rankGrp = grp;
      }
      tb.appendChild(grp);
    }
    tb.appendChild(h("span", { class: "break", "data-views": viewEntries().filter((e) => e.choosers.length).map((e) => e.id).join(" ") }));
    for (const { entry, view } of this.views) {
      for (const el of view.toolbarItems ?? []) {
        el.dataset.views = entry.id;
        tb.appendChild(el);
      }
    }
    tb.appendChild(h("span", { class: "spacer" }));
    this.dlLinks = h("div", { class: "grp", "data-testid": "downloads" });
    const themeBtn = h("button", { class: "btn iconbtn", type: "button", title: t("themeToggle"), "aria-label": t("themeToggle"), "data-testid": "theme-toggle" });
    const setThemeIcon = () => (themeBtn.textContent = this.store.get().theme === "dark" ? "☀" : "☾");
    setThemeIcon();
    themeBtn.addEventListener("click", () => this.theme.toggle());
    this.store.subscribe((_st, changed) => changed.has("theme") && setThemeIcon());
    const langBtn = h("button", { class: "btn", type: "button", title: t("langToggleTitle"), "data-testid": "lang-toggle" });
    langBtn.textContent = t("langToggle");
    langBtn.addEventListener("click", () => this.store.set({ lang: this.store.get().lang === "en" ? "zh" : "en" }));
    const linkBtn = h("button", { class: "btn", type: "button", title: t("copyLinkTitle"), "data-testid": "copy-link" });
    linkBtn.textContent = t("copyLink");
    linkBtn.addEventListener("click", () => void this.copyLink(linkBtn));
    const helpBtn = h("button", { class: "btn iconbtn", type: "button", title: `${t("helpTitle")} (?)`, "aria-label": t("helpTitle"), "data-testid": "help-button" }, "?");
    helpBtn.addEventListener("click", () => this.help.toggle());
    tb.append(this.dlLinks, linkBtn, themeBtn, langBtn, helpBtn);
    return tb;
  }

  /** A URL that opens TensorBoard itself on this view (its tab, with the view in its URL). */
  linkUrl(): string {
    return this.url.link();
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

  // ---------------------------------------------------------------- startup

  async start(): Promise<void> {
    await activity.track(this.startNow());
  }

  private async startNow(): Promise<void> {
    if (!(await this.actions.loadRuns())) return;
    const st = this.store.get();
    if (!st.runs.length) {
      this.emptyEl.textContent = st.unreadable.length ? t("noReadableRuns", { runs: st.unreadable.map((r) => `${r.run}: ${r.error}`).join("; ") }) : t("noRuns");
      this.emptyEl.classList.add("on");
      return;
    }
    await this.actions.apply(await this.url.initial());
  }

  // ---------------------------------------------------------------- following the store

  /** Shows what the store holds in the toolbar: view, choosers, downloads; the language. */
  private follow(st: Readonly<PanelState>, changed: ReadonlySet<keyof PanelState>): void {
    if (changed.has("lang")) {
      // Every label is built in one language: the panel is built again in the other, from the URL.
      storageSet(LANG_KEY, st.lang);
      location.reload();
      return;
    }
    if (changed.has("view")) this.applyViewChrome(st.view);
    if (changedAny(changed, "phase")) this.phaseSel.value = st.phase ?? "";
    if (changedAny(changed, "runs", "unreadable", "phase", "run")) this.fillRunChooser(st);
    if (changedAny(changed, "run", "runs")) this.fillStageChooser(st);
    if (changed.has("stage")) this.stageSel.value = String(st.stage);
    if (changedAny(changed, "stage", "run", "runs")) this.labelStages();
    if (changed.has("run")) this.labelRuns();
    if (changedAny(changed, "layers", "stage", "run", "runs")) this.fillLayerChooser(st);
    if (changedAny(changed, "layers", "stage", "run", "runs", "layer")) this.layerSel.value = String(st.layer);
    if (changedAny(changed, "run", "runs")) this.fillRankChooser(st);
    if (changedAny(changed, "run", "runs", "rank", "view")) this.showRankChooser(st);
    if (changedAny(changed, "view", "stage", "run", "runs")) this.showStageDoubts(st);
    if (changedAny(changed, "run", "layer")) void this.annotateStages(st);
    // Each chooser as wide as its chosen entry: run, stage and layer names are never cut.
    for (const sel of [this.runSel, this.stageSel, this.layerSel]) fitToChoice(sel);
    this.updateDownloads(st);
  }

  /** The runs of the chosen phase, then those that cannot be read: disabled, with why. */
  private fillRunChooser(st: Readonly<PanelState>): void {
    const shown = runsForPhase(st.runs, st.phase);
    clear(this.runSel);
    for (const r of shown.length ? shown : st.runs) {
      const o = h("option", { value: r.run });
      const phase = r.trace?.phase ? ` · ${r.trace.phase}` : "";
      o.textContent = runLabel(r.run, r.model) + phase;
      o.dataset.full = o.textContent;
      o.title = o.textContent;
      this.runSel.appendChild(o);
    }
    if (st.unreadable.length) {
      const group = h("optgroup", { label: t("runsUnreadable"), "data-testid": "runs-unreadable" });
      for (const r of st.unreadable) group.appendChild(unreadableOption(r));
      this.runSel.appendChild(group);
    }
    if (st.run) this.runSel.value = st.run;
    this.labelRuns();
  }

  /**
   * The runs' labels: each with its model and trace phase in the list, the chosen one by its
   * whole name alone (the closed chooser shows it whole; its tooltip has the rest).
   */
  private labelRuns(): void {
    for (const o of Array.from(this.runSel.options)) {
      if (o.dataset.full === undefined) continue;
      o.textContent = o.selected ? o.value : o.dataset.full;
    }
  }

  private fillStageChooser(st: Readonly<PanelState>): void {
    const run = shownRun(st);
    clear(this.stageSel);
    if (!run) return;
    for (const s of [...run.stages].sort((a, b) => a.index - b.index)) {
      const o = h("option", { value: s.index });
      const fin = s.index === run.default_stage ? ` (${t("stageFinal")})` : "";
      o.textContent = `${s.file.replace(/\.txt$/, "")}${fin}`;
      o.dataset.base = o.textContent;
      this.stageSel.appendChild(o);
    }
    this.stageSel.value = String(st.stage);
  }

  /** The layers of the shown stage; those the converter has doubts about are marked ⚠. */
  private fillLayerChooser(st: Readonly<PanelState>): void {
    clear(this.layerSel);
    const doubts = stageDoubts(shownRun(st), st.stage);
    const doubtful = doubtfulLayers(doubts);
    for (const l of st.layers) {
      const o = h("option", { value: l.layer });
      const time = typeof l.gpu_time_us === "number" ? ` · ${fmtUs(l.gpu_time_us)}` : "";
      const mark = doubtful.has(l.layer) ? `⚠ ${t("doubtsOption")} · ` : "";
      const same = typeof l.same_as === "number" ? ` · ${t("sameAs", { n: l.same_as })}` : "";
      // The chooser is labelled "Layer": its entries start with the number.
      o.textContent = `${mark}${l.layer} · ${l.kind} · ${nodesText(l.node_count)}${time}${same}`;
      if (same) o.dataset.sameAs = String(l.same_as);
      if (mark) {
        o.dataset.doubtful = "true";
        o.title = doubts.filter((d) => d.layer === l.layer).map((d) => d.message).join("\n");
      }
      this.layerSel.appendChild(o);
    }
    const all = h("option", { value: "all" });
    all.textContent = t("allLayers");
    this.layerSel.appendChild(all);
  }

  /** The ranks of a multi-GPU run, each with its device. */
  private fillRankChooser(st: Readonly<PanelState>): void {
    clear(this.rankSel);
    const run = shownRun(st);
    for (const rank of run?.ranks ?? []) {
      const o = h("option", { value: rank });
      o.textContent = t("rankOption", { n: rank });
      this.rankSel.appendChild(o);
    }
  }

  /** The rank chooser shows in its views for a run of more than one rank only. */
  private showRankChooser(st: Readonly<PanelState>): void {
    const ranks = shownRun(st)?.ranks ?? [];
    this.rankSel.value = String(st.rank ?? ranks[0] ?? "");
    const inView = (this.rankGrp.dataset.views ?? "").split(" ").includes(st.view);
    this.rankGrp.hidden = !inView || ranks.length < 2;
    // The Ranks tab too: for a run of one rank it has nothing to compare, and its room in the
    // toolbar keeps the choosers on one row. Kept while it is the view shown (a URL or key 6).
    const tab = this.tabBar.querySelector<HTMLElement>("[data-view=ranks]");
    if (tab) tab.hidden = ranks.length < 2 && st.view !== "ranks";
  }

  /**
   * The notice under the toolbar in the views that show the panel's stage (layer, overview): the
   * converter's doubts about that stage's layers (the stage's, then each layer's), if any.
   */
  private showStageDoubts(st: Readonly<PanelState>): void {
    const run = shownRun(st);
    const shows = !!viewEntry(st.view)?.stageDoubts;
    const file = run?.stages.find((s) => s.index === st.stage)?.file.replace(/\.txt$/, "") ?? "";
    this.stageDoubts.show(t("doubtsStage", { stage: file }), shows ? stageDoubts(run, st.stage) : []);
  }

  /** Each stage in the stage chooser with what its transform changed in the shown layer. */
  private async annotateStages(st: Readonly<PanelState>): Promise<void> {
    const seq = ++this.diffSeq;
    let stages: { index: number; added: string[]; removed: string[]; changed: string[] }[] = [];
    if (st.run && st.layer !== "all") {
      try {
        stages = (await this.api.stages(st.run, st.layer)).stages;
      } catch {
        stages = []; // the chooser keeps its plain labels; the stage view reports the error
      }
    }
    if (seq !== this.diffSeq) return;
    const by = new Map(stages.map((s) => [s.index, s]));
    for (const o of Array.from(this.stageSel.options)) {
      const s = by.get(Number(o.value));
      const n = s ? s.added.length + s.removed.length + s.changed.length : 0;
      o.dataset.diff = s && n > 0 ? `  [${t("stageDiff", { a: s.added.length, r: s.removed.length, c: s.changed.length })}]` : "";
    }
    this.labelStages();
  }

  /**
   * The stages' labels: each with what its transform changed in the shown layer, but the chosen
   * one, which the closed chooser shows whole (the stage view shows its changes).
   */
  private labelStages(): void {
    for (const o of Array.from(this.stageSel.options)) {
      const base = o.dataset.base ?? o.textContent ?? "";
      o.textContent = o.selected ? base : base + (o.dataset.diff ?? "");
    }
    fitToChoice(this.stageSel);
  }

  /** Tabs, toolbar groups and containers for a view. */
  private applyViewChrome(v: ViewName): void {
    this.root.dataset.view = v;
    for (const b of Array.from(this.tabBar.children) as HTMLButtonElement[]) b.setAttribute("aria-pressed", String(b.dataset.view === v));
    for (const el of Array.from(this.toolbarEl.querySelectorAll<HTMLElement>("[data-views]"))) {
      el.hidden = !(el.dataset.views ?? "").split(" ").includes(v);
    }
    for (const { entry, view } of this.views) view.el.hidden = entry.id !== v;
    this.statusEl.textContent = this.statusOf.get(v) ?? "";
  }

  setView(v: ViewName): void {
    if (this.help.open) this.help.close();
    this.showError(null);
    this.actions.showView(v);
  }

  // ---------------------------------------------------------------- export (SVG / PNG)

  /** Exports the current view as a self-contained SVG or a PNG file. */
  async exportView(kind: "svg" | "png"): Promise<string | null> {
    const st = this.store.get();
    const res = await exportView(kind, this.current()?.view.exportParts(st) ?? null);
    if (res.error) this.showError(new Error(res.error));
    else this.statusEl.textContent = res.status;
    return res.name;
  }

  // ---------------------------------------------------------------- keys, downloads, errors

  private onKey(ev: KeyboardEvent): void {
    if (this.help.open) return;
    const tgt = ev.target as HTMLElement | null;
    const typing = tgt && (tgt.tagName === "INPUT" || tgt.tagName === "SELECT" || tgt.tagName === "TEXTAREA" || tgt.isContentEditable);
    // Enter on a focused button or link is that control's own.
    if (ev.key === "Enter" && tgt?.closest("button, a")) return;
    if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) {
      const search = this.current()?.view;
      if ((ev.ctrlKey || ev.metaKey) && ev.key.toLowerCase() === "f" && search?.focusSearch) {
        ev.preventDefault();
        search.focusSearch();
      }
      return;
    }
    if (ev.key === "?") {
      ev.preventDefault();
      this.help.toggle();
      return;
    }
    const to = viewEntries().find((e) => e.key === ev.key);
    if (to) {
      ev.preventDefault();
      this.setView(to.id);
      return;
    }
    if (this.current()?.view.handleKey?.(ev)) ev.preventDefault();
  }

  /** The current view and its entry. */
  private current(): { entry: AnyViewEntry; view: PanelView; ctx: ViewContext } | undefined {
    const v = this.store.get().view;
    return this.views.find((x) => x.entry.id === v);
  }

  /** The current view's downloads for the shown run, and export; built again when they change. */
  private updateDownloads(st: Readonly<PanelState>): void {
    const run = shownRun(st);
    const links = run ? this.current()?.entry.downloads(st, run) ?? [] : [];
    const shown = run ? JSON.stringify(links) : "";
    if (shown === this.dlShown) return;
    this.dlShown = shown;
    clear(this.dlLinks);
    if (!run) return;
    this.dlLinks.appendChild(text("label", t("download")));
    for (const d of links) {
      const a = h("a", { class: "btn", href: d.href, download: "", "data-testid": d.testid, title: d.title });
      a.textContent = d.label;
      this.dlLinks.appendChild(a);
    }
    const svgBtn = h("button", { class: "btn", type: "button", "data-testid": "export-svg", title: t("exportSvgTitle") });
    svgBtn.textContent = "SVG";
    svgBtn.addEventListener("click", () => void this.exportView("svg"));
    const pngBtn = h("button", { class: "btn", type: "button", "data-testid": "export-png", title: t("exportPngTitle") });
    pngBtn.textContent = "PNG";
    pngBtn.addEventListener("click", () => void this.exportView("png"));
    this.dlLinks.append(svgBtn, pngBtn);
  }

  private showError(e: unknown): void {
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
    const views: Record<string, unknown> = {};
    for (const { entry, view, ctx } of this.views) Object.assign(views, entry.hook(view, ctx));
    return {
      version: 2,
      ...views,
      /** Whether the panel is idle and painted (the root's data-state="ready"). */
      ready: () => this.root.dataset.state === "ready",
      state: () => {
        const st = this.store.get();
        return {
          ...viewState(st),
          selected: st.selected,
          ...Object.assign({}, ...this.views.map(({ view }) => view.hookState?.() ?? {})),
          theme: st.theme,
          colorMode: st.color,
          busy: this.views.some(({ view }) => view.busy?.()) || activity.isBusy(),
          timelineScope: st.tl,
          stage: st.stage,
          depth: st.depth ?? undefined,
        };
      },
      linkUrl: () => this.linkUrl(),
      view: (): ViewName => this.store.get().view,
      setView: (v: ViewName) => this.setView(v),
      helpOpen: () => this.help.open,
    };
  }
}

/** A run that cannot be read, as a disabled entry of the run chooser: its name and why. */
function unreadableOption(r: UnreadableRun): HTMLOptionElement {
  const o = h("option", { value: r.run, disabled: true, title: r.error, "data-testid": "run-unreadable", "data-error": r.error });
  o.textContent = `${r.run} — ${ellipsizeMiddle(r.error, REASON_CHARS)}`;
  return o;
}
