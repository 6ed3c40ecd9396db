// The Timing view: where one step of the chosen run goes, as api/report answers it (the records
// `tb-ad-layer report RUN --format json` prints): per-layer bars stacked by category and a
// per-layer table, the step's categories with memory operations apart and idle per stream, the
// ranked findings (one with a layer opens it in the layer view), flagged tails, the roofline per
// node, overlap and exposed communication per layer, the host side, and, when the comparison's B
// run is another run, the verdict of api/diff. Every figure is a field of those records.
import type { Api } from "../api/client";
import type { Diff, DiffEntry, NodeRoofline, Report, RunInfo } from "../api/types";
import type { ExportPart } from "../graph/export";
import { t } from "../i18n";
import type { Theme } from "../model/colors";
import { fmtPct, fmtUs } from "../model/format";
import { chartGeom } from "../overview/model";
import { changedAny, shownRun, singleLayer, type PanelState, type Store } from "../state/store";
import type { PanelActions } from "../state/actions";
import { activity } from "../ui/activity";
import { clear, h, s, text } from "../ui/dom";
import type { PanelView, ViewExport } from "../views/view";
import { boundText, rateText, sizesText } from "./roofline_text";
import { categoryColor, diffModel, diffRun, diffWhere, timingModel, type DiffModel, type Target, type TimingModel } from "./model";

const VERDICT = { regression: "timingVerdict_regression", improvement: "timingVerdict_improvement", unchanged: "timingVerdict_unchanged" } as const;

/** Rows shown of the long tables (roofline, gaps, tails); the rest is counted. */
const MAX_ROWS = 60;

export interface TimingCallbacks {
  onError(e: unknown): void;
}

function num(v: number | null | undefined, digits = 1): string {
  return v === null || v === undefined || !Number.isFinite(v) ? "–" : v.toFixed(digits);
}

function fmtBytes(b: number | null | undefined): string {
  if (b === null || b === undefined || !Number.isFinite(b)) return "–";
  const u = ["B", "KB", "MB", "GB", "TB"];
  let v = b;
  let i = 0;
  while (Math.abs(v) >= 1000 && i < u.length - 1) {
    v /= 1000;
    i++;
  }
  return `${i ? v.toFixed(v >= 100 ? 0 : 1) : v} ${u[i]}`;
}

/** A table cell of a time in µs, with the record's figure in data-us. */
function usCell(us: number | null | undefined, extra = ""): HTMLElement {
  const td = text("td", `${fmtUs(us)}${extra}`, { class: "num" });
  if (typeof us === "number") td.dataset.us = String(us);
  return td;
}

function table(testid: string, head: string[], numeric: boolean[] = []): { el: HTMLTableElement; body: HTMLTableSectionElement } {
  const el = h("table", { class: "tbl", "data-testid": testid });
  const tr = h("tr");
  head.forEach((x, i) => tr.appendChild(text("th", x, numeric[i] ? { class: "num" } : {})));
  el.appendChild(h("thead", {}, tr));
  const body = h("tbody");
  el.appendChild(body);
  return { el, body };
}

export class TimingView implements PanelView {
  readonly el: HTMLDivElement;
  private bodyEl: HTMLDivElement;
  private titleEl: HTMLSpanElement;
  private diffSel: HTMLSelectElement;
  private gpuInput: HTMLInputElement;
  private dimInput: HTMLInputElement;
  private chart: SVGSVGElement | null = null;
  private theme: Theme = "light";
  private report: Report | null = null;
  private model: TimingModel | null = null;
  private diff: DiffModel | null = null;
  private diffError: string | null = null;
  private shown = "";
  private seq = 0;
  loading = false;

  constructor(private readonly api: Api, private readonly store: Store<PanelState>, private readonly actions: PanelActions, private readonly cb: TimingCallbacks) {
    this.el = h("div", { class: "adl-view adl-timing", "data-testid": "timing-view" });
    const bar = h("div", { class: "adl-vbar" });
    this.titleEl = h("span", { class: "title", "data-testid": "timing-title" });
    this.diffSel = h("select", { "data-testid": "timing-diff-select", "aria-label": t("timingDiffWith") });
    this.diffSel.addEventListener("change", () => this.chooseDiff(this.diffSel.value || null));
    this.gpuInput = h("input", { type: "text", size: 10, placeholder: "GPU", "data-testid": "timing-gpu-input", "aria-label": "GPU", spellcheck: "false", autocomplete: "off" });
    this.gpuInput.addEventListener("change", () => this.reload());
    this.dimInput = h("input", { type: "text", size: 18, placeholder: "s70=1024,kv_len=4096", "data-testid": "timing-dim-input", "aria-label": t("timingDims"), title: t("timingDimsTitle"), spellcheck: "false", autocomplete: "off" });
    this.dimInput.addEventListener("change", () => this.reload());
    bar.append(this.titleEl, h("span", { class: "grp" }, text("label", t("timingDiffWith")), this.diffSel), h("span", { class: "grp" }, text("label", "GPU"), this.gpuInput),
      h("span", { class: "grp" }, text("label", t("timingDims")), this.dimInput));
    this.bodyEl = h("div", { class: "adl-tbody", "data-testid": "timing-body" });
    this.el.append(bar, this.bodyEl);
    this.theme = store.get().theme;
  }

  follow(st: Readonly<PanelState>, changed: ReadonlySet<keyof PanelState>): void {
    if (changed.has("theme")) {
      this.theme = st.theme;
      this.render();
    }
    if (st.view !== "timing" || !changedAny(changed, "view", "run", "runs", "compare")) return;
    const run = shownRun(st);
    this.fillDiffChooser(st);
    if (!run) return;
    const b = diffRun(st.run, st.compare);
    const key = JSON.stringify([run.run, run.created, !!run.trace, b, this.gpuInput.value.trim(), this.dimInput.value.trim()]);
    if (key === this.shown && !changed.has("runs")) return;
    this.shown = key;
    void activity.track(this.load(run, b));
  }

  private reload(): void {
    this.shown = "";
    this.follow(this.store.get(), new Set(["view"]));
  }

  /** The runs with a trace, to diff the shown run against (the comparison's B run). */
  private fillDiffChooser(st: Readonly<PanelState>): void {
    clear(this.diffSel);
    const none = h("option", { value: "" });
    none.textContent = t("timingDiffNone");
    this.diffSel.appendChild(none);
    for (const r of st.runs) {
      if (!r.trace || r.run === st.run) continue;
      const o = h("option", { value: r.run });
      o.textContent = r.run;
      this.diffSel.appendChild(o);
    }
    this.diffSel.value = diffRun(st.run, st.compare) ?? "";
  }

  /** Sets the comparison's B run (its A side the shown run and layer). */
  private chooseDiff(b: string | null): void {
    const st = this.store.get();
    if (!st.run) return;
    const layer = singleLayer(st);
    const a = { run: st.run, stage: st.stage, layer };
    const other = b ? st.runs.find((r) => r.run === b) : null;
    if (!other) {
      // No other run: the comparison's B side is the shown run again.
      this.store.set({ compare: st.compare ? { ...st.compare, b: { ...st.compare.b, run: st.run } } : null });
      return;
    }
    const bl = other.layers.some((l) => l.layer === layer) ? layer : other.layers[0]?.layer ?? 0;
    this.store.set({ compare: { a, b: { run: other.run, stage: other.default_stage, layer: bl }, mp: "" } });
  }

  private async load(run: RunInfo, b: string | null): Promise<void> {
    const seq = ++this.seq;
    this.titleEl.textContent = `${t("timingTitle")} · ${run.run}`;
    if (!run.trace) {
      this.report = null;
      this.model = null;
      this.diff = null;
      clear(this.bodyEl);
      this.bodyEl.appendChild(text("p", t("timingNoTrace", { run: run.run }), { class: "hint", "data-testid": "timing-no-trace" }));
      return;
    }
    this.loading = true;
    try {
      const gpu = this.gpuInput.value.trim() || undefined;
      const dim = this.dimInput.value.replace(/\s+/g, "") || undefined;
      const [rep, diff] = await Promise.all([
        this.api.report(run.run, { gpu, dim }),
        b ? this.api.diff(run.run, b).then((d): Diff | string => d, (e: unknown) => (e instanceof Error ? e.message : String(e))) : Promise.resolve(null),
      ]);
      if (seq !== this.seq) return;
      this.report = rep;
      this.model = timingModel(rep);
      this.diff = diff && typeof diff !== "string" ? diffModel(diff) : null;
      this.diffError = typeof diff === "string" ? diff : null;
      this.render();
    } catch (e) {
      if (seq === this.seq) this.cb.onError(e);
    } finally {
      if (seq === this.seq) this.loading = false;
    }
  }

  // ---------------------------------------------------------------- rendering

  private render(): void {
    const m = this.model;
    if (!m) return;
    clear(this.bodyEl);
    const stageFile = shownRun(this.store.get())?.stages.find((x) => x.index === m.stage)?.transform ?? String(m.stage);
    this.titleEl.textContent = `${t("timingTitle")} · ${m.run} · ${t("timingStepOf", { stage: stageFile, phase: m.phase ?? "–", n: m.step.replays })}`;
    if (diffRun(m.run, this.store.get().compare)) this.bodyEl.appendChild(this.diffSection(m.run));
    const top = h("div", { class: "trow" });
    top.append(this.stepSection(m), this.findingsSection(m));
    this.bodyEl.appendChild(top);
    this.bodyEl.appendChild(this.chartSection(m));
    this.bodyEl.appendChild(this.layerTable(m));
    const mid = h("div", { class: "trow" });
    mid.append(this.overlapSection(m), this.tailsSection(m));
    this.bodyEl.appendChild(mid);
    this.bodyEl.appendChild(this.rooflineSection(m));
    this.bodyEl.appendChild(this.hostSection(m));
    if (m.notes.length) {
      const ul = h("ul", { class: "notes", "data-testid": "timing-notes" });
      for (const n of m.notes) ul.appendChild(text("li", n));
      this.bodyEl.appendChild(this.section(t("timingNotes"), "timing-notes-sec", ul));
    }
    this.drawChart();
  }

  private section(title: string, testid: string, ...children: Node[]): HTMLElement {
    const sec = h("section", { class: "tsec", "data-testid": testid }, text("h3", title));
    for (const c of children) sec.appendChild(c);
    return sec;
  }

  private stepSection(m: TimingModel): HTMLElement {
    const st = m.step;
    const dl = h("dl", { class: "kv", "data-testid": "timing-step" });
    const kv = (k: string, v: string, field: string, us?: number) => {
      const dd = text("dd", v, { "data-field": field });
      if (us !== undefined) dd.dataset.us = String(us);
      dl.append(text("dt", k), dd);
    };
    kv(t("gpuTime"), fmtUs(st.gpu_time_us), "gpu_time_us", st.gpu_time_us);
    kv(t("timingWall"), fmtUs(st.span_us), "span_us", st.span_us);
    kv(t("timingBusy"), fmtUs(st.busy_us), "busy_us", st.busy_us);
    kv(t("timingIdle"), fmtUs(st.idle_us), "idle_us", st.idle_us);
    kv(t("kernelCount"), String(st.kernel_count), "kernel_count");
    kv(t("timingMemory"), t("timingMemoryOps", { us: fmtUs(m.memory.us), n: m.memory.count }), "memory_us", m.memory.us);
    const cats = h("div", { class: "bars", "data-testid": "timing-categories" });
    for (const c of m.categories) {
      const fill = h("span", { class: "fill" });
      fill.style.width = `${(c.share * 100).toFixed(2)}%`;
      fill.style.background = categoryColor(c.category, this.theme);
      const row = h("div", { class: "barrow", "data-category": c.category, "data-us": c.gpu_time_us });
      row.append(text("span", c.category, { class: "blabel" }), h("span", { class: "bar" }, fill), text("span", `${fmtUs(c.gpu_time_us)} · ${fmtPct(c.share)}`, { class: "bval" }));
      cats.appendChild(row);
    }
    const streams = table("timing-streams", [t("stream"), t("timingBusy"), t("timingIdle"), t("kernelCount")], [false, true, true, true]);
    for (const x of m.streams) {
      const tr = h("tr", { "data-stream": x.stream });
      tr.append(text("td", x.label), usCell(x.busy_us), usCell(x.idle_us), text("td", String(x.kernel_count), { class: "num" }));
      streams.body.appendChild(tr);
    }
    return this.section(t("timingStep"), "timing-step-sec", dl, text("h4", t("timingCategories")), cats, text("h4", t("timingStreams")), streams.el);
  }

  private findingsSection(m: TimingModel): HTMLElement {
    if (!m.findings.length) return this.section(t("timingFindings"), "timing-findings-sec", text("p", t("timingNoFindings"), { class: "hint" }));
    const ol = h("ol", { class: "findings", "data-testid": "timing-findings" });
    for (const f of m.findings) {
      const li = h("li", { "data-kind": f.finding.kind, "data-us": f.finding.time_at_stake_us });
      const stake = text("span", fmtUs(f.finding.time_at_stake_us), { class: "stake" });
      const msg = f.target ? h("button", { class: "link", type: "button", "data-testid": "timing-finding-open", "data-layer": f.target.layer, "data-node": f.target.node ?? "" }) : h("span");
      msg.textContent = f.finding.message;
      if (f.target) {
        const to = f.target;
        msg.addEventListener("click", () => void this.open(to));
      }
      li.append(stake, text("span", f.finding.kind, { class: "kind" }), msg);
      ol.appendChild(li);
    }
    return this.section(t("timingFindings"), "timing-findings-sec", ol, text("p", t("timingOpenHint"), { class: "hint" }));
  }

  /** Opens a layer (and selects a node in it) in the layer view, on the stage the report is of. */
  async open(to: Target): Promise<void> {
    const st = this.store.get();
    if (this.report && st.stage !== this.report.stage) await this.actions.chooseStage(this.report.stage);
    this.store.set({ layer: to.layer, selected: to.node, depth: null, stageShown: null, view: "layer" });
  }

  /** Opens the finding of rank `rank` (1 = the first) when it has a layer (test hook); false otherwise. */
  async openFinding(rank: number): Promise<boolean> {
    const f = this.model?.findings.find((x) => x.rank === rank);
    if (!f?.target) return false;
    await this.open(f.target);
    return true;
  }

  private chartSection(m: TimingModel): HTMLElement {
    const legend = h("div", { class: "adl-olegend", "data-testid": "timing-legend" });
    for (const c of m.order) {
      const sw = h("span", { class: "sw" });
      sw.style.background = categoryColor(c, this.theme);
      legend.appendChild(h("span", { class: "item" }, sw, c));
    }
    this.chart = s("svg", { class: "adl-osvg tchart", "data-testid": "timing-chart", role: "img", "aria-label": t("timingPerLayer") });
    return this.section(t("timingPerLayer"), "timing-chart-sec", legend, this.chart, text("p", t("timingChartHint"), { class: "hint" }));
  }

  private drawChart(): void {
    const svg = this.chart;
    const m = this.model;
    if (!svg || !m) return;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const W = Math.max(300, svg.getBoundingClientRect().width || 900);
    const H = 220;
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    svg.setAttribute("height", String(H));
    const g = chartGeom(m.bars.length, m.max, W, H, { l: 64, r: 12, t: 8, b: 28 }, 48);
    const fg = this.theme === "dark" ? "#98a2ad" : "#5f6b77";
    const grid = this.theme === "dark" ? "#2f353d" : "#e3e7ec";
    for (const tv of g.ticks) {
      const y = g.y0 + g.h - g.scale(tv);
      svg.appendChild(s("line", { x1: g.x0, x2: g.x0 + g.plotW, y1: y, y2: y, stroke: grid, "stroke-width": 1 }));
      const lt = s("text", { x: g.x0 - 6, y: y + 4, "text-anchor": "end", fill: fg, "font-size": 11 });
      lt.textContent = fmtUs(tv);
      svg.appendChild(lt);
    }
    const every = Math.max(1, Math.ceil(24 / (g.barW + g.gap)));
    m.bars.forEach((b, i) => {
      const x = g.barX(i);
      const bg = s("g", { class: "obar", "data-testid": "timing-bar", "data-layer": b.layer ?? "outside", "data-us": b.total, tabindex: 0, role: "button" });
      const tip = s("title");
      const name = b.layer === null ? t("timingOutside") : t("layerOption", { n: b.layer, kind: b.kind });
      tip.textContent = [`${name} · ${fmtUs(b.total)}`, ...[...b.segments].reverse().map((sg) => `${sg.category}: ${fmtUs(sg.us)}`)].join("\n");
      bg.appendChild(tip);
      bg.appendChild(s("rect", { class: "hit", x: x - g.gap / 2, y: g.y0, width: g.barW + g.gap, height: g.h, fill: "transparent" }));
      for (const sg of b.segments) {
        const hh = g.scale(sg.us);
        bg.appendChild(s("rect", { class: "seg", x, y: g.y0 + g.h - g.scale(sg.start) - hh, width: g.barW, height: Math.max(0, hh), fill: categoryColor(sg.category, this.theme), "data-category": sg.category }));
      }
      if (i % every === 0) {
        const lt = s("text", { x: x + g.barW / 2, y: g.y0 + g.h + 16, "text-anchor": "middle", fill: fg, "font-size": 10.5, "font-style": b.layer === null ? "italic" : "normal" });
        lt.textContent = b.layer === null ? t("timingOutside") : String(b.layer);
        bg.appendChild(lt);
      }
      const layer = b.layer;
      if (layer !== null) {
        bg.addEventListener("click", () => void this.open({ layer, node: null }));
        bg.addEventListener("keydown", (ev) => {
          if (ev.key === "Enter" || ev.key === " ") {
            ev.preventDefault();
            void this.open({ layer, node: null });
          }
        });
      }
      svg.appendChild(bg);
    });
  }

  private layerTable(m: TimingModel): HTMLElement {
    const cats = m.order;
    const tb = table("timing-layers", [t("layer"), t("timingKind"), t("gpuTime"), ...cats, t("timingSpan"), t("timingExposed")], [false, false, true, ...cats.map(() => true), true, true]);
    for (const r of m.rows) {
      const tr = h("tr", { "data-layer": r.layer ?? "outside" });
      const name = h("td");
      if (r.layer !== null) {
        const layer = r.layer;
        const a = h("button", { class: "link", type: "button" }, String(layer));
        a.addEventListener("click", () => void this.open({ layer, node: null }));
        name.appendChild(a);
      } else name.textContent = t("timingOutside");
      tr.append(name, text("td", r.kind), usCell(r.gpuUs));
      for (const c of cats) {
        const td = usCell(r.categories.get(c) ?? null);
        td.dataset.category = c;
        tr.appendChild(td);
      }
      tr.append(usCell(r.spanUs), usCell(r.exposedUs));
      tb.body.appendChild(tr);
    }
    const wrap = h("div", { class: "twide" }, tb.el);
    return this.section(t("timingLayerTable"), "timing-layers-sec", wrap);
  }

  private overlapSection(m: TimingModel): HTMLElement {
    if (!m.overlap.length) return this.section(t("timingOverlap"), "timing-overlap-sec", text("p", t("timingNoComm"), { class: "hint" }));
    const tb = table("timing-overlap", [t("layer"), t("timingCompute"), t("timingComm"), t("timingHidden"), t("timingExposed"), "%"], [false, true, true, true, true, true]);
    for (const o of m.overlap) {
      const tr = h("tr", { "data-layer": o.layer ?? "outside" });
      tr.append(text("td", o.layer === null ? t("timingOutside") : String(o.layer)), usCell(o.overlap.compute_us), usCell(o.overlap.communication_us),
        usCell(o.overlap.hidden_us), usCell(o.overlap.exposed_us), text("td", fmtPct(o.overlap.overlap_share), { class: "num" }));
      tb.body.appendChild(tr);
    }
    return this.section(t("timingOverlap"), "timing-overlap-sec", tb.el);
  }

  private tailsSection(m: TimingModel): HTMLElement {
    if (!m.tails.length) return this.section(t("timingTails"), "timing-tails-sec", text("p", t("timingNoTails"), { class: "hint", "data-testid": "timing-no-tails" }));
    const tb = table("timing-tails", [t("timingNode"), "p50", "p90", "p99", "max", t("timingReplays")], [false, true, true, true, true, true]);
    for (const x of m.tails.slice(0, MAX_ROWS)) {
      const tr = h("tr", { "data-node": x.node });
      const td = h("td");
      if (x.layer !== null) {
        const layer = x.layer;
        const a = h("button", { class: "link", type: "button" }, `${t("layerTitle", { n: layer })} · %${x.node}`);
        a.addEventListener("click", () => void this.open({ layer, node: x.node }));
        td.appendChild(a);
      } else td.textContent = `%${x.node}`;
      tr.append(td, usCell(x.p50_us), usCell(x.p90_us), usCell(x.p99_us), usCell(x.max_us), text("td", String(x.replays), { class: "num" }));
      tb.body.appendChild(tr);
    }
    const more = m.tails.length > MAX_ROWS ? text("p", t("timingFirstN", { n: MAX_ROWS, total: m.tails.length }), { class: "hint" }) : null;
    return this.section(t("timingTails"), "timing-tails-sec", tb.el, ...(more ? [more] : []));
  }

  private rooflineSection(m: TimingModel): HTMLElement {
    const gpu = m.gpu;
    const head = gpu.entry
      ? t("timingGpu", { name: gpu.name ?? gpu.entry, source: gpu.source, tflops: num(gpu.peak_tflops.bf16 ?? null, 0), tbs: num(gpu.peak_tbs, 2) })
      : t("timingGpuUnknown");
    const tb = table("timing-roofline", [t("timingNode"), t("gpuTime"), "TFLOP/s", "TB/s", t("timingBound"), t("timingOfPeak"), t("timingFormula")], [false, true, true, true, false, true, false]);
    for (const r of m.roofline.slice(0, MAX_ROWS)) tb.body.appendChild(this.rooflineRow(r));
    const more = m.roofline.length > MAX_ROWS ? text("p", t("timingFirstN", { n: MAX_ROWS, total: m.roofline.length }), { class: "hint" }) : null;
    return this.section(t("timingRoofline"), "timing-roofline-sec", text("p", head, { class: "hint", "data-testid": "timing-gpu" }), h("div", { class: "twide" }, tb.el), ...(more ? [more] : []));
  }

  private rooflineRow(r: NodeRoofline): HTMLElement {
    const tr = h("tr", { "data-node": r.node, "data-layer": r.layer ?? "outside" });
    const td = h("td");
    if (r.layer !== null) {
      const layer = r.layer;
      const a = h("button", { class: "link", type: "button" }, `${layer} · %${r.node}`);
      a.title = r.op;
      a.addEventListener("click", () => void this.open({ layer, node: r.node }));
      td.appendChild(a);
    } else td.textContent = `%${r.node}`;
    const rate = r.bound === "communication" ? rateText(r) : num(r.achieved_tbs, 2);
    const how = text("td", r.reason ?? r.formula, { class: r.reason ? "dim why" : "dim" });
    const sizes = sizesText(r);
    if (sizes) how.title = sizes;
    tr.append(td, usCell(r.time_us), text("td", num(r.achieved_tflops, 2), { class: "num" }), text("td", rate, { class: "num" }),
      text("td", boundText(r.bound)), text("td", fmtPct(r.peak_share), { class: "num" }), how);
    return tr;
  }

  private hostSection(m: TimingModel): HTMLElement {
    const hs = m.host;
    if (!hs) return this.section(t("timingHost"), "timing-host-sec", text("p", t("timingNoHost"), { class: "hint" }));
    const dl = h("dl", { class: "kv", "data-testid": "timing-host" });
    const kv = (k: string, v: string) => dl.append(text("dt", k), text("dd", v));
    kv(t("timingLaunches"), hs.launches === null ? "–" : String(hs.launches));
    kv(t("timingGraphLaunches"), hs.graph_launches === null ? "–" : String(hs.graph_launches));
    kv(t("timingSyncs"), hs.sync_calls === null ? "–" : `${hs.sync_calls} · ${fmtUs(hs.sync_us)}`);
    kv(t("timingIdle"), fmtUs(hs.idle_us));
    kv(t("timingGapsExplained"), fmtUs(hs.explained_us));
    const parts: Node[] = [dl];
    if (hs.gaps.length) {
      const tb = table("timing-gaps", [t("start"), t("duration"), t("timingCause"), t("timingWhere")], [true, true, false, false]);
      for (const g of hs.gaps.slice(0, 12)) {
        const tr = h("tr", { "data-cause": g.cause });
        const where = g.layer !== null ? `${t("layerTitle", { n: g.layer })}${g.node ? ` · %${g.node}` : ""}` : g.node ? `%${g.node}` : "–";
        tr.append(usCell(g.start_us), usCell(g.duration_us), text("td", g.call ? `${g.cause} · ${g.call}` : g.cause), text("td", where));
        tb.body.appendChild(tr);
      }
      parts.push(text("h4", `${t("timingGaps")} (${hs.gaps.length})`), tb.el);
      if (hs.gaps.length > 12) parts.push(text("p", t("timingFirstN", { n: 12, total: hs.gaps.length }), { class: "hint" }));
    }
    if (hs.copies?.length) {
      const tb = table("timing-copies", [t("timingDirection"), t("timingCount"), t("timingBytes"), t("duration")], [false, true, true, true]);
      for (const c of hs.copies) {
        const kinds = c.src_kind || c.dst_kind ? ` (${c.src_kind ?? "?"} → ${c.dst_kind ?? "?"})` : "";
        appendRow(tb.body, [text("td", `${c.direction}${kinds}${c.pageable ? ` · ${t("timingPageable")}` : ""}`), text("td", String(c.count), { class: "num" }), text("td", fmtBytes(c.bytes), { class: "num" }), usCell(c.time_us)]);
      }
      parts.push(text("h4", t("timingCopies")), tb.el);
    }
    return this.section(t("timingHost"), "timing-host-sec", ...parts);
  }

  private diffSection(run: string): HTMLElement {
    const b = diffRun(run, this.store.get().compare) ?? "";
    const d = this.diff;
    if (!d) {
      return this.section(t("timingDiff", { run: b }), "timing-diff-sec", text("p", this.diffError ?? "", { class: "hint", "data-testid": "timing-diff-error" }));
    }
    const verdict = text("div", t(VERDICT[d.verdict]), { class: `verdict ${d.verdict}`, "data-testid": "timing-verdict", "data-verdict": d.verdict });
    const head = text("p", `${t("timingDiffTitle", { a: run, b, gate: d.gatePct })} · ${t("timingStep")}: ${fmtUs(d.step.a_us)} → ${fmtUs(d.step.b_us)} (${signed(d.step.delta_us)}${d.step.delta_pct !== null ? `, ${d.step.delta_pct.toFixed(1)} %` : ""})`, { class: "sub" });
    const list = (title: string, testid: string, rows: DiffEntry[]): Node[] => {
      if (!rows.length) return [text("h4", title), text("p", t("timingNoChanges"), { class: "hint", "data-testid": `${testid}-none` })];
      const tb = table(testid, [t("timingWhere"), "A", "B", t("timingDelta"), "%", t("timingNoise")], [false, true, true, true, true, true]);
      for (const e of rows.slice(0, MAX_ROWS)) {
        const tr = h("tr", { "data-level": e.level });
        tr.append(text("td", diffWhere(e, (n) => t("layerTitle", { n }), t("timingStep"), t("timingOutside"))), usCell(e.a_us), usCell(e.b_us), deltaCell(e.delta_us), text("td", e.delta_pct === null ? "–" : e.delta_pct.toFixed(1), { class: "num" }), usCell(e.noise_us));
        tb.body.appendChild(tr);
      }
      return [text("h4", `${title} (${rows.length})`), tb.el];
    };
    return this.section(t("timingDiff", { run: b }), "timing-diff-sec", verdict, head,
      ...list(t("timingRegressions"), "timing-regressions", d.regressions), ...list(t("timingImprovements"), "timing-improvements", d.improvements));
  }

  exportParts(st: Readonly<PanelState>): ViewExport | null {
    const run = shownRun(st);
    const svg = this.chart;
    if (!run || !svg || !this.model) return null;
    const r = svg.getBoundingClientRect();
    if (r.width < 20) return null;
    const part: ExportPart = { svg, width: r.width, height: r.height, title: `${t("timingPerLayer")} · ${run.run}` };
    return { parts: [part], restore: () => {}, name: [run.run, "timing"] };
  }

  busy(): boolean {
    return this.loading;
  }

  testState() {
    const m = this.model;
    return {
      loading: this.loading,
      run: m?.run ?? null,
      bars: m?.bars.length ?? 0,
      findings: m?.findings.length ?? 0,
      diff: this.diff ? this.diff.verdict : null,
      diffError: this.diffError,
    };
  }
}

function deltaCell(us: number): HTMLElement {
  const td = text("td", signed(us), { class: `num ${us > 0 ? "slower" : us < 0 ? "faster" : ""}` });
  td.dataset.us = String(us);
  return td;
}

function signed(us: number): string {
  return `${us > 0 ? "+" : ""}${fmtUs(us)}`;
}

function appendRow(body: HTMLTableSectionElement, cells: HTMLElement[]): void {
  const tr = h("tr");
  tr.append(...cells);
  body.appendChild(tr);
}
