// From the hierarchy and the set of expanded groups to what is drawn: visible leaves (op nodes,
// inputs, collapsed groups), expanded containers, and edges aggregated between visible leaves.
// Pure functions (unit-tested).
import { ellipsizeMiddle } from "./format";
import { SCENE, type Hierarchy, type TreeItem } from "./hierarchy";

export interface VisibleEdge {
  /** Stable id: "<fromKey>-><toKey>". */
  id: string;
  from: string;
  to: string;
  /** Number of underlying node-to-node edges. */
  count: number;
  /** Distinct tensor shapes carried (first few). */
  shapes: string[];
}

export interface VisibleGraph {
  /** Expanded groups, each with its visible children, parents listed before children. */
  containers: { key: string; children: string[] }[];
  /** Layout leaves: ops, inputs and collapsed groups. */
  leaves: string[];
  /** For every key of the hierarchy: the visible leaf that represents it (itself if visible). */
  rep: Map<string, string>;
  edges: VisibleEdge[];
  expanded: Set<string>;
}

const MAX_SHAPES = 3;

export function visibleGraph(h: Hierarchy, expandedIn: Set<string>): VisibleGraph {
  const expanded = new Set(expandedIn);
  expanded.add(SCENE);
  const containers: { key: string; children: string[] }[] = [];
  const leaves: string[] = [];
  const rep = new Map<string, string>();
  // Top-down: an item is a container when it is an expanded group whose ancestors are expanded.
  const stack: { key: string; repr: string | null }[] = [{ key: h.root, repr: null }];
  while (stack.length) {
    const { key, repr } = stack.pop()!;
    const it = h.items.get(key) as TreeItem;
    if (repr !== null) {
      rep.set(key, repr);
      for (let i = it.children.length - 1; i >= 0; i--) stack.push({ key: it.children[i], repr });
      continue;
    }
    if (it.kind === "group" && expanded.has(key)) {
      rep.set(key, key);
      containers.push({ key, children: [...it.children] });
      for (let i = it.children.length - 1; i >= 0; i--) stack.push({ key: it.children[i], repr: null });
    } else {
      rep.set(key, key);
      leaves.push(key);
      if (it.kind === "group") {
        for (let i = it.children.length - 1; i >= 0; i--) stack.push({ key: it.children[i], repr: key });
      }
    }
  }
  const byId = new Map<string, VisibleEdge>();
  for (const e of h.edges) {
    const a = rep.get(e.from);
    const b = rep.get(e.to);
    if (a === undefined || b === undefined || a === b) continue;
    const id = `${a}->${b}`;
    let v = byId.get(id);
    if (!v) {
      v = { id, from: a, to: b, count: 0, shapes: [] };
      byId.set(id, v);
    }
    v.count++;
    if (e.shape && v.shapes.length < MAX_SHAPES && !v.shapes.includes(e.shape)) v.shapes.push(e.shape);
  }
  return { containers, leaves, rep, edges: [...byId.values()], expanded };
}

/** The visible leaf that shows `key` (a collapsed ancestor, or the key itself). */
export function representative(v: VisibleGraph, key: string): string | undefined {
  return v.rep.get(key);
}

/** Label of an aggregated edge: the shape, or "shape ×n" / "n edges". */
/**
 * Characters of a shape an edge label shows: labels take no room in the layout, so a long
 * symbolic shape ("s44x4x1x((s70 + (Mod(64 - …") is elided in the middle (the node cards and the
 * details panel show it whole) rather than run over its neighbours.
 */
export const EDGE_LABEL_CHARS = 24;

export function edgeLabel(e: VisibleEdge): string {
  const shape = (s: string) => ellipsizeMiddle(s, EDGE_LABEL_CHARS);
  if (e.count === 1) return shape(e.shapes[0] ?? "");
  if (e.shapes.length === 1) return `${shape(e.shapes[0])} ×${e.count}`;
  return `×${e.count}`;
}
