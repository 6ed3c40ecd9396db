// A self-contained graph pane, the one the layer, comparison and stage views are built on: the
// hierarchy of the layers shown, its expanded groups, its own layout worker (so two panes lay out
// at the same time), the SVG view, a minimap and zoom buttons. The view that owns it decides what
// is expanded and how nodes are painted.
import type { LayerResponse } from "../api/types";
import { t } from "../i18n";
import { LayoutClient, Superseded } from "../layout/client";
import type { LayoutStats } from "../layout/protocol";
import { buildLayoutRequest } from "../layout/request";
import type { Theme } from "../model/colors";
import { ancestors, buildHierarchy, expandedToDepth, inputKey, opKey, revealKey, SCENE, type Hierarchy } from "../model/hierarchy";
import { visibleGraph, type VisibleGraph } from "../model/visible";
import { activity } from "../ui/activity";
import { h } from "../ui/dom";
import { Minimap } from "./minimap";
import type { Paint } from "./paint";
import { GraphView } from "./renderer";
import type { Viewport } from "./viewport";

export interface PaneCallbacks {
  onSelect(key: string | null): void;
  onToggle(key: string): void;
  onHover?(key: string | null): void;
  /** This pane's view moved from -> to; `auto` when the view moved itself (fit, centring). */
  onView?(from: Viewport, to: Viewport, auto: boolean): void;
  /** Any pointer or key activity in the pane (it becomes the keyboard target). */
  onActivate?(): void;
}

/** What one draw cost and drew. */
export interface DrawInfo {
  layoutMs: number;
  renderMs: number;
  stats: LayoutStats;
  leaves: number;
  edges: number;
}

export interface PaneOptions {
  /** data-testid of the minimap (default: "<testid>-minimap"). */
  minimapTestid?: string;
}

let workerUrl = "static/layout_worker.js";

/** Where pane workers load from (tests and benchmarks may point elsewhere). */
export function setPaneWorkerUrl(url: string): void {
  workerUrl = url;
}

export interface RelayoutOptions {
  fit?: boolean;
  /** A toggled group (or what a depth change keeps in place) that stays on screen (see keepInView). */
  anchor?: string;
  /** With `anchor`: groups were expanded, so the zoom is raised to a legible one (LEGIBLE_K). */
  legible?: boolean;
  /** A key to centre on. */
  centre?: string;
  /** Open at the readable default view (see GraphView.readableView). */
  initial?: "readable";
  /** With `initial`: keep every group as expanded (do not collapse the groups above the hottest). */
  collapsedAbove?: boolean;
}

/**
 * The group that holds the most GPU time among the groups just below the layer boxes, as the
 * visible key that shows it; without GPU times (no trace) the one with the most nodes, where the
 * layer's work is; the first of them on a tie; null for an empty graph.
 */
export function hottestGroup(hh: Hierarchy, vis: VisibleGraph): string | null {
  const groups = [...hh.items.values()].filter((it) => it.kind === "group" && it.depth === 2);
  const timed = groups.some((it) => it.timeUs > 0);
  let best: string | null = null;
  let bestV = -1;
  for (const it of groups) {
    const v = timed ? it.timeUs : it.nodeCount;
    if (v > bestV) {
      bestV = v;
      best = it.key;
    }
  }
  return best ? vis.rep.get(best) ?? null : null;
}

export class GraphPane {
  readonly el: HTMLDivElement;
  readonly graph: GraphView;
  readonly minimap: Minimap;
  hier: Hierarchy | null = null;
  layers: LayerResponse[] = [];
  expanded = new Set<string>([SCENE]);
  vis: VisibleGraph | null = null;
  selected: string | null = null;
  /** Number of completed draws (tests wait on it). */
  draws = 0;
  /** The last completed draw's figures. */
  lastDraw: DrawInfo | null = null;
  private client: LayoutClient | null = null;
  private seq = 0;
  private last: Viewport = { x: 0, y: 0, k: 1 };
  private busyEl: HTMLDivElement;
  private msgEl: HTMLDivElement;
  private waiters: (() => void)[] = [];

  constructor(testid: string, cb: PaneCallbacks, private readonly paint: () => Paint, opts: PaneOptions = {}) {
    this.graph = new GraphView({
      onSelect: (k) => cb.onSelect(k),
      onToggle: (k) => cb.onToggle(k),
      onHover: (k) => cb.onHover?.(k),
      onView: (v, auto) => {
        const from = this.last;
        this.last = v;
        this.minimap.schedule();
        cb.onView?.(from, v, auto);
      },
    });
    this.el = this.graph.el;
    this.el.dataset.testid = testid;
    this.el.classList.add("adl-pane");
    this.minimap = new Minimap(this.graph, opts.minimapTestid ?? `${testid}-minimap`);
    this.busyEl = h("div", { class: "adl-busy" });
    this.msgEl = h("div", { class: "adl-empty" });
    const zoom = h("div", { class: "adl-zoom" });
    const zi = h("button", { class: "btn iconbtn", type: "button", title: t("zoomIn"), "aria-label": t("zoomIn"), "data-testid": `${testid}-zoom-in` }, "+");
    const zo = h("button", { class: "btn iconbtn", type: "button", title: t("zoomOut"), "aria-label": t("zoomOut"), "data-testid": `${testid}-zoom-out` }, "−");
    const fit = h("button", { class: "btn iconbtn", type: "button", title: t("fitTitle"), "aria-label": t("fitTitle"), "data-testid": `${testid}-fit` }, "⤢");
    zi.addEventListener("click", () => this.graph.zoomBy(1.25));
    zo.addEventListener("click", () => this.graph.zoomBy(0.8));
    fit.addEventListener("click", () => this.graph.fit(true));
    zoom.append(zi, zo, fit);
    // The minimap is not drawn over the graph: the owning view puts `minimap.el` beside it.
    this.el.append(this.busyEl, this.msgEl, zoom);
    const activate = () => cb.onActivate?.();
    this.el.addEventListener("pointerdown", activate);
    this.el.addEventListener("focus", activate);
  }

  setTheme(th: Theme): void {
    this.minimap.setTheme(th);
    this.repaint();
  }

  setBusy(msg: string | null): void {
    this.busyEl.textContent = msg ?? "";
    this.busyEl.classList.toggle("on", msg !== null);
  }

  setMessage(msg: string | null): void {
    this.msgEl.textContent = msg ?? "";
    this.msgEl.classList.toggle("on", msg !== null);
  }

  /** Resolves after the next completed draw. */
  nextDraw(): Promise<void> {
    return new Promise((r) => this.waiters.push(r));
  }

  /**
   * Shows these layers. `expanded`: a set of group keys, a depth ("collapse below depth N") or a
   * function of the new hierarchy. `draw: false` only builds the hierarchy (the caller relayouts);
   * `initial: "readable"` opens at the readable default view instead of fitting the whole graph.
   */
  async setLayers(layers: LayerResponse[], expanded: Set<string> | number | ((h: Hierarchy) => Set<string>),
                  opts: { draw?: boolean; initial?: "readable"; keepExpanded?: boolean } = {}): Promise<boolean> {
    this.layers = layers;
    this.hier = buildHierarchy(layers);
    const hh = this.hier;
    if (typeof expanded === "number") this.expanded = expandedToDepth(hh, expanded);
    else if (typeof expanded === "function") this.expanded = expanded(hh);
    else this.expanded = new Set([SCENE, ...[...expanded].filter((k) => hh.items.has(k))]);
    this.selected = null;
    this.graph.setSelected(null);
    this.setMessage(null);
    if (opts.draw === false) return true;
    return this.relayout(opts.initial ? { initial: opts.initial, collapsedAbove: opts.keepExpanded } : { fit: true });
  }

  clear(msg: string | null): void {
    this.hier = null;
    this.layers = [];
    this.vis = null;
    this.seq++;
    this.graph.el.querySelector("g.vp")?.replaceChildren();
    this.setMessage(msg);
    this.minimap.schedule();
  }

  keyForNode(id: string): string | null {
    return this.hier ? this.keyForNodeIn(this.hier, id) : null;
  }

  /** The key of a node, input or group id (as public ids and URLs carry it) in `hh`. */
  keyForNodeIn(hh: Hierarchy, id: string): string | null {
    if (hh.items.has(opKey(id))) return opKey(id);
    if (hh.items.has(inputKey(id))) return inputKey(id);
    const folded = hh.alias.get(inputKey(id));
    if (folded) return folded;
    return hh.items.has(`g:${id}`) ? `g:${id}` : null;
  }

  /** Lays out what is expanded and draws it. False when superseded or failed. */
  async relayout(opts: RelayoutOptions = {}): Promise<boolean> {
    const end = activity.begin();
    try {
      return await this.relayoutNow(opts);
    } finally {
      end();
    }
  }

  private async relayoutNow(opts: RelayoutOptions): Promise<boolean> {
    const hier = this.hier;
    if (!hier) return false;
    const seq = ++this.seq;
    this.vis = visibleGraph(hier, this.expanded);
    const vis = this.vis;
    const { req, labels, headers } = buildLayoutRequest(hier, vis, seq);
    if (vis.leaves.length > 400) this.setBusy(t("layingOut", { n: vis.leaves.length }));
    const anchorScreen = opts.anchor ? this.graph.screenOf(opts.anchor) : null;
    const edgeBefore = this.graph.leftEdgeInView();
    if (!this.client) this.client = new LayoutClient(workerUrl);
    const tl = performance.now();
    let res;
    try {
      res = await this.client.layout(req);
    } catch (e) {
      if (e instanceof Superseded) return false;
      if (seq === this.seq) {
        this.setBusy(null);
        this.setMessage(t("layoutFailed", { msg: String((e as Error)?.message ?? e) }));
      }
      return false;
    }
    if (seq !== this.seq || hier !== this.hier) return false;
    const layoutMs = performance.now() - tl;
    const tr = performance.now();
    this.graph.render({ h: hier, vis, layout: res, labels, headers }, this.paint());
    this.graph.setSelected(this.selected ? vis.rep.get(this.selected) ?? null : null);
    const centre = opts.centre ? vis.rep.get(opts.centre) : undefined;
    if (centre) this.graph.centreOn(centre, false);
    else if (opts.anchor) {
      // A follower pane moves without telling the controller, so no panBy here.
      const v = this.graph.viewKeeping(opts.anchor, vis.rep.get(opts.anchor), anchorScreen, !!opts.legible);
      if (v) this.setViewport(v);
      // A collapse or Expand all never pushes the layer off to the left: an edge in view before
      // stays in view (the toggled group kept in view too where a legible zoom shows both).
      this.showLeftEdge(this.graph.boxOf(opts.anchor) ? opts.anchor : vis.rep.get(opts.anchor) ?? null, edgeBefore);
    } else if (opts.initial === "readable") {
      const hot = hottestGroup(hier, vis);
      const hidden = this.graph.readableView(hot, !opts.collapsedAbove);
      // The hottest group starts below the fold: collapse the groups drawn above it, once.
      if (hidden.length && !opts.collapsedAbove) {
        for (const k of hidden) this.expanded.delete(k);
        return this.relayoutNow({ ...opts, collapsedAbove: true });
      }
      this.showLeftEdge(hot);
    } else if (opts.fit) {
      this.graph.fit(false, true);
    }
    this.setBusy(null);
    this.minimap.schedule();
    this.lastDraw = { layoutMs, renderMs: performance.now() - tr, stats: res.stats, leaves: vis.leaves.length, edges: vis.edges.length };
    this.draws++;
    const ws = this.waiters;
    this.waiters = [];
    requestAnimationFrame(() => setTimeout(() => ws.forEach((w) => w()), 0));
    return true;
  }

  repaint(): void {
    if (this.vis) this.graph.applyPaint(this.paint());
  }

  /** Sets the view without telling the controller (a synchronised follower). */
  setViewport(v: Viewport): void {
    this.graph.setViewport(v, false);
    this.last = this.graph.getView();
    this.minimap.schedule();
  }

  getView(): Viewport {
    return this.graph.getView();
  }

  /**
   * Brings the layer's left edge into view without losing `keep` (see Camera.showLeftEdge),
   * without telling the controller (as setViewport).
   */
  showLeftEdge(keep: string | null, force = true): void {
    const before = this.graph.getView();
    this.graph.showLeftEdge(keep, force);
    const v = this.graph.getView();
    if (v.x !== before.x || v.y !== before.y || v.k !== before.k) {
      this.last = v;
      this.minimap.schedule();
    }
  }

  /** Selects a key; expands its ancestors (re-laying out) when hidden and centres it when asked. */
  async select(key: string | null, opts: { centre?: boolean; reveal?: boolean } = {}): Promise<void> {
    this.selected = key;
    if (key && this.hier && opts.reveal && ancestors(this.hier, key).some((a) => !this.expanded.has(a))) {
      this.expanded = revealKey(this.hier, this.expanded, key);
      await this.relayout({ centre: opts.centre ? key : undefined });
      return;
    }
    const rep = key && this.vis ? this.vis.rep.get(key) ?? null : null;
    this.graph.setSelected(rep);
    if (rep && opts.centre) this.graph.centreOn(rep);
  }

  setHovered(key: string | null): void {
    this.graph.setHovered(key && this.vis ? this.vis.rep.get(key) ?? null : null);
  }

  /** Whether the key is drawn right now (itself, not a collapsed group standing for it). */
  isDrawn(key: string): boolean {
    return this.vis?.rep.get(key) === key;
  }

  dispose(): void {
    this.client?.terminate();
    this.client = null;
  }
}
