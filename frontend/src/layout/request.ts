// Builds the worker's layout request from the view model (pure).
import type { Hierarchy } from "../model/hierarchy";
import { containerHeader, leafLabel, type BoxLabel } from "../model/labels";
import type { VisibleGraph } from "../model/visible";
import type { LayoutRequest } from "./protocol";

export interface RequestWithLabels {
  req: LayoutRequest;
  labels: Map<string, BoxLabel>;
  /** Expanded groups' header text, full and short (for zoomed-out views). */
  headers: Map<string, { text: string; short: string }>;
}

export function buildLayoutRequest(h: Hierarchy, v: VisibleGraph, id: number): RequestWithLabels {
  const labels = new Map<string, BoxLabel>();
  const headers = new Map<string, { text: string; short: string }>();
  const leaves = v.leaves.map((key) => {
    const it = h.items.get(key)!;
    const lab = leafLabel(it, it.layer !== null ? h.layerTimeUs.get(it.layer) : undefined, h.traced);
    labels.set(key, lab);
    return { key, w: lab.width, h: lab.height };
  });
  const containers = v.containers.map((c) => {
    const it = h.items.get(c.key)!;
    if (c.key === h.root) return { key: c.key, children: c.children, headerW: 0 };
    const hd = containerHeader(it, it.layer !== null ? h.layerTimeUs.get(it.layer) : undefined);
    headers.set(c.key, { text: hd.text, short: hd.short });
    return { key: c.key, children: c.children, headerW: hd.width };
  });
  // Edges from external inputs pull less on placement than the layer's own dataflow.
  const edges = v.edges.map((e) => ({ id: e.id, from: e.from, to: e.to, count: h.items.get(e.from)?.kind === "input" ? e.count * 0.5 : e.count }));
  for (const c of v.containers) edges.push(...gridEdges(h, v, c.key));
  return { req: { type: "layout", id, containers, leaves, edges }, labels, headers };
}

/** Id prefix of layout-only edges (laid out, never drawn). */
export const GRID_EDGE = "~grid:";

/**
 * An expanded fold of independent repeated blocks (one dequantisation per expert weight) would be
 * laid out as one row as wide as all its blocks together. Layout-only edges from each block to the
 * block `cols` further on stack the blocks into a grid about as wide as tall. Blocks that feed each
 * other (an unrolled loop's steps) already form a column and get none.
 */
export function gridEdges(h: Hierarchy, v: VisibleGraph, key: string): { id: string; from: string; to: string; count: number }[] {
  const it = h.items.get(key);
  if (!it?.repeat || !v.expanded.has(key)) return [];
  const { count, period } = it.repeat;
  const kids = it.children;
  if (count < 4 || kids.length !== count * period) return [];
  const block = new Map<string, number>();
  kids.forEach((k, i) => block.set(k, Math.floor(i / period)));
  for (const e of h.edges) {
    const a = block.get(e.from);
    const b = block.get(e.to);
    if (a !== undefined && b !== undefined && a !== b) return [];
  }
  // A block's sink (no successor in the block) and source, by dump order: its last and first node.
  const cols = Math.ceil(Math.sqrt(count));
  const out: { id: string; from: string; to: string; count: number }[] = [];
  for (let k = 0; k + cols < count; k++) {
    const from = kids[k * period + period - 1];
    const to = kids[(k + cols) * period];
    out.push({ id: `${GRID_EDGE}${from}`, from, to, count: 0.01 });
  }
  return out;
}
