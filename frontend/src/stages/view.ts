// The stage view: one layer through the transform stages (a strip of stages with node counts and
// +added −removed ~changed), prev/next stepping, and the graph of the current stage with what
// the transform added and changed highlighted ("after"), or of the previous stage with what it
// removed highlighted ("before"). Removed nodes are listed, since the current graph lacks them.
import type { Api } from "../api/client";
import { ApiError } from "../api/client";
import type { LayerResponse, RunInfo, StagesResponse } from "../api/types";
import { GraphPane } from "../graph/pane";
import type { LeafMark, Paint } from "../graph/paint";
import { layerTimed } from "../compare/view";
import { nodesText, t } from "../i18n";
import { fmtUs } from "../model/format";
import type { Theme } from "../model/colors";
import { defaultExpanded, publicId, SCENE, toggleGroup } from "../model/hierarchy";
import { aggregateStatus, countsBadge, STAGE_STATUSES, statusColor, type DiffStatus } from "../model/status";
import { changedAny, shownRun, singleLayer, type PanelState, type Store } from "../state/store";
import { activity } from "../ui/activity";
import { clear, h, text } from "../ui/dom";
import type { PanelView, ViewExport } from "../views/view";
import { stageDiff, stageLists, stageStatus, stageSteps, stepStage, type StageDiffModel, type StageListItem, type StageSide, type StageStep } from "./model";

export interface StageCallbacks {
  onError(e: unknown): void;
}

const ST_LABEL = { same: "statusUnchanged", added: "statusAdded", changed: "statusChanged", removed: "statusRemoved" } as const;

export class StageView implements PanelView {
  readonly el: HTMLDivElement;
  readonly pane: GraphPane;
  private stripEl: HTMLDivElement;
  private prevBtn: HTMLButtonElement;
  private nextBtn: HTMLButtonElement;
  private sideSeg: HTMLDivElement;
  private compareBtn: HTMLButtonElement;
  private legendEl: HTMLSpanElement;
  private infoEl: HTMLDivElement;
  private listsEl: HTMLDivElement;
  private theme: Theme = "light";
  private run: RunInfo | null = null;
  private layer = 0;
  private index = 0;
  private side: StageSide = "after";
  private res: StagesResponse | null = null;
  private steps: StageStep[] = [];
  private diff: StageDiffModel | null = null;
  private docs: { cur: LayerResponse | null; prev: LayerResponse | null } = { cur: null, prev: null };
  private seq = 0;
  private loading = false;
  /** A node to select once the side being drawn is shown (from the lists of added, removed, changed). */
  private focus: string | null = null;

  constructor(private readonly api: Api, private readonly store: Store<PanelState>, private readonly cb: StageCallbacks) {
    this.el = h("div", { class: "adl-view adl-stages", "data-testid": "stage-view" });
    const bar = h("div", { class: "adl-vbar stagebar" });
    this.prevBtn = h("button", { class: "btn", type: "button", "data-testid": "stage-prev", title: `${t("prevStage")} ([)` }, `‹ ${t("prev")}`);
    this.nextBtn = h("button", { class: "btn", type: "button", "data-testid": "stage-next", title: `${t("nextStage")} (])` }, `${t("next")} ›`);
    this.prevBtn.addEventListener("click", () => this.step(-1));
    this.nextBtn.addEventListener("click", () => this.step(1));
    this.stripEl = h("div", { class: "adl-strip", "data-testid": "stage-strip", role: "listbox", "aria-label": t("stages") });
    this.sideSeg = h("div", { class: "seg", role: "group", "data-testid": "stage-side" });
    for (const [side, key] of [["before", "showBefore"], ["after", "showAfter"]] as const) {
      const b = h("button", { type: "button", "data-side": side, "data-testid": `stage-side-${side}`, "aria-pressed": String(side === this.side), title: `${t(key)} (B)` });
      b.textContent = t(key);
      b.addEventListener("click", () => this.chooseSide(side));
      this.sideSeg.appendChild(b);
    }
    this.compareBtn = h("button", { class: "btn", type: "button", "data-testid": "stage-compare", title: t("compareWithPrevTitle") });
    this.compareBtn.textContent = t("compareWithPrev");
    this.compareBtn.addEventListener("click", () => {
      const prev = this.diff?.prev ?? null;
      if (!this.run || prev === null) return;
      const side = (stage: number) => ({ run: this.run!.run, stage, layer: this.layer });
      this.store.set({ view: "compare", compare: { a: side(prev), b: side(this.index), mp: "" } });
    });
    bar.append(this.prevBtn, this.stripEl, this.nextBtn);
    this.el.appendChild(bar);
    const bar2 = h("div", { class: "adl-clegend" });
    this.legendEl = h("span", { class: "legend", "data-testid": "stage-legend" });
    bar2.append(text("span", t("show"), { class: "dim" }), this.sideSeg, this.legendEl, h("span", { class: "spacer" }), this.compareBtn);
    this.el.appendChild(bar2);
    const main = h("div", { class: "adl-vmain" });
    this.pane = new GraphPane("stage-pane", {
      onSelect: (k) => void this.pane.select(k),
      onToggle: (k) => {
        this.pane.expanded = toggleGroup(this.pane.expanded, k);
        void this.pane.relayout({ anchor: k, legible: this.pane.expanded.has(k) });
      },
    }, () => this.paint());
    const side = h("div", { class: "adl-side adl-sside", "data-testid": "stage-side-panel" });
    this.infoEl = h("div", { class: "sec", "data-testid": "stage-info" });
    this.listsEl = h("div", { class: "sec", "data-testid": "stage-lists" });
    side.append(h("div", { class: "adl-maps" }, this.pane.minimap.el), this.infoEl, this.listsEl);
    main.append(this.pane.el, side);
    this.el.appendChild(main);
    this.theme = store.get().theme;
  }

  /**
   * Follows the store: the theme; while shown, the run and layer (the stage's first for "all"),
   * its own stage (the panel's until it steps) and which side of the transform it shows.
   */
  follow(st: Readonly<PanelState>, changed: ReadonlySet<keyof PanelState>): void {
    if (changed.has("theme")) this.setTheme(st.theme);
    if (st.view !== "stages" || !changedAny(changed, "view", "run", "runs", "layer", "layers", "stage", "stageShown", "stageSide")) return;
    const run = shownRun(st);
    if (run) void activity.track(this.open(run, singleLayer(st), st.stageShown ?? st.stage, st.stageSide));
  }

  private setTheme(th: Theme): void {
    this.theme = th;
    this.pane.setTheme(th);
    this.renderLegend();
    this.renderLists();
  }

  isLoading(): boolean {
    return this.loading;
  }

  current(): { run: string | null; layer: number; stage: number; side: StageSide } {
    return { run: this.run?.run ?? null, layer: this.layer, stage: this.index, side: this.side };
  }

  exportParts(st: Readonly<PanelState>): ViewExport | null {
    const run = shownRun(st);
    const p = this.pane.graph.prepareExport();
    const c = this.current();
    if (!p || !run) return null;
    const s = run.stages.find((x) => x.index === c.stage);
    return {
      parts: [{ svg: p.svg, width: p.width, height: p.height, title: `${run.run} · ${t("layerTitle", { n: c.layer })} · ${s?.transform ?? c.stage} (${t(c.side === "after" ? "showAfter" : "showBefore")})` }],
      restore: p.restore, name: [run.run, `layer${c.layer}`, `stage${c.stage}`, c.side],
    };
  }

  /** Shows (run, layer) at stage `index`, the graph after the transform or before it (reloads what changed). */
  private async open(run: RunInfo, layer: number, index: number, side: StageSide): Promise<void> {
    const sameLayer = this.run?.run === run.run && this.layer === layer && this.res;
    if (sameLayer && this.index === index && this.loading) {
      // That stage is being loaded: it is drawn on the side asked last.
      this.side = side;
      return;
    }
    if (sameLayer && this.index === index && this.docs.cur) {
      if (side !== this.side) await this.setSide(side);
      else if (this.focus) await this.selectFocus();
      return;
    }
    this.side = side;
    this.run = run;
    this.layer = layer;
    this.index = index;
    const seq = ++this.seq;
    this.loading = true;
    if (!sameLayer) {
      this.res = null;
      try {
        this.res = await this.api.stages(run.run, layer);
      } catch (e) {
        if (seq !== this.seq) return;
        this.loading = false;
        this.pane.clear(t("stagesUnavailable"));
        this.cb.onError(e);
        return;
      }
      if (seq !== this.seq) return;
      this.steps = stageSteps(this.res);
    }
    await this.show(seq);
  }

  private async show(seq: number): Promise<void> {
    const run = this.run;
    if (!run) return;
    if (!this.steps.some((s) => s.index === this.index) && this.steps.length) this.index = this.steps[this.steps.length - 1].index;
    this.diff = stageDiff(this.res, this.index);
    if (this.diff.prev === null && this.side === "before") {
      // The first stage has no "before".
      this.side = "after";
      this.store.set({ stageSide: "after" });
    }
    this.renderStrip();
    this.renderButtons();
    this.pane.setBusy(t("loading"));
    const get = async (stage: number | null) => {
      if (stage === null) return null;
      try {
        return await this.api.layer(run.run, stage, this.layer);
      } catch (e) {
        if (e instanceof ApiError && e.status === 404) return null;
        throw e;
      }
    };
    let cur: LayerResponse | null;
    let prev: LayerResponse | null;
    try {
      [cur, prev] = await Promise.all([get(this.index), get(this.diff.prev)]);
    } catch (e) {
      if (seq !== this.seq) return;
      this.loading = false;
      this.pane.setBusy(null);
      this.cb.onError(e);
      return;
    }
    if (seq !== this.seq) return;
    this.docs = { cur, prev };
    this.renderInfo();
    this.renderLists();
    this.renderLegend();
    await this.draw(seq);
  }

  private async draw(seq: number): Promise<void> {
    for (const b of Array.from(this.sideSeg.children) as HTMLButtonElement[]) b.setAttribute("aria-pressed", String(b.dataset.side === this.side));
    const doc = this.side === "after" ? this.docs.cur : this.docs.prev;
    if (!doc) {
      this.pane.setBusy(null);
      this.pane.clear(t("layerNotInStage"));
      this.loading = false;
      return;
    }
    const prevHier = this.pane.hier;
    const prevExp = this.pane.expanded;
    await this.pane.setLayers([doc], (hh) => {
      // Keep groups the user collapsed collapsed (by path inside the layer) across stages.
      if (prevHier && prevHier.layers[0] === hh.layers[0]) {
        const out = defaultExpanded(hh);
        for (const it of prevHier.items.values()) if (it.kind === "group" && !prevExp.has(it.key) && hh.items.has(it.key)) out.delete(it.key);
        return out;
      }
      return defaultExpanded(hh);
    }, { initial: "readable", keepExpanded: true });
    if (seq !== this.seq) return;
    await this.selectFocus();
    this.loading = false;
  }

  private async selectFocus(): Promise<void> {
    const focus = this.focus;
    this.focus = null;
    const k = focus ? this.pane.keyForNode(focus) : null;
    if (k) await this.pane.select(k, { centre: true, reveal: true });
  }

  /** Steps to the previous or next stage (the panel's stage, that of the other views, stays). */
  step(dir: 1 | -1): void {
    const next = stepStage(this.steps, this.index, dir);
    if (next !== this.index) this.store.set({ stageShown: next });
  }

  private chooseSide(side: StageSide, focus?: string): void {
    if (side === "before" && this.diff?.prev === null) return;
    this.focus = focus ?? null;
    if (side === this.store.get().stageSide) void activity.track(this.selectFocus());
    else this.store.set({ stageSide: side });
  }

  private async setSide(side: StageSide): Promise<void> {
    if (side === "before" && this.diff?.prev === null) return;
    this.side = side;
    this.renderLegend();
    const seq = ++this.seq;
    this.loading = true;
    await this.draw(seq);
  }

  handleKey(ev: KeyboardEvent): boolean {
    if (ev.key === "[") {
      this.step(-1);
      return true;
    }
    if (ev.key === "]") {
      this.step(1);
      return true;
    }
    if (ev.key === "b" || ev.key === "B") {
      this.chooseSide(this.side === "after" ? "before" : "after");
      return true;
    }
    if (ev.key === "Escape") {
      void this.pane.select(null);
      return true;
    }
    if (ev.key === "m" || ev.key === "M") {
      this.pane.minimap.setMode(this.pane.minimap.isShown() ? "off" : "on");
      return true;
    }
    return this.pane.graph.handleKey(ev);
  }

  // ---------------------------------------------------------------- painting and panels

  private paint(): Paint {
    const marks = new Map<string, LeafMark>();
    const hier = this.pane.hier;
    const vis = this.pane.vis;
    const d = this.diff;
    if (hier && vis && d) {
      const st = stageStatus(d, this.side, hier);
      const agg = aggregateStatus(hier, st);
      for (const k of vis.leaves) {
        const it = hier.items.get(k);
        if (!it) continue;
        if (it.kind === "op") marks.set(k, { status: st.get(k) ?? "same" });
        else if (it.kind === "group") {
          const counts = agg.get(k);
          const txt = countsBadge(counts, STAGE_STATUSES);
          if (counts) marks.set(k, { counts, badge: txt ? { text: txt, tone: "diff" } : undefined });
        }
      }
      for (const c of vis.containers) {
        if (c.key === SCENE) continue;
        const counts = agg.get(c.key);
        const txt = countsBadge(counts, STAGE_STATUSES);
        if (counts && txt) marks.set(c.key, { counts, badge: { text: txt, tone: "diff" } });
      }
    }
    return { mode: "status", theme: this.theme, hot: new Map(), marks, statusOrder: STAGE_STATUSES };
  }

  private renderButtons(): void {
    const pos = this.steps.findIndex((s) => s.index === this.index);
    this.prevBtn.disabled = pos <= 0;
    this.nextBtn.disabled = pos < 0 || pos >= this.steps.length - 1;
    const noPrev = this.diff?.prev === null;
    this.compareBtn.disabled = noPrev;
    for (const b of Array.from(this.sideSeg.children) as HTMLButtonElement[]) {
      if (b.dataset.side === "before") b.disabled = noPrev;
      b.setAttribute("aria-pressed", String(b.dataset.side === this.side));
    }
  }

  private renderStrip(): void {
    clear(this.stripEl);
    let curCard: HTMLElement | null = null;
    for (const s of this.steps) {
      const cur = s.index === this.index;
      const n = s.added + s.removed + s.changed;
      const card = h("button", {
        class: `scard${cur ? " cur" : ""}${n === 0 && s.pos > 0 ? " quiet" : ""}`, type: "button", role: "option",
        "aria-selected": String(cur), "data-testid": "stage-card", "data-stage": s.index,
      });
      card.appendChild(text("span", `${String(s.index).padStart(2, "0")} · ${s.transform}`, { class: "st" }));
      const meta = h("span", { class: "sm" });
      meta.appendChild(text("span", nodesText(s.nodeCount), {}));
      if (s.pos > 0) {
        const add = (cls: string, txt: string, v: number) => {
          if (v > 0) meta.appendChild(text("span", txt, { class: `d ${cls}` }));
        };
        add("added", `+${s.added}`, s.added);
        add("removed", `−${s.removed}`, s.removed);
        add("changed", `~${s.changed}`, s.changed);
        if (n === 0) meta.appendChild(text("span", t("noChange"), { class: "d none" }));
      }
      card.appendChild(meta);
      card.title = `${s.file}\n${nodesText(s.nodeCount)}${s.pos > 0 ? `\n+${s.added} ${t("statusAdded")} · −${s.removed} ${t("statusRemoved")} · ~${s.changed} ${t("statusChanged")}` : ""}`;
      card.addEventListener("click", () => this.store.set({ stageShown: s.index }));
      this.stripEl.appendChild(card);
      if (cur) curCard = card;
    }
    if (curCard) {
      const c = curCard;
      requestAnimationFrame(() => {
        const strip = this.stripEl;
        const left = c.offsetLeft - strip.clientWidth / 2 + c.clientWidth / 2;
        strip.scrollTo({ left: Math.max(0, left), behavior: "smooth" });
      });
    }
  }

  private renderLegend(): void {
    const el = this.legendEl;
    clear(el);
    const d = this.diff;
    const counts: Record<string, number> = { added: d?.added.size ?? 0, changed: d?.changed.size ?? 0, removed: d?.removed.size ?? 0 };
    const shown: DiffStatus[] = this.side === "after" ? ["added", "changed", "same"] : ["removed", "changed", "same"];
    for (const s of shown) {
      const sc = statusColor(s, this.theme);
      const sw = h("span", { class: "sw" });
      sw.style.background = sc.fill;
      sw.style.borderColor = sc.stroke;
      const item = h("span", { class: "item", "data-status": s }, sw, t(ST_LABEL[s as keyof typeof ST_LABEL]));
      if (s !== "same") item.appendChild(text("b", ` ${counts[s]}`, { "data-testid": `stage-count-${s}` }));
      el.appendChild(item);
    }
    if (this.side === "after" && (d?.removed.size ?? 0) > 0) {
      el.appendChild(text("span", t("removedNotShown", { n: d!.removed.size }), { class: "dim" }));
    }
  }

  private renderInfo(): void {
    const el = this.infoEl;
    clear(el);
    const s = this.steps.find((x) => x.index === this.index);
    const prev = this.diff?.prev !== null && this.diff ? this.steps.find((x) => x.index === this.diff!.prev) : undefined;
    el.appendChild(text("h3", t("transform")));
    if (!s) return;
    el.appendChild(text("div", s.transform, { class: "big mono", "data-testid": "stage-transform" }));
    el.appendChild(text("div", s.file, { class: "dim mono sub" }));
    const line = prev
      ? t("stageTransition", { prev: prev.nodeCount, cur: s.nodeCount, layer: this.layer })
      : t("stageFirst", { cur: s.nodeCount, layer: this.layer });
    el.appendChild(text("p", line, { class: "sub" }));
    // The layer's GPU time in this stage (and the one before): only the stage the run's trace was
    // mapped onto has one; every other says "no trace", never a zero or a change against it.
    const time = (d: LayerResponse | null, testid: string, label: string) => {
      if (!d) return;
      const timed = layerTimed(d);
      const us = d.trace_summary?.total_duration_us ?? d.nodes.reduce((a, n) => a + n.time_us, 0);
      const p = h("p", { class: "sub", "data-testid": testid, "data-timed": String(timed) }, text("span", `${label}: `, { class: "dim" }));
      p.appendChild(timed ? text("b", fmtUs(us)) : text("span", t("noTraceShort"), { class: "notrace" }));
      el.appendChild(p);
    };
    time(this.docs.cur, "stage-gpu-time", t("totalDuration"));
    if (prev) time(this.docs.prev, "stage-gpu-time-prev", `${t("prevStage")} (${prev.transform})`);
  }

  private renderLists(): void {
    const el = this.listsEl;
    clear(el);
    const d = this.diff;
    if (!d) return;
    if (d.prev === null) {
      el.appendChild(text("p", t("firstStageHint"), { class: "hint" }));
      return;
    }
    const lists = stageLists(d, this.docs.cur, this.docs.prev);
    const section = (title: string, items: StageListItem[], status: DiffStatus, testid: string, side: StageSide) => {
      el.appendChild(text("h3", `${title} (${items.length})`));
      const ul = h("ul", { class: "links nodelist", "data-testid": testid });
      if (!items.length) ul.appendChild(text("li", t("none"), { class: "dim" }));
      for (const it of items) {
        const btn = h("button", { class: "link", type: "button", "data-testid": `${testid}-item`, "data-node-id": it.id });
        const dot = h("span", { class: "dot" });
        dot.style.background = statusColor(status, this.theme).solid;
        btn.append(dot, text("span", it.label, {}), text("span", ` %${it.id}`, { class: "dim mono" }));
        if (it.group) btn.appendChild(text("span", ` · ${it.group}`, { class: "dim" }));
        btn.addEventListener("click", () => this.chooseSide(status === "changed" ? this.side : side, it.id));
        ul.appendChild(h("li", {}, btn));
      }
      el.appendChild(ul);
    };
    section(t("listRemoved"), lists.removed, "removed", "stage-removed", "before");
    section(t("listAdded"), lists.added, "added", "stage-added", "after");
    section(t("listChanged"), lists.changed, "changed", "stage-changed", "after");
  }

  testState() {
    return {
      loading: this.loading,
      ...this.current(),
      draws: this.pane.draws,
      selected: this.pane.selected ? publicId(this.pane.selected) : null,
      counts: { added: this.diff?.added.size ?? 0, removed: this.diff?.removed.size ?? 0, changed: this.diff?.changed.size ?? 0 },
    };
  }
}
