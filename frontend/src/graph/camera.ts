// Where the graph is looked at from (pan and zoom), where it goes (fit, the readable opening view,
// centring, keeping a toggled group in place) and the mouse and keys that move it. The camera knows
// boxes, not elements: what a move does to the drawing is the renderer's `apply`.
import type { LayoutBox } from "../layout/protocol";
import { isGroupKey, SCENE } from "../model/hierarchy";
import { activity } from "../ui/activity";
import { bindPanZoom } from "./drag";
import { SUMMARY_K, type GraphData } from "./scene";
import { centreOn, clampK, fit, isVisible, keepGraphInView, keepInView, keepWholeAcross, pan, showLeftEdge, zoomAt, zoomCentre, type Viewport } from "./viewport";

/** Zoom at which node text is drawn at its full size (FONT_PX = 11 CSS px). */
export const READABLE_K = 1;
/**
 * The least zoom at which an expanded group is shown, and below which fitting a grown group does
 * not zoom out: node text at 8.25 CSS px, just above SUMMARY_K, so its nodes are drawn and legible.
 */
export const LEGIBLE_K = 0.75;
/** About how tall a collapsed group's box is (three lines of text). */
const COLLAPSED_H_PX = 60;
const KEY_PAN_PX = 80;
/** The least zoom ensureReadable goes to (group titles and cards are drawn down to about here). */
const LOD_MIN_K = 0.15;

export class Camera {
  private view: Viewport = { x: 0, y: 0, k: 1 };
  private anim = 0;
  private animEnd: (() => void) | null = null;

  /**
   * `apply` draws a new view; `notify` is false for a view set from outside, `auto` for moves the
   * camera made itself (fit, centring, their animation frames). `bounds`: the graph's size;
   * `layerLeft`: the world x of the left edge of the layer in view (null: nothing drawn);
   * `readable`: whether a view shows some text that can be read (see readableInView).
   */
  constructor(private readonly el: HTMLElement, private readonly apply: (v: Viewport, notify: boolean, auto: boolean) => void,
              private readonly bounds: () => { width: number; height: number } | null,
              private readonly layerLeft: (v: Viewport) => number | null = () => null,
              private readonly readable: (v: Viewport) => boolean = () => true,
              private readonly data: (() => GraphData | null) | null = null) {}

  size(): { w: number; h: number } {
    const r = this.el.getBoundingClientRect();
    return { w: Math.max(1, r.width), h: Math.max(1, r.height) };
  }

  get(): Viewport {
    return { ...this.view };
  }

  /** The current view itself (not a copy), for the renderer's per-frame work. */
  current(): Readonly<Viewport> {
    return this.view;
  }

  set(v: Viewport, notify = true, auto = false): void {
    const L = this.bounds();
    if (L) {
      const { w, h } = this.size();
      v = keepWholeAcross(keepGraphInView(v, L.width, L.height, w, h), 0, L.width, w);
    }
    this.view = v;
    this.apply(v, notify, auto);
  }

  /** A view from outside (a synchronised pane, the minimap): any animation stops. */
  setViewport(v: Viewport, notify: boolean): void {
    this.stop();
    this.set({ x: v.x, y: v.y, k: clampK(v.k) }, notify);
  }

  private animateTo(target: Viewport, ms = 220): void {
    this.stop();
    const from = { ...this.view };
    const t0 = performance.now();
    const step = () => {
      const f = Math.min(1, (performance.now() - t0) / ms);
      const e = f < 0.5 ? 2 * f * f : 1 - Math.pow(-2 * f + 2, 2) / 2;
      this.set({ x: from.x + (target.x - from.x) * e, y: from.y + (target.y - from.y) * e, k: from.k + (target.k - from.k) * e }, true, true);
      if (f < 1) this.anim = requestAnimationFrame(step);
      else this.stop();
    };
    if (ms <= 0) this.set(target, true, true);
    else {
      // Tests wait for the panel to be idle: an animation under way is activity.
      this.animEnd = activity.begin();
      this.anim = requestAnimationFrame(step);
    }
  }

  private stop(): void {
    cancelAnimationFrame(this.anim);
    this.animEnd?.();
    this.animEnd = null;
  }

  private goTo(target: Viewport, animate: boolean): void {
    if (animate) this.animateTo(target);
    else this.set(target, true, true);
  }

  /** Fits the whole graph. `initial`: for very tall graphs, fit the width instead and start at the top. */
  fit(animate = false, initial = false): void {
    const L = this.bounds();
    if (!L) return;
    const { w, h } = this.size();
    let target = fit({ x: 0, y: 0, w: L.width, h: L.height }, w, h, 24, 1);
    if (initial && target.k < 0.2) {
      const k = Math.min(1, Math.max(target.k, Math.min(0.45, (w - 48) / Math.max(1, L.width))));
      target = { k, x: (w - L.width * k) / 2, y: 16 };
    }
    this.goTo(target, animate);
  }

  /**
   * The readable default view: zoom 1 (node text at its full 11 px) and the graph's top at the top
   * of the view. Across, a graph that fits is centred; a wider one starts at the left edge of the
   * top-most layer box, so that the layer's title is in view. Returns the expanded groups of depth
   * 2 drawn above the hottest group (`hot`, a drawn key) when it starts below the fold (collapsing
   * them brings it up), else nothing; when `mayCollapse` is false the view starts at `hot`'s top
   * instead, across on its first row (the layer's title is then above the view anyway).
   */
  readableView(d: GraphData, boxes: Map<string, LayoutBox>, hot: string | null, mayCollapse = true): string[] {
    const L = d.layout;
    const { w, h } = this.size();
    const k = READABLE_K;
    const b = hot ? boxes.get(hot) : undefined;
    const clampX = (x: number) => Math.min(16, Math.max(w - 16 - L.width * k, x));
    const layer = topLayerBox(d);
    const x = L.width * k <= w - 32 ? (w - L.width * k) / 2 : clampX(16 - (layer ? layer.x : 0) * k);
    this.set({ x, y: 16, k }, true, true);
    if (!b || b.y * k + 16 < h * 0.6) return [];
    if (!mayCollapse) {
      let hx = x;
      if (L.width * k > w - 32) {
        // Wider than the view: centre on its first row (the top-most box inside it).
        const first = b.w * k > w - 32 ? topBoxInside(d, b.key) : b;
        hx = first ? w / 2 - (first.x + first.w / 2) * k : 16 - b.x * k;
        hx = clampX(Math.min(16 - b.x * k, Math.max(w - 16 - (b.x + b.w) * k, hx)));
      }
      this.set({ x: hx, y: 40 - b.y * k, k }, true, true);
      return [];
    }
    // The tallest groups above it first, as many as it takes to lift it into the upper part.
    const above: LayoutBox[] = [];
    for (const c of d.vis.containers) {
      const it = d.h.items.get(c.key);
      const cb = boxes.get(c.key);
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

  /** Centres a box; zooms in to a readable scale when the graph is zoomed far out. */
  centreOn(b: LayoutBox, animate = true): void {
    const { w, h } = this.size();
    const k = this.view.k < 0.55 ? Math.min(1, Math.max(0.8, this.view.k)) : this.view.k;
    const target = centreOn(this.view, b.x + b.w / 2, b.y + b.h / 2, w, h, k);
    // A box larger than the view: show its top-left part (header) instead of its middle.
    if (b.h * k > h - 48) target.y = 32 - b.y * k;
    if (b.w * k > w - 48) target.x = 32 - b.x * k;
    this.goTo(target, animate);
  }

  ensureVisible(b: LayoutBox): void {
    const { w, h } = this.size();
    if (!isVisible(this.view, b, w, h, 20)) this.centreOn(b);
  }

  /** Zooms at a point; without one (buttons, keys), at the centre but keeping the layer's left edge in view. */
  zoomBy(f: number, cx?: number, cy?: number): void {
    const { w, h } = this.size();
    if (cx === undefined) {
      const left = this.layerLeft(this.view);
      const at = zoomAt(this.view, f, zoomCentre(left === null ? null : left * this.view.k + this.view.x, f, w), h / 2);
      // Held at the layer's left edge, unless that zooms into empty space.
      this.zoomTo(f > 1 && !this.readable(at) ? zoomAt(this.view, f, w / 2, h / 2) : at, f);
      // Neither shows anything readable (the view was on the graph's margin): to the nearest titles.
      if (!this.readable(this.view) && this.data) this.ensureReadable(this.data());
      return;
    }
    this.zoomTo(zoomAt(this.view, f, cx, cy ?? h / 2), f);
  }

  /**
   * Moves the view across and down, its zoom kept, by the least distance that brings readable text
   * into view (see panToReadable); false where nothing at this zoom reads (the view is kept).
   */
  panToReadable(): boolean {
    const d = this.data?.();
    if (!d) return false;
    const { w, h } = this.size();
    const v = panToReadable(d, this.view, w, h);
    if (!v || !this.readable(v)) return false;
    this.set(v, true, true);
    return true;
  }

  /** See readableShiftsDown (the current view). */
  readableShiftsDown(): number[] {
    const d = this.data?.();
    if (!d) return [];
    const { w, h } = this.size();
    return readableShiftsDown(d, this.view, w, h);
  }

  /** Whether the view shows text that can be read (see readableInView). */
  readableNow(): boolean {
    return this.readable(this.view);
  }

  /** A zoom out stops where the text in view would no longer read (never an empty pane). */
  private zoomTo(v: Viewport, f: number): void {
    if (f < 1 && !this.readable(v) && this.readable(this.view)) return;
    this.set(v);
  }

  /**
   * A view with nothing readable in it (the empty left part of a wide layer, space between
   * groups) zooms out about the layer's left edge until group titles or cards come in, down to
   * where they still read; failing that, it goes to the layer's top-left (its title).
   */
  ensureReadable(d: GraphData | null): void {
    if (!d || this.readable(this.view)) return;
    const { w, h } = this.size();
    const left = this.layerLeft(this.view);
    const cx = left === null ? w / 2 : Math.max(0, Math.min(w, left * this.view.k + this.view.x));
    let v = this.view;
    while (v.k > LOD_MIN_K) {
      v = zoomAt(v, 0.8, cx, h / 2);
      if (this.readable(v)) {
        this.set(v, true, true);
        return;
      }
    }
    const layer = topLayerBox(d);
    if (layer) this.set({ k: this.view.k, x: 16 - layer.x * this.view.k, y: 16 - layer.y * this.view.k }, true, true);
  }

  /**
   * Brings the layer's left edge into view (see showLeftEdge) without losing `keep`, zooming out
   * to LEGIBLE_K at the least: after a relayout (a collapse, Expand all, another layer) the view
   * never starts cut off from the layer's left. `force`: the edge wins over `keep`.
   */
  showLeftEdge(keep: LayoutBox | null, force = true): void {
    const left = this.layerLeft(this.view);
    if (left === null) return;
    const v = showLeftEdge(this.view, left, keep, this.size().w, LEGIBLE_K, force);
    if (v !== this.view) this.set(v, true, true);
  }

  /** Where the layer's left edge is on screen (null: nothing drawn). */
  leftEdgeX(): number | null {
    const left = this.layerLeft(this.view);
    return left === null ? null : left * this.view.k + this.view.x;
  }

  /** How far across the view must move for the layer's left edge to be in view (0: it is). */
  leftEdgeShift(): number {
    const left = this.layerLeft(this.view);
    if (left === null) return 0;
    const sx = left * this.view.k + this.view.x;
    return sx >= 0 && sx <= this.size().w - 16 ? 0 : 16 - sx;
  }

  /** Whether the layer's left edge is in view now. */
  leftEdgeInView(): boolean {
    const left = this.layerLeft(this.view);
    if (left === null) return false;
    const sx = left * this.view.k + this.view.x;
    return sx >= 0 && sx <= this.size().w - 16;
  }

  panBy(dx: number, dy: number): void {
    this.set(pan(this.view, dx, dy));
  }

  setScale(k: number): void {
    const { w, h } = this.size();
    this.set(zoomAt(this.view, clampK(k) / this.view.k, w / 2, h / 2));
  }

  /** Where a box is on screen now. */
  screenOf(b: LayoutBox): { x: number; y: number } {
    return { x: b.x * this.view.k + this.view.x, y: b.y * this.view.k + this.view.y };
  }

  /** See keepInView; `legible`: the box was expanded, so the zoom is raised to LEGIBLE_K. */
  keeping(b: LayoutBox, before: { x: number; y: number } | null, legible: boolean): Viewport {
    const { w, h } = this.size();
    return keepInView(this.view, b, before, w, h, legible ? LEGIBLE_K : 0);
  }

  /**
   * What a change of expansion keeps in place: the selected box when it is in view, else the
   * innermost group box under the view's centre, else the drawn box nearest that centre.
   */
  anchorKey(d: GraphData, boxes: Map<string, LayoutBox>, selected: string | null): string | null {
    const { w, h } = this.size();
    const sel = selected ? boxes.get(selected) : undefined;
    if (sel && selected && isVisible(this.view, sel, w, h)) return selected;
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

  /** W/S and +/- zoom, A/D and the arrows pan, F fits; true when the key was one of them. */
  handleKey(ev: KeyboardEvent): boolean {
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
        this.panBy(KEY_PAN_PX, 0);
        return true;
      case "d":
      case "arrowright":
        this.panBy(-KEY_PAN_PX, 0);
        return true;
      case "arrowup":
        this.panBy(0, KEY_PAN_PX);
        return true;
      case "arrowdown":
        this.panBy(0, -KEY_PAN_PX);
        return true;
      case "f":
        this.fit(true);
        return true;
      default:
        return false;
    }
  }
}

/** What the pointer does to the graph besides moving the camera. */
export interface PointerTarget {
  /** The drawn key under an event target (a node, input or group element), or null. */
  keyAt(target: EventTarget | null): string | null;
  boxOf(key: string): LayoutBox | undefined;
  /** The pointer is over `key` (null: over nothing); `left`: it left the graph. */
  hover(key: string | null, left: boolean): void;
  select(key: string | null): void;
  toggle(key: string): void;
}

/**
 * Mouse input on `el`: a drag pans (a press that moves less than 3 px is a click: it selects, or
 * toggles a group on its header's chevron), the wheel zooms at the pointer (sideways it pans), a
 * double-click toggles a group.
 */
export function bindPointer(el: HTMLElement, camera: Camera, target: PointerTarget): void {
  bindPanZoom(el, {
    panBy: (dx, dy) => camera.panBy(dx, dy),
    zoomBy: (f, x, y) => camera.zoomBy(f, x, y),
    hover: (ev) => target.hover(target.keyAt(ev.target), false),
    click: (ev) => {
      const k = target.keyAt(ev.target);
      const tgt = ev.target as Element;
      if (k && isGroupKey(k) && tgt.classList?.contains("chead") && ev.offsetX >= 0) {
        const b = target.boxOf(k);
        const v = camera.current();
        const wx = (ev.offsetX - v.x) / v.k;
        if (b && wx - b.x < 22) {
          target.toggle(k);
          return;
        }
      }
      target.select(k);
    },
  });
  el.addEventListener("pointerleave", () => target.hover(null, true));
  el.addEventListener("dblclick", (ev) => {
    const k = target.keyAt(ev.target);
    if (k && isGroupKey(k)) {
      ev.preventDefault();
      target.toggle(k);
    }
  });
}

/** The top-most drawn box below group `key` (nearest the left on a tie), if any. */
function topBoxInside(d: GraphData, key: string): LayoutBox | null {
  let best: LayoutBox | null = null;
  for (const bx of d.layout.boxes) {
    if (bx.key === key) continue;
    let p = d.h.items.get(bx.key)?.parent ?? null;
    while (p !== null && p !== key) p = d.h.items.get(p)?.parent ?? null;
    if (p !== key) continue;
    if (!best || bx.y < best.y - 0.5 || (Math.abs(bx.y - best.y) <= 0.5 && bx.x < best.x)) best = bx;
  }
  return best;
}

/** The box of the top-most layer drawn (the left-most on a tie), if any. */
function topLayerBox(d: GraphData): LayoutBox | null {
  let best: LayoutBox | null = null;
  for (const bx of d.layout.boxes) {
    const it = d.h.items.get(bx.key);
    if (!it || it.kind !== "group" || it.depth !== 1) continue;
    if (!best || bx.y < best.y - 0.5 || (Math.abs(bx.y - best.y) <= 0.5 && bx.x < best.x)) best = bx;
  }
  return best;
}

/**
 * The world x of the left edge of the layer in view: the left-most layer box that spans some of
 * the view's height (`h` px, view `v`), else the top-most layer box; null when no layer is drawn.
 */
export function layerLeftIn(d: GraphData, v: Viewport, h: number): number | null {
  let left: number | null = null;
  const y0 = -v.y / v.k;
  const y1 = (h - v.y) / v.k;
  for (const bx of d.layout.boxes) {
    const it = d.h.items.get(bx.key);
    if (!it || it.kind !== "group" || it.depth !== 1) continue;
    if (bx.y + bx.h < y0 || bx.y > y1) continue;
    left = left === null ? bx.x : Math.min(left, bx.x);
  }
  return left ?? topLayerBox(d)?.x ?? null;
}

/** Where readableInView looks for text at zoom `v.k`: each box's text start, in screen px less the view's offset. */
function readableAnchors(d: GraphData, v: Viewport): { px: number; py: number }[] {
  const open = new Set(d.vis.containers.map((c) => c.key));
  const cards = v.k < SUMMARY_K;
  const out: { px: number; py: number }[] = [];
  for (const b of d.layout.boxes) {
    if (b.key === SCENE) continue;
    if (cards) {
      const it = d.h.items.get(b.key);
      if (!it || it.kind !== "group" || it.depth > 2 || (it.depth === 1 && open.has(b.key))) continue;
      if (b.w * v.k < 48 || b.h * v.k < 24) continue;
      out.push({ px: b.x * v.k + 12, py: b.y * v.k + 14 });
    } else if (open.has(b.key)) out.push({ px: b.x * v.k + 12, py: b.y * v.k + 14 });
    else out.push({ px: (b.x + 10) * v.k, py: (b.y + 18) * v.k });
  }
  return out;
}

/**
 * View `v` moved across and down (its zoom kept) by the least distance that brings some readable
 * text (as readableInView counts it) well into view: a card's or open group's title, or a node's
 * first line, placed at least `margin` px from the view's top and left and a few dozen px from its
 * right and bottom (some of the text shows, not only where it starts). Null where nothing at this
 * zoom reads (text too small, cards too small).
 */
export function panToReadable(d: GraphData, v: Viewport, w: number, h: number, margin = 24): Viewport | null {
  const right = Math.max(margin, w - Math.min(160, w / 3));
  const bottom = Math.max(margin, h - 40);
  let best: Viewport | null = null;
  let bestD = Infinity;
  for (const { px, py } of readableAnchors(d, v)) {
    // Screen position now, and the least move that puts it inside the target area.
    const sx = px + v.x;
    const sy = py + v.y;
    const dx = Math.min(right, Math.max(margin, sx)) - sx;
    const dy = Math.min(bottom, Math.max(margin, sy)) - sy;
    const dist = dx * dx + dy * dy;
    if (dist < bestD) {
      bestD = dist;
      best = { k: v.k, x: v.x + dx, y: v.y + dy };
    }
  }
  return best;
}

/**
 * The moves up or down (px, least first) that bring readable text into view `v` without moving
 * across: one for each text start across in view (see panToReadable's target area).
 */
export function readableShiftsDown(d: GraphData, v: Viewport, w: number, h: number, margin = 24): number[] {
  const right = Math.max(margin, w - Math.min(160, w / 3));
  const bottom = Math.max(margin, h - 40);
  const out = new Set<number>();
  for (const { px, py } of readableAnchors(d, v)) {
    const sx = px + v.x;
    if (sx < margin || sx > right) continue;
    const sy = py + v.y;
    out.add(Math.round(Math.min(bottom, Math.max(margin, sy)) - sy));
  }
  return [...out].sort((a, b) => Math.abs(a) - Math.abs(b));
}

/**
 * Whether view `v` (w x h px) shows text that can be read (8 px or more). From SUMMARY_K up: a
 * node's or collapsed group's text, or an open group's title at its top-left. Below it, node text
 * and titles are too small, but each group of depth two or less (a layer only when collapsed) is a
 * card of screen-sized text at its box's top-left, shown when the box is large enough on screen.
 */
export function readableInView(d: GraphData, v: Viewport, w: number, h: number): boolean {
  const x0 = -v.x / v.k;
  const y0 = -v.y / v.k;
  const x1 = (w - v.x) / v.k;
  const y1 = (h - v.y) / v.k;
  const open = new Set(d.vis.containers.map((c) => c.key));
  const cards = v.k < SUMMARY_K;
  // Where the first line of a title or card is, from the box's top-left, in screen px.
  const tx = 12 / v.k;
  const ty = 14 / v.k;
  for (const b of d.layout.boxes) {
    if (b.key === SCENE) continue;
    const corner = b.x + tx > x0 && b.x + tx < x1 && b.y + ty > y0 && b.y + ty < y1;
    if (cards) {
      const it = d.h.items.get(b.key);
      if (!it || it.kind !== "group" || it.depth > 2 || (it.depth === 1 && open.has(b.key))) continue;
      if (corner && b.w * v.k >= 48 && b.h * v.k >= 24) return true;
      continue;
    }
    // A node's text starts at its top-left too (its first line).
    const text = b.x + 10 > x0 && b.x + 10 < x1 && b.y + 18 > y0 && b.y + 18 < y1;
    if (open.has(b.key) ? corner : text) return true;
  }
  return false;
}
