// The whole-stage graph's layout (pure): the stage from api/stage_graph as a column of boxes,
// top-down in graph order: the input part (nodes before the first layer), each layer, or a fold
// of repeating layers as one box, and the output part (final norm, lm head), chained by short
// arrows. The values many layers read (shared inputs) are one bus lane left of the column: a
// stub from each box that computes some, a port on each box that reads some, never one edge per
// reader across the canvas. A fold opens into its layers (under a header that closes it again), a
// layer into its groups, a part into its nodes; everything else stays where the column puts it.
import type { StageGraphResponse, StageLayer, StageNode, StageSharedInput } from "../api/types";
import { nodesText, t } from "../i18n";
import { fmtPct, fmtUs } from "../model/format";
import { inputCaption } from "../model/labels";
import { groupOrder } from "./model";

export type StageItemKind = "before" | "after" | "layer" | "fold" | "foldhead";

/** One line of text of a box: its class sets font and colour; `group` a swatch of its colour. */
export interface StageRow {
  text: string;
  cls: "title" | "sub" | "group" | "node";
  group?: string;
}

export interface StageItem {
  /** "before", "after", "L<layer>", "F<first layer>" (a fold), "H<first layer>" (an open fold's header). */
  key: string;
  kind: StageItemKind;
  x: number;
  y: number;
  w: number;
  h: number;
  /** The layers it stands for (none for the parts). */
  layers: number[];
  rows: StageRow[];
  /** Open: a layer shows its groups, a part its nodes (a fold open is its header and layers). */
  expanded: boolean;
  /** Layer kinds of its colour strip, top to bottom (a fold: its block's); none for the parts. */
  stripe: string[];
  /** Inside an open fold. */
  inFold: boolean;
}

export interface StageEdge {
  from: string;
  to: string;
  kind: "chain" | "port" | "source";
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

/** Where a box meets the bus lane: `ids` the shared inputs it reads (port) or computes (source). */
export interface LaneStop {
  key: string;
  y: number;
  ids: string[];
}

export interface StageLane {
  x: number;
  y1: number;
  y2: number;
  ports: LaneStop[];
  sources: LaneStop[];
}

export interface StageLayout {
  items: StageItem[];
  edges: StageEdge[];
  lane: StageLane | null;
  /** An open fold's extent, for the bracket drawn beside its layers. */
  brackets: { key: string; x: number; y1: number; y2: number }[];
  width: number;
  height: number;
}

/** What is open: folds by their first layer, layers, and the two parts. */
export interface StageOpen {
  folds: ReadonlySet<number>;
  layers: ReadonlySet<number>;
  parts: ReadonlySet<"before" | "after">;
}

export const LANE_X = 28;
export const BOX_X = 92;
export const BOX_W = 340;
export const GAP = 26;
export const PAD = 8;
export const TITLE_H = 19;
export const ROW_H = 16;
const HEAD_H = 24;
/** Of the nodes of a part, at most this many are named while it is closed. */
const PART_NAMES = 4;

/** "model_embed_tokens_weight" -> "embed_tokens", "lm_head_weight" -> "lm_head". */
export function weightRole(name: string): string {
  return name.replace(/^model_/, "").replace(/_(weight|bias)$/, "");
}

/** A node of a part as named in its box: an input by its name, a node by its op and weights. */
function nodeName(n: StageNode): string {
  if (n.node_kind === "placeholder") return n.id;
  return n.weights.length ? `${n.label} (${n.weights.map(weightRole).join(", ")})` : n.label;
}

/**
 * What says what a part is, in graph order: its inputs, its nodes with weights (embedding, lm
 * head), the shared inputs it makes (by what they are, "RoPE cache ×2") and the output.
 */
function partNames(nodes: readonly StageNode[], shared: ReadonlyMap<string, string>): string[] {
  const out: string[] = [];
  const made = new Map<string, number>();
  for (const n of nodes) {
    const label = shared.get(n.id);
    if (label !== undefined) {
      if (!made.has(label)) out.push(label);
      made.set(label, (made.get(label) ?? 0) + 1);
    } else if (n.node_kind !== "call" || n.weights.length) out.push(nodeName(n));
  }
  return out.map((x) => ((made.get(x) ?? 1) > 1 ? `${x} ×${made.get(x)}` : x));
}

function layerTime(L: StageLayer): string {
  return typeof L.gpu_time_us === "number" ? `GPU ${fmtUs(L.gpu_time_us)}` : t("noTraceShort");
}

function layerRows(L: StageLayer, open: boolean): StageRow[] {
  const same = typeof L.same_as === "number" ? ` · ${t("sameAs", { n: L.same_as })}` : "";
  const rows: StageRow[] = [
    { text: `${t("layerOption", { n: L.layer, kind: L.kind })}${same}${L.doubtful ? " ⚠" : ""}`, cls: "title" },
    { text: `${nodesText(L.node_count)} · ${layerTime(L)}`, cls: "sub" },
  ];
  if (open) {
    const total = typeof L.gpu_time_us === "number" ? L.gpu_time_us : 0;
    for (const g of groupOrder([...Object.keys(L.group_counts), ...Object.keys(L.groups)])) {
      const n = L.group_counts[g];
      const us = L.groups[g];
      const time = typeof us === "number" ? ` · ${fmtUs(us)}${total > 0 ? ` (${fmtPct(us / total)})` : ""}` : "";
      rows.push({ text: `${g} · ${typeof n === "number" ? nodesText(n) : "–"}${time}`, cls: "group", group: g });
    }
  }
  return rows;
}

/** "3 × gdn+moe, attention+moe" for a block of layer kinds. */
function blockKinds(kinds: string[]): string {
  const out: string[] = [];
  for (let i = 0; i < kinds.length; ) {
    let j = i;
    while (j < kinds.length && kinds[j] === kinds[i]) j++;
    out.push(j - i > 1 ? `${j - i} × ${kinds[i]}` : kinds[i]);
    i = j;
  }
  return out.join(", ");
}

function foldRows(layers: StageLayer[], period: number, count: number): StageRow[] {
  const first = layers[0].layer;
  const last = layers[layers.length - 1].layer;
  const block = layers.slice(0, period);
  const nodes = layers.reduce((a, L) => a + L.node_count, 0);
  const timed = layers.every((L) => typeof L.gpu_time_us === "number");
  const us = layers.reduce((a, L) => a + (L.gpu_time_us ?? 0), 0);
  return [
    { text: t("foldTitle", { a: first, b: last, n: count }), cls: "title" },
    { text: period > 1 ? t("foldBlock", { p: period, kinds: blockKinds(block.map((L) => L.kind)) }) : `${block[0].kind} · ${t("foldEach", { nodes: nodesText(block[0].node_count) })}`, cls: "sub" },
    { text: `${nodesText(nodes)} · ${timed ? `GPU ${fmtUs(us)}` : t("noTraceShort")}`, cls: "sub" },
  ];
}

function partRows(kind: "before" | "after", nodes: readonly StageNode[], shared: ReadonlyMap<string, string>, open: boolean): StageRow[] {
  const rows: StageRow[] = [{ text: t(kind === "before" ? "stageBefore" : "stageAfter"), cls: "title" }];
  const us = nodes.reduce((a, n) => a + n.time_us, 0);
  rows.push({ text: `${nodesText(nodes.length)}${us > 0 ? ` · GPU ${fmtUs(us)}` : ""}`, cls: "sub" });
  if (open) {
    for (const n of nodes) rows.push({ text: `${nodeName(n)} · ${n.shape}`, cls: "node" });
  } else {
    const named = partNames(nodes, shared);
    for (const n of named.slice(0, PART_NAMES)) rows.push({ text: n, cls: "node" });
    if (named.length > PART_NAMES) rows.push({ text: t("andMore", { n: named.length - PART_NAMES }), cls: "node" });
  }
  return rows;
}

function heightOf(rows: StageRow[]): number {
  return PAD * 2 + rows.reduce((a, r) => a + (r.cls === "title" ? TITLE_H : ROW_H), 0);
}

/** The layout of the whole stage with `open` folds, layers and parts open. */
export function stageLayout(g: StageGraphResponse, open: StageOpen): StageLayout {
  const byLayer = new Map(g.layers.map((L) => [L.layer, L]));
  const sharedIds = new Map(g.shared.filter((s) => s.source === null).map((s) => [s.id, inputCaption(s.label)]));
  const foldAt = new Map(g.folds.map((f) => [f.first, f]));
  const items: StageItem[] = [];
  const brackets: StageLayout["brackets"] = [];
  let y = 0;
  const push = (it: Omit<StageItem, "y" | "h" | "x" | "w"> & { x?: number; w?: number; h?: number }): StageItem => {
    const item: StageItem = { x: BOX_X, w: BOX_W, ...it, y, h: it.h ?? heightOf(it.rows) };
    items.push(item);
    y += item.h + GAP;
    return item;
  };
  const pushLayer = (L: StageLayer, inFold: boolean) =>
    push({ key: `L${L.layer}`, kind: "layer", layers: [L.layer], rows: layerRows(L, open.layers.has(L.layer)), expanded: open.layers.has(L.layer), stripe: [L.kind], inFold });
  if (g.before.length) {
    const o = open.parts.has("before");
    push({ key: "before", kind: "before", layers: [], rows: partRows("before", g.before, sharedIds, o), expanded: o, stripe: [], inFold: false });
  }
  const layers = g.layers;
  for (let i = 0; i < layers.length; ) {
    const f = foldAt.get(layers[i].layer);
    if (!f) {
      pushLayer(layers[i], false);
      i++;
      continue;
    }
    const span: StageLayer[] = [];
    while (i < layers.length && layers[i].layer <= f.last) span.push(layers[i++]);
    if (open.folds.has(f.first)) {
      const head = push({ key: `H${f.first}`, kind: "foldhead", layers: span.map((L) => L.layer), rows: [{ text: `▾ ${t("foldTitle", { a: f.first, b: f.last, n: f.count })}`, cls: "title" }], expanded: true, stripe: [], inFold: false, h: HEAD_H });
      for (const L of span) pushLayer(L, true);
      brackets.push({ key: head.key, x: BOX_X + BOX_W + 10, y1: head.y + HEAD_H / 2, y2: y - GAP });
    } else {
      push({ key: `F${f.first}`, kind: "fold", layers: span.map((L) => L.layer), rows: foldRows(span, f.period, f.count), expanded: false, stripe: span.slice(0, f.period).map((L) => L.kind), inFold: false });
    }
  }
  if (g.after.length) {
    const o = open.parts.has("after");
    push({ key: "after", kind: "after", layers: [], rows: partRows("after", g.after, sharedIds, o), expanded: o, stripe: [], inFold: false });
  }
  const edges: StageEdge[] = [];
  const cx = BOX_X + BOX_W / 2;
  for (let i = 1; i < items.length; i++) {
    const a = items[i - 1];
    const b = items[i];
    edges.push({ from: a.key, to: b.key, kind: "chain", x1: cx, y1: a.y + a.h, x2: cx, y2: b.y });
  }
  const lane = busLane(g.shared, items, byLayer, edges);
  return { items, edges, lane, brackets, width: BOX_X + BOX_W + 24, height: Math.max(0, y - GAP) };
}

/** The bus lane: one stop per box, stubs between the lane and the boxes, the lane as long as its stops. */
function busLane(shared: readonly StageSharedInput[], items: StageItem[], byLayer: Map<number, StageLayer>, edges: StageEdge[]): StageLane | null {
  if (!shared.length) return null;
  const itemOf = new Map<number, StageItem>();
  for (const it of items) if (it.kind !== "foldhead") for (const l of it.layers) itemOf.set(l, it);
  const before = items.find((it) => it.kind === "before") ?? null;
  const ports = new Map<string, LaneStop>();
  const sources = new Map<string, LaneStop>();
  const stop = (m: Map<string, LaneStop>, it: StageItem, id: string) => {
    let s = m.get(it.key);
    if (!s) m.set(it.key, (s = { key: it.key, y: it.y + PAD + TITLE_H / 2, ids: [] }));
    if (!s.ids.includes(id)) s.ids.push(id);
  };
  for (const s of shared) {
    const src = s.source === null ? before : itemOf.get(s.source) ?? null;
    if (src) stop(sources, src, s.id);
    for (const l of s.layers) {
      const it = itemOf.get(l);
      if (it && byLayer.has(l)) stop(ports, it, s.id);
    }
  }
  const stops = [...sources.values(), ...ports.values()];
  if (!stops.length) return null;
  for (const s of sources.values()) edges.push({ from: s.key, to: "lane", kind: "source", x1: BOX_X, y1: s.y, x2: LANE_X, y2: s.y });
  for (const p of ports.values()) edges.push({ from: "lane", to: p.key, kind: "port", x1: LANE_X, y1: p.y, x2: BOX_X, y2: p.y });
  return { x: LANE_X, y1: Math.min(...stops.map((s) => s.y)), y2: Math.max(...stops.map((s) => s.y)), ports: [...ports.values()], sources: [...sources.values()] };
}

/** Edges longer than this (px at zoom 1) cross the canvas: the bundling leaves none. */
export const LONG_EDGE_PX = 200;

export function longEdges(l: StageLayout): number {
  return l.edges.filter((e) => Math.hypot(e.x2 - e.x1, e.y2 - e.y1) > LONG_EDGE_PX).length;
}

/** The edges one per reader would have been without the lane: a shared input to each layer reading it. */
export function unbundledEdges(g: StageGraphResponse): number {
  return g.shared.reduce((a, s) => a + s.layers.length, 0);
}
