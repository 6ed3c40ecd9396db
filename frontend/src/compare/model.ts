// The comparison view model (pure, unit-tested): node statuses on each side from an api/compare
// answer, partners of matched nodes, duration deltas, the per-group/whole-layer delta table and
// its sorting, unmatched-node lists, and how expanded groups carry over between the two panes.
import type { CompareMatch, CompareResponse, LayerResponse } from "../api/types";
import { opKey, SCENE, type Hierarchy } from "../model/hierarchy";
import type { DiffStatus } from "../model/status";

export type Side = "a" | "b";

export interface CompareModel {
  /** Node id -> status, per side. */
  status: Record<Side, Map<string, DiffStatus>>;
  /** Node id -> the id of its matched node on the other side. */
  partner: Record<Side, Map<string, string>>;
  /** Node id -> its match record, per side. */
  match: Record<Side, Map<string, CompareMatch>>;
  counts: { same: number; changed: number; only_a: number; only_b: number };
}

export function buildCompareModel(res: CompareResponse): CompareModel {
  const m: CompareModel = {
    status: { a: new Map(), b: new Map() },
    partner: { a: new Map(), b: new Map() },
    match: { a: new Map(), b: new Map() },
    counts: { same: 0, changed: 0, only_a: 0, only_b: 0 },
  };
  for (const x of res.matches ?? []) {
    const st: DiffStatus = x.status === "changed" ? "changed" : "same";
    m.status.a.set(x.a, st);
    m.status.b.set(x.b, st);
    m.partner.a.set(x.a, x.b);
    m.partner.b.set(x.b, x.a);
    m.match.a.set(x.a, x);
    m.match.b.set(x.b, x);
    m.counts[st]++;
  }
  for (const id of res.only_a ?? []) {
    if (m.status.a.has(id)) continue;
    m.status.a.set(id, "only_a");
    m.counts.only_a++;
  }
  for (const id of res.only_b ?? []) {
    if (m.status.b.has(id)) continue;
    m.status.b.set(id, "only_b");
    m.counts.only_b++;
  }
  return m;
}

/**
 * The answer with pairs the user matched by hand: each (a, b) with a only in A and b only in B
 * becomes a match (status from op, shape, dtype and weights; delta from the nodes' times), and
 * leaves the unmatched lists. Pairs that do not fit (already matched, unknown) are ignored.
 * Group and layer totals do not depend on matching and stay as they are.
 */
export function applyManualPairs(res: CompareResponse, pairs: [string, string][], a: LayerResponse | null, b: LayerResponse | null): CompareResponse {
  if (!pairs.length) return res;
  const onlyA = new Set(res.only_a ?? []);
  const onlyB = new Set(res.only_b ?? []);
  const ia = nodeIndex(a);
  const ib = nodeIndex(b);
  const matches = [...(res.matches ?? [])];
  const counts = { ...res.counts };
  for (const [x, y] of pairs) {
    if (!onlyA.has(x) || !onlyB.has(y)) continue;
    onlyA.delete(x);
    onlyB.delete(y);
    const na = ia.get(x);
    const nb = ib.get(y);
    const changes: string[] = [];
    for (const f of ["op", "shape", "dtype"] as const) if (na?.[f] !== nb?.[f]) changes.push(f);
    const wsig = (n: typeof na) => (n?.weights ?? []).map((w) => `${w.shape}|${w.dtype}`).sort().join(",");
    if (wsig(na) !== wsig(nb)) changes.push("weights");
    const ta = na?.time_us ?? 0;
    const tb = nb?.time_us ?? 0;
    const status = changes.length ? "changed" : "same";
    matches.push({ a: x, b: y, status, changes, op: na?.op, group: na?.group, a_time_us: ta, b_time_us: tb, delta_us: Math.round((tb - ta) * 1000) / 1000, manual: true });
    counts[status]++;
    counts.only_a--;
    counts.only_b--;
  }
  return { ...res, matches, only_a: (res.only_a ?? []).filter((id) => onlyA.has(id)), only_b: (res.only_b ?? []).filter((id) => onlyB.has(id)), counts };
}

/** Manual pairs to and from the URL: "a1>b1,a2>b2" (FX node ids hold neither "," nor ">"). */
export function formatPairs(pairs: [string, string][]): string {
  return pairs.map(([a, b]) => `${a}>${b}`).join(",");
}

export function parsePairs(s: string | null | undefined): [string, string][] {
  if (!s) return [];
  const out: [string, string][] = [];
  for (const part of s.split(",")) {
    const i = part.indexOf(">");
    if (i <= 0 || i === part.length - 1) continue;
    out.push([part.slice(0, i), part.slice(i + 1)]);
  }
  return out;
}

/** Status per hierarchy key ("n:<id>") for one side, limited to ops the hierarchy has. */
export function statusByKey(m: CompareModel, side: Side, h: Hierarchy): Map<string, DiffStatus> {
  const out = new Map<string, DiffStatus>();
  for (const [id, st] of m.status[side]) {
    const k = opKey(id);
    if (h.items.has(k)) out.set(k, st);
  }
  return out;
}

/** Duration delta (B − A, µs) of a matched node, looked up from either side; null when unmatched. */
export function nodeDelta(m: CompareModel, side: Side, id: string): number | null {
  const x = m.match[side].get(id);
  return x ? x.delta_us : null;
}

/** Delta badge: "+1.2 µs" / "−0.4 µs"; null below `minUs` (noise) or when unmatched. */
export function deltaBadge(delta: number | null, fmt: (us: number) => string, minUs = 0.05): { text: string; tone: "slower" | "faster" } | null {
  if (delta === null || !Number.isFinite(delta) || Math.abs(delta) < minUs) return null;
  return { text: `${delta > 0 ? "+" : "−"}${fmt(Math.abs(delta))}`, tone: delta > 0 ? "slower" : "faster" };
}

// ---------------------------------------------------------------- delta table

export interface DeltaRow {
  /** Group name, or "" for the whole layer. */
  group: string;
  whole: boolean;
  a: number;
  b: number;
  delta: number;
  pct: number | null;
}

export type DeltaSortKey = "group" | "a" | "b" | "delta" | "pct";

export interface DeltaSort {
  key: DeltaSortKey;
  /** -1: largest first (descending); 1: ascending. */
  dir: 1 | -1;
}

/** Default: by size of the change, largest first. */
export const DEFAULT_DELTA_SORT: DeltaSort = { key: "delta", dir: -1 };

function pctOf(a: number, delta: number): number | null {
  return a > 0 ? (100 * delta) / a : null;
}

/** Per-group rows (from the response's groups) and the whole-layer row. */
export function deltaRows(res: CompareResponse): { groups: DeltaRow[]; whole: DeltaRow } {
  const groups = (res.groups ?? []).map((g) => ({
    group: g.group, whole: false, a: g.a_us ?? 0, b: g.b_us ?? 0, delta: g.delta_us ?? (g.b_us ?? 0) - (g.a_us ?? 0),
    pct: g.delta_pct ?? pctOf(g.a_us ?? 0, g.delta_us ?? 0),
  }));
  const L = res.layer ?? { a_us: 0, b_us: 0, delta_us: 0, delta_pct: null };
  const whole = { group: "", whole: true, a: L.a_us ?? 0, b: L.b_us ?? 0, delta: L.delta_us ?? 0, pct: L.delta_pct ?? pctOf(L.a_us ?? 0, L.delta_us ?? 0) };
  return { groups, whole };
}

/**
 * Sorts rows. Δ and Δ% sort by size (absolute value) so the largest changes, faster or slower,
 * come first; missing percentages (group absent on the A side) go last; ties by name.
 */
export function sortDeltaRows(rows: DeltaRow[], sort: DeltaSort = DEFAULT_DELTA_SORT): DeltaRow[] {
  const val = (r: DeltaRow): number | string | null => {
    switch (sort.key) {
      case "group":
        return r.group;
      case "a":
        return r.a;
      case "b":
        return r.b;
      case "delta":
        return Math.abs(r.delta);
      case "pct":
        return r.pct === null ? null : Math.abs(r.pct);
    }
  };
  return [...rows].sort((x, y) => {
    const a = val(x);
    const b = val(y);
    if (a === null && b === null) return x.group.localeCompare(y.group);
    if (a === null) return 1;
    if (b === null) return -1;
    const c = typeof a === "string" ? a.localeCompare(b as string) : (a as number) - (b as number);
    return c !== 0 ? c * sort.dir : x.group.localeCompare(y.group);
  });
}

/** Clicking a column header: a new column starts descending (by size), the same one flips. */
export function nextSort(cur: DeltaSort, key: DeltaSortKey): DeltaSort {
  if (cur.key === key) return { key, dir: cur.dir === 1 ? -1 : 1 };
  return { key, dir: key === "group" ? 1 : -1 };
}

/** Matched nodes whose time changed, largest change first (at most `k`). */
export function topNodeDeltas(res: CompareResponse, k = 10, minUs = 0.05): CompareMatch[] {
  return (res.matches ?? [])
    .filter((x) => Math.abs(x.delta_us) >= minUs)
    .sort((p, q) => Math.abs(q.delta_us) - Math.abs(p.delta_us) || p.a.localeCompare(q.a))
    .slice(0, k);
}

// ---------------------------------------------------------------- unmatched and changed lists

export interface ListedNode {
  side: Side;
  id: string;
  label: string;
  op: string;
  group: string;
  status: DiffStatus;
  timeUs: number;
}

function nodeIndex(L: LayerResponse | null | undefined) {
  return new Map((L?.nodes ?? []).map((n) => [n.id, n]));
}

/** Nodes only in A, only in B, and changed pairs (listed by their A node), in graph order. */
export function listedNodes(m: CompareModel, a: LayerResponse | null, b: LayerResponse | null): { onlyA: ListedNode[]; onlyB: ListedNode[]; changed: ListedNode[] } {
  const ia = nodeIndex(a);
  const ib = nodeIndex(b);
  const make = (side: Side, id: string, st: DiffStatus): ListedNode => {
    const n = (side === "a" ? ia : ib).get(id);
    return { side, id, label: n?.label || n?.op || id, op: n?.op ?? "", group: n?.group ?? "", status: st, timeUs: n?.time_us ?? 0 };
  };
  const order = (side: Side) => {
    const L = side === "a" ? a : b;
    const pos = new Map((L?.nodes ?? []).map((n, i) => [n.id, i]));
    return (x: ListedNode, y: ListedNode) => (pos.get(x.id) ?? 1e9) - (pos.get(y.id) ?? 1e9);
  };
  const onlyA: ListedNode[] = [];
  const onlyB: ListedNode[] = [];
  const changed: ListedNode[] = [];
  for (const [id, st] of m.status.a) {
    if (st === "only_a") onlyA.push(make("a", id, st));
    else if (st === "changed") changed.push(make("a", id, st));
  }
  for (const [id, st] of m.status.b) if (st === "only_b") onlyB.push(make("b", id, st));
  return { onlyA: onlyA.sort(order("a")), onlyB: onlyB.sort(order("b")), changed: changed.sort(order("a")) };
}

/** The next entry of a list after `cur` (wrapping); -1 for an empty list. */
export function stepIndex(n: number, cur: number, dir: 1 | -1): number {
  if (n <= 0) return -1;
  if (cur < 0) return dir > 0 ? 0 : n - 1;
  return (cur + dir + n) % n;
}

// ---------------------------------------------------------------- synchronised expansion

/**
 * A group's path inside its layer, without the layer number: "g:L3/moe~2/moe_router" ->
 * "moe~2/moe_router"; the layer box itself -> "". Null for non-group keys and the scene.
 * Layer 3 of one run and layer 10 of another share these paths, which is how the panes follow
 * each other.
 */
export function relGroupPath(key: string): string | null {
  if (!key.startsWith("g:") || key === SCENE) return null;
  const m = /^g:L\d+(?:\/(.*))?$/.exec(key);
  if (!m) return null;
  return m[1] ?? "";
}

/** The group key of `h` with the same in-layer path as `rel` (first layer of `h`). */
export function keyForRel(h: Hierarchy, rel: string): string | null {
  const layer = h.layers[0];
  if (layer === undefined) return null;
  const k = rel === "" ? `g:L${layer}` : `g:L${layer}/${rel}`;
  return h.items.has(k) ? k : null;
}

/**
 * The expanded set of the other pane that mirrors `expanded`: every group of `target` whose
 * in-layer path is expanded in the source. Groups the source does not have keep `targetExpanded`'s
 * state (a group only one side has is not forced closed).
 */
export function mirrorExpanded(expanded: Set<string>, source: Hierarchy, target: Hierarchy, targetExpanded: Set<string>): Set<string> {
  const open = new Set<string>();
  const known = new Set<string>();
  for (const it of source.items.values()) {
    if (it.kind !== "group") continue;
    const rel = relGroupPath(it.key);
    if (rel === null) continue;
    known.add(rel);
    if (expanded.has(it.key)) open.add(rel);
  }
  const out = new Set<string>([SCENE]);
  for (const it of target.items.values()) {
    if (it.kind !== "group") continue;
    const rel = relGroupPath(it.key);
    if (rel === null) continue;
    if (known.has(rel) ? open.has(rel) : targetExpanded.has(it.key)) out.add(it.key);
  }
  return out;
}

// ---------------------------------------------------------------- synchronised pan and zoom

export interface View {
  x: number;
  y: number;
  k: number;
}

/**
 * The other pane's viewport after this pane moved from `from` to `to`: the same screen-space
 * motion (zoom factor about the same screen point, plus the same pan) applied to `other`, so each
 * pane keeps its own alignment and both move together.
 */
export function followView(from: View, to: View, other: View): View {
  const s = from.k > 0 ? to.k / from.k : 1;
  return { k: other.k * s, x: s * other.x + (to.x - s * from.x), y: s * other.y + (to.y - s * from.y) };
}

// ---------------------------------------------------------------- defaults

export interface SideChoice {
  run: string;
  stage: number;
  layer: number;
}

export interface RunLike {
  run: string;
  model: string;
  default_stage: number;
  stages: { index: number }[];
  layers: { layer: number; kind: string }[];
}

/**
 * A useful pair for the layer being looked at (`cur`): the same layer of another run of the same
 * model (cur on the left, the other run on the right: before/after a change); else the previous
 * stage of the same run on the left and `cur` on the right (what the last transform changed); else
 * `cur` against a later layer of the same kind.
 */
export function defaultPair(cur: SideChoice, runs: RunLike[]): { a: SideChoice; b: SideChoice } {
  const ra = runs.find((r) => r.run === cur.run);
  const sameModel = runs.filter((r) => r.run !== cur.run && ra && r.model === ra.model);
  for (const r of sameModel) {
    if (r.layers.some((l) => l.layer === cur.layer)) return { a: { ...cur }, b: { run: r.run, stage: r.default_stage, layer: cur.layer } };
  }
  if (ra) {
    const stages = ra.stages.map((s) => s.index).sort((x, y) => x - y);
    const i = stages.indexOf(cur.stage);
    if (i > 0) return { a: { run: cur.run, stage: stages[i - 1], layer: cur.layer }, b: { ...cur } };
    const kind = ra.layers.find((l) => l.layer === cur.layer)?.kind;
    const other = ra.layers.filter((l) => l.layer !== cur.layer && l.kind === kind);
    const later = other.find((l) => l.layer > cur.layer) ?? other[0];
    if (later) return { a: { ...cur }, b: { run: cur.run, stage: cur.stage, layer: later.layer } };
  }
  return { a: { ...cur }, b: { ...cur } };
}
