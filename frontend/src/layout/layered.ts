// A compact layered (Sugiyama) layout for one group's children, tuned for FX dataflow graphs
// (long chains, fan-in from a few shared inputs). Linear-time steps, no graph objects:
//   1. cycle removal: DFS in input order; back edges are reversed;
//   2. ranking: longest path from the sources, then nodes pulled down next to their successors;
//   3. long edges split by dummy nodes;
//   4. ordering: barycentre sweeps from a DFS-based initial order, best crossing count kept;
//   5. x placement: per rank, weighted least squares towards the neighbours' x under the
//      ordering/spacing constraints, solved exactly by pool-adjacent-violators; alternate sweeps;
//   6. y from rank heights; edge polylines through their dummies, endpoints spread along the sides.
// Pure and deterministic (unit-tested).

export interface LNode {
  id: string;
  w: number;
  h: number;
}

export interface LEdge {
  from: string;
  to: string;
  weight?: number;
}

export interface LOptions {
  nodeSep: number;
  rankSep: number;
  edgeSep: number;
  sweeps?: number;
}

export interface LResult {
  w: number;
  h: number;
  /** Centre of every node. */
  pos: Map<string, { x: number; y: number }>;
  /** Top and bottom of the rank each node sits in. */
  rank: Map<string, { top: number; bottom: number }>;
  /** Polyline per input edge ("from\u0000to"), from the source's border to the target's border. */
  edges: Map<string, { x: number; y: number }[]>;
}

interface V {
  id: string;
  w: number;
  h: number;
  dummy: boolean;
  rank: number;
  order: number;
  x: number;
  up: number[]; // neighbour indices in rank - 1
  upW: number[];
  down: number[]; // neighbour indices in rank + 1
  downW: number[];
}

export function layered(nodesIn: LNode[], edgesIn: LEdge[], opt: LOptions): LResult {
  const n = nodesIn.length;
  const idx = new Map<string, number>();
  nodesIn.forEach((nd, i) => idx.set(nd.id, i));
  // Merge parallel edges; drop self loops and unknown ends.
  const emap = new Map<string, { a: number; b: number; w: number; key: string }>();
  for (const e of edgesIn) {
    const a = idx.get(e.from);
    const b = idx.get(e.to);
    if (a === undefined || b === undefined || a === b) continue;
    const key = `${e.from}\u0000${e.to}`;
    const cur = emap.get(key);
    if (cur) cur.w += e.weight ?? 1;
    else emap.set(key, { a, b, w: e.weight ?? 1, key });
  }
  const E = [...emap.values()];
  const out: number[][] = Array.from({ length: n }, () => []);
  E.forEach((e, i) => out[e.a].push(i));

  // 1. Cycle removal (iterative DFS in input order).
  const reversed = new Array<boolean>(E.length).fill(false);
  {
    const state = new Uint8Array(n); // 0 new, 1 on stack, 2 done
    for (let s = 0; s < n; s++) {
      if (state[s]) continue;
      const stack: [number, number][] = [[s, 0]];
      state[s] = 1;
      while (stack.length) {
        const top = stack[stack.length - 1];
        const [v, i] = top;
        if (i < out[v].length) {
          top[1]++;
          const ei = out[v][i];
          const w = E[ei].b;
          if (state[w] === 1) reversed[ei] = true;
          else if (state[w] === 0) {
            state[w] = 1;
            stack.push([w, 0]);
          }
        } else {
          state[v] = 2;
          stack.pop();
        }
      }
    }
  }
  const src = (i: number) => (reversed[i] ? E[i].b : E[i].a);
  const dst = (i: number) => (reversed[i] ? E[i].a : E[i].b);
  const outs: number[][] = Array.from({ length: n }, () => []);
  const ins: number[][] = Array.from({ length: n }, () => []);
  E.forEach((_, i) => {
    outs[src(i)].push(i);
    ins[dst(i)].push(i);
  });

  // 2. Ranking.
  const rank = new Int32Array(n);
  const topo: number[] = [];
  {
    const indeg = new Int32Array(n);
    for (let i = 0; i < E.length; i++) indeg[dst(i)]++;
    for (let v = 0; v < n; v++) if (indeg[v] === 0) topo.push(v);
    for (let q = 0; q < topo.length; q++) {
      const v = topo[q];
      for (const ei of outs[v]) {
        const w = dst(ei);
        if (rank[v] + 1 > rank[w]) rank[w] = rank[v] + 1;
        if (--indeg[w] === 0) topo.push(w);
      }
    }
    for (let q = topo.length - 1; q >= 0; q--) {
      const v = topo[q];
      if (!outs[v].length) continue;
      let lim = Infinity;
      let wout = 0;
      let win = 0;
      for (const ei of outs[v]) {
        lim = Math.min(lim, rank[dst(ei)] - 1);
        wout += E[ei].w;
      }
      for (const ei of ins[v]) win += E[ei].w;
      if (lim > rank[v] && wout >= win) rank[v] = lim;
    }
  }
  let maxRank = 0;
  for (let v = 0; v < n; v++) maxRank = Math.max(maxRank, rank[v]);

  // 3. Virtual graph with dummies.
  const V: V[] = nodesIn.map((nd, i) => ({
    id: nd.id, w: nd.w, h: nd.h, dummy: false, rank: rank[i], order: 0, x: 0, up: [], upW: [], down: [], downW: [],
  }));
  const chains: number[][] = new Array(E.length); // vertex chain per edge (top to bottom)
  for (let i = 0; i < E.length; i++) {
    const a = src(i);
    const b = dst(i);
    const chain = [a];
    let prev = a;
    for (let r = rank[a] + 1; r < rank[b]; r++) {
      const d = V.length;
      V.push({ id: "", w: 0, h: 0, dummy: true, rank: r, order: 0, x: 0, up: [], upW: [], down: [], downW: [] });
      link(prev, d, E[i].w);
      chain.push(d);
      prev = d;
    }
    link(prev, b, E[i].w);
    chain.push(b);
    chains[i] = chain;
  }
  function link(a: number, b: number, w: number) {
    V[a].down.push(b);
    V[a].downW.push(w);
    V[b].up.push(a);
    V[b].upW.push(w);
  }
  const ranks: number[][] = Array.from({ length: maxRank + 1 }, () => []);

  // 4. Ordering. Initial: DFS from sources in input order, by first visit.
  {
    const seen = new Uint8Array(V.length);
    const visit = (s: number) => {
      const stack = [s];
      while (stack.length) {
        const v = stack.pop()!;
        if (seen[v]) continue;
        seen[v] = 1;
        ranks[V[v].rank].push(v);
        for (let k = V[v].down.length - 1; k >= 0; k--) if (!seen[V[v].down[k]]) stack.push(V[v].down[k]);
      }
    };
    for (let v = 0; v < n; v++) if (!V[v].up.length) visit(v);
    for (let v = 0; v < V.length; v++) if (!seen[v]) visit(v);
    for (const r of ranks) r.forEach((v, i) => (V[v].order = i));
  }
  const crossings = () => {
    let c = 0;
    for (let r = 0; r < maxRank; r++) c += bilayerCrossings(ranks[r], ranks[r + 1], V);
    return c;
  };
  let best = ranks.map((r) => r.slice());
  let bestC = crossings();
  const sweeps = opt.sweeps ?? 8;
  for (let it = 0; it < sweeps && bestC > 0; it++) {
    const downSweep = it % 2 === 0;
    if (downSweep) for (let r = 1; r <= maxRank; r++) reorder(ranks[r], V, true);
    else for (let r = maxRank - 1; r >= 0; r--) reorder(ranks[r], V, false);
    const c = crossings();
    if (c < bestC) {
      bestC = c;
      best = ranks.map((r) => r.slice());
    }
  }
  for (let r = 0; r <= maxRank; r++) {
    ranks[r] = best[r];
    ranks[r].forEach((v, i) => (V[v].order = i));
  }

  // 5. X placement.
  const gap = (a: V, b: V) => (a.w + b.w) / 2 + (a.dummy || b.dummy ? opt.edgeSep : opt.nodeSep);
  for (const r of ranks) {
    let x = 0;
    r.forEach((v, i) => {
      if (i > 0) x += gap(V[r[i - 1]], V[v]);
      V[v].x = x;
    });
  }
  const place = (r: number[], useUp: boolean, useDown: boolean) => {
    const m = r.length;
    if (!m) return;
    const t = new Float64Array(m);
    const w = new Float64Array(m);
    const off = new Float64Array(m);
    for (let i = 0; i < m; i++) {
      const v = V[r[i]];
      if (i > 0) off[i] = off[i - 1] + gap(V[r[i - 1]], v);
      let sw = 0;
      let sx = 0;
      const acc = (nb: number[], nw: number[]) => {
        for (let k = 0; k < nb.length; k++) {
          const u = V[nb[k]];
          const ww = nw[k] * (v.dummy && u.dummy ? 8 : v.dummy || u.dummy ? 2 : 1);
          sw += ww;
          sx += ww * u.x;
        }
      };
      if (useUp) acc(v.up, v.upW);
      if (useDown) acc(v.down, v.downW);
      if (sw > 0) {
        t[i] = sx / sw - off[i];
        w[i] = sw;
      } else {
        t[i] = v.x - off[i];
        w[i] = 0.05;
      }
    }
    const y = pav(t, w);
    for (let i = 0; i < m; i++) V[r[i]].x = y[i] + off[i];
  };
  for (let it = 0; it < 4; it++) {
    for (let r = 1; r <= maxRank; r++) place(ranks[r], true, false);
    for (let r = maxRank - 1; r >= 0; r--) place(ranks[r], false, true);
  }
  for (let r = 0; r <= maxRank; r++) place(ranks[r], true, true);
  for (let r = maxRank; r >= 0; r--) place(ranks[r], true, true);

  // 6. Coordinates.
  let minX = Infinity;
  let maxX = -Infinity;
  for (const v of V) {
    minX = Math.min(minX, v.x - v.w / 2);
    maxX = Math.max(maxX, v.x + v.w / 2);
  }
  if (minX === Infinity) {
    minX = 0;
    maxX = 0;
  }
  const rankTop = new Float64Array(maxRank + 1);
  const rankH = new Float64Array(maxRank + 1);
  for (const v of V) if (!v.dummy) rankH[v.rank] = Math.max(rankH[v.rank], v.h);
  let y = 0;
  for (let r = 0; r <= maxRank; r++) {
    rankTop[r] = y;
    y += rankH[r] + (r < maxRank ? opt.rankSep : 0);
  }
  const H = y;
  const pos = new Map<string, { x: number; y: number }>();
  const rk = new Map<string, { top: number; bottom: number }>();
  // Vertical alignment in a rank: sources sit at its bottom (next to their consumers), sinks at
  // its top (next to their producers), the rest centred.
  const cyOf = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const v = V[i];
    const top = rankTop[v.rank];
    const hh = rankH[v.rank];
    cyOf[i] = !v.up.length && v.down.length ? top + hh - v.h / 2 : v.up.length && !v.down.length ? top + v.h / 2 : top + hh / 2;
  }
  for (let i = 0; i < n; i++) {
    const v = V[i];
    const cy = cyOf[i];
    pos.set(v.id, { x: v.x - minX, y: cy });
    rk.set(v.id, { top: rankTop[v.rank], bottom: rankTop[v.rank] + rankH[v.rank] });
  }
  // Endpoint spreading: edges leave a node's bottom / enter its top in the x order of the other end.
  const portX = new Map<string, number>(); // `${edge}:s|t`
  const spread = (v: number, list: { e: number; other: number }[], side: "s" | "t") => {
    if (!list.length) return;
    list.sort((a, b) => V[a.other].x - V[b.other].x);
    const node = V[v];
    const step = Math.min(10, node.w / (list.length + 1));
    list.forEach((it, k) => portX.set(`${it.e}:${side}`, node.x + (k - (list.length - 1) / 2) * step));
  };
  const outList: { e: number; other: number }[][] = Array.from({ length: n }, () => []);
  const inList: { e: number; other: number }[][] = Array.from({ length: n }, () => []);
  for (let i = 0; i < E.length; i++) {
    const ch = chains[i];
    outList[ch[0]].push({ e: i, other: ch[1] });
    inList[ch[ch.length - 1]].push({ e: i, other: ch[ch.length - 2] });
  }
  for (let v = 0; v < n; v++) {
    spread(v, outList[v], "s");
    spread(v, inList[v], "t");
  }
  const edges = new Map<string, { x: number; y: number }[]>();
  const STUB = Math.min(8, opt.rankSep / 3);
  for (let i = 0; i < E.length; i++) {
    const ch = chains[i];
    const a = V[ch[0]];
    const b = V[ch[ch.length - 1]];
    const ax = portX.get(`${i}:s`)! - minX;
    const bx = portX.get(`${i}:t`)! - minX;
    const ay = cyOf[ch[0]] + a.h / 2;
    const by = cyOf[ch[ch.length - 1]] - b.h / 2;
    const pts = [{ x: ax, y: ay }, { x: ax, y: Math.max(ay + STUB, rankTop[a.rank] + rankH[a.rank] + STUB) }];
    for (let k = 1; k < ch.length - 1; k++) {
      const d = V[ch[k]];
      const dx = d.x - minX;
      pts.push({ x: dx, y: rankTop[d.rank] - STUB }, { x: dx, y: rankTop[d.rank] + rankH[d.rank] + STUB });
    }
    pts.push({ x: bx, y: Math.min(by - STUB, rankTop[b.rank] - STUB) }, { x: bx, y: by });
    if (reversed[i]) pts.reverse();
    edges.set(E[i].key, pts);
  }
  return { w: maxX - minX, h: H, pos, rank: rk, edges };
}

/** Reorders one rank by the barycentre of its neighbours in the previous (down) or next rank. */
function reorder(r: number[], V: V[], down: boolean): void {
  const bc = new Map<number, number>();
  for (const v of r) {
    const nb = down ? V[v].up : V[v].down;
    const nw = down ? V[v].upW : V[v].downW;
    if (!nb.length) {
      bc.set(v, V[v].order);
      continue;
    }
    let s = 0;
    let sw = 0;
    for (let k = 0; k < nb.length; k++) {
      s += V[nb[k]].order * nw[k];
      sw += nw[k];
    }
    bc.set(v, s / sw);
  }
  r.sort((a, b) => bc.get(a)! - bc.get(b)! || V[a].order - V[b].order);
  r.forEach((v, i) => (V[v].order = i));
}

/** Crossings between two adjacent ranks (Barth, Jünger & Mutzel accumulator tree). */
export function bilayerCrossings(upper: number[], lower: number[], V: { order: number; down: number[] }[]): number {
  if (!upper.length || !lower.length) return 0;
  const south: number[] = [];
  const byOrder = upper.slice().sort((a, b) => V[a].order - V[b].order);
  for (const u of byOrder) {
    const ds = V[u].down.map((d) => V[d].order).sort((a, b) => a - b);
    for (const d of ds) south.push(d);
  }
  let pow = 1;
  while (pow < lower.length) pow <<= 1;
  const first = pow - 1;
  const tree = new Int32Array(2 * pow - 1);
  let cross = 0;
  for (const s of south) {
    let i = s + first;
    tree[i]++;
    while (i > 0) {
      if (i % 2) cross += tree[i + 1];
      i = (i - 1) >> 1;
      tree[i]++;
    }
  }
  return cross;
}

/** Pool-adjacent-violators: argmin Σ w_i (y_i - t_i)^2 subject to y non-decreasing. */
export function pav(t: ArrayLike<number>, w: ArrayLike<number>): Float64Array {
  const m = t.length;
  const mean: number[] = [];
  const weight: number[] = [];
  const count: number[] = [];
  for (let i = 0; i < m; i++) {
    mean.push(t[i]);
    weight.push(w[i]);
    count.push(1);
    while (mean.length > 1 && mean[mean.length - 2] > mean[mean.length - 1]) {
      const w2 = weight.pop()!;
      const m2 = mean.pop()!;
      const c2 = count.pop()!;
      const j = mean.length - 1;
      const tw = weight[j] + w2;
      mean[j] = (mean[j] * weight[j] + m2 * w2) / tw;
      weight[j] = tw;
      count[j] += c2;
    }
  }
  const y = new Float64Array(m);
  let k = 0;
  for (let b = 0; b < mean.length; b++) for (let c = 0; c < count[b]; c++) y[k++] = mean[b];
  return y;
}
