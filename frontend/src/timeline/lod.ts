// Level-of-detail logic of the kernel timeline (pure, unit-tested).
//
// A lane holds one CUDA stream's kernels sorted by start, in typed arrays. Drawing a frame:
//   1. visibleRange: binary search of the window [t0, t1) (kernels that started up to the lane's
//      longest duration before t0 can still be visible);
//   2. rasterize: kernels narrower than `minBarPx` are merged into a per-pixel coverage array
//      (fraction of each pixel column that is busy); wider ones are returned as bars.
// So a frame costs O(log n + visible kernels), and the canvas gets at most ~width + bars rects.
import type { TimelineKernel } from "../api/types";

export interface Lane {
  stream: string;
  label: string;
  starts: Float64Array;
  ends: Float64Array;
  ids: Int32Array;
  /** Longest kernel duration in the lane (bounds the backward search). */
  maxDur: number;
  kernels: TimelineKernel[];
  busyUs: number;
  busyShare: number;
}

export function makeLane(stream: string, label: string, kernels: TimelineKernel[], busyShare?: number): Lane {
  const ks = kernels.slice().sort((a, b) => a.start_us - b.start_us || a.id - b.id);
  const n = ks.length;
  const starts = new Float64Array(n);
  const ends = new Float64Array(n);
  const ids = new Int32Array(n);
  let maxDur = 0;
  let busy = 0;
  for (let i = 0; i < n; i++) {
    const k = ks[i];
    const d = Math.max(0, k.duration_us);
    starts[i] = k.start_us;
    ends[i] = k.start_us + d;
    ids[i] = k.id;
    busy += d;
    if (d > maxDur) maxDur = d;
  }
  let share = busyShare;
  if (share === undefined) {
    const span = n ? ends.reduce((m, e) => Math.max(m, e), -Infinity) - starts[0] : 0;
    share = span > 0 ? busy / span : 0;
  }
  return { stream, label, starts, ends, ids, maxDur, kernels: ks, busyUs: busy, busyShare: share };
}

/** First index i with a[i] >= v (a sorted ascending). */
export function lowerBound(a: Float64Array, v: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index range [i0, i1) of kernels that may intersect [t0, t1]. */
export function visibleRange(lane: Lane, t0: number, t1: number): [number, number] {
  const i0 = lowerBound(lane.starts, t0 - lane.maxDur);
  let i1 = lowerBound(lane.starts, t1);
  // include kernels starting exactly at t1
  while (i1 < lane.starts.length && lane.starts[i1] === t1) i1++;
  return [i0, Math.max(i0, i1)];
}

export interface Raster {
  /** Busy fraction (0..1) of each pixel column covered by merged (narrow) kernels. */
  coverage: Float32Array;
  /** Lane indices of kernels drawn as individual bars. */
  bars: number[];
  /** Kernels intersecting the window. */
  visible: number;
  /** Busy time inside the window (µs), clipped to it. */
  busyUs: number;
}

/**
 * Rasterizes [t0, t0 + width/pxPerUs) of a lane. Kernels at least `minBarPx` wide become bars;
 * the rest add their clipped duration to the coverage of the pixel columns they touch.
 */
export function rasterize(lane: Lane, t0: number, pxPerUs: number, width: number, minBarPx = 2): Raster {
  const t1 = t0 + width / pxPerUs;
  const coverage = new Float32Array(Math.max(0, Math.ceil(width)));
  const bars: number[] = [];
  const [i0, i1] = visibleRange(lane, t0, t1);
  const { starts, ends } = lane;
  let visible = 0;
  let busy = 0;
  const usPerPx = 1 / pxPerUs;
  for (let i = i0; i < i1; i++) {
    const s = starts[i];
    const e = ends[i];
    if (e < t0 || s > t1) continue;
    visible++;
    const cs = s < t0 ? t0 : s;
    const ce = e > t1 ? t1 : e;
    busy += ce - cs;
    const px = (e - s) * pxPerUs;
    if (px >= minBarPx) {
      bars.push(i);
      continue;
    }
    // Spread the clipped duration over the pixel columns it overlaps.
    const x0 = (cs - t0) * pxPerUs;
    const x1 = (ce - t0) * pxPerUs;
    let c = Math.floor(x0);
    const cEnd = Math.min(coverage.length - 1, Math.floor(x1));
    if (c < 0) c = 0;
    if (c === cEnd) {
      if (c < coverage.length) coverage[c] += (ce - cs) / usPerPx;
      continue;
    }
    for (; c <= cEnd; c++) {
      const a = Math.max(x0, c);
      const b = Math.min(x1, c + 1);
      if (b > a) coverage[c] += b - a;
    }
  }
  for (let c = 0; c < coverage.length; c++) if (coverage[c] > 1) coverage[c] = 1;
  return { coverage, bars, visible, busyUs: busy };
}

/** The kernel under time t (within `tolUs`), preferring the one containing t; -1 if none. */
export function hitTest(lane: Lane, t: number, tolUs: number): number {
  const n = lane.starts.length;
  if (n === 0) return -1;
  const [i0, i1] = visibleRange(lane, t - tolUs, t + tolUs);
  let best = -1;
  let bestD = Infinity;
  for (let i = i0; i < Math.min(i1 + 1, n); i++) {
    const s = lane.starts[i];
    const e = lane.ends[i];
    const d = t < s ? s - t : t > e ? t - e : 0;
    if (d <= tolUs && (d < bestD || (d === bestD && best >= 0 && e - s < lane.ends[best] - lane.starts[best]))) {
      best = i;
      bestD = d;
    }
  }
  return best;
}

/** The idle gap around time t: [end of previous kernel, start of next], or null when busy. */
export function gapAt(lane: Lane, t: number): { start: number; end: number } | null {
  const n = lane.starts.length;
  if (n === 0) return null;
  const i = lowerBound(lane.starts, t); // first kernel starting at/after t
  // busy if any kernel before i covers t (look back over maxDur)
  const j0 = lowerBound(lane.starts, t - lane.maxDur);
  let prevEnd = -Infinity;
  for (let j = j0; j < i; j++) {
    if (lane.ends[j] >= t) return null;
    if (lane.ends[j] > prevEnd) prevEnd = lane.ends[j];
  }
  if (i === 0 || i >= n) return null; // before the first or after the last kernel: not a gap
  if (prevEnd === -Infinity) prevEnd = lane.ends[i - 1];
  return { start: prevEnd, end: lane.starts[i] };
}

/** Round tick values covering [t0, t1] with about `count` ticks (1, 2, 5 × 10^n steps). */
export function niceTicks(t0: number, t1: number, count: number): { step: number; ticks: number[] } {
  const span = t1 - t0;
  if (!(span > 0) || count < 1) return { step: 0, ticks: [] };
  const raw = span / count;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const norm = raw / mag;
  const step = (norm < 1.5 ? 1 : norm < 3.5 ? 2 : norm < 7.5 ? 5 : 10) * mag;
  const ticks: number[] = [];
  const first = Math.ceil(t0 / step) * step;
  for (let v = first; v <= t1 + step * 1e-9; v += step) ticks.push(Math.round(v / step) * step);
  return { step, ticks };
}

/** Clamps a view [t0, t1] to [lo, hi] (keeping its span when possible), with a minimum span. */
export function clampView(t0: number, t1: number, lo: number, hi: number, minSpan = 0.01): [number, number] {
  let span = Math.max(minSpan, t1 - t0);
  const full = hi - lo;
  if (span >= full) return [lo, lo + Math.max(full, minSpan)];
  let a = t0;
  if (a < lo) a = lo;
  if (a + span > hi) a = hi - span;
  return [a, a + span];
}

/** Zooms a view around time `at` by `factor` (> 1 zooms in). */
export function zoomView(t0: number, t1: number, at: number, factor: number): [number, number] {
  const f = 1 / factor;
  return [at - (at - t0) * f, at + (t1 - at) * f];
}
