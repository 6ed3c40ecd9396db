// Per-CUDA-stream kernel timeline on a canvas. One lane per stream on a common time axis; wheel
// zooms around the cursor, drag pans, click selects a kernel. Drawing uses the LOD functions in
// lod.ts, so a frame stays cheap with 100,000 kernels.
import type { ExposedStretch, TimelineBucket, TimelineKernel } from "../api/types";
import { t } from "../i18n";
import { groupColor, type Theme } from "../model/colors";
import { fmtPct, fmtUs } from "../model/format";
import { capture, h } from "../ui/dom";
import { clampView, gapAt, hitTest, lowerBound, niceTicks, rasterize, visibleRange, zoomView, type Lane } from "./lod";

export interface BucketLane {
  stream: string;
  label: string;
  busyShare: number;
  buckets: TimelineBucket[];
}

export interface TimelineCallbacks {
  onKernelClick(k: TimelineKernel, lane: Lane): void;
  onKernelHover(k: TimelineKernel | null): void;
  onViewChange(t0: number, t1: number): void;
}

const GUTTER = 158;
const AXIS_H = 22;
const LANE_H = 30;
const BAR_H = 20;
const MIN_BAR_PX = 2;

interface Palette {
  bg: string;
  laneBg: string;
  idle: CanvasPattern | string;
  grid: string;
  text: string;
  muted: string;
  merged: string;
  unmapped: string;
  hl: string;
  hlStroke: string;
  sel: string;
  groups: Map<string, string>;
}

export class TimelineView {
  readonly el: HTMLDivElement;
  readonly canvas: HTMLCanvasElement;
  private ctx: CanvasRenderingContext2D;
  private tip: HTMLDivElement;
  private msg: HTMLDivElement;
  private lanes: Lane[] = [];
  private bucketLanes: BucketLane[] = [];
  private extent: [number, number] = [0, 1];
  private view: [number, number] = [0, 1];
  private colourIdx: Uint8Array[] = [];
  private colourNames: string[] = [];
  private groupOf: (k: TimelineKernel) => string | null = () => null;
  private highlight = new Set<number>();
  private selectedId: number | null = null;
  private pal: Palette | null = null;
  private theme: Theme = "light";
  private raf = 0;
  private dpr = 1;
  private width = 0;
  private height = 0;
  private byId = new Map<number, { lane: number; index: number }>();
  /** The report's marks: critical-path kernel ids and exposed communication (null: not drawn). */
  private marks: { path: Set<number>; exposed: ExposedStretch[] } | null = null;
  /** Visible-window busy time per lane from the last frame (for the gutter). */
  private winBusy: number[] = [];
  lastFrameMs = 0;

  constructor(private readonly cb: TimelineCallbacks) {
    this.el = h("div", { class: "adl-tl-body" });
    this.canvas = h("canvas", { "data-testid": "timeline-canvas", class: "adl-tl-canvas" });
    this.tip = h("div", { class: "adl-tip", "data-testid": "timeline-tooltip" });
    this.msg = h("div", { class: "adl-tl-msg", "data-testid": "timeline-message" });
    this.el.append(this.canvas, this.tip, this.msg);
    const ctx = this.canvas.getContext("2d", { alpha: false });
    if (!ctx) throw new Error("canvas 2d unavailable");
    this.ctx = ctx;
    this.bindEvents();
    const ro = new ResizeObserver(() => this.resize());
    ro.observe(this.el);
  }

  // ---------------------------------------------------------------- data

  setData(lanes: Lane[], bucketLanes: BucketLane[], extent: [number, number], groupOf: (k: TimelineKernel) => string | null, keepView = false): void {
    this.lanes = lanes;
    this.bucketLanes = bucketLanes;
    this.groupOf = groupOf;
    const lo = extent[0];
    const hi = extent[1] > extent[0] ? extent[1] : extent[0] + 1;
    this.extent = [lo, hi];
    this.byId.clear();
    lanes.forEach((l, li) => {
      for (let i = 0; i < l.ids.length; i++) this.byId.set(l.ids[i], { lane: li, index: i });
    });
    this.recolour();
    if (!keepView) {
      const pad = (hi - lo) * 0.01;
      this.view = [lo - pad, hi + pad];
    } else {
      this.view = clampView(this.view[0], this.view[1], lo - (hi - lo) * 0.05, hi + (hi - lo) * 0.05);
    }
    this.resize();
  }

  /** Recomputes kernel colour indices (after a theme change or new node data). */
  recolour(): void {
    const names: string[] = [];
    const idx = new Map<string, number>();
    const get = (g: string) => {
      let i = idx.get(g);
      if (i === undefined) {
        i = names.length;
        names.push(g);
        idx.set(g, i);
      }
      return i;
    };
    get("\u0000merged");
    get("\u0000unmapped");
    this.colourIdx = this.lanes.map((l) => {
      const a = new Uint8Array(l.kernels.length);
      for (let i = 0; i < l.kernels.length; i++) {
        const k = l.kernels[i];
        const g = k.node ? this.groupOf(k) ?? "\u0000merged" : "\u0000unmapped";
        a[i] = Math.min(255, get(g));
      }
      return a;
    });
    this.colourNames = names;
    this.pal = null;
    this.requestDraw();
  }

  /** A message over the lanes (no trace, no kernels), or null. */
  setMessage(msg: string | null): void {
    this.msg.textContent = msg ?? "";
    this.msg.style.display = msg ? "flex" : "none";
  }

  setTheme(theme: Theme): void {
    this.theme = theme;
    this.pal = null;
    this.requestDraw();
  }

  setHighlight(ids: Iterable<number>, selectedId: number | null = null): void {
    this.highlight = new Set(ids);
    this.selectedId = selectedId;
    this.requestDraw();
  }

  /** Draws the critical path (kernel ids) and exposed communication over the kernels; null clears them. */
  setMarks(marks: { path: Iterable<number>; exposed: ExposedStretch[] } | null): void {
    this.marks = marks ? { path: new Set(marks.path), exposed: marks.exposed } : null;
    this.requestDraw();
  }

  /** The marks drawn: path kernel ids found among the lanes' kernels, and exposed stretches. */
  marksShown(): { path: number[]; exposed: number } | null {
    if (!this.marks) return null;
    return { path: [...this.marks.path].filter((id) => this.byId.has(id)).sort((a, b) => a - b), exposed: this.marks.exposed.length };
  }

  highlighted(): number[] {
    return [...this.highlight];
  }

  kernelById(id: number): { kernel: TimelineKernel; lane: Lane } | null {
    const loc = this.byId.get(id);
    if (!loc) return null;
    const lane = this.lanes[loc.lane];
    return { kernel: lane.kernels[loc.index], lane };
  }

  getView(): [number, number] {
    return [this.view[0], this.view[1]];
  }

  setView(t0: number, t1: number): void {
    const [lo, hi] = this.extent;
    const pad = (hi - lo) * 0.05;
    this.view = clampView(t0, t1, lo - pad, hi + pad, 0.05);
    this.requestDraw();
    this.cb.onViewChange(this.view[0], this.view[1]);
  }

  resetView(): void {
    const [lo, hi] = this.extent;
    const pad = (hi - lo) * 0.01;
    this.setView(lo - pad, hi + pad);
  }

  /** Brings the highlighted kernels into view (zooming out or panning only when needed). */
  reveal(ids: number[]): void {
    let lo = Infinity;
    let hi = -Infinity;
    for (const id of ids) {
      const r = this.kernelById(id);
      if (!r) continue;
      lo = Math.min(lo, r.kernel.start_us);
      hi = Math.max(hi, r.kernel.start_us + r.kernel.duration_us);
    }
    if (lo === Infinity) return;
    const [v0, v1] = this.view;
    if (lo >= v0 && hi <= v1) return;
    const span = Math.max(v1 - v0, (hi - lo) * 1.6);
    const mid = (lo + hi) / 2;
    this.setView(mid - span / 2, mid + span / 2);
  }

  // ---------------------------------------------------------------- drawing

  private resize(): void {
    const r = this.el.getBoundingClientRect();
    this.dpr = window.devicePixelRatio || 1;
    const nl = Math.max(this.lanes.length, this.bucketLanes.length);
    const wantH = AXIS_H + Math.max(1, nl) * LANE_H + 6;
    this.width = Math.max(50, Math.floor(r.width));
    this.height = wantH;
    this.canvas.style.width = `${this.width}px`;
    this.canvas.style.height = `${this.height}px`;
    this.canvas.width = Math.floor(this.width * this.dpr);
    this.canvas.height = Math.floor(this.height * this.dpr);
    this.requestDraw();
  }

  requestDraw(): void {
    if (this.raf) return;
    this.raf = requestAnimationFrame(() => {
      this.raf = 0;
      this.draw();
    });
  }

  private palette(): Palette {
    if (this.pal) return this.pal;
    const cs = getComputedStyle(document.documentElement);
    const v = (n: string, d: string) => cs.getPropertyValue(n).trim() || d;
    const dark = this.theme === "dark";
    const laneBg = v("--tl-lane", dark ? "#1d2127" : "#f4f6f9");
    // Idle time is hatched so that gaps read as "nothing running" rather than as a colour.
    const pc = document.createElement("canvas");
    pc.width = 6;
    pc.height = 6;
    const p = pc.getContext("2d")!;
    p.fillStyle = laneBg;
    p.fillRect(0, 0, 6, 6);
    p.strokeStyle = v("--tl-hatch", dark ? "#2c323a" : "#e1e5eb");
    p.lineWidth = 1;
    p.beginPath();
    p.moveTo(0, 6);
    p.lineTo(6, 0);
    p.stroke();
    const idle = this.ctx.createPattern(pc, "repeat") ?? laneBg;
    const groups = new Map<string, string>();
    for (const g of this.colourNames) if (!g.startsWith("\u0000")) groups.set(g, groupColor(g, this.theme).bar);
    this.pal = {
      bg: v("--bg", dark ? "#15181c" : "#ffffff"),
      laneBg,
      idle,
      grid: v("--tl-grid", dark ? "#2f353d" : "#e3e7ec"),
      text: v("--fg", dark ? "#e6e9ed" : "#1d2329"),
      muted: v("--muted", dark ? "#98a2ad" : "#5f6b77"),
      merged: v("--tl-merged", dark ? "#7f8fa3" : "#6c7d92"),
      unmapped: v("--tl-unmapped", dark ? "#5b6470" : "#a5adb8"),
      hl: v("--hl", dark ? "#ffd54a" : "#ffb000"),
      hlStroke: v("--hl-stroke", dark ? "#fff3c4" : "#6b4a00"),
      sel: v("--accent", dark ? "#6ea8ff" : "#1a66e0"),
      groups,
    };
    return this.pal;
  }

  private draw(): void {
    const t0p = performance.now();
    const ctx = this.ctx;
    const P = this.palette();
    const W = this.width;
    const H = this.height;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.fillStyle = P.bg;
    ctx.fillRect(0, 0, W, H);
    const plotW = Math.max(10, W - GUTTER);
    const [v0, v1] = this.view;
    const ppu = plotW / (v1 - v0);
    ctx.font = "11px ui-monospace, SFMono-Regular, Menlo, Consolas, 'DejaVu Sans Mono', monospace";
    ctx.textBaseline = "middle";

    // Axis and grid.
    const { ticks } = niceTicks(v0, v1, Math.max(2, Math.floor(plotW / 110)));
    ctx.fillStyle = P.muted;
    ctx.strokeStyle = P.grid;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (const tk of ticks) {
      const x = Math.round(GUTTER + (tk - v0) * ppu) + 0.5;
      ctx.moveTo(x, AXIS_H - 5);
      ctx.lineTo(x, H);
    }
    ctx.stroke();
    ctx.textAlign = "center";
    for (const tk of ticks) {
      const x = GUTTER + (tk - v0) * ppu;
      const lbl = fmtUs(tk);
      const half = (lbl.length * 6.7) / 2;
      if (x - half < GUTTER + 2 || x + half > W - 2) continue;
      ctx.fillText(lbl, x, AXIS_H / 2);
    }
    ctx.textAlign = "left";

    const nl = this.lanes.length;
    this.winBusy = new Array(nl).fill(0);
    ctx.save();
    ctx.beginPath();
    ctx.rect(GUTTER, AXIS_H, plotW, H - AXIS_H);
    ctx.clip();
    for (let li = 0; li < nl; li++) {
      const lane = this.lanes[li];
      const y = AXIS_H + li * LANE_H + (LANE_H - BAR_H) / 2;
      ctx.fillStyle = P.idle;
      ctx.fillRect(GUTTER, y, plotW, BAR_H);
      const r = rasterize(lane, v0, ppu, plotW, MIN_BAR_PX);
      this.winBusy[li] = r.busyUs;
      // Merged sub-pixel kernels: per-pixel coverage, drawn in a few alpha levels.
      const cov = r.coverage;
      const LEVELS = 6;
      for (let lv = 1; lv <= LEVELS; lv++) {
        const lo = (lv - 1) / LEVELS;
        const hi = lv / LEVELS;
        ctx.globalAlpha = 0.3 + 0.7 * hi;
        ctx.fillStyle = P.merged;
        let runStart = -1;
        for (let x = 0; x <= cov.length; x++) {
          const c = x < cov.length ? cov[x] : 0;
          const inLevel = c > lo && c <= hi;
          if (inLevel && runStart < 0) runStart = x;
          else if (!inLevel && runStart >= 0) {
            ctx.fillRect(GUTTER + runStart, y, x - runStart, BAR_H);
            runStart = -1;
          }
        }
      }
      ctx.globalAlpha = 1;
      // Individual bars.
      const ci = this.colourIdx[li];
      let lastFill = "";
      for (const i of r.bars) {
        const x0 = GUTTER + (lane.starts[i] - v0) * ppu;
        const w = (lane.ends[i] - lane.starts[i]) * ppu;
        const name = this.colourNames[ci[i]];
        const fill = name === "\u0000unmapped" ? P.unmapped : name === "\u0000merged" ? P.merged : P.groups.get(name) ?? P.merged;
        if (fill !== lastFill) {
          ctx.fillStyle = fill;
          lastFill = fill;
        }
        ctx.fillRect(x0, y, Math.max(1, w - (w > 4 ? 1 : 0)), BAR_H);
      }
      // Names inside wide bars.
      ctx.fillStyle = "#ffffff";
      for (const i of r.bars) {
        const w = (lane.ends[i] - lane.starts[i]) * ppu;
        if (w < 46) continue;
        const x0 = Math.max(GUTTER, GUTTER + (lane.starts[i] - v0) * ppu);
        const x1 = Math.min(GUTTER + plotW, GUTTER + (lane.ends[i] - v0) * ppu);
        const avail = x1 - x0 - 6;
        if (avail < 30) continue;
        const nm = lane.kernels[i].kernel;
        const maxc = Math.floor(avail / 6.7);
        ctx.fillText(nm.length > maxc ? `${nm.slice(0, Math.max(1, maxc - 1))}…` : nm, x0 + 3, y + BAR_H / 2 + 0.5);
      }
      // Highlighted kernels (the selected / hovered node's) always at least 3 px wide.
      if (this.highlight.size) {
        const [i0, i1] = visibleRange(lane, v0, v1);
        for (let i = i0; i < i1; i++) {
          const id = lane.ids[i];
          if (!this.highlight.has(id)) continue;
          const x0 = GUTTER + (lane.starts[i] - v0) * ppu;
          const w = Math.max(3, (lane.ends[i] - lane.starts[i]) * ppu);
          ctx.fillStyle = P.hl;
          ctx.fillRect(x0, y - 3, w, BAR_H + 6);
          ctx.strokeStyle = id === this.selectedId ? P.sel : P.hlStroke;
          ctx.lineWidth = id === this.selectedId ? 2 : 1;
          ctx.strokeRect(x0 + 0.5, y - 2.5, Math.max(2, w - 1), BAR_H + 5);
        }
      }
    }
    if (this.marks) this.drawMarks(ppu, v0, v1);
    // Server-merged lanes (buckets).
    for (let bi = 0; bi < this.bucketLanes.length; bi++) {
      const bl = this.bucketLanes[bi];
      const li = nl + bi;
      const y = AXIS_H + li * LANE_H + (LANE_H - BAR_H) / 2;
      ctx.fillStyle = P.idle;
      ctx.fillRect(GUTTER, y, plotW, BAR_H);
      ctx.fillStyle = P.merged;
      for (const b of bl.buckets) {
        if (b.end_us < v0 || b.start_us > v1) continue;
        const x0 = GUTTER + (b.start_us - v0) * ppu;
        const w = Math.max(1, (b.end_us - b.start_us) * ppu);
        const c = b.end_us > b.start_us ? Math.min(1, b.busy_us / (b.end_us - b.start_us)) : 1;
        ctx.globalAlpha = 0.25 + 0.75 * c;
        ctx.fillRect(x0, y, w, BAR_H);
      }
      ctx.globalAlpha = 1;
    }
    ctx.restore();

    // Gutter: stream label and busy shares (overall and in the current window).
    ctx.fillStyle = P.bg;
    ctx.fillRect(0, 0, GUTTER - 1, H);
    ctx.strokeStyle = P.grid;
    ctx.beginPath();
    ctx.moveTo(GUTTER - 0.5, 0);
    ctx.lineTo(GUTTER - 0.5, H);
    ctx.stroke();
    const span = v1 - v0;
    const all: { label: string; share: number; win: number | null }[] = [
      ...this.lanes.map((l, i) => ({ label: l.label, share: l.busyShare, win: span > 0 ? this.winBusy[i] / span : null })),
      ...this.bucketLanes.map((b) => ({ label: b.label, share: b.busyShare, win: null })),
    ];
    all.forEach((l, i) => {
      const y = AXIS_H + i * LANE_H;
      ctx.fillStyle = P.text;
      const lab = l.label.length > 22 ? `${l.label.slice(0, 21)}…` : l.label;
      ctx.fillText(lab, 6, y + 9);
      ctx.fillStyle = P.muted;
      const busy = t("laneBusy", { pct: fmtPct(l.share, 0) });
      ctx.fillText(l.win !== null ? t("laneBusyView", { busy, win: fmtPct(Math.min(1, l.win), 0) }) : busy, 6, y + 22);
    });
    this.lastFrameMs = performance.now() - t0p;
  }

  /** The critical path as outlined kernels, exposed communication as a hatched band under its kernel. */
  private drawMarks(ppu: number, v0: number, v1: number): void {
    const ctx = this.ctx;
    const m = this.marks!;
    const colour = this.theme === "dark" ? "#ff6b9a" : "#e0245e";
    const laneOf = new Map(this.lanes.map((l, i) => [l.stream, i]));
    ctx.strokeStyle = colour;
    ctx.lineWidth = 2;
    for (const id of m.path) {
      const loc = this.byId.get(id);
      if (!loc) continue;
      const lane = this.lanes[loc.lane];
      const s0 = lane.starts[loc.index];
      const e0 = lane.ends[loc.index];
      if (e0 < v0 || s0 > v1) continue;
      const y = AXIS_H + loc.lane * LANE_H + (LANE_H - BAR_H) / 2;
      const x0 = GUTTER + (s0 - v0) * ppu;
      const w = Math.max(3, (e0 - s0) * ppu);
      ctx.strokeRect(x0 + 1, y + 1, Math.max(1, w - 2), BAR_H - 2);
    }
    ctx.fillStyle = colour;
    for (const x of m.exposed) {
      const li = laneOf.get(x.stream);
      if (li === undefined || x.end_us < v0 || x.start_us > v1) continue;
      const y = AXIS_H + li * LANE_H + (LANE_H - BAR_H) / 2 + BAR_H + 1;
      const x0 = GUTTER + (x.start_us - v0) * ppu;
      const w = Math.max(2, (x.end_us - x.start_us) * ppu);
      ctx.globalAlpha = 0.85;
      ctx.fillRect(x0, y, w, 3);
      ctx.globalAlpha = 1;
    }
  }

  // ---------------------------------------------------------------- interaction

  private timeAt(x: number): number {
    const plotW = Math.max(10, this.width - GUTTER);
    return this.view[0] + ((x - GUTTER) / plotW) * (this.view[1] - this.view[0]);
  }

  private laneAt(y: number): number {
    if (y < AXIS_H) return -1;
    const li = Math.floor((y - AXIS_H) / LANE_H);
    return li >= 0 && li < this.lanes.length ? li : -1;
  }

  /** The kernel under a canvas point (client offsets), for clicks and the test hook. */
  kernelAt(x: number, y: number): { kernel: TimelineKernel; lane: Lane } | null {
    const li = this.laneAt(y);
    if (li < 0 || x < GUTTER) return null;
    const lane = this.lanes[li];
    const plotW = Math.max(10, this.width - GUTTER);
    const usPerPx = (this.view[1] - this.view[0]) / plotW;
    const i = hitTest(lane, this.timeAt(x), 3 * usPerPx);
    return i >= 0 ? { kernel: lane.kernels[i], lane } : null;
  }

  /** Canvas coordinates of a kernel's centre (test hook), or null when not in view. */
  pointOf(id: number): { x: number; y: number } | null {
    const loc = this.byId.get(id);
    if (!loc) return null;
    const lane = this.lanes[loc.lane];
    const mid = (lane.starts[loc.index] + lane.ends[loc.index]) / 2;
    if (mid < this.view[0] || mid > this.view[1]) return null;
    const plotW = Math.max(10, this.width - GUTTER);
    return { x: GUTTER + ((mid - this.view[0]) / (this.view[1] - this.view[0])) * plotW, y: AXIS_H + loc.lane * LANE_H + LANE_H / 2 };
  }

  private showTip(x: number, y: number): void {
    const li = this.laneAt(y);
    if (li < 0 || x < GUTTER) {
      this.tip.style.display = "none";
      return;
    }
    const lane = this.lanes[li];
    const hit = this.kernelAt(x, y);
    const lines: string[] = [];
    if (hit) {
      const k = hit.kernel;
      lines.push(k.name || k.kernel);
      lines.push(`${fmtUs(k.duration_us)} · ${t("start")} ${fmtUs(k.start_us)} · ${lane.label}`);
      lines.push(k.node ? `%${k.node}${k.layer !== null && k.layer !== undefined ? ` · ${t("layerTitle", { n: k.layer })}` : ""}` : t("unmappedKernel"));
      this.cb.onKernelHover(k);
    } else {
      this.cb.onKernelHover(null);
      const tm = this.timeAt(x);
      const plotW = Math.max(10, this.width - GUTTER);
      const usPerPx = (this.view[1] - this.view[0]) / plotW;
      const [i0, i1] = visibleRange(lane, tm - usPerPx / 2, tm + usPerPx / 2);
      let n = 0;
      let busy = 0;
      for (let i = i0; i < i1; i++) {
        const s = Math.max(lane.starts[i], tm - usPerPx / 2);
        const e = Math.min(lane.ends[i], tm + usPerPx / 2);
        if (e > s) {
          n++;
          busy += e - s;
        }
      }
      if (n > 1) lines.push(t("kernelsMerged", { n, busy: fmtUs(busy) }));
      else {
        const g = gapAt(lane, tm);
        if (g) lines.push(t("idleGap", { us: fmtUs(g.end - g.start) }));
      }
    }
    if (!lines.length) {
      this.tip.style.display = "none";
      return;
    }
    this.tip.textContent = "";
    for (const l of lines) {
      const d = document.createElement("div");
      d.textContent = l;
      this.tip.appendChild(d);
    }
    this.tip.style.display = "block";
    const tw = this.tip.offsetWidth;
    const left = x + 14 + tw > this.width ? Math.max(0, x - tw - 10) : x + 14;
    this.tip.style.left = `${left}px`;
    this.tip.style.top = `${y + 14}px`;
  }

  private bindEvents(): void {
    const c = this.canvas;
    let drag: { x: number; v0: number; v1: number; moved: boolean; id: number } | null = null;
    c.addEventListener(
      "wheel",
      (ev) => {
        ev.preventDefault();
        const x = ev.offsetX;
        if (Math.abs(ev.deltaX) > Math.abs(ev.deltaY) || ev.shiftKey) {
          const d = Math.abs(ev.deltaX) > Math.abs(ev.deltaY) ? ev.deltaX : ev.deltaY;
          const plotW = Math.max(10, this.width - GUTTER);
          const du = (d / plotW) * (this.view[1] - this.view[0]);
          this.setView(this.view[0] + du, this.view[1] + du);
          return;
        }
        const unit = ev.deltaMode === 1 ? 16 : ev.deltaMode === 2 ? 400 : 1;
        const f = Math.exp((-ev.deltaY * unit) / 300);
        const at = x < GUTTER ? (this.view[0] + this.view[1]) / 2 : this.timeAt(x);
        const [a, b] = zoomView(this.view[0], this.view[1], at, f);
        this.setView(a, b);
      },
      { passive: false },
    );
    c.addEventListener("pointerdown", (ev) => {
      if (ev.button !== 0) return;
      drag = { x: ev.clientX, v0: this.view[0], v1: this.view[1], moved: false, id: ev.pointerId };
    });
    c.addEventListener("pointermove", (ev) => {
      if (drag && drag.id === ev.pointerId) {
        const dx = ev.clientX - drag.x;
        if (!drag.moved && Math.abs(dx) > 3) {
          drag.moved = true;
          capture(c, ev.pointerId);
          c.classList.add("panning");
          this.tip.style.display = "none";
        }
        if (drag.moved) {
          const plotW = Math.max(10, this.width - GUTTER);
          const du = (-dx / plotW) * (drag.v1 - drag.v0);
          this.setView(drag.v0 + du, drag.v1 + du);
        }
        return;
      }
      this.showTip(ev.offsetX, ev.offsetY);
    });
    const end = (ev: PointerEvent) => {
      if (!drag || drag.id !== ev.pointerId) return;
      const moved = drag.moved;
      drag = null;
      c.classList.remove("panning");
      if (c.hasPointerCapture(ev.pointerId)) c.releasePointerCapture(ev.pointerId);
      if (!moved && ev.type === "pointerup") {
        const hit = this.kernelAt(ev.offsetX, ev.offsetY);
        if (hit) this.cb.onKernelClick(hit.kernel, hit.lane);
      }
    };
    c.addEventListener("pointerup", end);
    c.addEventListener("pointercancel", end);
    c.addEventListener("pointerleave", () => {
      this.tip.style.display = "none";
      this.cb.onKernelHover(null);
    });
    c.addEventListener("dblclick", () => this.resetView());
  }

  /** Number of kernels held (test hook / status). */
  kernelCount(): number {
    let n = 0;
    for (const l of this.lanes) n += l.ids.length;
    return n;
  }

  laneSummaries(): { stream: string; label: string; busyShare: number; kernels: number }[] {
    return [
      ...this.lanes.map((l) => ({ stream: l.stream, label: l.label, busyShare: l.busyShare, kernels: l.ids.length })),
      ...this.bucketLanes.map((b) => ({ stream: b.stream, label: b.label, busyShare: b.busyShare, kernels: -1 })),
    ];
  }
}

export { lowerBound };
