// Where a step's time goes, as the panel shows it (pure, unit-tested): everything here is read off
// the records of api/report and api/diff (the ones `tb-ad-layer report` and `diff` print), sorted
// and indexed for drawing; no figure is computed again. The bars' segments are the layers' own
// category times; their total is the layer's own gpu_time_us.
import type {
  CategoryTime, Diff, DiffEntry, ExposedStretch, Finding, HostSide, LayerBreakdown, NodeRoofline, NodeTail, Report, StreamIdle,
} from "../api/types";
import type { Theme } from "../model/colors";

/** The category of copies and fills: shown apart from the kernels' categories. */
export const MEMORY = "memory";

export interface CategorySegment {
  category: string;
  us: number;
  /** Sum of the segments below this one. */
  start: number;
}

export interface TimingBar {
  /** Null for the work outside every layer. */
  layer: number | null;
  kind: string;
  /** The layer's gpu_time_us. */
  total: number;
  segments: CategorySegment[];
}

export interface LayerRow {
  layer: number | null;
  kind: string;
  gpuUs: number;
  memoryUs: number;
  spanUs: number;
  exposedUs: number;
  /** The layer's categories by name. */
  categories: Map<string, number>;
}

/** Where a finding leads in the layer view (a layer, and a node in it), or nowhere. */
export interface Target {
  layer: number;
  node: string | null;
}

export interface FindingRow {
  rank: number;
  finding: Finding;
  target: Target | null;
}

export interface TimingModel {
  run: string;
  stage: number;
  phase: string | null;
  step: Report["step"];
  /** The step's categories without memory operations, largest first (as the report lists them). */
  categories: CategoryTime[];
  /** The step's memory operations (copies and fills): time and count. */
  memory: { us: number; count: number; share: number | null };
  /** Stack order of the bars: the step's categories in its order, memory last. */
  order: string[];
  streams: StreamIdle[];
  bars: TimingBar[];
  /** Tallest bar. */
  max: number;
  rows: LayerRow[];
  findings: FindingRow[];
  /** Nodes whose tail is flagged, largest p99 - p50 first (the report's order). */
  tails: NodeTail[];
  roofline: NodeRoofline[];
  /** Layers with communication, most exposed first. */
  overlap: { layer: number | null; kind: string; overlap: LayerBreakdown["overlap"] }[];
  /** The host side when the trace recorded any of it; null otherwise. */
  host: HostSide | null;
  gpu: Report["gpu"];
  notes: string[];
}

/** The layers of a report, outside last. */
function breakdowns(r: Report): LayerBreakdown[] {
  const out = [...r.layers].sort((a, b) => (a.layer ?? Infinity) - (b.layer ?? Infinity));
  if (r.outside) out.push(r.outside);
  return out;
}

/** The categories in stack order: the step's order (largest first), any a layer adds, memory last. */
export function categoryOrder(r: Report): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  const add = (c: string) => {
    if (c === MEMORY || seen.has(c)) return;
    seen.add(c);
    out.push(c);
  };
  for (const c of r.categories) add(c.category);
  for (const L of breakdowns(r)) for (const c of L.categories) add(c.category);
  const hasMemory = r.categories.some((c) => c.category === MEMORY) || breakdowns(r).some((L) => L.categories.some((c) => c.category === MEMORY));
  return hasMemory ? [...out, MEMORY] : out;
}

/** The model of the Timing view for one report. */
export function timingModel(r: Report): TimingModel {
  const order = categoryOrder(r);
  let max = 0;
  const bars: TimingBar[] = [];
  const rows: LayerRow[] = [];
  for (const L of breakdowns(r)) {
    const by = new Map(L.categories.map((c) => [c.category, c.gpu_time_us]));
    const segments: CategorySegment[] = [];
    let start = 0;
    for (const c of order) {
      const us = by.get(c);
      if (!us || !(us > 0)) continue;
      segments.push({ category: c, us, start });
      start += us;
    }
    bars.push({ layer: L.layer, kind: L.kind, total: L.gpu_time_us, segments });
    max = Math.max(max, L.gpu_time_us, start);
    rows.push({ layer: L.layer, kind: L.kind, gpuUs: L.gpu_time_us, memoryUs: L.memory_us, spanUs: L.span_us, exposedUs: L.overlap.exposed_us, categories: by });
  }
  const mem = r.categories.find((c) => c.category === MEMORY);
  const findings = r.findings.map((f, i) => ({ rank: i + 1, finding: f, target: findingTarget(f) }));
  const overlap = breakdowns(r)
    .filter((L) => L.overlap.communication_us > 0)
    .map((L) => ({ layer: L.layer, kind: L.kind, overlap: L.overlap }))
    .sort((a, b) => b.overlap.exposed_us - a.overlap.exposed_us || (a.layer ?? Infinity) - (b.layer ?? Infinity));
  return {
    run: r.run,
    stage: r.stage,
    phase: r.phase,
    step: r.step,
    categories: r.categories.filter((c) => c.category !== MEMORY),
    memory: { us: r.step.memory_us, count: r.step.memory_op_count, share: mem ? mem.share : null },
    order,
    streams: r.streams,
    bars,
    max,
    rows,
    findings,
    tails: r.tails.filter((x) => x.flagged),
    roofline: r.roofline,
    overlap,
    host: hostShown(r.host),
    gpu: r.gpu,
    notes: r.notes,
  };
}

/** The host side when the trace recorded any of it (runtime rows, copies or gaps). */
export function hostShown(h: HostSide): HostSide | null {
  return h.runtime_recorded || h.copies !== null || h.gaps.length > 0 ? h : null;
}

/** Where a finding opens in the layer view: its layer (and node); null without a layer. */
export function findingTarget(f: Finding): Target | null {
  return typeof f.layer === "number" ? { layer: f.layer, node: f.node } : null;
}

// ---------------------------------------------------------------- diff

export interface DiffModel {
  verdict: Diff["verdict"];
  gatePct: number;
  step: DiffEntry;
  regressions: DiffEntry[];
  improvements: DiffEntry[];
  notes: string[];
}

export function diffModel(d: Diff): DiffModel {
  return { verdict: d.verdict, gatePct: d.gate_pct, step: d.step, regressions: d.regressions, improvements: d.improvements, notes: d.notes };
}

/** Where a diff entry is: "step", "layer 3", "layer 3 · moe", "layer 3 · moe · %mm_1"; `outsideWord` for the work outside the layers. */
export function diffWhere(e: DiffEntry, layerWord: (n: number) => string, stepWord: string, outsideWord: string): string {
  if (e.level === "step") return stepWord;
  const parts: string[] = [e.layer !== null ? layerWord(e.layer) : outsideWord];
  if (e.group) parts.push(e.group);
  if (e.node) parts.push(`%${e.node}`);
  return parts.join(" · ");
}

/** The run the Timing view compares with: the comparison's B run when it is another run. */
export function diffRun(run: string | null, compare: { b: { run: string } } | null): string | null {
  const b = compare?.b.run;
  return run && b && b !== run ? b : null;
}

// ---------------------------------------------------------------- the layer view's figures

/** A report indexed for the layer view: tails by node, breakdowns and timeline marks by layer. */
export interface ReportIndex {
  stage: number;
  tails: Map<string, NodeTail>;
  roofline: Map<string, NodeRoofline>;
  layers: Map<number | null, LayerBreakdown>;
}

function nodeKey(layer: number | null, node: string): string {
  return `${layer ?? "-"}\u0000${node}`;
}

export function reportIndex(r: Report): ReportIndex {
  const tails = new Map<string, NodeTail>();
  for (const x of r.tails) tails.set(nodeKey(x.layer, x.node), x);
  const roofline = new Map<string, NodeRoofline>();
  for (const x of r.roofline) roofline.set(nodeKey(x.layer, x.node), x);
  const layers = new Map<number | null, LayerBreakdown>();
  for (const L of breakdowns(r)) layers.set(L.layer, L);
  return { stage: r.stage, tails, roofline, layers };
}

/** A node's roofline (FLOPs, bytes, achieved rates, bound, or why unknown), or null. */
export function rooflineOf(idx: ReportIndex | null, layer: number | null, node: string): NodeRoofline | null {
  return idx?.roofline.get(nodeKey(layer, node)) ?? null;
}

/** A node's tail (p50/p90/p99/max over the replays), or null. */
export function tailOf(idx: ReportIndex | null, layer: number | null, node: string): NodeTail | null {
  return idx?.tails.get(nodeKey(layer, node)) ?? null;
}

/** Ids of the nodes of `layers` whose tail is flagged. */
export function flaggedNodes(idx: ReportIndex | null, layers: Iterable<number>): Set<string> {
  const out = new Set<string>();
  if (!idx) return out;
  const want = new Set(layers);
  for (const x of idx.tails.values()) if (x.flagged && x.layer !== null && want.has(x.layer)) out.add(x.node);
  return out;
}

/** What the timeline draws over the kernels: the critical path's kernel ids and exposed communication. */
export interface TimelineMarks {
  path: number[];
  exposed: ExposedStretch[];
}

/** The marks of one layer, or of every layer and the work outside them ("all"). */
export function timelineMarks(idx: ReportIndex | null, layer: number | "all"): TimelineMarks {
  const path: number[] = [];
  const exposed: ExposedStretch[] = [];
  if (!idx) return { path, exposed };
  const Ls = layer === "all" ? [...idx.layers.values()] : [idx.layers.get(layer)].filter((x): x is LayerBreakdown => !!x);
  for (const L of Ls) {
    for (const s of L.critical_path.steps) path.push(s.kernel_id);
    exposed.push(...(L.overlap.exposed ?? []));
  }
  return { path, exposed };
}

// ---------------------------------------------------------------- colours

const CAT_LIGHT: Record<string, string> = {
  attention: "#3b7dd8", moe_experts: "#d9730d", moe_router: "#e8a23a", shared_experts: "#b5581a", gemm: "#2a9d8f",
  norm: "#8a96a3", communication: "#c2407a", memory: "#7b6b52", elementwise: "#6c8ebf", ssm: "#8a4fd1", other: "#a5adb8",
};
const CAT_DARK: Record<string, string> = {
  attention: "#6ea8ff", moe_experts: "#f0a04b", moe_router: "#f5c26b", shared_experts: "#d9814a", gemm: "#4fc2b3",
  norm: "#aab4bf", communication: "#ee7fb0", memory: "#b3a184", elementwise: "#93b3e3", ssm: "#b88af0", other: "#6b7480",
};

/** A category's colour: fixed for the known ones, a stable hue from the name for others. */
export function categoryColor(category: string, theme: Theme): string {
  const known = (theme === "dark" ? CAT_DARK : CAT_LIGHT)[category];
  if (known) return known;
  let hsh = 0;
  for (let i = 0; i < category.length; i++) hsh = (hsh * 31 + category.charCodeAt(i)) >>> 0;
  return `hsl(${hsh % 360}, 45%, ${theme === "dark" ? 62 : 48}%)`;
}
