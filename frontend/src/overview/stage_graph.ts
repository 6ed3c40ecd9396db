// The whole-stage graph on one <canvas>: the layout of stage_model.ts drawn under a camera (drag
// pans, the wheel zooms at the pointer), at most one frame per animation frame, only what is in
// view, and text only where it is large enough to read (level of detail: below about 6 px the
// boxes keep their colour and lose their words). A click opens or closes a box (a fold into its
// layers, a layer into its groups, a part into its nodes) and selects it; a double-click on a
// layer, or Enter, opens it in the layer view.
import type { StageGraphResponse } from "../api/types";
import { bindPanZoom } from "../graph/drag";
import { t } from "../i18n";
import { groupColor, type Theme } from "../model/colors";
import { inputCaption } from "../model/labels";
import { stageSvg } from "./stage_svg";
import { BOX_X, GAP, LANE_X, longEdges, PAD, ROW_H, stageLayout, TITLE_H, unbundledEdges, type StageItem, type StageLayout } from "./stage_model";

export interface StageGraphCallbacks {
  /** A box was selected (null: none). */
  onSelect(item: StageItem | null): void;
  /** Open a layer in the layer view. */
  onOpenLayer(layer: number): void;
}

interface Camera {
  x: number;
  y: number;
  k: number;
}

/** Text smaller than this on screen is not drawn (px). */
const MIN_TEXT_PX = 6;
const MIN_K = 0.04;
const MAX_K = 3;
/** The zoom the graph opens at, at most: node text at its full size. */
const FIT_MAX_K = 1;
/** Below this the first view does not shrink: the column scrolls instead of becoming unreadable. */
const FIT_MIN_K = 0.7;
const MARGIN = 16;
/**
 * The canvas reaches this far (CSS px) beyond each side of the view: a pan moves the drawn
 * picture (a compositor-only CSS translation, no new raster) until it would show an undrawn edge,
 * then one frame redraws around the new view. Most pan frames cost no drawing at all.
 */
const OVERDRAW = 240;
const FONT = '-apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';

interface Palette {
  bg: string;
  fg: string;
  muted: string;
  box: string;
  border: string;
  accent: string;
  edge: string;
  lane: string;
}

function palette(theme: Theme): Palette {
  return theme === "dark"
    ? { bg: "#15181c", fg: "#e6e9ed", muted: "#98a2ad", box: "#1f242a", border: "#3a424c", accent: "#6ea8ff", edge: "#6c7784", lane: "#b88af0" }
    : { bg: "#ffffff", fg: "#1d2329", muted: "#5f6b77", box: "#f7f8fa", border: "#c3cad3", accent: "#1a66e0", edge: "#8d99a6", lane: "#8a4fd1" };
}

export class StageGraph {
  readonly el: HTMLDivElement;
  private canvas: HTMLCanvasElement;
  private ctx: CanvasRenderingContext2D;
  private cam: Camera = { x: MARGIN, y: MARGIN, k: 1 };
  private data: StageGraphResponse | null = null;
  private layout: StageLayout | null = null;
  private openFolds = new Set<number>();
  private openLayers = new Set<number>();
  private openParts = new Set<"before" | "after">();
  private selected: string | null = null;
  /** The panel's layer (the toolbar's): its box, or the fold holding it, is outlined. */
  private current: number | "all" = "all";
  private hovered: string | null = null;
  private theme: Theme = "light";
  private raf = 0;
  private size = { w: 0, h: 0, dpr: 1 };
  /** Text rows cut to their box's width, per item key: measured once per layout (in world units, so any zoom), not per frame. */
  private fitted = new Map<string, string[]>();
  // Figures of the test hook and the bench.
  private t0 = 0;
  private firstDrawMs: number | null = null;
  /** performance.now() at the first frame: since the page's navigation began. */
  private firstDrawAt: number | null = null;
  private lastDrawMs = 0;
  private frames = 0;
  /** The last frames' drawing times (ms), for the pan figures. */
  private drawTimes: number[] = [];
  /** Frames that only moved the drawn picture. */
  private shifts = 0;
  /** The camera the picture on the canvas was drawn with; null: something else changed, redraw. */
  private drawnCam: Camera | null = null;

  constructor(private readonly cb: StageGraphCallbacks) {
    this.el = document.createElement("div");
    this.el.className = "adl-sgraph";
    this.el.dataset.testid = "stage-graph";
    this.el.tabIndex = 0;
    this.canvas = document.createElement("canvas");
    this.canvas.dataset.testid = "stage-graph-canvas";
    this.canvas.setAttribute("role", "img");
    this.canvas.setAttribute("aria-label", t("stageGraph"));
    this.el.appendChild(this.canvas);
    // Opaque: the compositor need not blend it with what is under it.
    const ctx = this.canvas.getContext("2d", { alpha: false });
    if (!ctx) throw new Error("no 2d canvas");
    this.ctx = ctx;
    this.bindPointer();
    new ResizeObserver(() => this.request()).observe(this.el);
  }

  setCurrent(layer: number | "all"): void {
    if (layer === this.current) return;
    this.current = layer;
    this.request();
  }

  setTheme(th: Theme): void {
    this.theme = th;
    this.request();
  }

  /** Shows a stage: every box closed, the column's top-left in view at a readable zoom. `t0`: when it was asked for. */
  setData(g: StageGraphResponse, t0: number): void {
    this.data = g;
    this.t0 = t0;
    this.firstDrawMs = null;
    this.openFolds.clear();
    this.openLayers.clear();
    this.openParts.clear();
    this.selected = null;
    this.relayout();
    this.fit();
    this.request();
  }

  clear(): void {
    this.data = null;
    this.layout = null;
    this.request();
  }

  private relayout(): void {
    this.layout = this.data ? stageLayout(this.data, { folds: this.openFolds, layers: this.openLayers, parts: this.openParts }) : null;
    this.fitted.clear();
  }

  /** The column's top at a zoom that shows as much of it as stays readable. */
  private fit(): void {
    const l = this.layout;
    const r = this.el.getBoundingClientRect();
    if (!l || r.width < 10) return;
    const k = Math.max(FIT_MIN_K, Math.min(FIT_MAX_K, (r.width - 2 * MARGIN) / l.width, (r.height - 2 * MARGIN) / Math.max(1, l.height)));
    this.cam = { x: MARGIN, y: MARGIN, k };
  }

  // ---------------------------------------------------------------- input

  private toWorld(sx: number, sy: number): { x: number; y: number } {
    return { x: (sx - this.cam.x) / this.cam.k, y: (sy - this.cam.y) / this.cam.k };
  }

  private itemAt(sx: number, sy: number): StageItem | null {
    const l = this.layout;
    if (!l) return null;
    const p = this.toWorld(sx, sy);
    for (const it of l.items) if (p.x >= it.x && p.x <= it.x + it.w && p.y >= it.y && p.y <= it.y + it.h) return it;
    return null;
  }

  /** The lane stop under the pointer (a port or a source), for its tooltip. */
  private stopAt(sx: number, sy: number): string | null {
    const lane = this.layout?.lane;
    if (!lane || !this.data) return null;
    const p = this.toWorld(sx, sy);
    if (p.x < LANE_X - 12 || p.x > BOX_X) return null;
    const byId = new Map(this.data.shared.map((s) => [s.id, s]));
    const near = (s: { y: number }) => Math.abs(s.y - p.y) < 9;
    const port = lane.ports.find(near);
    const src = lane.sources.find(near);
    const names = (ids: string[]) => ids.map((id) => inputCaption(byId.get(id)?.label ?? id)).join(", ");
    const lines: string[] = [];
    if (src) lines.push(t("sharedComputed", { list: names(src.ids) }));
    if (port) lines.push(t("sharedRead", { list: names(port.ids) }));
    return lines.length ? lines.join("\n") : null;
  }

  private bindPointer(): void {
    const el = this.el;
    const local = (ev: MouseEvent) => {
      const r = this.el.getBoundingClientRect();
      return { x: ev.clientX - r.left, y: ev.clientY - r.top };
    };
    bindPanZoom(el, {
      panBy: (dx, dy) => this.panBy(dx, dy),
      zoomBy: (f, x, y) => this.zoomBy(f, x, y),
      click: (ev) => {
        const p = local(ev);
        this.click(this.itemAt(p.x, p.y));
      },
      hover: (ev) => {
        const p = local(ev);
        const it = this.itemAt(p.x, p.y);
        const key = it?.key ?? null;
        const tip = this.stopAt(p.x, p.y) ?? "";
        if (el.title !== tip) el.title = tip;
        if (key !== this.hovered) {
          this.hovered = key;
          el.style.cursor = key ? "pointer" : "";
          this.request();
        }
      },
    });
    el.addEventListener("dblclick", (ev) => {
      const p = local(ev);
      const it = this.itemAt(p.x, p.y);
      if (it?.kind === "layer") this.cb.onOpenLayer(it.layers[0]);
    });
    el.addEventListener("keydown", (ev) => {
      const it = this.layout?.items.find((x) => x.key === this.selected);
      if (ev.key === "Enter" && it?.kind === "layer") {
        ev.preventDefault();
        this.cb.onOpenLayer(it.layers[0]);
      } else if (ev.key === " " && it) {
        ev.preventDefault();
        this.toggle(it);
      }
    });
  }

  panBy(dx: number, dy: number): void {
    this.cam = { ...this.cam, x: this.cam.x + dx, y: this.cam.y + dy };
    this.request(true);
  }

  zoomBy(f: number, sx: number, sy: number): void {
    const k = Math.min(MAX_K, Math.max(MIN_K, this.cam.k * f));
    const w = this.toWorld(sx, sy);
    this.cam = { k, x: sx - w.x * k, y: sy - w.y * k };
    this.request();
  }

  /** A click: the box is selected, and opens or closes. */
  private click(it: StageItem | null): void {
    this.selected = it?.key ?? null;
    if (it) this.toggle(it);
    else this.request();
    this.cb.onSelect(it);
  }

  /** Opens or closes a box where it is: the box keeps its place on screen, what follows it moves. */
  toggle(it: StageItem): void {
    const before = it.y;
    if (it.kind === "fold") this.openFolds.add(it.layers[0]);
    else if (it.kind === "foldhead") this.openFolds.delete(it.layers[0]);
    else if (it.kind === "layer") {
      if (!this.openLayers.delete(it.layers[0])) this.openLayers.add(it.layers[0]);
    } else if (!this.openParts.delete(it.kind)) this.openParts.add(it.kind);
    this.relayout();
    // The box that was clicked (a fold: its header; its header: the fold) stays under the pointer.
    const key = it.kind === "fold" ? `H${it.layers[0]}` : it.kind === "foldhead" ? `F${it.layers[0]}` : it.key;
    const now = this.layout?.items.find((x) => x.key === key);
    if (now) {
      this.cam = { ...this.cam, y: this.cam.y + (before - now.y) * this.cam.k };
      if (this.selected === it.key) this.selected = key;
    }
    this.request();
  }

  // ---------------------------------------------------------------- drawing

  /**
   * One frame at the next animation frame, however many changes came before it. `moved`: only
   * the camera moved (a pan), which a shift of the drawn picture may show.
   */
  private request(moved = false): void {
    if (!moved) this.drawnCam = null;
    if (this.raf) return;
    this.raf = requestAnimationFrame(() => {
      this.raf = 0;
      if (!this.shift()) this.draw();
    });
  }

  /** Shows a pan by moving the drawn picture, when the picture covers the view; false otherwise. */
  private shift(): boolean {
    const d = this.drawnCam;
    if (!d || d.k !== this.cam.k) return false;
    const dx = this.cam.x - d.x;
    const dy = this.cam.y - d.y;
    if (Math.abs(dx) > OVERDRAW || Math.abs(dy) > OVERDRAW) return false;
    this.canvas.style.transform = `translate(${dx}px, ${dy}px)`;
    this.frames++;
    this.shifts++;
    return true;
  }

  private resize(): boolean {
    const r = this.el.getBoundingClientRect();
    const dpr = window.devicePixelRatio || 1;
    if (r.width < 2 || r.height < 2) return false;
    if (r.width !== this.size.w || r.height !== this.size.h || dpr !== this.size.dpr) {
      this.size = { w: r.width, h: r.height, dpr };
      const cw = r.width + 2 * OVERDRAW;
      const ch = r.height + 2 * OVERDRAW;
      this.canvas.width = Math.round(cw * dpr);
      this.canvas.height = Math.round(ch * dpr);
      this.canvas.style.width = `${cw}px`;
      this.canvas.style.height = `${ch}px`;
      this.canvas.style.left = `${-OVERDRAW}px`;
      this.canvas.style.top = `${-OVERDRAW}px`;
    }
    return true;
  }

  private draw(): void {
    const start = performance.now();
    if (!this.resize()) return;
    const { ctx } = this;
    const { h, dpr } = this.size;
    const pal = palette(this.theme);
    this.canvas.style.transform = "";
    this.drawnCam = { ...this.cam };
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = pal.bg;
    ctx.fillRect(0, 0, this.canvas.width / dpr, this.canvas.height / dpr);
    const l = this.layout;
    if (!l) return;
    const { k } = this.cam;
    // The canvas starts OVERDRAW px above and left of the view.
    const ox = this.cam.x + OVERDRAW;
    const oy = this.cam.y + OVERDRAW;
    ctx.setTransform(dpr * k, 0, 0, dpr * k, dpr * ox, dpr * oy);
    // What is on the canvas, in world units (with a margin for strokes and stacked shadows).
    const top = -oy / k - 20;
    const bottom = (h + 2 * OVERDRAW - oy) / k + 20;
    const inView = (y1: number, y2: number) => y2 >= top && y1 <= bottom;
    const text = 12 * k >= MIN_TEXT_PX;
    const lw = 1 / k;
    // Chain arrows.
    ctx.strokeStyle = pal.edge;
    ctx.fillStyle = pal.edge;
    ctx.lineWidth = Math.max(1.2, lw);
    ctx.beginPath();
    for (const e of l.edges) {
      if (e.kind !== "chain" || !inView(e.y1, e.y2)) continue;
      ctx.moveTo(e.x1, e.y1);
      ctx.lineTo(e.x2, e.y2 - 5);
    }
    ctx.stroke();
    ctx.beginPath();
    for (const e of l.edges) {
      if (e.kind !== "chain" || !inView(e.y1, e.y2)) continue;
      ctx.moveTo(e.x2 - 5, e.y2 - 7);
      ctx.lineTo(e.x2 + 5, e.y2 - 7);
      ctx.lineTo(e.x2, e.y2);
    }
    ctx.fill();
    // The bus lane, its stubs and stops.
    const lane = l.lane;
    if (lane && inView(lane.y1, lane.y2)) {
      ctx.strokeStyle = pal.lane;
      ctx.lineWidth = 3;
      ctx.beginPath();
      ctx.moveTo(lane.x, Math.max(lane.y1, top));
      ctx.lineTo(lane.x, Math.min(lane.y2, bottom));
      ctx.stroke();
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      for (const e of l.edges) {
        if (e.kind === "chain" || !inView(e.y1, e.y2)) continue;
        ctx.moveTo(e.x1, e.y1);
        ctx.lineTo(e.x2, e.y2);
      }
      ctx.stroke();
      ctx.fillStyle = pal.lane;
      for (const s of [...lane.ports, ...lane.sources]) {
        if (!inView(s.y, s.y)) continue;
        ctx.beginPath();
        ctx.arc(lane.x, s.y, 4, 0, Math.PI * 2);
        ctx.fill();
      }
      if (text) {
        ctx.font = `11px ${FONT}`;
        ctx.textAlign = "center";
        const mid = (LANE_X + BOX_X) / 2;
        // What a box reads above its stub, what it computes for others below.
        ctx.textBaseline = "bottom";
        for (const s of lane.ports) if (inView(s.y, s.y)) ctx.fillText(`↘ ${s.ids.length}`, mid, s.y - 2);
        ctx.textBaseline = "top";
        for (const s of lane.sources) if (inView(s.y, s.y)) ctx.fillText(`${s.ids.length} ↙`, mid, s.y + 3);
        ctx.textAlign = "left";
        // The lane's name, along it at its top.
        ctx.save();
        ctx.translate(lane.x - 8, lane.y1);
        ctx.rotate(-Math.PI / 2);
        ctx.textBaseline = "bottom";
        ctx.textAlign = "right";
        ctx.fillText(t("sharedLane"), 0, 0);
        ctx.restore();
      }
    }
    // Brackets of open folds.
    ctx.strokeStyle = pal.muted;
    ctx.lineWidth = 1.5;
    for (const b of l.brackets) {
      if (!inView(b.y1, b.y2)) continue;
      ctx.beginPath();
      ctx.moveTo(b.x - 6, b.y1);
      ctx.lineTo(b.x, b.y1);
      ctx.lineTo(b.x, b.y2);
      ctx.lineTo(b.x - 6, b.y2);
      ctx.stroke();
    }
    // Boxes.
    for (const it of l.items) {
      if (!inView(it.y, it.y + it.h + 8)) continue;
      this.drawBox(it, pal, text);
    }
    this.frames++;
    this.lastDrawMs = performance.now() - start;
    this.drawTimes.push(this.lastDrawMs);
    if (this.drawTimes.length > 240) this.drawTimes.splice(0, this.drawTimes.length - 240);
    if (this.firstDrawMs === null && this.data) {
      this.firstDrawAt = performance.now();
      this.firstDrawMs = this.firstDrawAt - this.t0;
    }
  }

  private drawBox(it: StageItem, pal: Palette, text: boolean): void {
    const { ctx } = this;
    const sel = this.selected === it.key;
    const hov = this.hovered === it.key;
    if (it.kind === "fold") {
      // A stack: the layers it stands for, behind it.
      for (const off of [8, 4]) {
        ctx.fillStyle = pal.box;
        ctx.strokeStyle = pal.border;
        ctx.lineWidth = 1;
        ctx.beginPath();
        ctx.roundRect(it.x + off, it.y + off, it.w, it.h, 7);
        ctx.fill();
        ctx.stroke();
      }
    }
    ctx.fillStyle = it.kind === "foldhead" ? (this.theme === "dark" ? "#252b33" : "#eef1f5") : pal.box;
    ctx.strokeStyle = sel ? pal.accent : hov ? pal.fg : pal.border;
    ctx.lineWidth = sel ? 2.5 : 1.2;
    ctx.beginPath();
    ctx.roundRect(it.x, it.y, it.w, it.h, 7);
    ctx.fill();
    ctx.stroke();
    if (!sel && it.kind !== "foldhead" && typeof this.current === "number" && it.layers.includes(this.current)) {
      // The panel's layer: a dashed outline just outside the box.
      ctx.save();
      ctx.setLineDash([5, 3]);
      ctx.strokeStyle = pal.accent;
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      ctx.roundRect(it.x - 3, it.y - 3, it.w + 6, it.h + 6, 9);
      ctx.stroke();
      ctx.restore();
    }
    if (it.kind !== "foldhead") {
      // The strip: the layer's mixer colour (a fold: its block's layers, top to bottom).
      const stripe = it.stripe.length ? it.stripe : [""];
      const sh = it.h / stripe.length;
      ctx.save();
      ctx.beginPath();
      ctx.roundRect(it.x, it.y, 6, it.h, [7, 0, 0, 7]);
      ctx.clip();
      stripe.forEach((kind, i) => {
        ctx.fillStyle = kind ? groupColor(kind.split("+")[0], this.theme).bar : this.theme === "dark" ? "#7f8ea3" : "#5b6b80";
        ctx.fillRect(it.x, it.y + i * sh, 6, sh + 0.5);
      });
      ctx.restore();
    }
    if (!text) return;
    const rows = this.fittedRows(it);
    // A fold's header is one line, centred in its band.
    let y = it.kind === "foldhead" ? it.y + (it.h - TITLE_H) / 2 : it.y + PAD;
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    it.rows.forEach((r, i) => {
      const hgt = r.cls === "title" ? TITLE_H : ROW_H;
      let x = it.x + 14;
      if (r.group) {
        ctx.fillStyle = groupColor(r.group, this.theme).bar;
        ctx.fillRect(x, y + hgt / 2 - 4, 8, 8);
        x += 13;
      }
      ctx.font = r.cls === "title" ? `600 12.5px ${FONT}` : `11.5px ${FONT}`;
      ctx.fillStyle = r.cls === "title" ? pal.fg : pal.muted;
      ctx.fillText(rows[i], x, y + hgt / 2);
      y += hgt;
    });
  }

  /** The rows of a box cut to its width (with an ellipsis), measured once per layout. */
  private fittedRows(it: StageItem): string[] {
    const key = it.key;
    const hit = this.fitted.get(key);
    if (hit) return hit;
    const { ctx } = this;
    const out = it.rows.map((r) => {
      ctx.font = r.cls === "title" ? `600 12.5px ${FONT}` : `11.5px ${FONT}`;
      const room = it.w - 22 - (r.group ? 13 : 0);
      if (ctx.measureText(r.text).width <= room) return r.text;
      let lo = 0;
      let hi = r.text.length;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (ctx.measureText(`${r.text.slice(0, mid)}…`).width <= room) lo = mid;
        else hi = mid - 1;
      }
      return `${r.text.slice(0, lo)}…`;
    });
    this.fitted.set(key, out);
    return out;
  }

  /**
   * The graph as it is laid out (what is open included) as an SVG for the export, put in the
   * page out of sight while the export reads its styles; `remove` takes it out again.
   */
  exportSvg(): { svg: SVGSVGElement; width: number; height: number; remove: () => void } | null {
    const l = this.layout;
    if (!l) return null;
    const svg = stageSvg(l, this.theme);
    svg.style.position = "absolute";
    svg.style.left = "-100000px";
    this.el.appendChild(svg);
    return { svg, width: l.width + 16, height: l.height + 16, remove: () => svg.remove() };
  }

  // ---------------------------------------------------------------- test hook

  testState(): Record<string, unknown> {
    const l = this.layout;
    const { k } = this.cam;
    // In the page's coordinates (client pixels), where a test clicks.
    const r = this.el.getBoundingClientRect();
    const x = this.cam.x + r.left;
    const y = this.cam.y + r.top;
    const scr = (it: StageItem) => ({ x: x + it.x * k, y: y + it.y * k, w: it.w * k, h: it.h * k });
    return {
      drawn: this.firstDrawMs !== null,
      firstDrawMs: this.firstDrawMs,
      firstDrawAt: this.firstDrawAt,
      lastDrawMs: this.lastDrawMs,
      frames: this.frames,
      shifts: this.shifts,
      draws: this.frames - this.shifts,
      drawTimes: [...this.drawTimes],
      camera: { ...this.cam },
      selected: this.selected,
      current: this.current,
      items: (l?.items ?? []).map((it) => ({ key: it.key, kind: it.kind, title: it.rows[0]?.text ?? "", layers: it.layers, expanded: it.expanded, ...scr(it) })),
      edges: l?.edges.length ?? 0,
      longEdges: l ? longEdges(l) : 0,
      unbundled: this.data ? unbundledEdges(this.data) : 0,
      lane: l?.lane ? { ports: l.lane.ports.length, sources: l.lane.sources.length, x: x + l.lane.x * k, y1: y + l.lane.y1 * k, y2: y + l.lane.y2 * k } : null,
      gap: GAP,
    };
  }
}
