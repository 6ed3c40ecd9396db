// The panel's shared state (the run list, run, stage, layer, selection, view, comparison sides,
// stage view, options, theme, language) in one small observable store: every view and the URL
// writer subscribe to it; nothing else holds a copy.
import type { LayerSummary, RunInfo, UnreadableRun } from "../api/types";
import type { Lang } from "../i18n";
import type { Theme } from "../model/colors";
import type { ColorMode, PhaseFilter, SideRef, TimelineScope, ViewName } from "./hash";

export interface PanelState {
  /** The runs of the logdir that can be read (sorted by name), and those that cannot, with why. */
  runs: RunInfo[];
  unreadable: UnreadableRun[];
  /** Run chooser filter (undefined = every run). */
  phase: PhaseFilter | undefined;
  /** Name of the run shown (null before the run list arrives). */
  run: string | null;
  stage: number;
  /** The layers of the shown run's stage, in order (its overview's list). */
  layers: LayerSummary[];
  layer: number | "all";
  /**
   * The rank (GPU) whose kernels the layer view and its timeline show in a multi-GPU run; null:
   * the run's first (api/runs ranks[0]).
   */
  rank: number | null;
  /** Public id of the selected node or group in the layer view. */
  selected: string | null;
  view: ViewName;
  color: ColorMode;
  /** "Collapse below depth N"; null = the view's default expansion. */
  depth: number | null;
  tl: TimelineScope;
  /**
   * The comparison's sides and manual pairs ("a1>b1,..."), once it has been opened; `panes`: its
   * two panes' open groups and places, as the layer view's `open` and `at` (absent: first view).
   */
  compare: { a: SideRef; b: SideRef; mp: string; panes?: ComparePanes } | null;
  /** Which graph the stage view shows. */
  stageSide: "before" | "after";
  /** The stage the stage view shows: it steps on its own; null = the panel's stage. */
  stageShown: number | null;
  /**
   * The layer view's open groups as they differ from its first view ("+L3/moe,-L3/norm"), and
   * where it looks ("x,y,k"); null: its first view. Kept in the URL, so a reload or a link opens
   * the same groups at the same place.
   */
  open: string | null;
  at: string | null;
  theme: Theme;
  lang: Lang;
}

/** Each comparison pane's open groups (as they differ from its first view) and place; "" for none. */
export interface ComparePanes {
  aopen: string;
  bopen: string;
  aat: string;
  bat: string;
}

export type Listener<S> = (state: Readonly<S>, changed: ReadonlySet<keyof S>) => void;

export class Store<S extends object> {
  private state: S;
  private listeners: Listener<S>[] = [];
  private pending = new Set<keyof S>();
  private notifying = false;

  constructor(initial: S) {
    this.state = { ...initial };
  }

  get(): Readonly<S> {
    return this.state;
  }

  /**
   * Merges `patch`; listeners hear about the keys whose value changed (once per call). A change
   * made by a listener takes effect at once (get() returns it) and is told to every listener
   * after the current round, so each round sees one consistent state.
   */
  set(patch: Partial<S>): void {
    const next = { ...this.state };
    let any = false;
    for (const k of Object.keys(patch) as (keyof S)[]) {
      const v = patch[k] as S[keyof S];
      if (!sameValue(next[k], v)) {
        next[k] = v;
        this.pending.add(k);
        any = true;
      }
    }
    if (!any) return;
    this.state = next;
    if (this.notifying) return;
    this.notifying = true;
    try {
      while (this.pending.size) {
        const changed = this.pending;
        this.pending = new Set();
        for (const fn of [...this.listeners]) fn(this.state, changed);
      }
    } finally {
      this.notifying = false;
    }
  }

  /** Calls `fn` after every change; returns the function that unsubscribes it. */
  subscribe(fn: Listener<S>): () => void {
    this.listeners.push(fn);
    return () => {
      this.listeners = this.listeners.filter((f) => f !== fn);
    };
  }
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a && b && typeof a === "object" && typeof b === "object") return JSON.stringify(a) === JSON.stringify(b);
  return false;
}

export function initialPanelState(theme: Theme = "light", lang: Lang = "en"): PanelState {
  return {
    runs: [], unreadable: [], phase: undefined, run: null, stage: 0, layers: [], layer: 0, rank: null, selected: null, view: "layer",
    color: "group", depth: null, tl: "layer", compare: null, stageSide: "after", stageShown: null, open: null, at: null, theme, lang,
  };
}

/** The shown run's description, or null. */
export function shownRun(st: Readonly<PanelState>): RunInfo | null {
  return st.runs.find((r) => r.run === st.run) ?? null;
}

/** The layer numbers of the shown stage. */
export function layerNumbers(st: Readonly<PanelState>): number[] {
  return st.layers.map((l) => l.layer);
}

/** One layer for the views that show one (stages, a default comparison): the shown one, or the stage's first. */
export function singleLayer(st: Readonly<PanelState>): number {
  return st.layer === "all" ? st.layers[0]?.layer ?? 0 : st.layer;
}

/** Whether any of `keys` changed. */
export function changedAny<S>(changed: ReadonlySet<keyof S>, ...keys: (keyof S)[]): boolean {
  return keys.some((k) => changed.has(k));
}
