// The panel's shared state (run, stage, layer, selection, view, comparison sides, options) in one
// small observable store: views and the URL writer subscribe to it; nothing else holds a copy.
import type { ColorMode, PhaseFilter, SideRef, TimelineScope, ViewName } from "./hash";

export interface PanelState {
  phase: PhaseFilter | undefined;
  /** Name of the run shown (null before the run list arrives). */
  run: string | null;
  stage: number;
  layer: number | "all";
  /** Public id of the selected node or group in the layer view. */
  selected: string | null;
  view: ViewName;
  color: ColorMode;
  /** "Collapse below depth N"; null = the view's default expansion. */
  depth: number | null;
  tl: TimelineScope;
  /** The comparison's sides and manual pairs ("a1>b1,..."), while it has been opened. */
  compare: { a: SideRef; b: SideRef; mp: string } | null;
  /** Which graph the stage view shows. */
  stageSide: "before" | "after";
}

export type Listener<S> = (state: Readonly<S>, changed: ReadonlySet<keyof S>) => void;

export class Store<S extends object> {
  private state: S;
  private listeners: Listener<S>[] = [];

  constructor(initial: S) {
    this.state = { ...initial };
  }

  get(): Readonly<S> {
    return this.state;
  }

  /** Merges `patch`; listeners hear about the keys whose value changed (once per call). */
  set(patch: Partial<S>): void {
    const changed = new Set<keyof S>();
    const next = { ...this.state };
    for (const k of Object.keys(patch) as (keyof S)[]) {
      const v = patch[k] as S[keyof S];
      if (!sameValue(next[k], v)) {
        next[k] = v;
        changed.add(k);
      }
    }
    if (!changed.size) return;
    this.state = next;
    for (const fn of this.listeners) fn(this.state, changed);
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

export function initialPanelState(): PanelState {
  return {
    phase: undefined, run: null, stage: 0, layer: 0, selected: null, view: "layer", color: "group", depth: null,
    tl: "layer", compare: null, stageSide: "after",
  };
}
