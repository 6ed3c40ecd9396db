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
    const lab = leafLabel(it, it.layer !== null ? h.layerTimeUs.get(it.layer) : undefined);
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
  return { req: { type: "layout", id, containers, leaves, edges }, labels, headers };
}
