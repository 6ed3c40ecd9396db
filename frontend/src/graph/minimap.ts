// Minimap of a large graph: the whole layout drawn small on a canvas with the visible part
// outlined; clicking or dragging in it moves the view there. The mapping math is pure (tested).
import type { LayoutBox } from "../layout/protocol";
import { groupColor, type Theme } from "../model/colors";
import { capture, h } from "../ui/dom";
import type { Viewport } from "./viewport";

export interface MapFit {
  /** World -> minimap scale and offset: m = world * s + o. */
  s: number;
  ox: number;
  oy: number;
  /** Minimap canvas size (CSS px). */
  w: number;
  h: number;
}

/** Fits a world of size lw × lh into at most maxW × maxH pixels (keeping the aspect ratio). */
export function fitMap(lw: number, lh: number, maxW: number, maxH: number, pad = 4): MapFit {
  const W = Math.max(1, lw);
  const H = Math.max(1, lh);
  const s = Math.min((maxW - 2 * pad) / W, (maxH - 2 * pad) / H);
  const w = Math.ceil(W * s + 2 * pad);
  const hh = Math.ceil(H * s + 2 * pad);
  return { s, ox: pad, oy: pad, w, h: hh };
}

/** The view's visible world rectangle, in minimap pixels. */
export function viewRect(v: Viewport, viewW: number, viewH: number, m: MapFit): { x: number; y: number; w: number; h: number } {
  const wx = -v.x / v.k;
  const wy = -v.y / v.k;
  return { x: wx * m.s + m.ox, y: wy * m.s + m.oy, w: (viewW / v.k) * m.s, h: (viewH / v.k) * m.s };
}

/** The viewport (same zoom) that centres the world point under minimap pixel (mx, my). */
export function viewAt(mx: number, my: number, m: MapFit, v: Viewport, viewW: number, viewH: number): Viewport {
  const wx = (mx - m.ox) / m.s;
  const wy = (my - m.oy) / m.s;
  return { k: v.k, x: viewW / 2 - wx * v.k, y: viewH / 2 - wy * v.k };
}

/** Whether a graph is large enough to want a minimap: it does not fit the view at a readable zoom. */
export function wantsMinimap(lw: number, lh: number, viewW: number, viewH: number, readableK = 0.7): boolean {
  if (!(lw > 0 && lh > 0 && viewW > 0 && viewH > 0)) return false;
  return Math.min(viewW / lw, viewH / lh) < readableK;
}

export interface MinimapSource {
  layoutInfo(): { width: number; height: number; boxes: LayoutBox[]; containers: Set<string> } | null;
  getView(): Viewport;
  viewSize(): { w: number; h: number };
  setViewport(v: Viewport, notify?: boolean): void;
  colourGroupOf(key: string): string;
}

export type MinimapMode = "auto" | "on" | "off";

export class Minimap {
  readonly el: HTMLDivElement;
  private canvas: HTMLCanvasElement;
  private fit: MapFit | null = null;
  private theme: Theme = "light";
  private raf = 0;
  private shown = false;
  mode: MinimapMode = "auto";

  constructor(private readonly src: MinimapSource, testid = "minimap") {
    this.el = h("div", { class: "adl-minimap", "data-testid": testid });
    this.canvas = h("canvas", { class: "adl-minimap-canvas" });
    this.el.appendChild(this.canvas);
    this.bind();
  }

  setTheme(t: Theme): void {
    this.theme = t;
    this.schedule();
  }

  setMode(m: MinimapMode): void {
    this.mode = m;
    this.schedule();
  }

  /** Called after a new layout was drawn, and when the view changes. */
  schedule(): void {
    if (!this.raf) this.raf = requestAnimationFrame(() => this.draw());
  }

  isShown(): boolean {
    return this.shown;
  }

  /** Minimap-pixel point of a world point (tests drive clicks with it). */
  pointOf(wx: number, wy: number): { x: number; y: number } | null {
    const m = this.fit;
    return m ? { x: wx * m.s + m.ox, y: wy * m.s + m.oy } : null;
  }

  private draw(): void {
    this.raf = 0;
    const info = this.src.layoutInfo();
    const { w: vw, h: vh } = this.src.viewSize();
    const show = !!info && (this.mode === "on" || (this.mode === "auto" && wantsMinimap(info.width, info.height, vw, vh)));
    this.shown = show;
    this.el.classList.toggle("on", show);
    if (!show || !info) return;
    const maxW = Math.min(220, Math.max(80, vw * 0.22));
    const maxH = Math.min(170, Math.max(60, vh * 0.3));
    const m = fitMap(info.width, info.height, maxW, maxH);
    this.fit = m;
    const dpr = Math.min(2, window.devicePixelRatio || 1);
    if (this.canvas.width !== Math.round(m.w * dpr) || this.canvas.height !== Math.round(m.h * dpr)) {
      this.canvas.width = Math.round(m.w * dpr);
      this.canvas.height = Math.round(m.h * dpr);
      this.canvas.style.width = `${m.w}px`;
      this.canvas.style.height = `${m.h}px`;
    }
    const ctx = this.canvas.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, m.w, m.h);
    for (const b of info.boxes) {
      const x = b.x * m.s + m.ox;
      const y = b.y * m.s + m.oy;
      const w = Math.max(1, b.w * m.s);
      const hh = Math.max(1, b.h * m.s);
      const gc = groupColor(this.src.colourGroupOf(b.key), this.theme);
      if (info.containers.has(b.key)) {
        ctx.strokeStyle = gc.stroke;
        ctx.globalAlpha = 0.6;
        ctx.lineWidth = 1;
        ctx.strokeRect(x + 0.5, y + 0.5, w - 1, hh - 1);
        ctx.globalAlpha = 1;
      } else {
        ctx.fillStyle = gc.stroke;
        ctx.globalAlpha = 0.75;
        ctx.fillRect(x, y, w, hh);
        ctx.globalAlpha = 1;
      }
    }
    const r = viewRect(this.src.getView(), vw, vh, m);
    ctx.fillStyle = this.theme === "dark" ? "rgba(110,168,255,0.16)" : "rgba(26,102,224,0.10)";
    ctx.strokeStyle = this.theme === "dark" ? "#8cbcff" : "#1a66e0";
    ctx.lineWidth = 1.5;
    const x0 = Math.max(0, r.x);
    const y0 = Math.max(0, r.y);
    const x1 = Math.min(m.w, r.x + r.w);
    const y1 = Math.min(m.h, r.y + r.h);
    if (x1 > x0 && y1 > y0) {
      ctx.fillRect(x0, y0, x1 - x0, y1 - y0);
      ctx.strokeRect(x0 + 0.75, y0 + 0.75, Math.max(1, x1 - x0 - 1.5), Math.max(1, y1 - y0 - 1.5));
    }
  }

  private bind(): void {
    let dragging: number | null = null;
    const move = (ev: PointerEvent) => {
      const m = this.fit;
      if (!m) return;
      const rect = this.canvas.getBoundingClientRect();
      const { w, h: hh } = this.src.viewSize();
      this.src.setViewport(viewAt(ev.clientX - rect.left, ev.clientY - rect.top, m, this.src.getView(), w, hh), true);
      this.schedule();
    };
    this.canvas.addEventListener("pointerdown", (ev) => {
      if (ev.button !== 0) return;
      ev.stopPropagation();
      dragging = ev.pointerId;
      capture(this.canvas, ev.pointerId);
      move(ev);
    });
    this.canvas.addEventListener("pointermove", (ev) => {
      if (dragging !== ev.pointerId) return;
      ev.stopPropagation();
      move(ev);
    });
    const end = (ev: PointerEvent) => {
      if (dragging !== ev.pointerId) return;
      ev.stopPropagation();
      dragging = null;
    };
    this.canvas.addEventListener("pointerup", end);
    this.canvas.addEventListener("pointercancel", end);
    // Keep wheel and double-click from reaching the graph under the minimap.
    this.el.addEventListener("wheel", (ev) => ev.stopPropagation(), { passive: true });
    this.el.addEventListener("dblclick", (ev) => ev.stopPropagation());
  }
}
