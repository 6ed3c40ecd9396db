// View state <-> URL hash ("#run=dsv3&stage=12&layer=5&node=mm_3"). Pure. The panel's own keys
// are here; each view's own keys are its URL fields in the table of views.
import { DEFAULT_VIEW, viewEntries, viewEntry, type ViewId, type ViewTable } from "../views/table";
import type { UrlValues } from "../views/view";

export type ColorMode = "group" | "time";
export type TimelineScope = "layer" | "all";
export type ViewName = ViewId;

/** One side of a comparison. */
export interface SideRef {
  run: string;
  stage: number;
  layer: number;
}

/** Which runs the run chooser lists: by the phase of their trace ("none": runs without one). */
export type PhaseFilter = "decode" | "prefill" | "none";

type UnionToIntersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;
/** The views' own URL state (the comparison's sides, the stage view's stage...), from the table. */
export type ViewOwnState = UnionToIntersection<UrlValues<ViewTable[number]["url"]>>;

/** What the URL carries: the panel's keys and every view's own. */
export type ViewState = SharedViewState & ViewOwnState;

export interface SharedViewState {
  /** Run chooser filter (undefined = every run). */
  phase?: PhaseFilter;
  run?: string;
  /** Stage index; undefined = the run's default (final) stage. */
  stage?: number;
  /** Layer index or "all" (whole stage). */
  layer?: number | "all";
  /** The rank of a multi-GPU run (undefined = its first). */
  rank?: number;
  node?: string;
  color?: ColorMode;
  /** "Collapse below depth N" (undefined = the default for the view). */
  depth?: number;
  tl?: TimelineScope;
  /** Which view is open (undefined = the default view, the table's first). */
  view?: ViewName;
}

/** The panel's own URL keys, in the order they are written (the views' own keys follow). */
export const KEYS = ["view", "phase", "run", "stage", "layer", "rank", "node", "color", "depth", "tl"] as const;

function toInt(v: string | null): number | undefined {
  if (v === null || !/^-?\d+$/.test(v)) return undefined;
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : undefined;
}

export function parseHash(hash: string): ViewState {
  const s = hash.startsWith("#") ? hash.slice(1) : hash;
  const p = new URLSearchParams(s);
  const out: ViewState = {};
  const phase = p.get("phase");
  if (phase === "decode" || phase === "prefill" || phase === "none") out.phase = phase;
  const run = p.get("run");
  if (run) out.run = run;
  const stage = p.get("stage");
  if (stage !== null && stage !== "last") {
    const n = toInt(stage);
    if (n !== undefined && n >= 0) out.stage = n;
  }
  const layer = p.get("layer");
  if (layer === "all") out.layer = "all";
  else {
    const n = toInt(layer);
    if (n !== undefined && n >= 0) out.layer = n;
  }
  const rank = toInt(p.get("rank"));
  if (rank !== undefined && rank >= 0) out.rank = rank;
  const node = p.get("node");
  if (node) out.node = node;
  const color = p.get("color");
  if (color === "group" || color === "time") out.color = color;
  const depth = toInt(p.get("depth"));
  if (depth !== undefined && depth >= 1 && depth <= 9) out.depth = depth;
  const tl = p.get("tl");
  if (tl === "layer" || tl === "all") out.tl = tl;
  const view = p.get("view");
  if (view && viewEntry(view) && view !== DEFAULT_VIEW) out.view = view as ViewName;
  const own = out as Record<string, unknown>;
  for (const e of viewEntries()) {
    for (const [name, field] of Object.entries(e.url)) {
      const v = field.parse(p, out.view);
      if (v !== undefined) own[name] = v;
    }
  }
  return out;
}

export function formatHash(s: ViewState): string {
  const p = new URLSearchParams();
  for (const k of KEYS) {
    const v = s[k];
    if (v === undefined || v === null || v === "") continue;
    if (k === "view" && v === DEFAULT_VIEW) continue;
    p.set(k, String(v));
  }
  const own = s as Record<string, unknown>;
  for (const e of viewEntries()) {
    for (const [name, field] of Object.entries(e.url)) {
      const v = own[name];
      if (v === undefined || v === null || v === "") continue;
      for (const [k, x] of field.format(v)) p.set(k, x);
    }
  }
  const q = p.toString();
  return q ? `#${q}` : "";
}

export function sameState(a: ViewState, b: ViewState): boolean {
  return formatHash(a) === formatHash(b);
}

/** Runs whose trace phase passes ``filter`` (every run when it is undefined). Pure. */
export function runsForPhase<R extends { trace?: { phase?: string | null } | null }>(runs: R[], filter: PhaseFilter | undefined): R[] {
  if (!filter) return runs;
  return runs.filter((r) => (filter === "none" ? !r.trace : r.trace?.phase === filter));
}
