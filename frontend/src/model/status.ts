// Difference statuses of nodes (comparison and stage views): colours, aggregation of the statuses
// of hidden nodes into the groups that show them, and their short badges. Pure.
import type { Theme } from "./colors";
import { SCENE, type Hierarchy } from "./hierarchy";
import type { VisibleGraph } from "./visible";

/**
 * same / changed / only_a / only_b: comparison of two layers (A = left, B = right).
 * added / removed / changed / same: a transform stage against the previous stage.
 */
export type DiffStatus = "same" | "changed" | "only_a" | "only_b" | "added" | "removed";

export type StatusCounts = Partial<Record<DiffStatus, number>>;

export const COMPARE_STATUSES: DiffStatus[] = ["same", "changed", "only_a", "only_b"];
export const STAGE_STATUSES: DiffStatus[] = ["same", "added", "changed", "removed"];

export interface StatusColor {
  fill: string;
  stroke: string;
  /** Saturated colour for strips, legends and text. */
  solid: string;
}

const LIGHT: Record<DiffStatus, StatusColor> = {
  same: { fill: "#eef1f4", stroke: "#9aa5b1", solid: "#a7b1bc" },
  changed: { fill: "#ffe8a8", stroke: "#c98a00", solid: "#e0a100" },
  only_a: { fill: "#fbd3d3", stroke: "#d23f3f", solid: "#dc4848" },
  removed: { fill: "#fbd3d3", stroke: "#d23f3f", solid: "#dc4848" },
  only_b: { fill: "#cdeedd", stroke: "#23975a", solid: "#2aa866" },
  added: { fill: "#cdeedd", stroke: "#23975a", solid: "#2aa866" },
};

const DARK: Record<DiffStatus, StatusColor> = {
  same: { fill: "#262b32", stroke: "#6f7a87", solid: "#6f7a87" },
  changed: { fill: "#4a3a0c", stroke: "#f2b632", solid: "#f2b632" },
  only_a: { fill: "#4f1f23", stroke: "#ff6b6b", solid: "#ff6b6b" },
  removed: { fill: "#4f1f23", stroke: "#ff6b6b", solid: "#ff6b6b" },
  only_b: { fill: "#163f2a", stroke: "#5ad38e", solid: "#5ad38e" },
  added: { fill: "#163f2a", stroke: "#5ad38e", solid: "#5ad38e" },
};

export function statusColor(s: DiffStatus, theme: Theme): StatusColor {
  return (theme === "dark" ? DARK : LIGHT)[s];
}

/** Short marks in badges: ~ changed, − only left / removed, + only right / added. */
export const STATUS_SYMBOL: Record<DiffStatus, string> = {
  same: "=",
  changed: "~",
  only_a: "−",
  removed: "−",
  only_b: "+",
  added: "+",
};

/**
 * For every group of the hierarchy (expanded or collapsed) and every op with a status: how many
 * op nodes of each status it holds. Ops without an entry in `status` are not counted.
 * `status` is keyed by hierarchy key ("n:<id>").
 */
export function aggregateStatus(h: Hierarchy, status: Map<string, DiffStatus>): Map<string, StatusCounts> {
  const out = new Map<string, StatusCounts>();
  for (const [key, st] of status) {
    let k: string | null = key;
    while (k !== null) {
      const it = h.items.get(k);
      if (!it) break;
      const c = out.get(k) ?? {};
      c[st] = (c[st] ?? 0) + 1;
      out.set(k, c);
      k = it.parent;
    }
  }
  return out;
}

/** The counts shown on each visible leaf and container (the scene is left out). */
export function visibleCounts(vis: VisibleGraph, agg: Map<string, StatusCounts>): Map<string, StatusCounts> {
  const out = new Map<string, StatusCounts>();
  for (const k of vis.leaves) {
    const c = agg.get(k);
    if (c) out.set(k, c);
  }
  for (const c of vis.containers) {
    if (c.key === SCENE) continue;
    const v = agg.get(c.key);
    if (v) out.set(c.key, v);
  }
  return out;
}

/** "~2 −3 +1": the non-"same" counts in `order`; "" when nothing differs. */
export function countsBadge(c: StatusCounts | undefined, order: DiffStatus[]): string {
  if (!c) return "";
  const parts: string[] = [];
  for (const s of order) {
    if (s === "same") continue;
    const n = c[s] ?? 0;
    if (n > 0) parts.push(`${STATUS_SYMBOL[s]}${n}`);
  }
  return parts.join(" ");
}

/** Total of the counts. */
export function countsTotal(c: StatusCounts | undefined): number {
  let n = 0;
  for (const v of Object.values(c ?? {})) n += v ?? 0;
  return n;
}

/** Segments of a status strip of width `w` (proportional to the counts, in `order`). */
export function stripSegments(c: StatusCounts | undefined, order: DiffStatus[], w: number): { status: DiffStatus; x: number; w: number }[] {
  const total = countsTotal(c);
  if (!c || total <= 0 || w <= 0) return [];
  const out: { status: DiffStatus; x: number; w: number }[] = [];
  let x = 0;
  for (const s of order) {
    const n = c[s] ?? 0;
    if (n <= 0) continue;
    const sw = (n / total) * w;
    out.push({ status: s, x, w: sw });
    x += sw;
  }
  return out;
}

/** Serialised counts for a DOM attribute (tests and styling): "changed:2,only_a:3". */
export function countsAttr(c: StatusCounts | undefined, order: DiffStatus[]): string {
  if (!c) return "";
  return order.filter((s) => (c[s] ?? 0) > 0).map((s) => `${s}:${c[s]}`).join(",");
}
