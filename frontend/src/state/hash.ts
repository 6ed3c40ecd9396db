// View state <-> URL hash ("#run=dsv3&stage=12&layer=5&node=mm_3"). Pure.

export type ColorMode = "group" | "time";
export type TimelineScope = "layer" | "all";

export interface ViewState {
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
}

const KEYS = ["run", "stage", "layer", "node", "color", "depth", "tl"] as const;

function toInt(v: string | null): number | undefined {
  if (v === null || !/^-?\d+$/.test(v)) return undefined;
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : undefined;
}

export function parseHash(hash: string): ViewState {
  const s = hash.startsWith("#") ? hash.slice(1) : hash;
  const p = new URLSearchParams(s);
  const out: ViewState = {};
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
  return out;
}

export function formatHash(s: ViewState): string {
  const p = new URLSearchParams();
  for (const k of KEYS) {
    const v = s[k];
    if (v === undefined || v === null || v === "") continue;
    p.set(k, String(v));
  }
  const q = p.toString();
  return q ? `#${q}` : "";
}

export function sameState(a: ViewState, b: ViewState): boolean {
  return formatHash(a) === formatHash(b);
}
