// The model overview: per-layer GPU time as bars stacked by group (node counts without a trace),
// the layer kinds marked under the bars, the current layer outlined; clicking a bar opens that
// layer. Beside it, the per-group totals of the current (or hovered) layer.
import type { Api } from "../api/client";
import type { LayerSummary, OverviewResponse, RunInfo, StageGraphResponse } from "../api/types";
import type { ExportPart } from "../graph/export";
import { nodesText, t } from "../i18n";
import { groupColor, outsideColor, type Theme } from "../model/colors";
import { fmtPct, fmtUs } from "../model/format";
import { inputCaption } from "../model/labels";
import { changedAny, shownRun, type PanelState, type Store } from "../state/store";
import { activity } from "../ui/activity";
import { clear, h, s, text } from "../ui/dom";
import { storageGet, storageSet } from "../ui/storage";
import type { PanelView, ViewExport } from "../views/view";
import { StageGraph } from "./stage_graph";
import type { StageItem } from "./stage_model";
import { chartGeom, groupTotals, overviewModel, UNMAPPED, type ChartGeom, type OverviewMetric, type OverviewModel, type Outside } from "./model";

export interface OverviewCallbacks {
  onError(e: unknown): void;
}

const KIND_LIGHT: Record<string, string> = { dense: "#8a96a3", moe: "#d9730d", mamba: "#8a4fd1", ssm: "#8a4fd1", gdn: "#c2407a", hybrid: "#2a9d8f" };
const KIND_DARK: Record<string, string> = { dense: "#aab4bf", moe: "#f0a04b", mamba: "#b88af0", ssm: "#b88af0", gdn: "#ee7fb0", hybrid: "#4fc2b3" };

export function kindColor(kind: string, theme: Theme): string {
  const p = theme === "dark" ? KIND_DARK : KIND_LIGHT;
  return p[kind] ?? (theme === "dark" ? "#98a4b3" : "#7b8794");
}

function segColor(group: string, theme: Theme): string {
  if (group === UNMAPPED) return theme === "dark" ? "#59616c" : "#b9c0c8";
  return groupColor(group, theme).bar;
}


/** How the overview shows the stage: per-layer bars, or the whole-stage graph. */
export type OverviewMode = "bars" | "graph";
const MODE_KEY = "adLayer.overviewMode";

export class OverviewView implements PanelView {
  readonly el: HTMLDivElement;
  private chartEl: HTMLDivElement;
  private svg: SVGSVGElement;
  private legendEl: HTMLDivElement;
  private sideEl: HTMLDivElement;
  private titleEl: HTMLSpanElement;
  private metricSeg: HTMLDivElement;
  private modeSeg: HTMLDivElement;
  private hintEl: HTMLElement;
  private mode: OverviewMode = storageGet(MODE_KEY) === "graph" ? "graph" : "bars";
  private graph: StageGraph;
  private graphRes: StageGraphResponse | null = null;
  /** The (run, stage) the graph shows or is loading. */
  private graphFor = "";
  private graphSeq = 0;
  /** The box selected in the graph. */
  private picked: StageItem | null = null;
  graphLoading = false;
  private theme: Theme = "light";
  private run: RunInfo | null = null;
  private stage = 0;
  private current: number | "all" = 0;
  /** The layer whose totals the side shows instead of the current one, or "outside" for the bar of the time outside the layers. */
  private hovered: number | "outside" | null = null;
  private res: OverviewResponse | null = null;
  private model: OverviewModel | null = null;
  private metric: OverviewMetric | null = null;
  private seq = 0;
  private size = { w: 0, h: 0 };
  loading = false;

  constructor(private readonly api: Api, private readonly store: Store<PanelState>, private readonly cb: OverviewCallbacks) {
    this.el = h("div", { class: "adl-view adl-overview", "data-testid": "overview-view" });
    const bar = h("div", { class: "adl-vbar" });
    this.titleEl = h("span", { class: "title", "data-testid": "overview-title" });
    this.metricSeg = h("div", { class: "seg", role: "group", "data-testid": "overview-metric" });
    for (const [m, key] of [["time", "metricTime"], ["nodes", "metricNodes"]] as const) {
      const b = h("button", { type: "button", "data-metric": m, "data-testid": `overview-metric-${m}` });
      b.textContent = t(key);
      b.addEventListener("click", () => {
        this.metric = m;
        this.rebuild();
      });
      this.metricSeg.appendChild(b);
    }
    this.legendEl = h("div", { class: "adl-olegend", "data-testid": "overview-legend" });
    this.modeSeg = h("div", { class: "seg", role: "group", "data-testid": "overview-mode", title: t("modeTitle") });
    for (const [m, key] of [["bars", "modeBars"], ["graph", "modeGraph"]] as const) {
      const b = h("button", { type: "button", "data-mode": m, "data-testid": `overview-mode-${m}` });
      b.textContent = t(key);
      b.addEventListener("click", () => this.setMode(m));
      this.modeSeg.appendChild(b);
    }
    bar.append(this.titleEl, this.modeSeg, this.metricSeg, this.legendEl);
    this.el.appendChild(bar);
    const main = h("div", { class: "adl-vmain" });
    this.chartEl = h("div", { class: "adl-ochart" });
    this.svg = s("svg", { class: "adl-osvg", "data-testid": "overview-chart", role: "img", "aria-label": t("overview") });
    this.chartEl.appendChild(this.svg);
    this.graph = new StageGraph({
      onSelect: (it) => {
        this.picked = it;
        this.renderSide();
      },
      onOpenLayer: (layer) => this.openLayer(layer),
    });
    this.chartEl.appendChild(this.graph.el);
    this.hintEl = text("div", t("overviewHint"), { class: "hint" });
    this.chartEl.appendChild(this.hintEl);
    this.sideEl = h("div", { class: "adl-side adl-oside", "data-testid": "overview-side" });
    main.append(this.chartEl, this.sideEl);
    this.el.appendChild(main);
    const ro = new ResizeObserver(() => {
      const r = this.svg.getBoundingClientRect();
      if (Math.abs(r.width - this.size.w) > 1 || Math.abs(r.height - this.size.h) > 1) this.draw();
    });
    ro.observe(this.chartEl);
    this.theme = store.get().theme;
    this.graph.setTheme(this.theme);
    this.showMode();
  }

  /** Bars or graph: shown, remembered, and the graph loaded when first shown. */
  private setMode(m: OverviewMode): void {
    if (m === this.mode) return;
    this.mode = m;
    storageSet(MODE_KEY, m);
    this.showMode();
    const st = this.store.get();
    const run = shownRun(st);
    if (m === "graph" && run) void activity.track(this.openGraph(run, st.stage));
    else if (m === "bars") this.draw();
    this.renderSide();
  }

  private showMode(): void {
    const graph = this.mode === "graph";
    for (const b of Array.from(this.modeSeg.children) as HTMLButtonElement[]) b.setAttribute("aria-pressed", String(b.dataset.mode === this.mode));
    this.svg.style.display = graph ? "none" : "";
    this.graph.el.style.display = graph ? "" : "none";
    this.metricSeg.style.display = graph ? "none" : "";
    this.hintEl.textContent = t(graph ? "stageGraphHint" : "overviewHint");
    this.el.dataset.mode = this.mode;
  }

  /** Loads the whole-stage graph of (run, stage), unless it shows it already. */
  private async openGraph(run: RunInfo, stage: number): Promise<void> {
    const key = `${run.run}\u0000${stage}`;
    if (key === this.graphFor) return;
    this.graphFor = key;
    const seq = ++this.graphSeq;
    const t0 = performance.now();
    this.graphLoading = true;
    this.picked = null;
    this.graph.clear();
    let res: StageGraphResponse;
    try {
      res = await this.api.stageGraph(run.run, stage);
    } catch (e) {
      if (seq !== this.graphSeq) return;
      this.graphLoading = false;
      this.graphFor = "";
      this.cb.onError(e);
      return;
    }
    if (seq !== this.graphSeq) return;
    this.graphRes = res;
    this.graph.setData(res, t0);
    this.graphLoading = false;
    this.renderSide();
  }

  /** Follows the store: the theme; while shown, the run, stage and layer (outlined). */
  follow(st: Readonly<PanelState>, changed: ReadonlySet<keyof PanelState>): void {
    if (changed.has("theme")) this.setTheme(st.theme);
    if (st.view !== "overview" || !changedAny(changed, "view", "run", "runs", "stage", "layer")) return;
    const run = shownRun(st);
    if (run) void activity.track(this.open(run, st.stage, st.layer));
    if (run && this.mode === "graph") void activity.track(this.openGraph(run, st.stage));
  }

  /** Opens a layer in the layer view. */
  private openLayer(layer: number): void {
    this.store.set({ layer, selected: null, depth: null, stageShown: null, view: "layer" });
  }

  private setTheme(th: Theme): void {
    this.theme = th;
    this.graph.setTheme(th);
    this.draw();
    this.renderSide();
    this.renderLegend();
  }

  /** Shows the overview of (run, stage) with `current` outlined. */
  private async open(run: RunInfo, stage: number, current: number | "all"): Promise<void> {
    this.current = current;
    this.graph.setCurrent(current);
    if (this.run?.run === run.run && this.stage === stage && this.res) {
      this.draw();
      this.renderSide();
      return;
    }
    this.run = run;
    this.stage = stage;
    const seq = ++this.seq;
    this.loading = true;
    let res: OverviewResponse;
    try {
      res = await this.api.overview(run.run, stage);
    } catch (e) {
      if (seq !== this.seq) return;
      this.loading = false;
      this.cb.onError(e);
      return;
    }
    if (seq !== this.seq) return;
    this.res = res;
    this.rebuild();
    this.loading = false;
  }

  private rebuild(): void {
    const hasTime = (this.res?.layers ?? []).some((l) => (l.gpu_time_us ?? 0) > 0);
    const metric: OverviewMetric = hasTime ? this.metric ?? "time" : "nodes";
    this.model = overviewModel(this.res, metric);
    for (const b of Array.from(this.metricSeg.children) as HTMLButtonElement[]) {
      b.setAttribute("aria-pressed", String(b.dataset.metric === metric));
      if (b.dataset.metric === "time") {
        b.disabled = !hasTime;
        b.title = hasTime ? "" : t("needsTrace");
      }
    }
    const stage = this.run?.stages.find((x) => x.index === this.stage);
    this.titleEl.textContent = `${t("overview")} · ${this.run?.run ?? ""} · ${stage ? stage.transform : this.stage}`;
    this.renderLegend();
    this.draw();
    this.renderSide();
  }

  private renderLegend(): void {
    const el = this.legendEl;
    clear(el);
    const m = this.model;
    if (!m) return;
    for (const g of m.groups) {
      const sw = h("span", { class: "sw" });
      sw.style.background = segColor(g, this.theme);
      el.appendChild(h("span", { class: "item" }, sw, g));
    }
    if (m.outside) {
      const sw = h("span", { class: "sw" });
      sw.style.background = outsideColor(this.theme);
      el.appendChild(h("span", { class: "item", "data-testid": "overview-legend-outside" }, sw, t("outsideLayers")));
    }
    el.appendChild(h("span", { class: "sep" }));
    for (const k of m.kinds) {
      const sw = h("span", { class: "kind" });
      sw.style.background = kindColor(k, this.theme);
      el.appendChild(h("span", { class: "item", "data-kind": k }, sw, k));
    }
  }

  private fmt(v: number): string {
    return this.model?.metric === "time" ? fmtUs(v) : String(Math.round(v));
  }

  private draw(): void {
    const svg = this.svg;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const m = this.model;
    const r = svg.getBoundingClientRect();
    this.size = { w: r.width, h: r.height };
    if (!m || !m.bars.length || r.width < 20 || this.mode === "graph") return;
    const W = r.width;
    const H = r.height;
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    svg.setAttribute("width", String(Math.round(W)));
    svg.setAttribute("height", String(Math.round(H)));
    // The time outside the layers is a bar of its own after the layers', one slot apart.
    const slots = m.bars.length + (m.outside ? 2 : 0);
    const g = chartGeom(slots, m.max, W, H);
    const fg = this.theme === "dark" ? "#98a2ad" : "#5f6b77";
    const grid = this.theme === "dark" ? "#2f353d" : "#e3e7ec";
    const axis = s("g", { class: "axis" });
    for (const tv of g.ticks) {
      const y = g.y0 + g.h - g.scale(tv);
      axis.appendChild(s("line", { x1: g.x0, x2: g.x0 + g.plotW, y1: y, y2: y, stroke: grid, "stroke-width": 1 }));
      const lt = s("text", { x: g.x0 - 6, y: y + 4, "text-anchor": "end", fill: fg, "font-size": 11 });
      lt.textContent = this.fmt(tv);
      axis.appendChild(lt);
    }
    const ylx = Math.max(12, g.x0 - 60);
    const yl = s("text", { x: ylx, y: g.y0 + g.h / 2, fill: fg, "font-size": 11, "text-anchor": "middle", transform: `rotate(-90 ${ylx} ${g.y0 + g.h / 2})` });
    yl.textContent = m.metric === "time" ? t("axisTime") : t("axisNodes");
    axis.appendChild(yl);
    const xl = s("text", { x: g.x0 + g.plotW / 2, y: H - 4, fill: fg, "font-size": 11, "text-anchor": "middle" });
    xl.textContent = t("layer");
    axis.appendChild(xl);
    svg.appendChild(axis);
    const labelEvery = Math.max(1, Math.ceil(24 / (g.barW + g.gap)));
    const bars = s("g", { class: "bars" });
    const outX = m.outside ? g.barX(m.bars.length + 1) + g.barW / 2 : null;
    m.bars.forEach((b, i) => {
      const x = g.barX(i);
      const cur = this.current === b.layer;
      const bg = s("g", { class: `obar${cur ? " cur" : ""}`, "data-testid": "overview-bar", "data-layer": b.layer, "data-kind": b.kind, tabindex: 0, role: "button" });
      const same = this.res?.layers.find((l) => l.layer === b.layer)?.same_as;
      if (typeof same === "number") bg.setAttribute("data-same-as", String(same));
      const tip = s("title");
      tip.textContent = [
        `${t("layerOption", { n: b.layer, kind: b.kind })} · ${this.fmt(b.total)}${typeof same === "number" ? ` · ${t("sameAs", { n: same })}` : ""}`,
        ...[...b.segments].reverse().map((sg) => `${sg.group}: ${this.fmt(sg.value)}${b.total > 0 ? ` (${fmtPct(sg.value / b.total)})` : ""}`),
      ].join("\n");
      bg.appendChild(tip);
      bg.appendChild(s("rect", { class: "hit", x: x - g.gap / 2, y: g.y0, width: g.barW + g.gap, height: g.h + 14, fill: "transparent" }));
      for (const sg of b.segments) {
        const y1 = g.y0 + g.h - g.scale(sg.start);
        const hh = g.scale(sg.value);
        bg.appendChild(s("rect", { class: "seg", x, y: y1 - hh, width: g.barW, height: Math.max(0, hh), fill: segColor(sg.group, this.theme), "data-group": sg.group }));
      }
      if (cur) {
        const top = g.y0 + g.h - g.scale(b.total);
        bg.appendChild(s("rect", { class: "curbox", x: x - 2, y: top - 2, width: g.barW + 4, height: g.scale(b.total) + 4, fill: "none", stroke: this.theme === "dark" ? "#8cbcff" : "#1a66e0", "stroke-width": 2, rx: 2 }));
      }
      bg.appendChild(s("rect", { class: "kindmark", x, y: g.y0 + g.h + 3, width: g.barW, height: 6, rx: 1.5, fill: kindColor(b.kind, this.theme) }));
      // A layer number never runs into the label of the bar outside the layers.
      const clear = outX === null || Math.abs(x + g.barW / 2 - outX) > 34;
      if ((i % labelEvery === 0 || cur) && clear) {
        const lt = s("text", { x: x + g.barW / 2, y: g.y0 + g.h + 22, "text-anchor": "middle", fill: cur ? (this.theme === "dark" ? "#e6e9ed" : "#1d2329") : fg, "font-size": 10.5, "font-weight": cur ? 700 : 400 });
        lt.textContent = String(b.layer);
        bg.appendChild(lt);
      }
      bg.addEventListener("click", () => this.openLayer(b.layer));
      bg.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter" || ev.key === " ") {
          ev.preventDefault();
          this.openLayer(b.layer);
        }
      });
      bg.addEventListener("mouseenter", () => {
        this.hovered = b.layer;
        this.renderSide();
      });
      bg.addEventListener("mouseleave", () => {
        this.hovered = null;
        this.renderSide();
      });
      bars.appendChild(bg);
    });
    if (m.outside && outX !== null) bars.appendChild(this.outsideBar(m.outside, g.barX(m.bars.length + 1), g));
    svg.appendChild(bars);
  }

  /** The bar of the GPU time outside every layer: its tooltip and, on hover, its figures beside. */
  private outsideBar(o: Outside, x: number, g: ChartGeom): SVGGElement {
    const bg = s("g", { class: "obar outside", "data-testid": "overview-outside", tabindex: 0 });
    const tip = s("title");
    tip.textContent = `${t("outsideLayers")} · ${fmtUs(o.us)} (${t("shareOfGpuTime", { pct: fmtPct(o.share) })})\n${t("outsideWhat")}`;
    bg.appendChild(tip);
    bg.appendChild(s("rect", { class: "hit", x: x - g.gap / 2, y: g.y0, width: g.barW + g.gap, height: g.h + 14, fill: "transparent" }));
    const hh = g.scale(o.us);
    bg.appendChild(s("rect", { class: "seg", x, y: g.y0 + g.h - hh, width: g.barW, height: Math.max(0, hh), fill: outsideColor(this.theme) }));
    const fg = this.theme === "dark" ? "#98a2ad" : "#5f6b77";
    const lt = s("text", { x: x + g.barW / 2, y: g.y0 + g.h + 22, "text-anchor": "middle", fill: fg, "font-size": 10.5, "font-style": "italic" });
    lt.textContent = t("outsideBar");
    bg.appendChild(lt);
    // Its share of the stage's GPU time, always in sight above it (right-aligned: the chart's edge).
    const val = s("text", { class: "oval", x: x + g.barW, y: g.y0 + g.h - hh - 5, "text-anchor": "end", fill: fg, "font-size": 10.5 });
    val.textContent = fmtPct(o.share);
    bg.appendChild(val);
    const show = (on: boolean) => {
      this.hovered = on ? "outside" : null;
      this.renderSide();
    };
    bg.addEventListener("mouseenter", () => show(true));
    bg.addEventListener("mouseleave", () => show(false));
    bg.addEventListener("focus", () => show(true));
    bg.addEventListener("blur", () => show(false));
    return bg;
  }

  private renderSide(): void {
    const el = this.sideEl;
    clear(el);
    const res = this.res;
    if (!res) return;
    const pick = this.mode === "graph" && this.picked ? (this.picked.layers.length ? this.picked.layers[0] : "outside") : null;
    const shown = this.hovered ?? pick ?? (this.current === "all" ? null : this.current);
    const L: LayerSummary | undefined = res.layers.find((l) => l.layer === shown);
    const sec = h("div", { class: "sec" });
    const o = this.model?.outside ?? null;
    if (shown === "outside" && o) {
      sec.appendChild(text("h3", t("outsideLayers")));
      sec.appendChild(text("div", `${fmtUs(o.us)} · ${t("shareOfGpuTime", { pct: fmtPct(o.share) })}`, { class: "big", "data-testid": "overview-side-outside" }));
      const dl = h("dl", { class: "kv" });
      dl.append(text("dt", t("nodeCount")), text("dd", String(res.none_node_count)));
      const kernels = this.run?.default_stage === this.stage ? this.run?.trace?.outside_kernel_count : null;
      if (typeof kernels === "number") dl.append(text("dt", t("kernelCount")), text("dd", String(kernels)));
      sec.appendChild(dl);
      sec.appendChild(text("p", t("outsideWhat"), { class: "hint" }));
    } else if (L) {
      sec.appendChild(text("h3", t("groupTotalsTitle")));
      const time = typeof L.gpu_time_us === "number" ? fmtUs(L.gpu_time_us) : t("noTraceShort");
      const same = typeof L.same_as === "number" ? ` · ${t("sameAs", { n: L.same_as })}` : "";
      sec.appendChild(text("div", `${t("layerOption", { n: L.layer, kind: L.kind })} · ${time} · ${nodesText(L.node_count)}${same}`, { class: "big", "data-testid": "overview-side-layer" }));
      const rows = groupTotals(L);
      if (!rows.length) sec.appendChild(text("p", t("noGroupData"), { class: "hint" }));
      const tb = h("table", { class: "tbl gtot", "data-testid": "overview-groups", hidden: !rows.length });
      tb.appendChild(h("tr", {}, text("th", t("group")), text("th", t("gpuTime")), text("th", ""), text("th", t("nodeCount"))));
      for (const r of rows) {
        const tr = h("tr", { "data-group": r.group });
        const name = h("td");
        const dot = h("span", { class: "dot" });
        dot.style.background = segColor(r.group, this.theme);
        name.append(dot, r.group);
        const bar = h("span", { class: "bar" });
        const fill = h("span", { class: "fill" });
        fill.style.width = `${((r.share ?? 0) * 100).toFixed(1)}%`;
        fill.style.background = segColor(r.group, this.theme);
        bar.appendChild(fill);
        tr.append(name, text("td", r.us !== null ? `${fmtUs(r.us)}${r.share !== null ? ` · ${fmtPct(r.share)}` : ""}` : "–", { class: "num" }), h("td", {}, bar), text("td", r.nodes !== null ? String(r.nodes) : "–", { class: "num" }));
        tb.appendChild(tr);
      }
      sec.appendChild(tb);
      const open = h("button", { class: "btn", type: "button", "data-testid": "overview-open" });
      open.textContent = t("openLayer", { n: L.layer });
      open.addEventListener("click", () => this.openLayer(L.layer));
      sec.appendChild(open);
    } else {
      sec.appendChild(text("p", t("overviewPick"), { class: "hint" }));
    }
    el.appendChild(sec);
    if (this.mode === "graph") this.renderShared(el);
    // Run-wide summary.
    const m = this.model;
    if (m) {
      const sum = h("div", { class: "sec" });
      sum.appendChild(text("h3", t("modelSummary")));
      const kinds = new Map<string, number>();
      let total = 0;
      for (const b of m.bars) {
        kinds.set(b.kind, (kinds.get(b.kind) ?? 0) + 1);
        total += b.total;
      }
      const dl = h("dl", { class: "kv", "data-testid": "overview-summary" });
      const kv = (k: string, v: string) => dl.append(text("dt", k), text("dd", v));
      kv(t("layersN"), `${m.bars.length} (${[...kinds].map(([k, n]) => `${n} ${k}`).join(", ")})`);
      if (m.outside) {
        // Where the whole stage's GPU time goes: the layers, and what runs outside them.
        kv(t("gpuTimeAllLayers"), `${fmtUs(m.outside.layersUs)} · ${fmtPct(1 - m.outside.share)}`);
        kv(t("outsideLayers"), `${nodesText(m.noneNodeCount)} · ${fmtUs(m.outside.us)} · ${fmtPct(m.outside.share)}`);
        kv(t("gpuTimeTotal"), fmtUs(m.outside.totalUs));
      } else {
        if (m.metric === "time") kv(t("gpuTimeAllLayers"), fmtUs(total));
        kv(t("outsideLayers"), nodesText(m.noneNodeCount));
      }
      sum.appendChild(dl);
      el.appendChild(sum);
    }
  }

  /** The shared inputs the selected box reads or computes (all of them when none is selected). */
  private renderShared(el: HTMLElement): void {
    const g = this.graphRes;
    if (!g || !g.shared.length) return;
    const it = this.picked;
    const layers = new Set(it?.layers ?? []);
    const list = g.shared.filter((x) => !it || (it.kind === "before" ? x.source === null : x.layers.some((l) => layers.has(l)) || (x.source !== null && layers.has(x.source))));
    if (!list.length) return;
    const sec = h("div", { class: "sec", "data-testid": "overview-shared" });
    sec.appendChild(text("h3", t("sharedTitle")));
    const ul = h("ul", { class: "shared" });
    for (const x of list) {
      const from = x.source === null ? t("sharedFromInputs") : t("layerTitle", { n: x.source });
      ul.appendChild(text("li", `${inputCaption(x.label)} (${x.kind}, ${x.shape}) · ${from} → ${t("sharedReaders", { n: x.layers.length })}`));
    }
    sec.appendChild(ul);
    el.appendChild(sec);
  }

  exportPart(): ExportPart | null {
    const r = this.svg.getBoundingClientRect();
    if (!this.model || r.width < 20) return null;
    return { svg: this.svg, width: r.width, height: r.height };
  }

  exportParts(st: Readonly<PanelState>): ViewExport | null {
    const p = this.exportPart();
    const run = shownRun(st);
    if (run && this.mode === "graph") {
      const g = this.graph.exportSvg();
      if (!g) return null;
      return {
        parts: [{ svg: g.svg, width: g.width, height: g.height, title: `${t("stageGraph")} · ${run.run}` }],
        restore: g.remove, name: [run.run, "stage_graph", `stage${st.stage}`],
      };
    }
    if (!p || !run) return null;
    return { parts: [{ ...p, title: `${t("overview")} · ${run.run}` }], restore: () => {}, name: [run.run, "overview", `stage${st.stage}`] };
  }

  testState() {
    return {
      loading: this.loading || this.graphLoading, metric: this.model?.metric ?? null, bars: this.model?.bars.length ?? 0, current: this.current,
      mode: this.mode, graph: this.mode === "graph" ? this.graph.testState() : null,
    };
  }
}
