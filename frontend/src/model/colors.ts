// Colours: per-group palette (light and dark), GPU-time heat scale, hotspots. Pure.
import { GROUPS, type Group } from "../api/contract";
import type { Hierarchy } from "./hierarchy";

export type Theme = "light" | "dark";

export interface GroupColor {
  fill: string;
  stroke: string;
  /** Saturated colour for timeline bars. */
  bar: string;
  /** Container background (expanded group). */
  box: string;
}

// Keyed by the contract's Group: a group added there without a colour fails the type check.
const LIGHT: Record<Group | "input" | "layer", GroupColor> = {
  norm: { fill: "#d9f0ea", stroke: "#2a9d8f", bar: "#2a9d8f", box: "rgba(42,157,143,0.07)" },
  attention: { fill: "#dce7fb", stroke: "#3b6fd6", bar: "#3b6fd6", box: "rgba(59,111,214,0.07)" },
  mla: { fill: "#dce7fb", stroke: "#3b6fd6", bar: "#3b6fd6", box: "rgba(59,111,214,0.07)" },
  moe: { fill: "#fde5cc", stroke: "#d9730d", bar: "#e07b12", box: "rgba(224,123,18,0.07)" },
  mlp: { fill: "#f8eec0", stroke: "#b08900", bar: "#c49a00", box: "rgba(196,154,0,0.08)" },
  mamba: { fill: "#ebdcf8", stroke: "#8a4fd1", bar: "#8a4fd1", box: "rgba(138,79,209,0.07)" },
  gdn: { fill: "#f8dbe8", stroke: "#c2407a", bar: "#c2407a", box: "rgba(194,64,122,0.07)" },
  other: { fill: "#eceff3", stroke: "#7b8794", bar: "#8895a3", box: "rgba(123,135,148,0.06)" },
  input: { fill: "#ffffff", stroke: "#6b7785", bar: "#6b7785", box: "transparent" },
  layer: { fill: "#f3f5f8", stroke: "#5d6b7a", bar: "#5d6b7a", box: "rgba(93,107,122,0.04)" },
};

const DARK: Record<Group | "input" | "layer", GroupColor> = {
  norm: { fill: "#173b36", stroke: "#4fc2b3", bar: "#3fb5a5", box: "rgba(79,194,179,0.08)" },
  attention: { fill: "#1c2f55", stroke: "#7aa2f7", bar: "#5f8ef2", box: "rgba(122,162,247,0.08)" },
  mla: { fill: "#1c2f55", stroke: "#7aa2f7", bar: "#5f8ef2", box: "rgba(122,162,247,0.08)" },
  moe: { fill: "#4a2e12", stroke: "#f0a04b", bar: "#ef9236", box: "rgba(240,160,75,0.08)" },
  mlp: { fill: "#443a10", stroke: "#e0c04a", bar: "#d8b431", box: "rgba(224,192,74,0.08)" },
  mamba: { fill: "#35204f", stroke: "#b88af0", bar: "#a879ea", box: "rgba(184,138,240,0.08)" },
  gdn: { fill: "#4a1c31", stroke: "#ee7fb0", bar: "#e56ba1", box: "rgba(238,127,176,0.08)" },
  other: { fill: "#2a3038", stroke: "#98a4b3", bar: "#8792a0", box: "rgba(152,164,179,0.06)" },
  input: { fill: "#1b1f24", stroke: "#98a4b3", bar: "#98a4b3", box: "transparent" },
  layer: { fill: "#22272e", stroke: "#8b98a8", bar: "#8b98a8", box: "rgba(139,152,168,0.05)" },
};

/** Colour of the GPU time outside every layer (overview, stage summary): none of the groups'. */
export function outsideColor(theme: Theme): string {
  return theme === "dark" ? "#7f8ea3" : "#5b6b80";
}

export function groupColor(group: string, theme: Theme): GroupColor {
  const p: Record<string, GroupColor> = theme === "dark" ? DARK : LIGHT;
  return p[group] ?? p.other;
}

/** The converter's groups, in its order (generated from the contract). */
export const GROUP_NAMES: readonly string[] = GROUPS;

// Heat scale stops (low -> high): pale yellow, orange, red, dark red (light theme);
// on dark backgrounds start from a dark purple so that "cold" nodes recede.
const HEAT_LIGHT: [number, number, number][] = [[255, 247, 214], [254, 196, 79], [240, 104, 39], [196, 30, 32], [110, 8, 30]];
const HEAT_DARK: [number, number, number][] = [[48, 38, 66], [110, 40, 110], [196, 58, 72], [244, 128, 40], [253, 226, 104]];

/** Colour of a value in [0, 1] on the heat scale. */
export function heatColor(v: number, theme: Theme): string {
  const stops = theme === "dark" ? HEAT_DARK : HEAT_LIGHT;
  const x = Math.min(1, Math.max(0, Number.isFinite(v) ? v : 0)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  const a = stops[i];
  const b = stops[i + 1];
  const c = (j: number) => Math.round(a[j] + (b[j] - a[j]) * f);
  return `rgb(${c(0)},${c(1)},${c(2)})`;
}

/** Text colour readable on heatColor(v). */
export function heatTextColor(v: number, theme: Theme): string {
  if (theme === "dark") return v > 0.7 ? "#1b1b1b" : "#f2f2f2";
  return v > 0.55 ? "#ffffff" : "#1b1b1b";
}

/** Heat position of a time: square-root scale, so mid-sized nodes stay distinguishable. */
export function heatValue(timeUs: number, maxUs: number): number {
  if (!(maxUs > 0) || !(timeUs > 0)) return 0;
  return Math.sqrt(Math.min(1, timeUs / maxUs));
}

/** Inverse of heatValue, for legend ticks. */
export function heatTime(v: number, maxUs: number): number {
  return v * v * maxUs;
}

/** CSS gradient of the heat scale (for the legend). */
export function heatGradient(theme: Theme): string {
  const stops: string[] = [];
  for (let i = 0; i <= 10; i++) stops.push(`${heatColor(i / 10, theme)} ${i * 10}%`);
  return `linear-gradient(to right, ${stops.join(", ")})`;
}

/** Top-k op keys by GPU time (ties by graph order), as key -> rank (1 = hottest). */
export function hotspots(h: Hierarchy, k: number): Map<string, number> {
  const ops = h.opKeys
    .map((key, i) => ({ key, i, t: h.items.get(key)?.timeUs ?? 0 }))
    .filter((o) => o.t > 0)
    .sort((a, b) => b.t - a.t || a.i - b.i)
    .slice(0, Math.max(0, k));
  return new Map(ops.map((o, r) => [o.key, r + 1]));
}

/** Largest op time in the hierarchy (the heat scale's maximum). */
export function maxOpTime(h: Hierarchy): number {
  let m = 0;
  for (const k of h.opKeys) m = Math.max(m, h.items.get(k)?.timeUs ?? 0);
  return m;
}
