// Hierarchical layered layout: dagre (group.ts) runs once per expanded group, bottom-up, on that group's
// visible children only (Netron / Model Explorer style), so its cost stays close to linear in the
// number of groups. An edge between two nodes in different groups is laid out at their
// lowest common group (between the two child boxes that contain them); inside the groups it leaves
// or enters it is routed orthogonally: through the gap between ranks to the group's side channel
// (its inner margin, where no node is) and along it to the border. Per-group results are cached by
// structure (the children's sizes in order and the edges between them by index, not their names),
// so expanding or collapsing a group only lays out that group and its ancestors again, and the
// identical groups of repeated decoder layers (a whole-stage view) are laid out once.
//
// Pure apart from the cache; runs in the layout worker and in unit tests/benchmarks under Node.
import { layoutGroup, type Ranker } from "./group";
import type {
  LayoutBox,
  LayoutEdgeOut,
  LayoutRequest,
  LayoutResult,
} from "./protocol";

export const NODE_SEP = 18;
export const RANK_SEP = 28;
export const EDGE_SEP = 8;
export const GROUP_PAD_X = 16;
export const GROUP_PAD_BOTTOM = 14;
export const GROUP_HEADER = 24;

interface Pt {
  x: number;
  y: number;
}

/** Layout of one container's content, relative to the content's top-left corner. */
interface ContainerLayout {
  w: number;
  h: number;
  pos: Map<string, Pt>; // centre of each child
  /** Top and bottom of the rank (row) each child sits in. */
  rank: Map<string, { top: number; bottom: number }>;
  edges: Map<string, Pt[]>; // "a\u0000b" -> points
}

interface Work {
  children: string[];
  internal: Map<string, { from: string; to: string; weight: number }>;
}

/** A container's layout by child index: what the cache holds, shared by structurally equal groups. */
interface Shape {
  w: number;
  h: number;
  pos: Pt[];
  rank: { top: number; bottom: number }[];
  edges: Map<string, Pt[]>; // "i>j" -> points
}

const cache = new Map<string, Shape>();
const CACHE_MAX = 4000;

/** Engine options (benchmarks compare them; the panel uses the defaults). */
export interface EngineOptions {
  ranker: Ranker;
  /** Share cached layouts between groups of the same structure (false: by identity, for benchmarks). */
  shareStructure: boolean;
}
const options: EngineOptions = { ranker: "network-simplex", shareStructure: true };

export function configureEngine(o: Partial<EngineOptions>): void {
  Object.assign(options, o);
  cache.clear();
}

export function clearLayoutCache(): void {
  cache.clear();
}

function pairKey(a: string, b: string): string {
  return `${a}\u0000${b}`;
}

export function layoutGraph(req: LayoutRequest): LayoutResult {
  const t0 = now();
  let engineMs = 0;
  let cached = 0;
  const parent = new Map<string, string>();
  const isContainer = new Set<string>();
  const size = new Map<string, { w: number; h: number }>();
  for (const c of req.containers) {
    isContainer.add(c.key);
    for (const ch of c.children) parent.set(ch, c.key);
  }
  for (const l of req.leaves) size.set(l.key, { w: l.w, h: l.h });
  const root = req.containers[0]?.key;
  const work = new Map<string, Work>();
  for (const c of req.containers) work.set(c.key, { children: c.children, internal: new Map() });

  // Every edge is laid out at its lowest common container, between the children holding its ends.
  interface Route {
    id: string;
    from: string;
    to: string;
    up: [string, string][]; // [container, child] from the source upwards, below the LCA
    lca: string;
    cu: string;
    cv: string;
    down: [string, string][]; // [container, child] from below the LCA down to the target
  }
  const routes: Route[] = [];
  const chain = (k: string): string[] => {
    const out = [k];
    let p = parent.get(k);
    while (p !== undefined) {
      out.push(p);
      p = parent.get(p);
    }
    return out;
  };
  for (const e of req.edges) {
    if (!parent.has(e.from) || !parent.has(e.to) || e.from === e.to) continue;
    const cu = chain(e.from);
    const cv = chain(e.to);
    const setV = new Set(cv);
    let li = 0;
    while (li < cu.length && !setV.has(cu[li])) li++;
    if (li >= cu.length || li === 0) continue; // no common ancestor, or from contains to
    const lca = cu[li];
    const lj = cv.indexOf(lca);
    if (lj <= 0) continue;
    const up: [string, string][] = [];
    for (let i = 1; i < li; i++) up.push([cu[i], cu[i - 1]]);
    const down: [string, string][] = [];
    for (let j = lj - 1; j >= 1; j--) down.push([cv[j], cv[j - 1]]);
    const W = work.get(lca)!;
    const pk = pairKey(cu[li - 1], cv[lj - 1]);
    const ie = W.internal.get(pk);
    const w = e.count > 0 ? e.count : 1;
    if (ie) ie.weight += w;
    else W.internal.set(pk, { from: cu[li - 1], to: cv[lj - 1], weight: w });
    routes.push({ id: e.id, from: e.from, to: e.to, up, lca, cu: cu[li - 1], cv: cv[lj - 1], down });
  }

  // Bottom-up: containers are listed parents first, so walk the list backwards.
  const layouts = new Map<string, ContainerLayout>();
  const boxSize = new Map<string, { w: number; h: number }>(size);
  for (let i = req.containers.length - 1; i >= 0; i--) {
    const c = req.containers[i];
    const W = work.get(c.key)!;
    const st = structure(W, boxSize);
    let S = cache.get(st.sig);
    if (S) {
      cached++;
      cache.delete(st.sig); // refresh LRU position
      cache.set(st.sig, S);
    } else {
      const t1 = now();
      S = layoutShape(st);
      engineMs += now() - t1;
      cache.set(st.sig, S);
      if (cache.size > CACHE_MAX) cache.delete(cache.keys().next().value as string);
    }
    const L = materialize(S, W, st.index);
    layouts.set(c.key, L);
    if (c.key !== root) {
      const w = Math.max(L.w + 2 * GROUP_PAD_X, c.headerW + 2 * GROUP_PAD_X);
      boxSize.set(c.key, { w, h: L.h + GROUP_HEADER + GROUP_PAD_BOTTOM });
    }
  }

  // Top-down: absolute positions. `origin` is the top-left of each container's content area.
  const boxes: LayoutBox[] = [];
  const abs = new Map<string, LayoutBox>();
  const origin = new Map<string, Pt>();
  const rootL = root ? layouts.get(root) : undefined;
  if (root) origin.set(root, { x: 0, y: 0 });
  for (const c of req.containers) {
    const L = layouts.get(c.key)!;
    const o = origin.get(c.key)!;
    for (const ch of work.get(c.key)!.children) {
      const p = L.pos.get(ch);
      const sz = boxSize.get(ch);
      if (!p || !sz) continue;
      const b = { key: ch, x: o.x + p.x - sz.w / 2, y: o.y + p.y - sz.h / 2, w: sz.w, h: sz.h };
      boxes.push(b);
      abs.set(ch, b);
      if (isContainer.has(ch)) {
        const CL = layouts.get(ch)!;
        origin.set(ch, { x: b.x + (sz.w - CL.w) / 2, y: b.y + GROUP_HEADER });
      }
    }
  }

  // Stitch each edge: up the source's groups, the LCA route, down the target's groups. An LCA route
  // that dagre turned upwards (to break a cycle between groups) leaves and enters the groups the
  // other way round: through the gaps above the source's rows and below the target's.
  const STUB = Math.min(8, RANK_SEP / 3);
  const gapBelow = (cont: string, ch: string) => origin.get(cont)!.y + layouts.get(cont)!.rank.get(ch)!.bottom + RANK_SEP / 2;
  const gapAbove = (cont: string, ch: string) => origin.get(cont)!.y + layouts.get(cont)!.rank.get(ch)!.top - RANK_SEP / 2;
  /** Whether `ch` sits in the last (`bottom`) or first row of `cont`'s content. */
  const outerRow = (cont: string, ch: string, bottom: boolean) => {
    const L = layouts.get(cont)!;
    const rk = L.rank.get(ch)!;
    return bottom ? rk.bottom >= L.h - 0.5 : rk.top <= 0.5;
  };
  const channel = (cont: string, towardsX: number) => {
    const b = abs.get(cont)!;
    return towardsX < b.x + b.w / 2 ? b.x + GROUP_PAD_X / 2 : b.x + b.w - GROUP_PAD_X / 2;
  };
  const edges: LayoutEdgeOut[] = [];
  for (const r of routes) {
    const o = origin.get(r.lca)!;
    const lcaPts = (layouts.get(r.lca)!.edges.get(pairKey(r.cu, r.cv)) ?? []).map((p) => ({ x: p.x + o.x, y: p.y + o.y }));
    if (lcaPts.length < 2) continue;
    const upward = lcaPts[0].y > lcaPts[lcaPts.length - 1].y;
    const pts: Pt[] = [];
    let mid = lcaPts;
    if (r.up.length) {
      const u = abs.get(r.from)!;
      let x = u.x + u.w / 2;
      pts.push({ x, y: upward ? u.y : u.y + u.h });
      const towards = lcaPts[Math.min(1, lcaPts.length - 1)].x;
      for (const [cont, ch] of r.up) {
        // A child in its group's last row (first, going up) leaves straight through the border.
        if (outerRow(cont, ch, !upward)) continue;
        const gy = upward ? gapAbove(cont, ch) : gapBelow(cont, ch);
        pts.push({ x, y: gy });
        x = channel(cont, towards);
        pts.push({ x, y: gy });
      }
      const cub = abs.get(r.cu)!;
      pts.push({ x, y: upward ? cub.y - STUB : cub.y + cub.h + STUB });
      mid = lcaPts.slice(1);
    }
    const midStart = pts.length;
    if (r.down.length) {
      const body = mid.slice(0, Math.max(1, mid.length - 1));
      pushAll(pts, body);
      const midEnd = pts.length;
      let { x, y } = body[body.length - 1];
      for (const [cont, ch] of r.down) {
        // A child in its group's first row (last, going up) is entered straight through the
        // border, after a step sideways to above it; others through the group's side channel.
        if (outerRow(cont, ch, upward)) {
          const cb = abs.get(ch)!;
          const nx = Math.min(Math.max(x, cb.x + Math.min(8, cb.w / 2)), cb.x + cb.w - Math.min(8, cb.w / 2));
          if (Math.abs(nx - x) > 0.5) pts.push({ x: nx, y });
          x = nx;
          continue;
        }
        const cx = channel(cont, x);
        pts.push({ x: cx, y });
        const gy = upward ? gapBelow(cont, ch) : gapAbove(cont, ch);
        pts.push({ x: cx, y: gy });
        x = cx;
        y = gy;
      }
      const v = abs.get(r.to)!;
      pts.push({ x: v.x + v.w / 2, y });
      pts.push({ x: v.x + v.w / 2, y: upward ? v.y + v.h : v.y });
      finish(r.id, pts, midStart, midEnd);
    } else {
      pushAll(pts, mid);
      finish(r.id, pts, midStart, pts.length);
    }
  }
  function finish(id: string, pts: Pt[], a: number, b: number) {
    const clean: Pt[] = [];
    pushAll(clean, pts);
    if (clean.length < 2) return;
    const flat: number[] = [];
    for (const p of clean) flat.push(round(p.x), round(p.y));
    const m = labelPoint(pts.slice(a, Math.max(a + 1, b)));
    edges.push({ id, points: flat, labelX: round(m.x), labelY: round(m.y) });
  }

  const totalMs = now() - t0;
  return {
    type: "layout",
    id: req.id,
    boxes,
    edges,
    width: rootL ? rootL.w : 0,
    height: rootL ? rootL.h : 0,
    stats: {
      totalMs, engineMs, containers: req.containers.length, cached, leaves: req.leaves.length, edges: routes.length,
    },
  };
}

function pushAll(out: Pt[], pts: Pt[]): void {
  for (const p of pts) {
    const last = out[out.length - 1];
    if (last && Math.abs(last.x - p.x) < 0.5 && Math.abs(last.y - p.y) < 0.5) continue;
    out.push(p);
  }
}

function labelPoint(pts: Pt[]): Pt {
  if (pts.length === 0) return { x: 0, y: 0 };
  if (pts.length === 1) return pts[0];
  // Point at half the polyline's length.
  let total = 0;
  for (let i = 1; i < pts.length; i++) total += Math.hypot(pts[i].x - pts[i - 1].x, pts[i].y - pts[i - 1].y);
  let acc = 0;
  for (let i = 1; i < pts.length; i++) {
    const d = Math.hypot(pts[i].x - pts[i - 1].x, pts[i].y - pts[i - 1].y);
    if (acc + d >= total / 2 && d > 0) {
      const f = (total / 2 - acc) / d;
      return { x: pts[i - 1].x + f * (pts[i].x - pts[i - 1].x), y: pts[i - 1].y + f * (pts[i].y - pts[i - 1].y) };
    }
    acc += d;
  }
  return pts[pts.length - 1];
}

function round(v: number): number {
  return Math.round(v * 10) / 10;
}

interface Structure {
  sig: string;
  index: Map<string, number>;
  sizes: { w: number; h: number }[];
  /** Edges between children by index, sorted (so equal structures feed dagre identically). */
  edges: { i: number; j: number; weight: number }[];
}

function structure(W: Work, size: Map<string, { w: number; h: number }>): Structure {
  const index = new Map<string, number>();
  const sizes: { w: number; h: number }[] = [];
  const parts: string[] = [];
  W.children.forEach((c, i) => {
    index.set(c, i);
    const sz = size.get(c) ?? { w: 40, h: 20 };
    sizes.push(sz);
    parts.push(options.shareStructure ? `${sz.w}x${sz.h}` : `${c}:${sz.w}x${sz.h}`);
  });
  const edges: { i: number; j: number; weight: number }[] = [];
  for (const e of W.internal.values()) {
    const i = index.get(e.from);
    const j = index.get(e.to);
    if (i !== undefined && j !== undefined) edges.push({ i, j, weight: e.weight });
  }
  edges.sort((a, b) => a.i - b.i || a.j - b.j);
  parts.push("|");
  for (const e of edges) parts.push(`${e.i}>${e.j}:${e.weight}`);
  return { sig: parts.join(","), index, sizes, edges };
}

function layoutShape(st: Structure): Shape {
  const nodes = st.sizes.map((sz, i) => ({ id: `n${i}`, w: sz.w, h: sz.h }));
  const edges = st.edges.map((e) => ({ from: `n${e.i}`, to: `n${e.j}`, weight: e.weight }));
  const r = layoutGroup(nodes, edges, { nodeSep: NODE_SEP, rankSep: RANK_SEP, edgeSep: EDGE_SEP, ranker: options.ranker });
  const shape: Shape = { w: r.w, h: r.h, pos: [], rank: [], edges: new Map() };
  for (let i = 0; i < nodes.length; i++) {
    shape.pos.push(r.pos.get(`n${i}`)!);
    shape.rank.push(r.rank.get(`n${i}`)!);
  }
  for (const e of st.edges) {
    const pts = r.edges.get(`n${e.i}\u0000n${e.j}`);
    if (pts) shape.edges.set(`${e.i}>${e.j}`, pts);
  }
  return shape;
}

/** The cached shape seen through one container's child keys. */
function materialize(S: Shape, W: Work, index: Map<string, number>): ContainerLayout {
  const pos = new Map<string, Pt>();
  const rank = new Map<string, { top: number; bottom: number }>();
  W.children.forEach((c, i) => {
    pos.set(c, S.pos[i]);
    rank.set(c, S.rank[i]);
  });
  const edges = new Map<string, Pt[]>();
  for (const [k, e] of W.internal) {
    const pts = S.edges.get(`${index.get(e.from)}>${index.get(e.to)}`);
    if (pts) edges.set(k, pts);
  }
  return { w: S.w, h: S.h, pos, rank, edges };
}

function now(): number {
  return typeof performance !== "undefined" ? performance.now() : Date.now();
}
