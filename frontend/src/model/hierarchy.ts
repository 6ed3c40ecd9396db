// The view model's hierarchy: scene > layer > group > sub-group > node, plus external inputs.
// Pure functions only (unit-tested); nothing here touches the DOM.
//
// Keys are namespaced so that a node id can never collide with a group path:
//   "g:"            the scene (invisible root; always expanded)
//   "g:L5"          layer 5
//   "g:L5/moe"      group moe of layer 5
//   "g:L5/moe/moe_router"  sub-group
//   "n:<fx id>"     an FX node
//   "x:<id>"        an external input (an id that no loaded layer defines)
//   "g:L5/gdn/*1"   the first fold of repeated blocks inside a group (numbered in dump order, so
//                   that the same fold of two layers has the same path)
//   "x:L5/*int64[8]"    external inputs of one kind folded into one (see foldInputs)
import type { ExternalInput, LayerNode, LayerResponse } from "../api/types";
import { findRepeats, type SeqNode } from "./repeats";

export type ItemKind = "group" | "op" | "input";

export interface TreeItem {
  key: string;
  kind: ItemKind;
  parent: string | null;
  children: string[];
  /** scene = 0, layer = 1, group = 2, sub-group = 3, nodes below their container. */
  depth: number;
  /** For groups: "layer" | group name | sub-group name; for ops: the node's label; for inputs: "input". */
  name: string;
  layer: number | null;
  /** Sum of time_us of all op nodes at or below this item. */
  timeUs: number;
  /** Number of op nodes at or below this item. */
  nodeCount: number;
  kernelCount: number;
  node?: LayerNode;
  input?: ExternalInput;
  /** Order of first appearance in the dump (stable ordering of children). */
  order: number;
  /** 0 for the first (or only) box of a group; k for its k+1-th dataflow phase (see splitPhases). */
  phase?: number;
  /** A fold of `count` consecutive isomorphic blocks of `period` nodes (see model/repeats.ts). */
  repeat?: { count: number; period: number };
  /** Inputs folded into this one input item (external inputs of one kind); absent for one input. */
  inputs?: ExternalInput[];
  /** A layer box whose layer the converter has doubts about (its document's `doubts`). */
  doubtful?: boolean;
}

export interface LeafEdge {
  from: string; // key
  to: string; // key
  shape: string;
}

export interface Hierarchy {
  items: Map<string, TreeItem>;
  root: string;
  edges: LeafEdge[];
  /** FX node id -> key ("n:<id>"). */
  nodeKey: (id: string) => string;
  /** All op keys in dump order. */
  opKeys: string[];
  layers: number[];
  /** Sum of time_us per layer (the denominator of a node's share). */
  layerTimeUs: Map<number, number>;
  /** Key of an input folded into another item -> that item's key (see foldInputs). */
  alias: Map<string, string>;
  /**
   * Whether a trace was mapped onto these layers (a layer has a trace summary or a node has
   * kernels). Without one, kernel counts are not zero but unknown, and are not shown.
   */
  traced: boolean;
}

export const SCENE = "g:";

export function layerKey(layer: number): string {
  return `g:L${layer}`;
}

function phaseSuffix(p: number | undefined): string {
  return p ? `~${p + 1}` : "";
}

/** Key of a group box; `gPhase`/`sPhase` > 0 name the later boxes of a group split by dataflow. */
export function groupKey(layer: number, group: string, sub?: string | null, gPhase = 0, sPhase = 0): string {
  const g = `g:L${layer}/${group}${phaseSuffix(gPhase)}`;
  return sub ? `${g}/${sub}${phaseSuffix(sPhase)}` : g;
}

export function isGroupKey(key: string): boolean {
  return key.startsWith("g:");
}

/** The id a DOM element carries: group path without "g:", node/input id without prefix. */
export function publicId(key: string): string {
  return key.slice(2);
}

export function opKey(id: string): string {
  return `n:${id}`;
}

export function inputKey(id: string): string {
  return `x:${id}`;
}

/**
 * Builds the hierarchy of one or more layers. With one layer the scene holds that layer's box and
 * its external inputs; with several, edges between loaded layers become real edges and only inputs
 * that no loaded layer defines stay input items.
 */
export function buildHierarchy(layers: LayerResponse[]): Hierarchy {
  const items = new Map<string, TreeItem>();
  let order = 0;
  const scene: TreeItem = {
    key: SCENE, kind: "group", parent: null, children: [], depth: 0, name: "scene", layer: null,
    timeUs: 0, nodeCount: 0, kernelCount: 0, order: order++,
  };
  items.set(SCENE, scene);
  const defined = new Set<string>();
  for (const L of layers) for (const n of L.nodes) defined.add(n.id);

  const addChild = (parent: TreeItem, child: TreeItem) => {
    parent.children.push(child.key);
    items.set(child.key, child);
  };
  const ensureGroup = (key: string, parentKey: string, name: string, layer: number, phase = 0): TreeItem => {
    let g = items.get(key);
    if (!g) {
      const parent = items.get(parentKey)!;
      g = {
        key, kind: "group", parent: parentKey, children: [], depth: parent.depth + 1, name, layer,
        timeUs: 0, nodeCount: 0, kernelCount: 0, order: order++,
      };
      if (phase) g.phase = phase;
      addChild(parent, g);
    }
    return g;
  };

  // Which loaded layers consume each id that no loaded layer defines.
  const inputLayers = new Map<string, Set<number>>();
  for (const L of layers) {
    for (const e of L.edges) {
      if (defined.has(e.from)) continue;
      (inputLayers.get(e.from) ?? inputLayers.set(e.from, new Set()).get(e.from)!).add(L.layer);
    }
  }
  const opKeys: string[] = [];
  const edges: LeafEdge[] = [];
  const layerTimeUs = new Map<number, number>();
  const sorted = [...layers].sort((a, b) => a.layer - b.layer);
  for (const L of sorted) {
    const lk = layerKey(L.layer);
    const layerItem = ensureGroup(lk, SCENE, "layer", L.layer);
    if (L.doubts?.length) layerItem.doubtful = true;
    let lt = 0;
    const ph = layerPhases(L);
    for (const n of L.nodes) {
      const group = n.group || "other";
      const p = ph.get(n.id) ?? [0, 0];
      const gk = groupKey(L.layer, group, null, p[0]);
      ensureGroup(gk, lk, group, L.layer, p[0]);
      let parentKey = gk;
      if (n.sub_group) {
        parentKey = groupKey(L.layer, group, n.sub_group, p[0], p[1]);
        ensureGroup(parentKey, gk, n.sub_group, L.layer, p[1]);
      }
      const parent = items.get(parentKey)!;
      const k = opKey(n.id);
      if (items.has(k)) continue; // duplicate id: keep the first
      const time = Number.isFinite(n.time_us) ? n.time_us : 0;
      lt += time;
      addChild(parent, {
        key: k, kind: "op", parent: parentKey, children: [], depth: parent.depth + 1, name: n.label || n.op,
        layer: L.layer, timeUs: time, nodeCount: 1, kernelCount: n.kernels?.length ?? 0, node: n, order: order++,
      });
      opKeys.push(k);
    }
    layerTimeUs.set(L.layer, lt);
  }
  // Inputs once every layer box exists. An input used by one loaded layer sits inside that
  // layer's box (so the layout can put it next to its consumers); one shared by several layers
  // sits above them.
  const homeOf = (id: string): TreeItem => {
    const ls = inputLayers.get(id);
    return ls && ls.size === 1 ? items.get(layerKey([...ls][0]))! : scene;
  };
  const addInput = (x: ExternalInput) => {
    const xk = inputKey(x.id);
    if (items.has(xk) || defined.has(x.id)) return;
    const home = homeOf(x.id);
    addChild(home, {
      key: xk, kind: "input", parent: home.key, children: [], depth: home.depth + 1, name: "input", layer: null,
      timeUs: 0, nodeCount: 0, kernelCount: 0, input: x, order: order++,
    });
  };
  for (const L of sorted) for (const x of L.external_inputs) addInput(x);
  const alias = foldInputs(items);
  for (const L of sorted) {
    const seen = new Set<string>();
    for (const e of L.edges) {
      const to = opKey(e.to);
      if (!items.has(to)) continue;
      let from = opKey(e.from);
      if (!items.has(from)) {
        from = inputKey(e.from);
        // An edge from an id the response does not describe: shown as an input named by its id.
        if (alias.has(from)) from = alias.get(from)!;
        else if (!items.has(from)) addInput({ id: e.from, label: e.from, shape: e.shape ?? "?", dtype: "", kind: "unknown", layer: null });
      }
      const sig = `${from}\u0000${to}`;
      if (seen.has(sig)) continue;
      seen.add(sig);
      edges.push({ from, to, shape: e.shape ?? "" });
    }
  }
  // Children in order of first appearance (dump order is execution order).
  for (const it of items.values()) {
    if (it.children.length > 1) it.children.sort((a, b) => items.get(a)!.order - items.get(b)!.order);
  }
  foldRepeats(items);
  aggregate(items, SCENE);
  // A layer's GPU time is one figure everywhere: the sum of its kernels' durations, as the trace
  // summary has it (the layer chooser's, the comparison's); it includes kernels no node claimed
  // (memsets...), which the sum over its nodes leaves out.
  for (const L of sorted) {
    const total = L.trace_summary?.total_duration_us;
    const it = items.get(layerKey(L.layer));
    if (it && typeof total === "number" && Number.isFinite(total) && total > 0) {
      const scene = items.get(SCENE)!;
      scene.timeUs += total - it.timeUs;
      it.timeUs = total;
      layerTimeUs.set(L.layer, total);
    }
  }
  const traced = layers.some((L) => !!L.trace_summary || L.nodes.some((n) => (n.kernels?.length ?? 0) > 0));
  return {
    items, root: SCENE, edges, nodeKey: opKey, opKeys, layers: sorted.map((l) => l.layer), layerTimeUs, alias, traced,
  };
}

/** Inputs of one kind in one place fold into one item from this many on. */
export const MIN_FOLDED_INPUTS = 2;

/** What kind of tensor an external input is, as the panel folds them ("batch metadata"). */
function inputKind(x: ExternalInput): string {
  return x.kind && x.kind !== "unknown" ? x.kind : x.label || "";
}

/**
 * Folds the external inputs of one kind under one parent (ten batch-metadata tensors) into one
 * input item that lists them, so that a row of small inputs neither crowds the graph nor sets the
 * width of its layout. Returns member key -> fold key.
 */
function foldInputs(items: Map<string, TreeItem>): Map<string, string> {
  const alias = new Map<string, string>();
  const byPlace = new Map<string, TreeItem[]>();
  for (const it of items.values()) {
    if (it.kind !== "input" || !it.input || it.parent === null) continue;
    const kind = inputKind(it.input);
    if (!kind) continue;
    const k = `${it.parent}\u0000${kind}`;
    (byPlace.get(k) ?? byPlace.set(k, []).get(k)!).push(it);
  }
  for (const members of byPlace.values()) {
    if (members.length < MIN_FOLDED_INPUTS) continue;
    const first = members[0];
    const parent = items.get(first.parent!)!;
    const kind = inputKind(first.input!);
    const place = parent.key === SCENE ? "" : `${parent.key.slice(2)}/`;
    const key = `x:${place}*${kind}`;
    const fold: TreeItem = {
      ...first, key, children: [], order: first.order, inputs: members.map((m) => m.input!),
      input: { ...first.input!, id: `${place}*${kind}`, label: members.every((m) => m.input!.label === first.input!.label) ? first.input!.label : kind },
    };
    items.set(key, fold);
    const memberKeys = new Set(members.map((m) => m.key));
    parent.children = parent.children.filter((c) => !memberKeys.has(c));
    parent.children.push(key);
    for (const m of members) {
      items.delete(m.key);
      alias.set(m.key, key);
    }
  }
  return alias;
}

/**
 * Wraps each run of repeated blocks among a group's consecutive op children into a fold group
 * (collapsed by default, see defaultExpanded). Linear in the children and their inputs.
 */
function foldRepeats(items: Map<string, TreeItem>): void {
  const groups = [...items.values()].filter((it) => it.kind === "group" && it.key !== SCENE);
  for (const g of groups) {
    if (g.children.length < 2) continue;
    // Stretches of consecutive op children.
    const out: string[] = [];
    let stretch: TreeItem[] = [];
    const folds = { n: 0 };
    const flush = () => {
      if (stretch.length) foldStretch(items, g, stretch, out, folds);
      stretch = [];
    };
    for (const c of g.children) {
      const ci = items.get(c)!;
      if (ci.kind === "op") stretch.push(ci);
      else {
        flush();
        out.push(c);
      }
    }
    flush();
    g.children = out;
  }
}

function foldStretch(items: Map<string, TreeItem>, g: TreeItem, ops: TreeItem[], out: string[], folds: { n: number }): void {
  const pos = new Map<string, number>();
  ops.forEach((it, i) => pos.set(it.node!.id, i));
  const seq: SeqNode[] = ops.map((it) => ({ op: it.node!.op, inputs: (it.node!.inputs ?? []).map((id) => pos.get(id) ?? -1) }));
  const runs = findRepeats(seq);
  let i = 0;
  for (const r of runs) {
    while (i < r.start) out.push(ops[i++].key);
    const first = ops[r.start];
    const key = `${g.key}/*${++folds.n}`;
    const fold: TreeItem = {
      key, kind: "group", parent: g.key, children: [], depth: g.depth + 1, name: first.name, layer: g.layer,
      timeUs: 0, nodeCount: 0, kernelCount: 0, order: first.order, repeat: { count: r.count, period: r.period },
    };
    items.set(key, fold);
    for (let j = r.start; j < r.start + r.period * r.count; j++) {
      const it = ops[j];
      it.parent = key;
      shiftDepth(items, it, 1);
      fold.children.push(it.key);
    }
    out.push(key);
    i = r.start + r.period * r.count;
  }
  while (i < ops.length) out.push(ops[i++].key);
}

function shiftDepth(items: Map<string, TreeItem>, it: TreeItem, by: number): void {
  it.depth += by;
  for (const c of it.children) shiftDepth(items, items.get(c)!, by);
}

function aggregate(items: Map<string, TreeItem>, key: string): void {
  // Iterative post-order (hierarchies are shallow, but keep it stack-safe).
  const stack: [string, boolean][] = [[key, false]];
  while (stack.length) {
    const [k, done] = stack.pop()!;
    const it = items.get(k)!;
    if (it.kind !== "group") continue;
    if (!done) {
      stack.push([k, true]);
      for (const c of it.children) stack.push([c, false]);
      continue;
    }
    let t = 0;
    let n = 0;
    let kc = 0;
    for (const c of it.children) {
      const ci = items.get(c)!;
      t += ci.timeUs;
      n += ci.nodeCount;
      kc += ci.kernelCount;
    }
    it.timeUs = t;
    it.nodeCount = n;
    it.kernelCount = kc;
  }
}

/** Ancestors of a key from the scene down to its parent (excluding the key itself). */
export function ancestors(h: Hierarchy, key: string): string[] {
  const out: string[] = [];
  let p = h.items.get(key)?.parent ?? null;
  while (p !== null) {
    out.push(p);
    p = h.items.get(p)?.parent ?? null;
  }
  return out.reverse();
}

/** Group keys that are expanded when everything above `depth` is open ("collapse below depth N"). */
export function expandedToDepth(h: Hierarchy, depth: number): Set<string> {
  const out = new Set<string>();
  for (const it of h.items.values()) {
    if (it.kind === "group" && it.depth < depth) out.add(it.key);
  }
  out.add(SCENE);
  return out;
}

/** A group with more visible children than this opens collapsed. */
export const MAX_OPEN_CHILDREN = 200;

/**
 * What a layer opens with: every group expanded, except folds of repeated blocks and groups with
 * more than MAX_OPEN_CHILDREN children (each opens on demand).
 */
export function defaultExpanded(h: Hierarchy): Set<string> {
  const out = new Set<string>([SCENE]);
  for (const it of h.items.values()) {
    if (it.kind !== "group" || it.repeat) continue;
    if (it.depth > 1 && it.children.length > MAX_OPEN_CHILDREN) continue;
    out.add(it.key);
  }
  return out;
}

/**
 * The first view of one layer: its skeleton, every top-level group (depth 2) collapsed to a titled
 * box, except the one where the layer's work is (the most GPU time; without a trace the most
 * nodes), which opens as defaultExpanded opens it. A layer of one group is opened whole.
 */
export function skeletonExpanded(h: Hierarchy): Set<string> {
  const out = defaultExpanded(h);
  const top = [...h.items.values()].filter((it) => it.kind === "group" && it.depth === 2);
  const hot = mainGroup(top);
  if (!hot || top.length < 2) return out;
  for (const it of top) if (it.key !== hot.key) out.delete(it.key);
  return out;
}

/** Of some groups, the one with the most GPU time (the most nodes when none has a time); the first on a tie. */
export function mainGroup(groups: readonly TreeItem[]): TreeItem | null {
  const timed = groups.some((it) => it.timeUs > 0);
  let best: TreeItem | null = null;
  for (const it of groups) {
    const v = timed ? it.timeUs : it.nodeCount;
    if (!best || v > (timed ? best.timeUs : best.nodeCount)) best = it;
  }
  return best;
}

/** Maximum group depth (layers are depth 1). */
export function maxGroupDepth(h: Hierarchy): number {
  let d = 0;
  for (const it of h.items.values()) if (it.kind === "group") d = Math.max(d, it.depth);
  return d;
}

/** Returns a copy of `expanded` with every ancestor of `key` expanded (to reveal it). */
export function revealKey(h: Hierarchy, expanded: Set<string>, key: string): Set<string> {
  const out = new Set(expanded);
  for (const a of ancestors(h, key)) out.add(a);
  return out;
}

/** Toggles one group; collapsing a group keeps its descendants' state for when it reopens. */
export function toggleGroup(expanded: Set<string>, key: string): Set<string> {
  const out = new Set(expanded);
  if (key === SCENE) return out;
  if (out.has(key)) out.delete(key);
  else out.add(key);
  return out;
}

/**
 * Dataflow phases of the groups of one layer: [group phase, sub-group phase] per node id.
 *
 * A group's nodes can sit on both sides of another group (the input and the post-attention
 * norms around attention; the begin/end markers of an aux-stream region around its branch). One
 * box for both would put a cycle into the group-level graph and tangle the drawing, so such a
 * group is split: its weakly connected parts are ordered by the paths that leave the group and come
 * back, and parts at the same level share a box. Parts with no path between them stay together.
 */
export function layerPhases(L: LayerResponse): Map<string, [number, number]> {
  const ids = L.nodes.map((n) => n.id);
  const byId = new Map(L.nodes.map((n) => [n.id, n]));
  const succ = new Map<string, string[]>();
  for (const n of L.nodes) {
    for (const i of n.inputs ?? []) {
      if (!byId.has(i)) continue;
      (succ.get(i) ?? succ.set(i, []).get(i)!).push(n.id);
    }
  }
  for (const e of L.edges ?? []) {
    if (!byId.has(e.from) || !byId.has(e.to)) continue;
    const arr = succ.get(e.from) ?? succ.set(e.from, []).get(e.from)!;
    if (!arr.includes(e.to)) arr.push(e.to);
  }
  const out = new Map<string, [number, number]>();
  const gPhase = splitPhases(ids, (id) => byId.get(id)!.group || "other", succ);
  // Sub-groups are split within each (group, phase) box.
  const scopes = new Map<string, string[]>();
  for (const id of ids) {
    const k = `${byId.get(id)!.group}\u0000${gPhase.get(id) ?? 0}`;
    (scopes.get(k) ?? scopes.set(k, []).get(k)!).push(id);
  }
  const sPhase = new Map<string, number>();
  for (const scope of scopes.values()) {
    const sp = splitPhases(scope, (id) => byId.get(id)!.sub_group ?? null, succ);
    for (const [id, p] of sp) sPhase.set(id, p);
  }
  for (const id of ids) out.set(id, [gPhase.get(id) ?? 0, sPhase.get(id) ?? 0]);
  return out;
}

/**
 * Phase of every node of `scope` within its label (nodes with a null label are not grouped).
 * Pure; O(components × scope size).
 */
export function splitPhases(scope: string[], label: (id: string) => string | null, succ: Map<string, string[]>): Map<string, number> {
  const inScope = new Set(scope);
  const res = new Map<string, number>();
  const byLabel = new Map<string, string[]>();
  for (const id of scope) {
    const l = label(id);
    if (l === null) continue;
    (byLabel.get(l) ?? byLabel.set(l, []).get(l)!).push(id);
  }
  // Nodes fed by another labelled part of the scope: where dataflow re-enters a label after
  // leaving it (the post-attention norm, fed by attention). A direct edge into such a node from
  // the same label (the residual carried from the input norm) does not merge the two parts.
  const reentry = new Set<string>();
  for (const id of scope) {
    const l = label(id);
    if (l === null) continue;
    for (const s of succ.get(id) ?? []) {
      if (!inScope.has(s)) continue;
      const ls = label(s);
      if (ls !== null && ls !== l) reentry.add(s);
    }
  }
  for (const [lab, members] of byLabel) {
    // Weakly connected components of the label's induced subgraph (union-find).
    const parent = new Map<string, string>(members.map((m) => [m, m]));
    const find = (x: string): string => {
      let r = x;
      while (parent.get(r) !== r) r = parent.get(r)!;
      let c = x;
      while (parent.get(c) !== r) {
        const nx = parent.get(c)!;
        parent.set(c, r);
        c = nx;
      }
      return r;
    };
    for (const m of members) {
      for (const s of succ.get(m) ?? []) if (parent.has(s) && !reentry.has(s)) parent.set(find(s), find(m));
    }
    const compOf = new Map<string, number>();
    const roots = new Map<string, number>();
    for (const m of members) {
      const r = find(m);
      if (!roots.has(r)) roots.set(r, roots.size);
      compOf.set(m, roots.get(r)!);
    }
    const nc = roots.size;
    if (nc <= 1) continue;
    // comp A -> comp B when a path leaves the label at A and re-enters it at B.
    const after: Set<number>[] = Array.from({ length: nc }, () => new Set<number>());
    const compMembers: string[][] = Array.from({ length: nc }, () => []);
    for (const m of members) compMembers[compOf.get(m)!].push(m);
    for (let a = 0; a < nc; a++) {
      const seen = new Set<string>();
      const queue: string[] = [];
      for (const m of compMembers[a]) {
        for (const s of succ.get(m) ?? []) {
          if (!inScope.has(s) || seen.has(s)) continue;
          if (label(s) === lab) continue; // same component (direct edge)
          seen.add(s);
          queue.push(s);
        }
      }
      for (let q = 0; q < queue.length; q++) {
        for (const s of succ.get(queue[q]) ?? []) {
          if (!inScope.has(s) || seen.has(s)) continue;
          seen.add(s);
          if (label(s) === lab) {
            const b = compOf.get(s)!;
            if (b !== a) after[a].add(b);
            continue;
          }
          queue.push(s);
        }
      }
    }
    // Longest-path levels (Kahn; a cycle among parts, impossible for a DAG, just stops the pass).
    const indeg = new Int32Array(nc);
    for (let a = 0; a < nc; a++) for (const b of after[a]) indeg[b]++;
    const level = new Int32Array(nc);
    const queue: number[] = [];
    for (let a = 0; a < nc; a++) if (indeg[a] === 0) queue.push(a);
    for (let q = 0; q < queue.length; q++) {
      const a = queue[q];
      for (const b of after[a]) {
        level[b] = Math.max(level[b], level[a] + 1);
        if (--indeg[b] === 0) queue.push(b);
      }
    }
    let maxLevel = 0;
    for (let a = 0; a < nc; a++) maxLevel = Math.max(maxLevel, level[a]);
    if (maxLevel === 0) continue;
    for (const m of members) {
      const lv = level[compOf.get(m)!];
      if (lv) res.set(m, lv);
    }
  }
  return res;
}

/**
 * The open groups as they differ from `base` (the first view's): "+id" for a group opened, "-id"
 * for one closed, by public id, comma-separated; "" when they are the same.
 */
export function encodeOpen(h: Hierarchy, expanded: ReadonlySet<string>, base: ReadonlySet<string>): string {
  const out: string[] = [];
  for (const it of h.items.values()) {
    if (it.kind !== "group" || it.key === SCENE) continue;
    const on = expanded.has(it.key);
    if (on !== base.has(it.key)) out.push(`${on ? "+" : "-"}${publicId(it.key)}`);
  }
  return out.join(",");
}

/** `base` with the changes of encodeOpen applied; null when none of them names a group of `h`. */
export function decodeOpen(h: Hierarchy, code: string, base: ReadonlySet<string>): Set<string> | null {
  const out = new Set(base);
  let any = false;
  for (const part of code.split(",")) {
    const key = `g:${part.slice(1)}`;
    const it = h.items.get(key);
    if (!it || it.kind !== "group") continue;
    any = true;
    if (part[0] === "+") out.add(key);
    else if (part[0] === "-") out.delete(key);
  }
  return any ? out : null;
}
