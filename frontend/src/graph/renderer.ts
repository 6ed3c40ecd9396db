// SVG rendering of the laid-out hierarchical graph, with pan/zoom, selection, hover, search hits,
// colour modes and hotspots. All names are inserted as SVG text nodes (textContent).
import { nodesText, t } from "../i18n";
import type { LayoutBox, LayoutResult } from "../layout/protocol";
import { groupColor, heatColor, heatTextColor, heatValue, type Theme } from "../model/colors";
import { ellipsizeMiddle, fmtPct, fmtUs } from "../model/format";
import { isGroupKey, publicId, SCENE, type Hierarchy, type TreeItem } from "../model/hierarchy";
import { FONT_PX, LINE_H, PAD_X, PAD_Y, type BoxLabel } from "../model/labels";
import { countsAttr, statusColor, stripSegments, type DiffStatus, type StatusCounts } from "../model/status";
import type { VisibleGraph, VisibleEdge } from "../model/visible";
import { edgeLabel } from "../model/visible";
import { activity } from "../ui/activity";
import { capture, s } from "../ui/dom";
import { roundedPath } from "./paths";
import { centreOn, clampK, fit, isVisible, keepInView, pan, zoomAt, type Viewport } from "./viewport";

export type ColorMode = "group" | "time";
/** "status": op nodes coloured by their difference status (comparison and stage views). */
export type PaintMode = ColorMode | "status";

/** Zoom from which node text is shown (CSS hides it below), and edge labels. */
const LOD_TEXT_K = 0.12;
/** Zoom at which node text is drawn at its full size (FONT_PX = 11 CSS px). */
export const READABLE_K = 1;
/**
 * Below this zoom node text would be smaller than about 8 CSS px: groups are drawn as summary
 * cards (name, node count, GPU time, top kernels) in screen-sized text instead of their nodes.
 */
export const SUMMARY_K = 8 / FONT_PX;
/**
 * The least zoom at which an expanded group is shown, and below which fitting a grown group does
 * not zoom out: node text at 8.25 CSS px, just above SUMMARY_K, so its nodes are drawn and legible.
 */
export const LEGIBLE_K = 0.75;
/** Summary card text: line height and advance of one character, in screen pixels (12 px font). */
const SUMMARY_LINE_PX = 16;
const SUMMARY_CHAR_PX = 7.3;
const SUMMARY_TOP_KERNELS = 3;
/** About how tall a collapsed group's box is (three lines of text). */
const COLLAPSED_H_PX = 60;

/** The top-most drawn box below group `key` (nearest the left on a tie), if any. */
function topBoxInside(h: Hierarchy, boxes: LayoutBox[], key: string): LayoutBox | null {
  let best: LayoutBox | null = null;
  for (const bx of boxes) {
    if (bx.key === key) continue;
    let p = h.items.get(bx.key)?.parent ?? null;
    while (p !== null && p !== key) p = h.items.get(p)?.parent ?? null;
    if (p !== key) continue;
    if (!best || bx.y < best.y - 0.5 || (Math.abs(bx.y - best.y) <= 0.5 && bx.x < best.x)) best = bx;
  }
  return best;
}

/** What a group's summary card says: name, node count, GPU time (share of the layer), top kernels. */
export function summaryLines(h: Hierarchy, it: TreeItem): { text: string; cls: string }[] {
  const lines: { text: string; cls: string }[] = [];
  const title = it.depth === 1 && it.layer !== null ? t("layerTitle", { n: it.layer }) : it.repeat ? `${it.name} ×${it.repeat.count}` : it.name;
  lines.push({ text: title, cls: "title" });
  lines.push({ text: nodesText(it.nodeCount), cls: "sub" });
  if (it.timeUs > 0) {
    const lt = it.layer !== null ? h.layerTimeUs.get(it.layer) ?? 0 : 0;
    const share = lt > 0 && it.depth > 1 ? ` (${fmtPct(it.timeUs / lt)})` : "";
    lines.push({ text: `GPU ${fmtUs(it.timeUs)}${share}`, cls: "time" });
    // Its kernels by total time.
    const byName = new Map<string, number>();
    const stack = [it.key];
    while (stack.length) {
      const c = h.items.get(stack.pop()!);
      if (!c) continue;
      if (c.kind === "group") stack.push(...c.children);
      else if (c.kind === "op") {
        for (const k of c.node?.kernels ?? []) byName.set(k.kernel, (byName.get(k.kernel) ?? 0) + (k.stats?.median_us ?? k.duration_us));
      }
    }
    const top = [...byName].sort((a, b) => b[1] - a[1]).slice(0, SUMMARY_TOP_KERNELS);
    for (const [name, us] of top) lines.push({ text: `⚡ ${fmtUs(us)} ${name}`, cls: "kernel" });
  }
  return lines;
}
const LOD_EDGE_LABEL_K = 0.6;
/** Height of an expanded group's header band (layout/engine.ts GROUP_HEADER). */
const GROUP_HEADER_PX = 24;

export interface GraphData {
  h: Hierarchy;
  vis: VisibleGraph;
  layout: LayoutResult;
  labels: Map<string, BoxLabel>;
  headers: Map<string, { text: string; short: string }>;
}

export interface GraphCallbacks {
  onSelect(key: string | null): void;
  onToggle(key: string): void;
  onHover(key: string | null): void;
  /**
   * The viewport changed; `auto` for moves the view made itself (fit, centring on a node, their
   * animation frames) rather than the user's pan and zoom. Not called for setViewport(v, false).
   */
  onView?(v: Viewport, auto: boolean): void;
}

/** What a visible leaf or container shows in "status" mode (computed by a view model). */
export interface LeafMark {
  /** Op nodes: fill and stroke by status. */
  status?: DiffStatus;
  /** A pill on the node's top-right corner (a duration delta, or status counts). */
  badge?: { text: string; tone: "slower" | "faster" | "diff" | "neutral" };
  /** Groups: how many nodes of each status they hold (a strip along a collapsed group's bottom). */
  counts?: StatusCounts;
}

export interface Paint {
  mode: PaintMode;
  theme: Theme;
  hot: Map<string, number>; // op key -> rank
  marks?: Map<string, LeafMark>;
  /** Order of statuses in strips and count attributes. */
  statusOrder?: DiffStatus[];
}

/** The depth-2 group an item belongs to (for colours): "moe" for moe/moe_router, etc. */
export function colourGroup(h: Hierarchy, it: TreeItem): string {
  if (it.kind === "op") return it.node?.group || "other";
  if (it.kind === "input") return "input";
  if (it.depth <= 1) return "layer";
  let cur: TreeItem | undefined = it;
  while (cur && cur.depth > 2) cur = cur.parent ? h.items.get(cur.parent) : undefined;
  return cur?.name ?? "other";
}

/** Distinguishes the SVG ids (arrow markers) of the graph views of one page. */
let viewCount = 0;

export class GraphView {
  readonly el: HTMLDivElement;
  /** Ids of this view's arrow markers (unique in the page: several panes share one document). */
  private readonly arrowId: string;
  private readonly arrowActId: string;
  private animEnd: (() => void) | null = null;
  private svg: SVGSVGElement;
  private vp: SVGGElement;
  private data: GraphData | null = null;
  private view: Viewport = { x: 0, y: 0, k: 1 };
  private boxes = new Map<string, LayoutBox>();
  private nodeEls = new Map<string, SVGGElement>();
  private leafParts = new Map<string, { rect: SVGRectElement; stack: SVGRectElement | null; badge: SVGGElement | null; w: number; h: number; lab: BoxLabel; text: boolean; input: boolean }>();
  /** Mark badges and strips (status mode), per key. */
  private markEls = new Map<string, SVGGElement>();
  private pendingLabels: { x: number; y: number; text: string }[] = [];
  private labelsG: SVGGElement | null = null;
  private matRaf = 0;
  private edgeEls = new Map<string, SVGPathElement>();
  private edgesByKey = new Map<string, VisibleEdge[]>();
  private selected: string | null = null;
  private hovered: string | null = null;
  private hits = new Set<string>();
  private currentHit: string | null = null;
  private anim = 0;
  private lodClass = "";
  /** Summary cards (semantic zoom), one per group of depth <= 2 drawn, built when first needed. */
  private summaryG: SVGGElement | null = null;
  private summaries: { key: string; el: SVGGElement; b: LayoutBox; lines: { text: string; cls: string }[] }[] = [];
  private summaryOn = false;
  private headerScale = -1;

  constructor(private readonly cb: GraphCallbacks) {
    this.el = document.createElement("div");
    this.el.className = "adl-graph";
    this.el.tabIndex = 0;
    this.el.dataset.testid = "graph";
    const n = ++viewCount;
    this.arrowId = `adl-arrow-${n}`;
    this.arrowActId = `adl-arrow-act-${n}`;
    this.svg = s("svg", { class: "adl-svg", "data-testid": "graph-svg" });
    const defs = s("defs");
    defs.appendChild(
      s("marker", { id: this.arrowId, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse", markerUnits: "userSpaceOnUse" },
        s("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow" })),
    );
    defs.appendChild(
      s("marker", { id: this.arrowActId, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto-start-reverse", markerUnits: "userSpaceOnUse" },
        s("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow-act" })),
    );
    this.svg.appendChild(defs);
    this.vp = s("g", { class: "vp" });
    this.svg.appendChild(this.vp);
    this.el.appendChild(this.svg);
    this.bindEvents();
  }

  // ---------------------------------------------------------------- rendering

  render(data: GraphData, paint: Paint): void {
    this.data = data;
    const { h, vis, layout, labels, headers } = data;
    this.boxes = new Map(layout.boxes.map((b) => [b.key, b]));
    this.nodeEls.clear();
    this.leafParts.clear();
    this.markEls.clear();
    this.edgeEls.clear();
    this.edgesByKey.clear();
    this.pendingLabels = [];
    const containersG = s("g", { class: "containers" });
    const edgesG = s("g", { class: "edges" });
    const labelsG = s("g", { class: "elabels" });
    const nodesG = s("g", { class: "nodes" });

    const containerKeys = new Set(vis.containers.map((c) => c.key));
    // Containers (expanded groups), outermost first so inner ones paint on top.
    for (const c of vis.containers) {
      if (c.key === SCENE) continue;
      const b = this.boxes.get(c.key);
      const it = h.items.get(c.key);
      if (!b || !it) continue;
      const g = s("g", {
        class: `c d${Math.min(it.depth, 4)}${it.depth > 2 ? " deep" : ""}`, "data-group-id": publicId(c.key), "data-testid": "group-box",
        "data-collapsed": "false", "data-key": c.key, transform: `translate(${b.x},${b.y})`,
      });
      if (it.repeat) {
        g.setAttribute("data-repeat", String(it.repeat.count));
        g.setAttribute("data-period", String(it.repeat.period));
      }
      g.appendChild(s("rect", { class: "cbox", width: b.w, height: b.h, rx: 8 }));
      const head = s("text", { class: "chead", x: 10, y: 16 });
      head.style.fontSize = it.depth <= 1 ? "13px" : "11px";
      const hd = headers.get(c.key);
      head.textContent = hd?.text ?? it.name;
      head.dataset.full = hd?.text ?? it.name;
      head.dataset.short = hd?.short ?? it.name;
      g.appendChild(head);
      containersG.appendChild(g);
      this.nodeEls.set(c.key, g);
    }
    // Edges.
    const lay = new Map(layout.edges.map((e) => [e.id, e]));
    for (const e of vis.edges) {
      const le = lay.get(e.id);
      if (!le) continue;
      const p = s("path", { class: e.count > 1 ? "e agg" : "e", d: roundedPath(le.points), "data-edge-id": e.id, "marker-end": `url(#${this.arrowId})` });
      if (e.count > 1) p.setAttribute("stroke-width", String(Math.min(4, 1.2 + Math.log2(e.count))));
      if ((h.items.get(e.from)?.depth ?? 0) > 2 || (h.items.get(e.to)?.depth ?? 0) > 2) p.classList.add("deep");
      edgesG.appendChild(p);
      this.edgeEls.set(e.id, p);
      for (const k of [e.from, e.to]) {
        let arr = this.edgesByKey.get(k);
        if (!arr) this.edgesByKey.set(k, (arr = []));
        arr.push(e);
      }
      const txt = edgeLabel(e);
      if (txt) this.pendingLabels.push({ x: le.labelX + 4, y: le.labelY, text: txt });
    }
    // Leaves.
    for (const key of vis.leaves) {
      if (containerKeys.has(key)) continue;
      const b = this.boxes.get(key);
      const it = h.items.get(key);
      const lab = labels.get(key);
      if (!b || !it || !lab) continue;
      nodesG.appendChild(this.leafEl(it, b, lab));
    }
    this.labelsG = labelsG;
    this.summaryG = s("g", { class: "summaries" });
    this.summaries = [];
    this.summaryOn = false;
    const frag = document.createDocumentFragment();
    frag.append(containersG, edgesG, labelsG, nodesG, this.summaryG);
    while (this.vp.firstChild) this.vp.removeChild(this.vp.firstChild);
    this.vp.appendChild(frag);
    this.applyPaint(paint);
    this.applyStates();
    this.headerScale = -1;
    this.scaleHeaders(this.view.k);
    this.updateSummaries();
  }

  // ---------------------------------------------------------------- semantic zoom

  /**
   * Where node text would be smaller than about 8 px (zoom below SUMMARY_K), each group of depth
   * two or less drawn is shown as a card in screen-sized text (name, node count, GPU time and its
   * top kernels) and the nodes inside are hidden; zoomed in again, the nodes come back.
   */
  private updateSummaries(): void {
    const on = this.view.k < SUMMARY_K && !!this.data;
    if (on !== this.summaryOn) {
      this.summaryOn = on;
      this.svg.classList.toggle("lod-sum", on);
      if (on && !this.summaries.length) this.buildSummaries();
    }
    if (!on) return;
    const k = this.view.k;
    for (const c of this.summaries) {
      // The card's text is laid out in screen pixels: scale 1/k cancels the view's zoom.
      c.el.setAttribute("transform", `translate(${c.b.x},${c.b.y}) scale(${(1 / k).toFixed(5)})`);
      const wPx = c.b.w * k;
      const hPx = c.b.h * k;
      const maxLines = Math.max(0, Math.floor((hPx - 6) / SUMMARY_LINE_PX));
      const maxChars = Math.max(0, Math.floor((wPx - 12) / SUMMARY_CHAR_PX));
      const rect = c.el.firstChild as SVGRectElement;
      rect.setAttribute("width", wPx.toFixed(1));
      rect.setAttribute("height", hPx.toFixed(1));
      let i = 0;
      for (const tx of Array.from(c.el.querySelectorAll("text")) as SVGTextElement[]) {
        const ln = c.lines[i++];
        const show = i <= maxLines && maxChars >= 4;
        tx.style.display = show ? "" : "none";
        if (show) tx.textContent = ellipsizeMiddle(ln.text, maxChars);
      }
    }
  }

  private buildSummaries(): void {
    const d = this.data;
    if (!d || !this.summaryG) return;
    const containers = new Set(d.vis.containers.map((c) => c.key));
    const frag = document.createDocumentFragment();
    for (const b of d.layout.boxes) {
      const it = d.h.items.get(b.key);
      if (!it || it.kind !== "group" || it.depth > 2 || it.key === SCENE) continue;
      // A layer box with its groups drawn inside is summarised by those groups.
      if (it.depth === 1 && containers.has(b.key)) continue;
      const lines = summaryLines(d.h, it);
      const el = s("g", { class: "sumcard", "data-testid": "group-summary", "data-group-id": publicId(it.key), "data-key": it.key });
      el.appendChild(s("rect", { class: "sumbox", rx: 6 }));
      let y = 6 + SUMMARY_LINE_PX - 3;
      for (const ln of lines) {
        const tx = s("text", { class: `st ${ln.cls}`, x: 8, y });
        tx.textContent = ln.text;
        el.appendChild(tx);
        y += SUMMARY_LINE_PX;
      }
      frag.appendChild(el);
      this.summaries.push({ key: it.key, el, b, lines });
    }
    this.summaryG.appendChild(frag);
  }

  private leafEl(it: TreeItem, b: LayoutBox, lab: BoxLabel): SVGGElement {
    const isGroup = it.kind === "group";
    const attrs: Record<string, string> = {
      class: `n ${it.kind === "op" ? "op" : isGroup ? "grp" : "inp"}`,
      transform: `translate(${b.x},${b.y})`,
      "data-key": it.key,
    };
    if (it.depth > 2) attrs.class += " deep";
    if (it.repeat) {
      attrs["data-repeat"] = String(it.repeat.count);
      attrs["data-period"] = String(it.repeat.period);
    }
    if (isGroup) {
      attrs["data-group-id"] = publicId(it.key);
      attrs["data-testid"] = "group-box";
      attrs["data-collapsed"] = "true";
    } else {
      attrs["data-node-id"] = publicId(it.key);
      if (it.inputs) {
        attrs["data-input-ids"] = it.inputs.map((x) => x.id).join(" ");
        attrs["data-count"] = String(it.inputs.length);
      }
      attrs["data-testid"] = it.kind === "op" ? "graph-node" : "input-node";
    }
    const g = s("g", attrs);
    let stack: SVGRectElement | null = null;
    if (isGroup) {
      stack = s("rect", { class: "stack", x: 4, y: 4, width: b.w, height: b.h, rx: 6 });
      g.appendChild(stack);
    }
    const rect = s("rect", { class: "box", width: b.w, height: b.h, rx: it.kind === "input" ? b.h / 2.5 : 5 });
    g.appendChild(rect);
    this.nodeEls.set(it.key, g);
    this.leafParts.set(it.key, { rect, stack, badge: null, w: b.w, h: b.h, lab, text: false, input: it.kind === "input" });
    return g;
  }

  /** Text of a node, built when it first comes into view at a zoom where text is shown. */
  private buildText(key: string): void {
    const parts = this.leafParts.get(key);
    const g = this.nodeEls.get(key);
    if (!parts || !g || parts.text) return;
    parts.text = true;
    let y = PAD_Y + LINE_H - 3;
    const frag = document.createDocumentFragment();
    for (const ln of parts.lab.lines) {
      const tx = s("text", { class: `l ${ln.kind}`, x: parts.input ? PAD_X + 4 : PAD_X, y });
      tx.textContent = ln.text;
      frag.appendChild(tx);
      y += LINE_H;
    }
    g.insertBefore(frag, parts.badge);
  }

  /**
   * Level of detail for big graphs: node text and edge labels are created only for what is in
   * (or near) the view at a zoom where they are readable, so drawing 3,000 nodes stays cheap.
   */
  private materialize(): void {
    this.matRaf = 0;
    const k = this.view.k;
    if (k < LOD_TEXT_K || !this.data) return;
    const { w, h } = this.size();
    const x0 = (-this.view.x - w / 2) / k;
    const y0 = (-this.view.y - h / 2) / k;
    const x1 = x0 + (2 * w) / k;
    const y1 = y0 + (2 * h) / k;
    for (const [key, parts] of this.leafParts) {
      if (parts.text) continue;
      const b = this.boxes.get(key);
      if (b && b.x < x1 && b.x + b.w > x0 && b.y < y1 && b.y + b.h > y0) this.buildText(key);
    }
    if (k >= LOD_EDGE_LABEL_K && this.pendingLabels.length && this.labelsG) {
      const rest: typeof this.pendingLabels = [];
      const frag = document.createDocumentFragment();
      for (const l of this.pendingLabels) {
        if (l.x < x1 && l.x > x0 && l.y < y1 && l.y > y0) {
          const lt = s("text", { class: "el", x: l.x, y: l.y });
          lt.textContent = l.text;
          frag.appendChild(lt);
        } else rest.push(l);
      }
      this.labelsG.appendChild(frag);
      this.pendingLabels = rest;
    }
  }

  private scheduleMaterialize(): void {
    if (!this.matRaf) this.matRaf = requestAnimationFrame(() => this.materialize());
  }

  /** Tooltips are built on first hover (a <title> per node would double the DOM of big graphs). */
  private ensureTooltip(key: string): void {
    const g = this.nodeEls.get(key);
    const parts = this.leafParts.get(key);
    const it = this.data?.h.items.get(key);
    if (!g || !parts || !it || g.dataset.tip) return;
    g.dataset.tip = "1";
    const tip = s("title");
    const full = parts.lab.lines.filter((l) => l.full).map((l) => l.full);
    tip.textContent = [tooltip(it), ...full].join("\n");
    g.insertBefore(tip, g.firstChild);
  }

  private setBadge(key: string, txt: string | null): void {
    const parts = this.leafParts.get(key);
    const g = this.nodeEls.get(key);
    if (!parts || !g) return;
    if (txt === null) {
      parts.badge?.remove();
      parts.badge = null;
      return;
    }
    if (!parts.badge) {
      parts.badge = s("g", { class: "badge", transform: `translate(${parts.w - 2},-6)` });
      parts.badge.append(s("rect", { y: 0, height: 14, rx: 7 }), s("text", { y: 10.5 }));
      g.appendChild(parts.badge);
    }
    const [r, tEl] = [parts.badge.firstChild as SVGRectElement, parts.badge.lastChild as SVGTextElement];
    tEl.textContent = txt;
    const w = Math.max(24, txt.length * 6.6 + 8);
    r.setAttribute("width", String(w));
    r.setAttribute("x", String(-w + 2));
    tEl.setAttribute("x", String(-w / 2 + 2));
  }

  applyPaint(paint: Paint): void {
    const data = this.data;
    if (!data) return;
    const { h, vis } = data;
    let max = 0;
    for (const k of vis.leaves) max = Math.max(max, h.items.get(k)?.timeUs ?? 0);
    // Hotspots hidden in collapsed groups are shown on the group.
    const hotOn = new Map<string, number[]>();
    for (const [k, r] of paint.hot) {
      const rep = vis.rep.get(k);
      if (!rep) continue;
      const arr = hotOn.get(rep) ?? [];
      arr.push(r);
      hotOn.set(rep, arr);
    }
    for (const [key, g] of this.nodeEls) {
      const it = h.items.get(key);
      if (!it) continue;
      const gc = groupColor(colourGroup(h, it), paint.theme);
      const mark = paint.mode === "status" ? paint.marks?.get(key) : undefined;
      if (g.classList.contains("c")) {
        const r = g.firstChild as SVGRectElement;
        r.setAttribute("fill", gc.box);
        r.setAttribute("stroke", gc.stroke);
        this.setMark(key, g, mark, paint, true);
        continue;
      }
      const parts = this.leafParts.get(key);
      if (!parts) continue;
      let fill = gc.fill;
      let stroke = gc.stroke;
      let textFill = "";
      if (paint.mode === "status" && it.kind === "op") {
        const st = mark?.status ?? "same";
        const sc = statusColor(st, paint.theme);
        fill = sc.fill;
        stroke = sc.stroke;
        g.setAttribute("data-status", st);
      } else g.removeAttribute("data-status");
      this.setMark(key, g, mark, paint, false);
      if (paint.mode === "time" && it.kind !== "input") {
        if (it.timeUs > 0) {
          const v = heatValue(it.timeUs, max);
          fill = heatColor(v, paint.theme);
          textFill = heatTextColor(v, paint.theme);
        } else {
          fill = paint.theme === "dark" ? "#2b2f36" : "#f4f5f7";
        }
      }
      parts.rect.setAttribute("fill", fill);
      parts.rect.setAttribute("stroke", stroke);
      if (parts.stack) {
        parts.stack.setAttribute("fill", fill);
        parts.stack.setAttribute("stroke", stroke);
      }
      if (textFill) g.setAttribute("data-tc", textFill === "#ffffff" || textFill === "#f2f2f2" ? "light" : "dark");
      else g.removeAttribute("data-tc");
      const ranks = hotOn.get(key);
      if (ranks && ranks.length) {
        ranks.sort((a, b) => a - b);
        g.classList.add("hot");
        g.setAttribute("data-hot", String(ranks[0]));
        this.setBadge(key, ranks.length > 2 ? `#${ranks[0]}+${ranks.length - 1}` : ranks.map((r) => `#${r}`).join(" "));
      } else if (g.classList.contains("hot")) {
        g.classList.remove("hot");
        g.removeAttribute("data-hot");
        this.setBadge(key, null);
      }
    }
  }

  /**
   * The status decorations of one key: a badge (top-right pill; inside the header band for an
   * expanded group) and, for a collapsed group, a strip of its nodes' statuses along its bottom.
   * The group itself is not recoloured: only the nodes that differ are.
   */
  private setMark(key: string, g: SVGGElement, mark: LeafMark | undefined, paint: Paint, container: boolean): void {
    const old = this.markEls.get(key);
    old?.remove();
    this.markEls.delete(key);
    if (mark?.counts) g.setAttribute("data-status-counts", countsAttr(mark.counts, paint.statusOrder ?? ["same", "changed", "only_a", "only_b", "added", "removed"]));
    else g.removeAttribute("data-status-counts");
    if (!mark || (!mark.badge && !mark.counts)) return;
    const b = this.boxes.get(key);
    if (!b) return;
    const mg = s("g", { class: "mark" });
    if (mark.counts && !container && this.leafParts.get(key)?.stack) {
      const order = paint.statusOrder ?? ["same", "changed", "only_a", "only_b", "added", "removed"];
      const strip = s("g", { class: "strip", transform: `translate(6,${b.h - 7})` });
      for (const seg of stripSegments(mark.counts, order, Math.max(10, b.w - 12))) {
        strip.appendChild(s("rect", { x: seg.x.toFixed(2), y: 0, width: Math.max(1, seg.w).toFixed(2), height: 4, fill: statusColor(seg.status, paint.theme).solid }));
      }
      mg.appendChild(strip);
    }
    if (mark.badge && mark.badge.text) {
      const txt = mark.badge.text;
      const w = Math.max(22, txt.length * 6.4 + 10);
      const bx = container ? b.w - 6 : b.w + 2;
      const by = container ? 4 : -7;
      const badge = s("g", { class: `mbadge ${mark.badge.tone}`, transform: `translate(${bx},${by})` });
      badge.append(s("rect", { x: -w, y: 0, width: w, height: 15, rx: 7.5 }));
      const tx = s("text", { x: -w / 2, y: 11 });
      tx.textContent = txt;
      badge.appendChild(tx);
      mg.appendChild(badge);
    }
    g.appendChild(mg);
    this.markEls.set(key, mg);
  }

  // ---------------------------------------------------------------- states

  setSelected(key: string | null): void {
    this.selected = key;
    this.applyStates();
  }

  setHovered(key: string | null): void {
    if (key === this.hovered) return;
    this.hovered = key;
    this.applyStates();
  }

  setHits(keys: string[], current: string | null): void {
    this.hits = new Set(keys);
    this.currentHit = current;
    this.applyStates();
  }

  private applyStates(): void {
    const vis = this.data?.vis;
    const rep = (k: string | null) => (k && vis ? vis.rep.get(k) ?? null : null);
    const sel = rep(this.selected);
    const hov = rep(this.hovered);
    const hitReps = new Set<string>();
    for (const k of this.hits) {
      const r = rep(k);
      if (r) hitReps.add(r);
    }
    const cur = rep(this.currentHit);
    for (const [key, g] of this.nodeEls) {
      g.classList.toggle("sel", key === sel);
      g.classList.toggle("hov", key === hov && key !== sel);
      g.classList.toggle("hit", hitReps.has(key));
      g.classList.toggle("hit-cur", key === cur);
    }
    for (const p of this.vp.querySelectorAll("path.e.act")) {
      p.classList.remove("act");
      p.setAttribute("marker-end", `url(#${this.arrowId})`);
    }
    for (const k of [sel, hov]) {
      if (!k) continue;
      for (const e of this.edgesByKey.get(k) ?? []) {
        const p = this.edgeEls.get(e.id);
        if (!p) continue;
        p.classList.add("act");
        p.setAttribute("marker-end", `url(#${this.arrowActId})`);
        p.parentNode?.appendChild(p); // on top
      }
    }
  }

  // ---------------------------------------------------------------- viewport

  private size(): { w: number; h: number } {
    const r = this.el.getBoundingClientRect();
    return { w: Math.max(1, r.width), h: Math.max(1, r.height) };
  }

  private setView(v: Viewport, notify = true, auto = false): void {
    this.view = v;
    this.scheduleMaterialize();
    this.vp.setAttribute("transform", `translate(${v.x.toFixed(2)},${v.y.toFixed(2)}) scale(${v.k.toFixed(5)})`);
    const lod = v.k < 0.12 ? "lod-min" : v.k < 0.35 ? "lod-far" : v.k < 0.6 ? "lod-mid" : "";
    if (lod !== this.lodClass) {
      if (this.lodClass) this.svg.classList.remove(this.lodClass);
      if (lod) this.svg.classList.add(lod);
      this.lodClass = lod;
    }
    this.scaleHeaders(v.k);
    this.updateSummaries();
    if (notify) this.cb.onView?.({ ...v }, auto);
  }

  /** Sets the viewport from outside (a synchronised pane, the minimap); `notify` calls onView. */
  setViewport(v: Viewport, notify = false): void {
    this.stopAnimation();
    this.setView({ x: v.x, y: v.y, k: clampK(v.k) }, notify);
  }

  /** Size of the view in pixels. */
  viewSize(): { w: number; h: number } {
    return this.size();
  }

  /** The drawn layout (boxes and total size), or null before the first draw. */
  layoutInfo(): { width: number; height: number; boxes: LayoutBox[]; containers: Set<string> } | null {
    const d = this.data;
    if (!d) return null;
    return { width: d.layout.width, height: d.layout.height, boxes: d.layout.boxes, containers: new Set(d.vis.containers.map((c) => c.key)) };
  }

  /** The colour group of a drawn key (for the minimap). */
  colourGroupOf(key: string): string {
    const it = this.data?.h.items.get(key);
    return it && this.data ? colourGroup(this.data.h, it) : "other";
  }

  /**
   * Gets the SVG ready to be copied for export: every node's text and edge label built, full
   * group titles, no level-of-detail hiding. Returns the live <svg>, the graph's size and a
   * function that restores the on-screen state.
   */
  prepareExport(): { svg: SVGSVGElement; width: number; height: number; restore: () => void } | null {
    const d = this.data;
    if (!d) return null;
    cancelAnimationFrame(this.matRaf);
    for (const key of this.leafParts.keys()) this.buildText(key);
    if (this.pendingLabels.length && this.labelsG) {
      const frag = document.createDocumentFragment();
      for (const l of this.pendingLabels) {
        const lt = s("text", { class: "el", x: l.x, y: l.y });
        lt.textContent = l.text;
        frag.appendChild(lt);
      }
      this.labelsG.appendChild(frag);
      this.pendingLabels = [];
    }
    const lod = this.lodClass;
    if (lod) this.svg.classList.remove(lod);
    this.headerScale = -1;
    this.scaleHeaders(1);
    return {
      svg: this.svg, width: d.layout.width, height: d.layout.height,
      restore: () => {
        if (lod) this.svg.classList.add(lod);
        this.headerScale = -1;
        this.scaleHeaders(this.view.k);
      },
    };
  }

  /** Zoomed out, group titles grow (up to their box's width) so the overview stays labelled. */
  private scaleHeaders(k: number): void {
    const want = k < 0.75 ? 11 / k : 0;
    if (want === this.headerScale) return;
    this.headerScale = want;
    for (const [key, g] of this.nodeEls) {
      if (!g.classList.contains("c")) continue;
      const head = g.querySelector("text.chead") as SVGTextElement | null;
      const b = this.boxes.get(key);
      if (!head || !b) continue;
      if (!want) {
        head.style.fontSize = g.classList.contains("d1") ? "13px" : "11px";
        head.setAttribute("y", "16");
        head.textContent = head.dataset.full ?? "";
        continue;
      }
      head.textContent = head.dataset.short ?? "";
      const len = Math.max(4, (head.textContent ?? "").length);
      // While node text is shown the title must stay in its header band; below that, it may grow.
      const band = k >= LOD_TEXT_K ? GROUP_HEADER_PX - 4 : b.h / 4;
      const fs = Math.max(11, Math.min(want, (b.w - 20) / (len * 0.62), band));
      head.style.fontSize = `${fs.toFixed(1)}px`;
      head.setAttribute("y", String(Math.max(16, fs * 0.95)));
    }
  }

  getView(): Viewport {
    return { ...this.view };
  }

  private animateTo(target: Viewport, ms = 220): void {
    this.stopAnimation();
    const from = { ...this.view };
    const t0 = performance.now();
    const step = () => {
      const f = Math.min(1, (performance.now() - t0) / ms);
      const e = f < 0.5 ? 2 * f * f : 1 - Math.pow(-2 * f + 2, 2) / 2;
      this.setView({ x: from.x + (target.x - from.x) * e, y: from.y + (target.y - from.y) * e, k: from.k + (target.k - from.k) * e }, true, true);
      if (f < 1) this.anim = requestAnimationFrame(step);
      else this.stopAnimation();
    };
    if (ms <= 0) this.setView(target, true, true);
    else {
      this.animEnd = activity.begin();
      this.anim = requestAnimationFrame(step);
    }
  }

  private stopAnimation(): void {
    cancelAnimationFrame(this.anim);
    this.animEnd?.();
    this.animEnd = null;
  }

  /** Fits the whole graph. `initial`: for very tall graphs, fit the width instead and start at the top. */
  fit(animate = false, initial = false): void {
    const L = this.data?.layout;
    if (!L) return;
    const { w, h } = this.size();
    let target = fit({ x: 0, y: 0, w: L.width, h: L.height }, w, h, 24, 1);
    if (initial && target.k < 0.2) {
      const k = Math.min(1, Math.max(target.k, Math.min(0.45, (w - 48) / Math.max(1, L.width))));
      target = { k, x: (w - L.width * k) / 2, y: 16 };
    }
    if (animate) this.animateTo(target);
    else this.setView(target, true, true);
  }

  /**
   * The readable default view: zoom 1 (node text at its full 11 px) and the graph's top at the top
   * of the view. Across, a graph that fits is centred; a wider one starts at the left edge of the
   * top-most layer box, so that the layer's title is in view. Returns the expanded groups of depth
   * 2 drawn above the hottest group (`hot`, a drawn key) when it starts below the fold (collapsing
   * them brings it up), else nothing; when `mayCollapse` is false the view starts at `hot`'s top
   * instead, across on its first row (the layer's title is then above the view anyway).
   */
  readableView(hot: string | null, mayCollapse = true): string[] {
    const d = this.data;
    if (!d) return [];
    const L = d.layout;
    const { w, h } = this.size();
    const k = READABLE_K;
    const b = hot ? this.boxes.get(hot) : undefined;
    const clampX = (x: number) => Math.min(16, Math.max(w - 16 - L.width * k, x));
    const layer = this.topLayerBox();
    const x = L.width * k <= w - 32 ? (w - L.width * k) / 2 : clampX(16 - (layer ? layer.x : 0) * k);
    this.setView({ x, y: 16, k }, true, true);
    if (!b || b.y * k + 16 < h * 0.6) return [];
    if (!mayCollapse) {
      let hx = x;
      if (L.width * k > w - 32) {
        // Wider than the view: centre on its first row (the top-most box inside it).
        const first = b.w * k > w - 32 ? topBoxInside(d.h, d.layout.boxes, b.key) : b;
        hx = first ? w / 2 - (first.x + first.w / 2) * k : 16 - b.x * k;
        hx = clampX(Math.min(16 - b.x * k, Math.max(w - 16 - (b.x + b.w) * k, hx)));
      }
      this.setView({ x: hx, y: 40 - b.y * k, k }, true, true);
      return [];
    }
    // The tallest groups above it first, as many as it takes to lift it into the upper part.
    const above: LayoutBox[] = [];
    for (const c of d.vis.containers) {
      const it = d.h.items.get(c.key);
      const cb = this.boxes.get(c.key);
      if (it && cb && it.depth === 2 && c.key !== hot && cb.y + cb.h <= b.y) above.push(cb);
    }
    above.sort((p, q) => q.h - p.h);
    let lift = b.y * k + 16 - h * 0.35;
    const out: string[] = [];
    for (const cb of above) {
      if (lift <= 0) break;
      out.push(cb.key);
      lift -= (cb.h - COLLAPSED_H_PX) * k;
    }
    return out;
  }

  /** The box of the top-most layer drawn (the left-most on a tie), if any. */
  private topLayerBox(): LayoutBox | null {
    const d = this.data;
    if (!d) return null;
    let best: LayoutBox | null = null;
    for (const bx of d.layout.boxes) {
      const it = d.h.items.get(bx.key);
      if (!it || it.kind !== "group" || it.depth !== 1) continue;
      if (!best || bx.y < best.y - 0.5 || (Math.abs(bx.y - best.y) <= 0.5 && bx.x < best.x)) best = bx;
    }
    return best;
  }

  /** Node text in the DOM now (for a node about to be looked at). */
  materializeNow(): void {
    cancelAnimationFrame(this.matRaf);
    this.materialize();
  }

  /** Centres a visible key; zooms in to a readable scale when the graph is zoomed far out. */
  centreOn(key: string, animate = true): boolean {
    const b = this.boxes.get(key);
    if (!b) return false;
    const { w, h } = this.size();
    const k = this.view.k < 0.55 ? Math.min(1, Math.max(0.8, this.view.k)) : this.view.k;
    const target = centreOn(this.view, b.x + b.w / 2, b.y + b.h / 2, w, h, k);
    // A box larger than the view: show its top-left part (header) instead of its middle.
    if (b.h * k > h - 48) target.y = 32 - b.y * k;
    if (b.w * k > w - 48) target.x = 32 - b.x * k;
    if (animate) this.animateTo(target);
    else this.setView(target, true, true);
    return true;
  }

  ensureVisible(key: string): void {
    const b = this.boxes.get(key);
    if (!b) return;
    const { w, h } = this.size();
    if (!isVisible(this.view, b, w, h, 20)) this.centreOn(key);
  }

  zoomBy(f: number, cx?: number, cy?: number): void {
    const { w, h } = this.size();
    this.setView(zoomAt(this.view, f, cx ?? w / 2, cy ?? h / 2));
  }

  panBy(dx: number, dy: number): void {
    this.setView(pan(this.view, dx, dy));
  }

  setScale(k: number): void {
    const { w, h } = this.size();
    this.setView(zoomAt(this.view, clampK(k) / this.view.k, w / 2, h / 2));
  }

  boxOf(key: string): LayoutBox | undefined {
    return this.boxes.get(key);
  }

  /**
   * What a change of expansion keeps in place: the selected box when it is in view, else the
   * innermost group box under the view's centre, else the drawn box nearest that centre.
   */
  anchorKey(): string | null {
    const d = this.data;
    if (!d) return null;
    const { w, h } = this.size();
    const sel = this.selected ? this.boxes.get(this.selected) : undefined;
    if (sel && this.selected && isVisible(this.view, sel, w, h)) return this.selected;
    const cx = (w / 2 - this.view.x) / this.view.k;
    const cy = (h / 2 - this.view.y) / this.view.k;
    let best: string | null = null;
    let bestDepth = -1;
    let near: string | null = null;
    let nearD = Infinity;
    for (const b of d.layout.boxes) {
      if (b.key === SCENE) continue;
      const inside = cx >= b.x && cx <= b.x + b.w && cy >= b.y && cy <= b.y + b.h;
      const depth = d.h.items.get(b.key)?.depth ?? 0;
      if (inside && isGroupKey(b.key) && depth > bestDepth) {
        best = b.key;
        bestDepth = depth;
      }
      const dx = Math.max(b.x - cx, 0, cx - b.x - b.w);
      const dy = Math.max(b.y - cy, 0, cy - b.y - b.h);
      const dist = dx * dx + dy * dy;
      if (dist < nearD) {
        nearD = dist;
        near = b.key;
      }
    }
    return best ?? near;
  }

  /** Where the box of `key` is on screen now (null when it is not drawn). */
  screenOf(key: string): { x: number; y: number } | null {
    const b = this.boxes.get(key);
    return b ? { x: b.x * this.view.k + this.view.x, y: b.y * this.view.k + this.view.y } : null;
  }

  /**
   * The view that keeps `key` (or the group that now stands for it, `rep`) on screen after a new
   * layout, its top-left at `before` (from screenOf before the layout): see keepInView. `legible`:
   * it was expanded, so the zoom is raised to LEGIBLE_K. Null when neither is drawn.
   */
  viewKeeping(key: string, rep: string | undefined, before: { x: number; y: number } | null, legible: boolean): Viewport | null {
    const b = this.boxes.get(key) ?? (rep ? this.boxes.get(rep) : undefined);
    if (!b) return null;
    const { w, h } = this.size();
    return keepInView(this.view, b, before, w, h, legible ? LEGIBLE_K : 0);
  }

  // ---------------------------------------------------------------- events

  private keyAt(target: EventTarget | null): string | null {
    let el = target as Element | null;
    while (el && el !== this.svg) {
      if (el instanceof SVGGElement && el.dataset.key) return el.dataset.key;
      el = el.parentElement;
    }
    return null;
  }

  private bindEvents(): void {
    let drag: { x: number; y: number; moved: boolean; id: number } | null = null;
    this.el.addEventListener("pointerdown", (ev) => {
      if (ev.button !== 0) return;
      drag = { x: ev.clientX, y: ev.clientY, moved: false, id: ev.pointerId };
    });
    this.el.addEventListener("pointermove", (ev) => {
      if (drag && ev.pointerId === drag.id) {
        const dx = ev.clientX - drag.x;
        const dy = ev.clientY - drag.y;
        if (!drag.moved && Math.hypot(dx, dy) > 3) {
          drag.moved = true;
          capture(this.el, ev.pointerId);
          this.el.classList.add("panning");
        }
        if (drag.moved) {
          drag.x = ev.clientX;
          drag.y = ev.clientY;
          this.panBy(dx, dy);
        }
        return;
      }
      const k = this.keyAt(ev.target);
      const hovKey = k && this.leafParts.has(k) ? k : null;
      if (hovKey) this.ensureTooltip(hovKey);
      if (hovKey !== this.hovered) {
        this.setHovered(hovKey);
        this.cb.onHover(hovKey);
      }
    });
    const end = (ev: PointerEvent) => {
      if (!drag || ev.pointerId !== drag.id) return;
      const moved = drag.moved;
      drag = null;
      this.el.classList.remove("panning");
      if (this.el.hasPointerCapture(ev.pointerId)) this.el.releasePointerCapture(ev.pointerId);
      if (!moved && ev.type === "pointerup") {
        const k = this.keyAt(ev.target);
        // Clicking a group header's chevron toggles; otherwise select.
        const tgt = ev.target as Element;
        if (k && isGroupKey(k) && tgt.classList?.contains("chead") && ev.offsetX >= 0) {
          const b = this.boxes.get(k);
          const wx = (ev.offsetX - this.view.x) / this.view.k;
          if (b && wx - b.x < 22) {
            this.cb.onToggle(k);
            return;
          }
        }
        this.cb.onSelect(k);
      }
    };
    this.el.addEventListener("pointerup", end);
    this.el.addEventListener("pointercancel", end);
    this.el.addEventListener("pointerleave", () => {
      if (this.hovered) {
        this.setHovered(null);
        this.cb.onHover(null);
      }
    });
    this.el.addEventListener("dblclick", (ev) => {
      const k = this.keyAt(ev.target);
      if (k && isGroupKey(k)) {
        ev.preventDefault();
        this.cb.onToggle(k);
      }
    });
    this.el.addEventListener(
      "wheel",
      (ev) => {
        ev.preventDefault();
        const r = this.el.getBoundingClientRect();
        if (!ev.ctrlKey && Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
          this.panBy(-ev.deltaX, 0);
          return;
        }
        const unit = ev.deltaMode === 1 ? 16 : ev.deltaMode === 2 ? 400 : 1;
        const f = Math.exp((-ev.deltaY * unit) / (ev.ctrlKey ? 100 : 500));
        this.zoomBy(f, ev.clientX - r.left, ev.clientY - r.top);
      },
      { passive: false },
    );
  }

  /** Keyboard navigation (W/S zoom, A/D pan, arrows pan, F fit, Enter toggles the selected group); true when handled. */
  handleKey(ev: KeyboardEvent): boolean {
    const step = 80;
    switch (ev.key.toLowerCase()) {
      case "w":
      case "+":
      case "=":
        this.zoomBy(1.2);
        return true;
      case "s":
      case "-":
        this.zoomBy(1 / 1.2);
        return true;
      case "a":
      case "arrowleft":
        this.panBy(step, 0);
        return true;
      case "d":
      case "arrowright":
        this.panBy(-step, 0);
        return true;
      case "arrowup":
        this.panBy(0, step);
        return true;
      case "arrowdown":
        this.panBy(0, -step);
        return true;
      case "f":
        this.fit(true);
        return true;
      case "enter":
        // Expands or collapses the selected group (it stays on screen, as on a double-click).
        if (!this.selected || !isGroupKey(this.selected)) return false;
        this.cb.onToggle(this.selected);
        return true;
      default:
        return false;
    }
  }

  /** Public ids of drawn op nodes (test hook). */
  drawnNodeIds(): string[] {
    const out: string[] = [];
    for (const [k, g] of this.nodeEls) if (g.dataset.nodeId && !isGroupKey(k)) out.push(g.dataset.nodeId);
    return out;
  }
}

function tooltip(it: TreeItem): string {
  if (it.kind === "op" && it.node) {
    const n = it.node;
    const parts = [`${n.label}  %${n.id}`, n.op, `${n.shape}  ${n.dtype}`];
    if (n.time_us > 0) parts.push(`${t("gpuTime")}: ${fmtUs(n.time_us)}`);
    return parts.join("\n");
  }
  if (it.kind === "input" && it.input) return `${it.input.label}\n%${it.input.id}  ${it.input.shape}  ${it.input.dtype}`;
  return `${it.name}\n${nodesText(it.nodeCount)}${it.timeUs > 0 ? ` · ${fmtUs(it.timeUs)}` : ""}`;
}

export const GRAPH_FONT_PX = FONT_PX;
