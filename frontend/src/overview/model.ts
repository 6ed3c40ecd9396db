// The model overview (pure, unit-tested): one bar per decoder layer, GPU time stacked by group
// where the run has a trace (node counts stacked by group otherwise), the layer kinds, and the
// per-group totals of one layer. Geometry of the chart is computed here too.
import type { LayerSummary, OverviewResponse } from "../api/types";
import { GROUP_NAMES } from "../model/colors";

export type OverviewMetric = "time" | "nodes";

export interface Segment {
  group: string;
  value: number;
  /** Sum of the segments below this one. */
  start: number;
}

export interface Bar {
  layer: number;
  kind: string;
  total: number;
  nodeCount: number;
  segments: Segment[];
}

/** The GPU time outside every layer (embedding, final norm, lm head, sampling), beside the layers'. */
export interface Outside {
  us: number;
  /** Its share of the GPU time of the whole stage: the layers' and this. */
  share: number;
  /** The GPU time of the layers, and of the whole stage. */
  layersUs: number;
  totalUs: number;
}

export interface OverviewModel {
  metric: OverviewMetric;
  bars: Bar[];
  /** The tallest bar's value: the layers', and the time outside them when it is drawn. */
  max: number;
  /** Groups present, bottom of the stack first. */
  groups: string[];
  kinds: string[];
  noneNodeCount: number;
  /** Time outside the layers: in time mode, on the stage the trace was mapped onto; else null. */
  outside: Outside | null;
}

/** Name of the remainder of a layer's time that no group accounts for. */
export const UNMAPPED = "unmapped";

/** Stack order: the known groups in palette order, then others by name, unmapped time last. */
export function groupOrder(names: Iterable<string>): string[] {
  const set = new Set(names);
  const known = GROUP_NAMES.filter((g) => set.has(g));
  const extra = [...set].filter((g) => !GROUP_NAMES.includes(g) && g !== UNMAPPED).sort();
  return [...known, ...extra, ...(set.has(UNMAPPED) ? [UNMAPPED] : [])];
}

function hasTime(l: LayerSummary): boolean {
  return typeof l.gpu_time_us === "number" && Number.isFinite(l.gpu_time_us) && l.gpu_time_us > 0;
}

/**
 * Bars of the overview. Time mode (when any layer has GPU time): segments from `groups`; a
 * remainder of the layer total that the groups miss (more than 0.5%) is added to "unmapped"; a
 * layer with a total but no groups is one "unmapped" segment; the time outside every layer
 * (`outside_gpu_time_us`, when the stage has it and it is above zero) is its own bar. Node mode:
 * `group_counts`, or one "other" segment of `node_count`.
 */
export function overviewModel(res: OverviewResponse | null | undefined, metric?: OverviewMetric): OverviewModel {
  const layers = [...(res?.layers ?? [])].sort((a, b) => a.layer - b.layer);
  const m: OverviewMetric = metric ?? (layers.some(hasTime) ? "time" : "nodes");
  const groupsSeen = new Set<string>();
  const raw: { L: LayerSummary; parts: Map<string, number>; total: number }[] = [];
  for (const L of layers) {
    const parts = new Map<string, number>();
    let total = 0;
    if (m === "time") {
      total = hasTime(L) ? (L.gpu_time_us as number) : 0;
      let sum = 0;
      for (const [g, v] of Object.entries(L.groups ?? {})) {
        if (!(v > 0)) continue;
        parts.set(g, (parts.get(g) ?? 0) + v);
        sum += v;
      }
      if (total > sum * 1.005 + 1e-9 && total - sum > 1e-6) parts.set(UNMAPPED, (parts.get(UNMAPPED) ?? 0) + (total - sum));
      total = Math.max(total, sum);
    } else {
      const gc = L.group_counts ?? {};
      let sum = 0;
      for (const [g, v] of Object.entries(gc)) {
        if (!(v > 0)) continue;
        parts.set(g, v);
        sum += v;
      }
      total = L.node_count ?? sum;
      if (total > sum) parts.set("other", (parts.get("other") ?? 0) + (total - sum));
      total = Math.max(total, sum);
    }
    for (const g of parts.keys()) groupsSeen.add(g);
    raw.push({ L, parts, total });
  }
  const groups = groupOrder(groupsSeen);
  let max = 0;
  const bars: Bar[] = raw.map(({ L, parts, total }) => {
    const segments: Segment[] = [];
    let start = 0;
    for (const g of groups) {
      const v = parts.get(g);
      if (!v) continue;
      segments.push({ group: g, value: v, start });
      start += v;
    }
    max = Math.max(max, total);
    return { layer: L.layer, kind: L.kind || "?", total, nodeCount: L.node_count ?? 0, segments };
  });
  const kinds = [...new Set(bars.map((b) => b.kind))];
  let outside: Outside | null = null;
  const out = res?.outside_gpu_time_us;
  if (m === "time" && typeof out === "number" && Number.isFinite(out) && out > 0) {
    const layersUs = bars.reduce((a, b) => a + b.total, 0);
    outside = { us: out, share: out / (layersUs + out), layersUs, totalUs: layersUs + out };
    max = Math.max(max, out);
  }
  return { metric: m, bars, max, groups, kinds, noneNodeCount: res?.none_node_count ?? 0, outside };
}

export interface GroupTotal {
  group: string;
  us: number | null;
  share: number | null;
  nodes: number | null;
}

/** Per-group totals of one layer, largest time first (node count first without a trace). */
export function groupTotals(L: LayerSummary | null | undefined): GroupTotal[] {
  if (!L) return [];
  const time = L.groups ?? {};
  const counts = L.group_counts ?? {};
  const names = new Set([...Object.keys(time), ...Object.keys(counts)]);
  const total = hasTime(L) ? (L.gpu_time_us as number) : Object.values(time).reduce((a, b) => a + (b > 0 ? b : 0), 0);
  const rows = [...names].map((g) => {
    const us = g in time ? time[g] : null;
    return { group: g, us, share: us !== null && total > 0 ? us / total : null, nodes: g in counts ? counts[g] : null };
  });
  return rows.sort((a, b) => (b.us ?? -1) - (a.us ?? -1) || (b.nodes ?? 0) - (a.nodes ?? 0) || a.group.localeCompare(b.group));
}

export interface ChartGeom {
  /** Plot area inside the chart. */
  x0: number;
  y0: number;
  w: number;
  h: number;
  barW: number;
  gap: number;
  /** Width actually used by the bars (≤ w). */
  plotW: number;
  /** Left edge of bar i. */
  barX: (i: number) => number;
  /** Height in px of a value. */
  scale: (v: number) => number;
  ticks: number[];
}

/** "Nice" axis ticks (1, 2, 5 × 10^k) from 0 up to at least `max`, about `n` of them. */
export function niceTicks(max: number, n = 4): number[] {
  if (!(max > 0)) return [0];
  const raw = max / n;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map((f) => f * p).find((s) => s >= raw) ?? 10 * p;
  const out: number[] = [];
  for (let v = 0; v <= max + step * 0.999; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** Geometry of a bar chart with `n` bars in a `width` × `height` box (margins for axes/labels). */
export function chartGeom(n: number, max: number, width: number, height: number, margin = { l: 72, r: 12, t: 10, b: 40 }, maxSlot = 72): ChartGeom {
  const avail = Math.max(10, width - margin.l - margin.r);
  const h = Math.max(10, height - margin.t - margin.b);
  // Few layers: bars keep a readable width, and the plot is centred instead of filling the chart.
  const slot = n > 0 ? Math.min(maxSlot, avail / n) : avail;
  const w = n > 0 ? n * slot : avail;
  const x0 = margin.l + Math.max(0, (avail - w) / 2);
  const gap = Math.min(slot * 0.3, Math.max(2, slot * 0.2));
  const barW = Math.max(1, slot - gap);
  const ticks = niceTicks(max);
  const top = ticks[ticks.length - 1] || 1;
  return {
    x0, y0: margin.t, w, h, barW, gap,
    barX: (i: number) => x0 + i * slot + gap / 2,
    plotW: w,
    scale: (v: number) => (v / top) * h,
    ticks,
  };
}
