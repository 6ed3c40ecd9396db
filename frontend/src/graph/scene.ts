// The SVG scene of one layout: group boxes, edges, nodes and their labels, kept in maps by key so
// that painting, highlighting and the camera reach them without querying the DOM. Level of detail
// lives here too: what is too small to read is built late or replaced by summary cards, so that a
// graph of thousands of nodes draws fast. All names are inserted as SVG text nodes (textContent).
import { nodesText, t } from "../i18n";
import type { LayoutBox, LayoutResult } from "../layout/protocol";
import { ellipsizeMiddle, fmtPct, fmtUs } from "../model/format";
import { publicId, SCENE, isGroupKey, type Hierarchy, type TreeItem } from "../model/hierarchy";
import { FONT_PX, inputCaption, LINE_H, PAD_X, PAD_Y, type BoxLabel } from "../model/labels";
import type { VisibleEdge, VisibleGraph } from "../model/visible";
import { edgeLabel } from "../model/visible";
import { s } from "../ui/dom";
import { roundedPath } from "./paths";
import type { Viewport } from "./viewport";

/** Zoom from which node text is shown (CSS hides it below), and edge labels. */
export const LOD_TEXT_K = 0.12;
const LOD_EDGE_LABEL_K = 0.6;
/**
 * Below this zoom node text would be smaller than about 8 CSS px: groups are drawn as summary
 * cards (name, node count, GPU time, top kernels) in screen-sized text instead of their nodes.
 */
export const SUMMARY_K = 8 / FONT_PX;
/** Summary card text: line height and advance of one character, in screen pixels (12 px font). */
const SUMMARY_LINE_PX = 16;
const SUMMARY_CHAR_PX = 7.3;
const SUMMARY_TOP_KERNELS = 3;
/** Height of an expanded group's header band (layout/engine.ts GROUP_HEADER). */
const GROUP_HEADER_PX = 24;

export interface GraphData {
  h: Hierarchy;
  vis: VisibleGraph;
  layout: LayoutResult;
  labels: Map<string, BoxLabel>;
  headers: Map<string, { text: string; short: string }>;
}

/** The parts of a drawn leaf (op, input or collapsed group) that painting and late text touch. */
export interface LeafParts {
  rect: SVGRectElement;
  stack: SVGRectElement | null;
  badge: SVGGElement | null;
  w: number;
  h: number;
  lab: BoxLabel;
  text: boolean;
  input: boolean;
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

export class Scene {
  readonly data: GraphData;
  readonly boxes: Map<string, LayoutBox>;
  readonly nodeEls = new Map<string, SVGGElement>();
  readonly leafParts = new Map<string, LeafParts>();
  /** Mark badges and strips (status mode), per key: owned by the painter, dropped with the scene. */
  readonly markEls = new Map<string, SVGGElement>();
  readonly edgeEls = new Map<string, SVGPathElement>();
  readonly edgesByKey = new Map<string, VisibleEdge[]>();
  private pendingLabels: { x: number; y: number; text: string }[] = [];
  private labelsG: SVGGElement;
  /** Summary cards, one per group of depth <= 2 drawn: built when first zoomed out that far. */
  private summaryG: SVGGElement;
  private summaries: { key: string; el: SVGGElement; b: LayoutBox; lines: { text: string; cls: string }[] }[] = [];
  private summaryOn = false;
  private headerScale = -1;
  /** Drawn groups (summary cards) that hold a search hit. */
  private hitGroups = new Set<string>();

  /** Builds the scene's elements into `vp` (replacing what was there); edges point with `arrowId`. */
  constructor(data: GraphData, vp: SVGGElement, arrowId: string) {
    this.data = data;
    const { h, vis, layout, headers } = data;
    this.boxes = new Map(layout.boxes.map((b) => [b.key, b]));
    const containersG = s("g", { class: "containers" });
    const edgesG = s("g", { class: "edges" });
    this.labelsG = s("g", { class: "elabels" });
    const nodesG = s("g", { class: "nodes" });

    const containerKeys = new Set(vis.containers.map((c) => c.key));
    // Outermost first, so that inner groups paint on top.
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
    const lay = new Map(layout.edges.map((e) => [e.id, e]));
    for (const e of vis.edges) {
      const le = lay.get(e.id);
      if (!le) continue;
      const p = s("path", { class: e.count > 1 ? "e agg" : "e", d: roundedPath(le.points), "data-edge-id": e.id, "marker-end": `url(#${arrowId})` });
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
    for (const key of vis.leaves) {
      if (containerKeys.has(key)) continue;
      const b = this.boxes.get(key);
      const it = h.items.get(key);
      const lab = data.labels.get(key);
      if (!b || !it || !lab) continue;
      nodesG.appendChild(this.leafEl(it, b, lab));
    }
    this.summaryG = s("g", { class: "summaries" });
    const frag = document.createDocumentFragment();
    frag.append(containersG, edgesG, this.labelsG, nodesG, this.summaryG);
    while (vp.firstChild) vp.removeChild(vp.firstChild);
    vp.appendChild(frag);
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

  private addLabels(labels: { x: number; y: number; text: string }[]): void {
    const frag = document.createDocumentFragment();
    for (const l of labels) {
      const lt = s("text", { class: "el", x: l.x, y: l.y });
      lt.textContent = l.text;
      frag.appendChild(lt);
    }
    this.labelsG.appendChild(frag);
  }

  /**
   * Node text and edge labels are created only for what is in (or near) the view at a zoom where
   * they are readable: a <text> per node of a 3,000-node graph would make every draw slow.
   */
  materialize(view: Viewport, w: number, h: number): void {
    const k = view.k;
    if (k < LOD_TEXT_K) return;
    const x0 = (-view.x - w / 2) / k;
    const y0 = (-view.y - h / 2) / k;
    const x1 = x0 + (2 * w) / k;
    const y1 = y0 + (2 * h) / k;
    for (const [key, parts] of this.leafParts) {
      if (parts.text) continue;
      const b = this.boxes.get(key);
      if (b && b.x < x1 && b.x + b.w > x0 && b.y < y1 && b.y + b.h > y0) this.buildText(key);
    }
    if (k >= LOD_EDGE_LABEL_K && this.pendingLabels.length) {
      const now: typeof this.pendingLabels = [];
      const rest: typeof this.pendingLabels = [];
      for (const l of this.pendingLabels) (l.x < x1 && l.x > x0 && l.y < y1 && l.y > y0 ? now : rest).push(l);
      this.addLabels(now);
      this.pendingLabels = rest;
    }
  }

  /** Every node's text and edge label (an export shows the whole graph, not the view). */
  materializeAll(): void {
    for (const key of this.leafParts.keys()) this.buildText(key);
    if (this.pendingLabels.length) {
      this.addLabels(this.pendingLabels);
      this.pendingLabels = [];
    }
  }

  /**
   * Where node text would be smaller than about 8 px (zoom below SUMMARY_K), each group of depth
   * two or less drawn is shown as a card in screen-sized text (name, node count, GPU time and its
   * top kernels) and the nodes inside are hidden; zoomed in again, the nodes come back.
   */
  updateSummaries(svg: SVGSVGElement, k: number): void {
    const on = k < SUMMARY_K;
    if (on !== this.summaryOn) {
      this.summaryOn = on;
      svg.classList.toggle("lod-sum", on);
      if (on && !this.summaries.length) this.buildSummaries();
    }
    if (!on) return;
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
    const containers = new Set(d.vis.containers.map((c) => c.key));
    const frag = document.createDocumentFragment();
    for (const b of d.layout.boxes) {
      const it = d.h.items.get(b.key);
      if (!it || it.kind !== "group" || it.depth > 2 || it.key === SCENE) continue;
      // A layer box with its groups drawn inside is summarised by those groups.
      if (it.depth === 1 && containers.has(b.key)) continue;
      const lines = summaryLines(d.h, it);
      const el = s("g", { class: this.hitGroups.has(it.key) ? "sumcard hit" : "sumcard", "data-testid": "group-summary", "data-group-id": publicId(it.key), "data-key": it.key });
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

  /** Marks the summary cards of the groups that hold a search hit (`groups`: every group above a hit). */
  markHitGroups(groups: Set<string>): void {
    this.hitGroups = groups;
    for (const c of this.summaries) c.el.classList.toggle("hit", groups.has(c.key));
  }

  /** Zoomed out, group titles grow (up to their box's width) so the overview stays labelled. */
  scaleHeaders(k: number, force = false): void {
    const want = k < 0.75 ? 11 / k : 0;
    if (want === this.headerScale && !force) return;
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

  /** A <title> per node would double the DOM of big graphs: it is built on first hover. */
  ensureTooltip(key: string): void {
    const g = this.nodeEls.get(key);
    const parts = this.leafParts.get(key);
    const it = this.data.h.items.get(key);
    if (!g || !parts || !it || g.dataset.tip) return;
    g.dataset.tip = "1";
    const tip = s("title");
    const full = parts.lab.lines.filter((l) => l.full).map((l) => l.full);
    tip.textContent = [tooltip(it), ...full].join("\n");
    g.insertBefore(tip, g.firstChild);
  }

  /** Public ids of drawn op nodes. */
  drawnNodeIds(): string[] {
    const out: string[] = [];
    for (const [k, g] of this.nodeEls) if (g.dataset.nodeId && !isGroupKey(k)) out.push(g.dataset.nodeId);
    return out;
  }
}

/** The level-of-detail class of the svg at zoom `k` (CSS hides what is unreadable at it). */
export function lodClass(k: number): string {
  return k < 0.12 ? "lod-min" : k < 0.35 ? "lod-far" : k < 0.6 ? "lod-mid" : "";
}

function tooltip(it: TreeItem): string {
  if (it.kind === "op" && it.node) {
    const n = it.node;
    const parts = [`${n.label}  %${n.id}`, n.op, `${n.shape}  ${n.dtype}`];
    if (n.time_us > 0) parts.push(`${t("gpuTime")}: ${fmtUs(n.time_us)}`);
    return parts.join("\n");
  }
  if (it.kind === "input" && it.input) return `${inputCaption(it.input.label)}\n%${it.input.id}  ${it.input.shape}  ${it.input.dtype}`;
  return `${it.name}\n${nodesText(it.nodeCount)}${it.timeUs > 0 ? ` · ${fmtUs(it.timeUs)}` : ""}`;
}
