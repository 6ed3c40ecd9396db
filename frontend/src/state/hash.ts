// View state <-> URL hash ("#run=dsv3&stage=12&layer=5&node=mm_3"). Pure.

export type ColorMode = "group" | "time";
export type TimelineScope = "layer" | "all";
export type ViewName = "layer" | "compare" | "stages" | "overview";
export const VIEWS: ViewName[] = ["layer", "compare", "stages", "overview"];

/** One side of a comparison. */
export interface SideRef {
  run: string;
  stage: number;
  layer: number;
}

/** Which runs the run chooser lists: by the phase of their trace ("none": runs without one). */
export type PhaseFilter = "decode" | "prefill" | "none";

export interface ViewState {
  /** Run chooser filter (undefined = every run). */
  phase?: PhaseFilter;
  run?: string;
  /** Stage index; undefined = the run's default (final) stage. */
  stage?: number;
  /** Layer index or "all" (whole stage). */
  layer?: number | "all";
  node?: string;
  color?: ColorMode;
  /** "Collapse below depth N" (undefined = the default for the view). */
  depth?: number;
  tl?: TimelineScope;
  /** Which view is open (undefined = the layer view). */
  view?: ViewName;
  /** Comparison sides (view=compare). */
  a?: SideRef;
  b?: SideRef;
  /** Stage view: which graph is shown. */
  sv?: "before" | "after";
  /** Stage view: the stage it shows (its own, apart from the other views' stage). */
  ss?: number;
  /** Comparison: node pairs matched by hand ("a1>b1,a2>b2"). */
  mp?: string;
}

const KEYS = ["view", "phase", "run", "stage", "layer", "node", "color", "depth", "tl", "sv", "ss", "mp"] as const;

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
  const node = p.get("node");
  if (node) out.node = node;
  const color = p.get("color");
  if (color === "group" || color === "time") out.color = color;
  const depth = toInt(p.get("depth"));
  if (depth !== undefined && depth >= 1 && depth <= 9) out.depth = depth;
  const tl = p.get("tl");
  if (tl === "layer" || tl === "all") out.tl = tl;
  const view = p.get("view");
  if (view && (VIEWS as string[]).includes(view) && view !== "layer") out.view = view as ViewName;
  for (const side of ["a", "b"] as const) {
    const run = p.get(`${side}run`);
    const stage = toInt(p.get(`${side}stage`));
    const layer = toInt(p.get(`${side}layer`));
    if (run && stage !== undefined && stage >= 0 && layer !== undefined && layer >= 0) out[side] = { run, stage, layer };
  }
  const sv = p.get("sv");
  if (sv === "before" || sv === "after") out.sv = sv;
  const ss = toInt(p.get("ss"));
  if (ss !== undefined && ss >= 0) out.ss = ss;
  const mp = p.get("mp");
  if (mp && out.view === "compare") out.mp = mp;
  return out;
}

export function formatHash(s: ViewState): string {
  const p = new URLSearchParams();
  for (const k of KEYS) {
    const v = s[k];
    if (v === undefined || v === null || v === "") continue;
    if (k === "view" && v === "layer") continue;
    p.set(k, String(v));
  }
  for (const side of ["a", "b"] as const) {
    const r = s[side];
    if (!r) continue;
    p.set(`${side}run`, r.run);
    p.set(`${side}stage`, String(r.stage));
    p.set(`${side}layer`, String(r.layer));
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
