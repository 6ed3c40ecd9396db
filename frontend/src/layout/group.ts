// Layout of ONE expanded group's visible children with dagre (@dagrejs/dagre, MIT): ranking,
// crossing reduction and coordinates are dagre's; this module only prepares its input and turns its
// output into what engine.ts stitches together (centres, rank rows, edge polylines leaving a box's
// bottom and entering the next one's top).
//
// Tuning (measured with bench/layout_engines.mjs and bench/bench_panel.py):
//   - no edge labels inside dagre: edges carry no label size and are centred (labelpos "c"), so dagre
//     adds no label proxies and widens no dummies; shape labels are placed by engine.ts afterwards.
//   - ranker: network-simplex (dagre's default, compact ranks) unless configured otherwise.
import { graphlib, layout as dagreLayout } from "@dagrejs/dagre";

export interface GNode {
  id: string;
  w: number;
  h: number;
}

export interface GEdge {
  from: string;
  to: string;
  weight?: number;
}

export type Ranker = "network-simplex" | "tight-tree" | "longest-path";

export interface GOptions {
  nodeSep: number;
  rankSep: number;
  edgeSep: number;
  ranker?: Ranker;
}

export interface Pt {
  x: number;
  y: number;
}

export interface GResult {
  w: number;
  h: number;
  /** Centre of every node, relative to the content's top-left corner. */
  pos: Map<string, Pt>;
  /** Top and bottom of the rank (row) each node sits in. */
  rank: Map<string, { top: number; bottom: number }>;
  /** Polyline per input edge ("from\u0000to"), from the source's border to the target's border. */
  edges: Map<string, Pt[]>;
}

interface DNode {
  width: number;
  height: number;
  x: number;
  y: number;
  rank?: number;
}

interface DEdge {
  points?: Pt[];
}

export function layoutGroup(nodesIn: GNode[], edgesIn: GEdge[], opt: GOptions): GResult {
  const known = new Set(nodesIn.map((n) => n.id));
  // Merge parallel edges; drop self loops and unknown ends.
  const merged = new Map<string, GEdge & { weight: number }>();
  for (const e of edgesIn) {
    if (e.from === e.to || !known.has(e.from) || !known.has(e.to)) continue;
    const k = `${e.from}\u0000${e.to}`;
    const cur = merged.get(k);
    if (cur) cur.weight += e.weight ?? 1;
    else merged.set(k, { from: e.from, to: e.to, weight: e.weight ?? 1 });
  }
  const pos = new Map<string, Pt>();
  const rank = new Map<string, { top: number; bottom: number }>();
  const edges = new Map<string, Pt[]>();
  if (!nodesIn.length) return { w: 0, h: 0, pos, rank, edges };

  const g = new graphlib.Graph({ directed: true, multigraph: false, compound: false });
  g.setGraph({
    rankdir: "TB",
    nodesep: opt.nodeSep,
    edgesep: opt.edgeSep,
    ranksep: opt.rankSep,
    marginx: 0,
    marginy: 0,
    ranker: opt.ranker ?? "network-simplex",
  });
  for (const n of nodesIn) g.setNode(n.id, { width: n.w, height: n.h });
  for (const e of merged.values()) {
    g.setEdge(e.from, e.to, { weight: e.weight, minlen: 1, width: 0, height: 0, labelpos: "c" });
  }
  dagreLayout(g);

  // Rank rows: dagre centres every node of a rank on the same y.
  const rows = new Map<number, { top: number; bottom: number }>();
  const rowOf = new Map<string, { top: number; bottom: number }>();
  let minX = Infinity;
  let minY = Infinity;
  let maxX = -Infinity;
  let maxY = -Infinity;
  for (const n of nodesIn) {
    const d = g.node(n.id) as DNode;
    const key = typeof d.rank === "number" ? d.rank : Math.round(d.y * 2);
    let row = rows.get(key);
    if (!row) rows.set(key, (row = { top: Infinity, bottom: -Infinity }));
    row.top = Math.min(row.top, d.y - n.h / 2);
    row.bottom = Math.max(row.bottom, d.y + n.h / 2);
    rowOf.set(n.id, row);
    minX = Math.min(minX, d.x - n.w / 2);
    maxX = Math.max(maxX, d.x + n.w / 2);
    minY = Math.min(minY, d.y - n.h / 2);
    maxY = Math.max(maxY, d.y + n.h / 2);
  }
  // Edges' bends (dummy nodes) can stick out beside the nodes.
  for (const e of merged.values()) {
    for (const p of (g.edge(e.from, e.to) as DEdge).points ?? []) {
      minX = Math.min(minX, p.x);
      maxX = Math.max(maxX, p.x);
    }
  }
  for (const n of nodesIn) {
    const d = g.node(n.id) as DNode;
    pos.set(n.id, { x: d.x - minX, y: d.y - minY });
    const row = rowOf.get(n.id)!;
    rank.set(n.id, { top: row.top - minY, bottom: row.bottom - minY });
  }
  const sortedRows = [...new Set(rowOf.values())].map((r) => ({ top: r.top - minY, bottom: r.bottom - minY })).sort((a, b) => a.top - b.top);

  // Ports: edges leave a box's bottom / enter its top spread out in the x order of their other end
  // (for an edge dagre reversed to break a cycle, the other way round).
  interface Route {
    key: string;
    from: string;
    to: string;
    down: boolean;
    inner: Pt[];
  }
  const routes: Route[] = [];
  const outs = new Map<string, { r: Route; x: number }[]>();
  const ins = new Map<string, { r: Route; x: number }[]>();
  const add = (m: Map<string, { r: Route; x: number }[]>, k: string, v: { r: Route; x: number }) => {
    const l = m.get(k);
    if (l) l.push(v);
    else m.set(k, [v]);
  };
  for (const e of merged.values()) {
    const pts = ((g.edge(e.from, e.to) as DEdge).points ?? []).map((p) => ({ x: p.x - minX, y: p.y - minY }));
    const a = pos.get(e.from)!;
    const b = pos.get(e.to)!;
    const r: Route = { key: `${e.from}\u0000${e.to}`, from: e.from, to: e.to, down: a.y < b.y, inner: pts.slice(1, -1) };
    routes.push(r);
    const first = r.inner[0] ?? b;
    const last = r.inner[r.inner.length - 1] ?? a;
    add(outs, e.from, { r, x: first.x });
    add(ins, e.to, { r, x: last.x });
  }
  const portX = new Map<string, number>(); // `${key}:s|t`
  const spread = (id: string, list: { r: Route; x: number }[] | undefined, side: "s" | "t") => {
    if (!list?.length) return;
    list.sort((p, q) => p.x - q.x);
    const w = (g.node(id) as DNode).width;
    const cx = pos.get(id)!.x;
    const step = Math.min(10, w / (list.length + 1));
    list.forEach((it, k) => portX.set(`${it.r.key}:${side}`, cx + (k - (list.length - 1) / 2) * step));
  };
  for (const n of nodesIn) {
    // Edges going up (reversed by dagre) leave from the top and enter at the bottom: spread each
    // side separately.
    const o = outs.get(n.id);
    const i = ins.get(n.id);
    spread(n.id, o?.filter((x) => x.r.down), "s");
    spread(n.id, i?.filter((x) => !x.r.down), "s");
    spread(n.id, i?.filter((x) => x.r.down), "t");
    spread(n.id, o?.filter((x) => !x.r.down), "t");
  }
  const STUB = Math.min(8, opt.rankSep / 3);
  const sizeOf = (id: string) => g.node(id) as DNode;
  for (const r of routes) {
    const a = pos.get(r.from)!;
    const b = pos.get(r.to)!;
    const ra = rank.get(r.from)!;
    const rb = rank.get(r.to)!;
    const ha = sizeOf(r.from).height / 2;
    const hb = sizeOf(r.to).height / 2;
    const sx = r.down ? portX.get(`${r.key}:s`)! : portX.get(`${r.key}:t`)!;
    const tx = r.down ? portX.get(`${r.key}:t`)! : portX.get(`${r.key}:s`)!;
    const pts: Pt[] = [];
    // Port, a stub just outside the box and one just outside its row (engine.ts continues a
    // cross-group edge from the stub beside the box), dagre's bends, the same at the other end.
    if (r.down) {
      pts.push({ x: sx, y: a.y + ha }, { x: sx, y: a.y + ha + STUB }, { x: sx, y: ra.bottom + STUB });
      for (const p of r.inner) pushThroughRow(pts, p, sortedRows, STUB);
      pts.push({ x: tx, y: rb.top - STUB }, { x: tx, y: b.y - hb - STUB }, { x: tx, y: b.y - hb });
    } else {
      pts.push({ x: sx, y: a.y - ha }, { x: sx, y: a.y - ha - STUB }, { x: sx, y: ra.top - STUB });
      for (const p of r.inner) pushThroughRow(pts, p, sortedRows, STUB);
      pts.push({ x: tx, y: rb.bottom + STUB }, { x: tx, y: b.y + hb + STUB }, { x: tx, y: b.y + hb });
    }
    edges.set(r.key, dedupe(pts));
  }
  return { w: Math.max(0, maxX - minX), h: Math.max(0, maxY - minY), pos, rank, edges };
}

/** Drops repeated points (a box as tall as its row has its two stubs on the same spot). */
function dedupe(pts: Pt[]): Pt[] {
  const out: Pt[] = [];
  for (const p of pts) {
    const last = out[out.length - 1];
    if (last && Math.abs(last.x - p.x) < 0.01 && Math.abs(last.y - p.y) < 0.01) continue;
    out.push(p);
  }
  return out;
}

/** A bend that dagre put inside a row of boxes becomes a vertical run through that row, so the
 * diagonal parts of a long edge stay in the gaps between rows. */
function pushThroughRow(out: Pt[], p: Pt, rows: { top: number; bottom: number }[], stub: number): void {
  let lo = 0;
  let hi = rows.length - 1;
  while (lo <= hi) {
    const m = (lo + hi) >> 1;
    if (rows[m].bottom < p.y) lo = m + 1;
    else if (rows[m].top > p.y) hi = m - 1;
    else {
      const goingDown = !out.length || out[out.length - 1].y <= p.y;
      const a = { x: p.x, y: rows[m].top - stub };
      const b = { x: p.x, y: rows[m].bottom + stub };
      if (goingDown) out.push(a, b);
      else out.push(b, a);
      return;
    }
  }
  out.push(p);
}
