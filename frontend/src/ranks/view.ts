// The ranks view: a multi-GPU run's layers x ranks heat map of GPU time per layer (or of
// communication, where collectives are mapped), each cell coloured against the layer's median
// across the ranks, stragglers marked (api/ranks says the rule); clicking a cell opens that
// layer at that rank in the layer view. Beside it, the stragglers and each rank's totals.
import type { Api } from "../api/client";
import type { RanksResponse, RunInfo } from "../api/types";
import { t } from "../i18n";
import { fmtUs } from "../model/format";
import type { PanelActions } from "../state/actions";
import { changedAny, shownRun, type PanelState, type Store } from "../state/store";
import { activity } from "../ui/activity";
import { clear, h, text } from "../ui/dom";
import type { PanelView, ViewExport } from "../views/view";
import { heatColor, ranksGrid, type RankCell, type RankMetric, type RanksGrid } from "./model";

export interface RanksCallbacks {
  onError(e: unknown): void;
}

export class RanksView implements PanelView {
  readonly el: HTMLDivElement;
  private titleEl: HTMLSpanElement;
  private metricSeg: HTMLDivElement;
  private gridEl: HTMLDivElement;
  private sideEl: HTMLDivElement;
  private run: RunInfo | null = null;
  private res: RanksResponse | null = null;
  private grid: RanksGrid | null = null;
  private metric: RankMetric = "gpu";
  private dark = false;
  private seq = 0;
  loading = false;

  constructor(private readonly api: Api, store: Store<PanelState>, private readonly actions: PanelActions, private readonly cb: RanksCallbacks) {
    this.el = h("div", { class: "adl-view adl-ranks", "data-testid": "ranks-view" });
    const bar = h("div", { class: "adl-vbar" });
    this.titleEl = h("span", { class: "title", "data-testid": "ranks-title" });
    this.metricSeg = h("div", { class: "seg", role: "group", "data-testid": "ranks-metric" });
    for (const [m, key] of [["gpu", "ranksMetricGpu"], ["comm", "ranksMetricComm"]] as const) {
      const b = h("button", { type: "button", "data-metric": m, "data-testid": `ranks-metric-${m}` });
      b.textContent = t(key);
      b.addEventListener("click", () => {
        this.metric = m;
        this.render();
      });
      this.metricSeg.appendChild(b);
    }
    const legend = h("span", { class: "adl-rlegend" },
      h("span", { class: "sw slow" }), t("ranksSlower"), h("span", { class: "sw fast" }), t("ranksFaster"),
      h("span", { class: "sw strag" }), t("ranksStraggler"));
    bar.append(this.titleEl, this.metricSeg, legend);
    this.el.appendChild(bar);
    const main = h("div", { class: "adl-vmain" });
    this.gridEl = h("div", { class: "adl-rgrid", "data-testid": "ranks-grid" });
    this.sideEl = h("div", { class: "adl-side adl-rside", "data-testid": "ranks-side" });
    main.append(this.gridEl, this.sideEl);
    this.el.appendChild(main);
    this.dark = store.get().theme === "dark";
  }

  /** Follows the store: the theme; while shown, the run. */
  follow(st: Readonly<PanelState>, changed: ReadonlySet<keyof PanelState>): void {
    if (changed.has("theme")) {
      this.dark = st.theme === "dark";
      this.render();
    }
    if (st.view !== "ranks" || !changedAny(changed, "view", "run", "runs")) return;
    const run = shownRun(st);
    if (run) void activity.track(this.open(run));
  }

  private async open(run: RunInfo): Promise<void> {
    if (this.run?.run === run.run && this.run.created === run.created && this.res) return;
    this.run = run;
    this.res = null;
    const seq = ++this.seq;
    if (!run.trace) {
      this.render();
      return;
    }
    this.loading = true;
    try {
      const res = await this.api.ranks(run.run);
      if (seq !== this.seq) return;
      this.res = res;
    } catch (e) {
      if (seq === this.seq) this.cb.onError(e);
    } finally {
      if (seq === this.seq) this.loading = false;
    }
    this.render();
  }

  private render(): void {
    clear(this.gridEl);
    clear(this.sideEl);
    const run = this.run;
    for (const b of Array.from(this.metricSeg.children) as HTMLButtonElement[]) b.setAttribute("aria-pressed", String(b.dataset.metric === this.metric));
    this.titleEl.textContent = run ? `${t("viewRanks")} · ${run.run}` : t("viewRanks");
    if (!run) return;
    if (!run.trace || !this.res) {
      this.gridEl.appendChild(text("div", run.trace ? t("loading") : t("ranksNoTrace", { run: run.run }), { class: "adl-empty-note", "data-testid": "ranks-note" }));
      return;
    }
    const res = this.res;
    const hasComm = res.ranks.some((r) => r.communication_us !== null);
    const commBtn = this.metricSeg.querySelector<HTMLButtonElement>('[data-metric="comm"]');
    if (commBtn) {
      commBtn.disabled = !hasComm;
      commBtn.title = hasComm ? "" : t("ranksNoComm");
    }
    const metric: RankMetric = hasComm ? this.metric : "gpu";
    this.grid = ranksGrid(res, metric);
    const g = this.grid;
    this.titleEl.textContent = `${t("viewRanks")} · ${run.run} · ${t("ranksCount", { n: g.ranks.length })}`;
    if (g.ranks.length < 2) this.gridEl.appendChild(text("div", t("ranksOne"), { class: "hint", "data-testid": "ranks-note" }));
    this.gridEl.appendChild(this.table(g, metric));
    this.gridEl.appendChild(text("div", t("ranksHint"), { class: "hint" }));
    this.renderSide(res, g);
  }

  private table(g: RanksGrid, metric: RankMetric): HTMLTableElement {
    const tbl = h("table", { class: "adl-rtable", "data-testid": "ranks-table" });
    const head = h("tr", {}, text("th", t("layer")));
    for (const r of g.totals) head.appendChild(text("th", t("rankOption", { n: r.rank }), { title: r.device !== null ? t("ranksDevice", { d: r.device }) : "" }));
    const thead = h("thead", {}, head);
    const step = h("tr", { class: "step" }, text("th", t("ranksStep")));
    for (const r of g.totals) step.appendChild(text("td", fmtUs(metric === "gpu" ? r.gpuUs : r.commUs)));
    thead.appendChild(step);
    tbl.appendChild(thead);
    const body = h("tbody");
    g.rows.forEach((cells, i) => {
      const tr = h("tr", {}, text("th", String(g.layers[i])));
      for (const c of cells) tr.appendChild(this.cell(c));
      body.appendChild(tr);
    });
    tbl.appendChild(body);
    return tbl;
  }

  private cell(c: RankCell): HTMLTableCellElement {
    const td = h("td", { class: c.straggler ? "cell strag" : "cell", "data-testid": `rank-cell-${c.layer}-${c.rank}`, tabindex: "0" });
    td.textContent = (c.straggler ? "▲ " : "") + fmtUs(c.value);
    td.style.background = heatColor(c.ratio, this.dark);
    const lines = [
      t("ranksCellTitle", { layer: c.layer, rank: c.rank }),
      `${t("ranksMetricGpu")}: ${fmtUs(c.gpuUs)} · ${t("ranksCompute")}: ${fmtUs(c.computeUs)} ± ${fmtUs(c.noiseUs)}`,
      `${t("ranksMetricComm")}: ${fmtUs(c.commUs)}`,
    ];
    if (c.straggler) lines.push(t("ranksExcess", { us: fmtUs(c.straggler.excess_us), others: fmtUs(c.straggler.others_us) }));
    td.title = lines.join("\n");
    const open = () => this.actions.openLayerAtRank(c.layer, c.rank);
    td.addEventListener("click", open);
    td.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") open();
    });
    return td;
  }

  private renderSide(res: RanksResponse, g: RanksGrid): void {
    const side = this.sideEl;
    side.appendChild(text("h3", t("ranksStragglers")));
    if (!res.stragglers.length) side.appendChild(text("div", t("ranksNoStragglers"), { class: "hint", "data-testid": "ranks-no-stragglers" }));
    else {
      const tbl = h("table", { class: "tbl", "data-testid": "ranks-stragglers" });
      tbl.appendChild(h("tr", {}, text("th", t("rank")), text("th", t("layer")), text("th", t("ranksExcessCol")), text("th", t("ranksOthers"))));
      for (const s of res.stragglers) {
        const tr = h("tr", { class: "clickable", "data-testid": `ranks-straggler-${s.layer}-${s.rank}` },
          text("td", String(s.rank)), text("td", String(s.layer)), text("td", `+${fmtUs(s.excess_us)}`), text("td", fmtUs(s.others_us)));
        tr.addEventListener("click", () => this.actions.openLayerAtRank(s.layer, s.rank));
        tbl.appendChild(tr);
      }
      side.appendChild(tbl);
    }
    side.appendChild(text("div", res.rule, { class: "hint", "data-testid": "ranks-rule" }));
    if (g.hasComm) {
      side.appendChild(text("h3", t("ranksCommTitle")));
      const tbl = h("table", { class: "tbl", "data-testid": "ranks-comm" });
      tbl.appendChild(h("tr", {}, text("th", t("rank")), text("th", t("ranksMetricGpu")), text("th", t("ranksMetricComm"))));
      for (const r of g.totals) tbl.appendChild(h("tr", {}, text("td", String(r.rank)), text("td", fmtUs(r.gpuUs)), text("td", fmtUs(r.commUs))));
      side.appendChild(tbl);
      side.appendChild(text("div", t("ranksCommHint"), { class: "hint" }));
    }
  }

  exportParts(): ViewExport | null {
    return null;
  }

  busy(): boolean {
    return this.loading;
  }

  /** For tests: what is drawn. */
  testState(): Record<string, unknown> {
    const g = this.grid;
    return {
      run: this.run?.run ?? null,
      loading: this.loading,
      metric: this.metric,
      ranks: g?.ranks ?? [],
      layers: g?.layers ?? [],
      stragglers: (this.res?.stragglers ?? []).map((s) => [s.rank, s.layer]),
      cells: this.gridEl.querySelectorAll("td.cell").length,
      marked: Array.from(this.gridEl.querySelectorAll<HTMLElement>("td.cell.strag")).map((e) => e.dataset.testid),
    };
  }
}
