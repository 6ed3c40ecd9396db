// What the user asks for (a run, phase, stage or layer chosen, a view, a link or a reload) turned
// into the panel's state: fetches what it takes to decide it (the run list, a stage's layers),
// then sets the store once; the views follow the store.
import { Api, ApiError } from "../api/client";
import type { LayerSummary, RunInfo, UnreadableRun } from "../api/types";
import { t } from "../i18n";
import { DEFAULT_VIEW, viewEntries, viewEntry } from "../views/table";
import { runsForPhase, type PhaseFilter, type SideRef, type ViewName, type ViewState } from "./hash";
import { shownRun, type PanelState, type Store } from "./store";

export class PanelActions {
  constructor(private readonly api: Api, private readonly store: Store<PanelState>, private readonly onError: (e: unknown) => void) {}

  /**
   * Fetches the run list into the store: runs that can be read, and those that cannot (listed
   * with their reason). False when the list could not be fetched.
   */
  async loadRuns(): Promise<boolean> {
    let entries;
    try {
      entries = (await this.api.runs()).runs ?? [];
    } catch (e) {
      this.onError(e);
      return false;
    }
    const runs: RunInfo[] = [];
    const unreadable: UnreadableRun[] = [];
    for (const r of entries) {
      if (typeof r.error === "string") unreadable.push(r);
      else runs.push(r);
    }
    this.store.set({ runs, unreadable });
    return true;
  }

  /**
   * Opens a view state (the URL at start, a hash change, a reload inside TensorBoard): its run
   * (the first one the phase filter shows when it names none, or one that cannot be read), stage,
   * layer, selection, options and view. `keepRun`: a state that names no run keeps the run shown.
   */
  async apply(vs: ViewState, keepRun = false): Promise<void> {
    const st = this.store.get();
    const bad = vs.run ? st.unreadable.find((r) => r.run === vs.run) : undefined;
    if (bad) this.onError(new Error(t("runUnreadable", { run: bad.run, error: bad.error })));
    const shown = runsForPhase(st.runs, vs.phase);
    const named = vs.run ? st.runs.find((r) => r.run === vs.run) : undefined;
    // With none named, the first run with a trace: what the panel is for shows on it.
    const run = named ?? (keepRun && !vs.run ? shownRun(st) : null) ?? defaultRun(shown) ?? defaultRun(st.runs);
    if (!run) return;
    const at = await this.resolve(run, vs.stage, vs.layer);
    const view: ViewName = vs.view ?? DEFAULT_VIEW;
    const patch: Partial<PanelState> = {
      phase: vs.phase, color: vs.color ?? "group", tl: vs.tl ?? "layer", ...at, depth: vs.depth ?? null, selected: vs.node ?? null, view,
      rank: vs.rank !== undefined && run.ranks.includes(vs.rank) ? vs.rank : null,
    };
    // Each view's own part of the URL (its stage, its sides...).
    const next = { ...st, ...at };
    for (const e of viewEntries()) Object.assign(patch, e.fromUrl(vs as Record<string, unknown>, next, e.id === view));
    this.store.set(patch);
  }

  /** The run chooser: that run (the run list fetched again first, so a run converted again shows what it holds now). */
  async chooseRun(name: string): Promise<void> {
    await this.loadRuns();
    const st = this.store.get();
    const run = st.runs.find((r) => r.run === name);
    if (!run) return;
    const at = await this.resolve(run, undefined, typeof st.layer === "number" ? st.layer : undefined);
    this.store.set({ ...at, selected: null, depth: null, stageShown: null, rank: st.rank !== null && run.ranks.includes(st.rank) ? st.rank : null });
  }

  /** The rank chooser of a multi-GPU run (null: its first rank). */
  chooseRank(rank: number | null): void {
    const run = shownRun(this.store.get());
    this.store.set({ rank: rank === null || rank === run?.ranks[0] ? null : rank });
  }

  /** Opens one layer at one rank in the layer view (a cell of the ranks view). */
  openLayerAtRank(layer: number, rank: number): void {
    const st = this.store.get();
    const run = shownRun(st);
    const stage = run ? run.default_stage : st.stage;
    if (stage !== st.stage) {
      void this.chooseStage(stage).then(() => this.openLayerAtRank(layer, rank));
      return;
    }
    this.store.set({ view: "layer", layer, rank: rank === run?.ranks[0] ? null : rank, selected: null, depth: null, open: null, at: null });
  }

  /** The phase filter: the run chooser lists that phase's runs; the shown run changes when it is not one. */
  async choosePhase(phase: PhaseFilter | undefined): Promise<void> {
    this.store.set({ phase });
    const st = this.store.get();
    const shown = runsForPhase(st.runs, phase);
    if (shown.length && !shown.some((r) => r.run === st.run)) await this.chooseRun(shown[0].run);
  }

  /** The stage chooser: the layer stays when the stage has it, and so does a selected node. */
  async chooseStage(stage: number): Promise<void> {
    const st = this.store.get();
    const run = shownRun(st);
    if (!run) return;
    const at = await this.resolve(run, stage, st.layer);
    const selected = st.selected && !st.selected.includes("/") ? st.selected : null;
    this.store.set({ ...at, selected });
  }

  /** The layer chooser (a layer number or "all"). */
  chooseLayer(layer: number | "all"): void {
    this.store.set({ layer, selected: null, depth: null, stageShown: null });
  }

  /** Shows a view, with what showing it sets (the comparison opens on a useful pair the first time). */
  showView(view: ViewName): void {
    this.store.set({ view, ...viewEntry(view)?.onShow?.(this.store.get()) });
  }

  /** Opens the comparison of two sides. */
  openCompare(a: SideRef, b: SideRef): void {
    this.store.set({ view: "compare", compare: { a, b, mp: "" } });
  }

  /** A run's stage (the asked one when it has it, else its default), its layers and the layer to show. */
  private async resolve(run: RunInfo, stage: number | undefined, layer: number | "all" | undefined): Promise<Pick<PanelState, "run" | "stage" | "layers" | "layer">> {
    const s = stage !== undefined && run.stages.some((x) => x.index === stage) ? stage : run.default_stage;
    const layers = await this.stageLayers(run, s);
    const nums = layers.map((l) => l.layer);
    const shown = layer === "all" ? "all" : layer !== undefined && nums.includes(layer) ? layer : nums[0] ?? 0;
    return { run: run.run, stage: s, layers, layer: shown };
  }

  /** The layers of one stage of a run (its overview); the run's own list when the overview is missing. */
  private async stageLayers(run: RunInfo, stage: number): Promise<LayerSummary[]> {
    try {
      return (await this.api.overview(run.run, stage)).layers;
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 404)) this.onError(e);
      return run.layers;
    }
  }
}

/** The run a URL that names none opens: the first with a trace, else the first. */
export function defaultRun<R extends { trace?: unknown }>(runs: readonly R[]): R | undefined {
  return runs.find((r) => !!r.trace) ?? runs[0];
}
