// Details panel: the selected node (op target, inputs/outputs with shapes and dtypes, weights,
// kernels with full demangled names and replay stats, share of the layer's time), a selected group
// or input, or the layer summary when nothing is selected. Text only (textContent).
import type { LayerResponse, NodeKernel } from "../api/types";
import { t } from "../i18n";
import { groupColor, outsideColor, type Theme } from "../model/colors";
import { fmtPct, fmtUs, shortDtype, shortStream } from "../model/format";
import { isGroupKey, type Hierarchy, type TreeItem } from "../model/hierarchy";
import { groupTitle, inputCaption } from "../model/labels";
import { clear, h, text } from "../ui/dom";
import { categoryColor, rooflineOf, tailOf, type ReportIndex } from "../timing/model";
import { boundText, rateText, sizesText } from "../timing/roofline_text";

export interface Adjacency {
  inputs: Map<string, string[]>;
  outputs: Map<string, string[]>;
}

export function adjacency(hh: Hierarchy): Adjacency {
  const inputs = new Map<string, string[]>();
  const outputs = new Map<string, string[]>();
  for (const e of hh.edges) {
    (outputs.get(e.from) ?? outputs.set(e.from, []).get(e.from)!).push(e.to);
    (inputs.get(e.to) ?? inputs.set(e.to, []).get(e.to)!).push(e.from);
  }
  return { inputs, outputs };
}

export interface DetailsContext {
  h: Hierarchy;
  adj: Adjacency;
  key: string | null;
  layers: LayerResponse[];
  expanded: Set<string>;
  theme: Theme;
  hasTrace: boolean;
  /** GPU time outside every layer, shown beside the groups in a whole stage's summary (else null). */
  outsideUs: number | null;
  onSelect(key: string): void;
  onToggle(key: string): void;
  onKernel(k: NodeKernel, nodeKey: string): void;
  /** The run's report (api/report), indexed: a node's tail, a layer's breakdown; null without one. */
  report?: ReportIndex | null;
}

export class DetailsPanel {
  readonly el: HTMLDivElement;

  constructor() {
    this.el = h("div", { class: "adl-details", "data-testid": "details" });
  }

  show(ctx: DetailsContext): void {
    clear(this.el);
    const it = ctx.key ? ctx.h.items.get(ctx.key) : undefined;
    if (!it) this.summary(ctx);
    else if (it.kind === "op") this.op(ctx, it);
    else if (it.kind === "input") this.input(ctx, it);
    else this.group(ctx, it);
  }

  private section(title: string, ...children: (Node | null)[]): HTMLElement {
    const sec = h("section", { class: "sec" }, text("h3", title));
    for (const c of children) if (c) sec.appendChild(c);
    this.el.appendChild(sec);
    return sec;
  }

  private kv(rows: [string, string | Node][]): HTMLElement {
    const dl = h("dl", { class: "kv" });
    for (const [k, v] of rows) {
      dl.appendChild(text("dt", k));
      const dd = h("dd");
      if (typeof v === "string") dd.textContent = v;
      else dd.appendChild(v);
      dl.appendChild(dd);
    }
    return dl;
  }

  private nodeLink(ctx: DetailsContext, key: string): HTMLElement {
    const it = ctx.h.items.get(key);
    const a = h("button", { class: "link", type: "button", "data-key": key });
    if (it?.kind === "op" && it.node) {
      a.appendChild(text("span", `%${it.node.id}`, { class: "mono" }));
      a.appendChild(text("span", ` ${it.node.label}`, { class: "dim" }));
      a.appendChild(text("span", ` ${it.node.shape} ${shortDtype(it.node.dtype)}`, { class: "dim mono" }));
    } else if (it?.kind === "input" && it.input) {
      a.appendChild(text("span", `%${it.input.id}`, { class: "mono" }));
      a.appendChild(text("span", ` ${inputCaption(it.input.label)}`, { class: "dim" }));
      a.appendChild(text("span", ` ${it.input.shape} ${shortDtype(it.input.dtype)}`, { class: "dim mono" }));
    } else {
      a.textContent = key.slice(2);
    }
    a.addEventListener("click", () => ctx.onSelect(key));
    return a;
  }

  private header(title: string, sub: string, group: string | null, theme: Theme): void {
    const hd = h("div", { class: "dhead" });
    if (group) {
      const chip = h("span", { class: "chip" });
      const gc = groupColor(group, theme);
      chip.style.background = gc.fill;
      chip.style.borderColor = gc.stroke;
      chip.textContent = group;
      hd.appendChild(chip);
    }
    hd.appendChild(text("h2", title));
    hd.appendChild(text("div", sub, { class: "mono dim sub", "data-testid": "details-id" }));
    this.el.appendChild(hd);
  }

  private op(ctx: DetailsContext, it: TreeItem): void {
    const n = it.node!;
    this.header(n.label || n.op, `%${n.id}`, n.group, ctx.theme);
    const layerTime = it.layer !== null ? ctx.h.layerTimeUs.get(it.layer) ?? 0 : 0;
    if (ctx.hasTrace) {
      const share = layerTime > 0 ? n.time_us / layerTime : 0;
      const bar = h("div", { class: "sharebar", "data-testid": "details-share" });
      const fill = h("div", { class: "fill" });
      fill.style.width = `${Math.min(100, share * 100).toFixed(2)}%`;
      bar.appendChild(fill);
      const lbl = text("div", `${fmtUs(n.time_us)} · ${fmtPct(share)} ${t("shareOfLayer").toLowerCase()}`, { class: "sharelbl" });
      this.section(t("shareOfLayer"), bar, lbl);
    }
    const rows: [string, string | Node][] = [
      [t("opTarget"), text("code", n.op, { class: "wrap" })],
      [t("nodeKind"), n.node_kind],
      [t("group"), n.group],
      [t("subGroup"), n.sub_group ?? t("none")],
      [t("output"), `${n.shape} · ${n.dtype}`],
      [t("layer"), it.layer !== null ? String(it.layer) : t("none")],
    ];
    if (n.stream) rows.push([t("streamRole"), n.stream]);
    if (typeof n.line === "number") rows.push([t("dumpLine"), String(n.line)]);
    if (n.args) rows.push([t("args"), text("code", n.args, { class: "wrap args" })]);
    this.section(t("opTarget"), this.kv(rows));
    const ins = ctx.adj.inputs.get(it.key) ?? [];
    const outs = ctx.adj.outputs.get(it.key) ?? [];
    const list = (keys: string[]) => {
      if (!keys.length) return text("div", t("none"), { class: "dim" });
      const ul = h("ul", { class: "links" });
      for (const k of keys) ul.appendChild(h("li", {}, this.nodeLink(ctx, k)));
      return ul;
    };
    this.section(`${t("inputs")} (${ins.length})`, list(ins));
    this.section(`${t("outputsTo")} (${outs.length})`, list(outs));
    if (n.weights?.length) {
      const tb = h("table", { class: "tbl" });
      for (const w of n.weights) {
        const tr = h("tr");
        const nm = text("td", w.role, { class: "mono wrap" });
        nm.title = w.name;
        tr.append(nm, text("td", w.shape, { class: "mono" }), text("td", shortDtype(w.dtype), { class: "mono dim" }));
        tb.appendChild(tr);
      }
      this.section(`${t("weights")} (${n.weights.length})`, tb);
    }
    if (n.kernels?.length) {
      const wrap = h("div", { class: "kernels", "data-testid": "details-kernels" });
      for (const k of n.kernels) {
        const card = h("div", { class: "kcard" });
        const head = h("button", { class: "link khead", type: "button" }, text("span", `⚡ ${k.kernel}`, { class: "mono" }));
        head.addEventListener("click", () => ctx.onKernel(k, it.key));
        card.appendChild(head);
        card.appendChild(text("code", k.name || k.kernel, { class: "kname wrap", "data-testid": "kernel-full-name" }));
        const rows: [string, string][] = [
          [t("duration"), fmtUs(k.duration_us)],
          [t("stream"), `${shortStream(k.stream)} (${k.stream})`],
          [t("start"), fmtUs(k.start_us)],
        ];
        if (k.stats) {
          rows.push([t("median"), fmtUs(k.stats.median_us)]);
          rows.push([`${t("min")} / ${t("max")}`, `${fmtUs(k.stats.min_us)} / ${fmtUs(k.stats.max_us)}`]);
          rows.push([t("count"), String(k.stats.count)]);
        }
        card.appendChild(this.kv(rows));
        wrap.appendChild(card);
      }
      this.section(`${t("kernelsTitle")} (${n.kernels.length})`, wrap);
    }
    const roof = rooflineOf(ctx.report ?? null, it.layer, n.id);
    if (roof) {
      const rate = roof.bound === "communication" ? rateText(roof) : roof.achieved_tbs !== null ? `${roof.achieved_tbs.toFixed(3)} TB/s` : "–";
      const rows: [string, string][] = roof.reason !== null ? [[t("roofUnknown"), roof.reason]] : [
        [t("timingAchieved"), `${roof.achieved_tflops !== null ? `${roof.achieved_tflops.toFixed(2)} TFLOP/s · ` : ""}${rate}`],
        [t("timingBound"), boundText(roof.bound)],
        [t("timingOfPeak"), fmtPct(roof.peak_share)],
        [t("timingFormula"), roof.formula],
      ];
      const sizes = sizesText(roof);
      if (sizes) rows.push([t("roofSizes"), sizes]);
      const sec = this.section(t("timingRoofline"), this.kv(rows));
      sec.dataset.testid = "details-roofline";
    }
    const tail = tailOf(ctx.report ?? null, it.layer, n.id);
    if (tail) {
      const rows: [string, string][] = [["p50", fmtUs(tail.p50_us)], ["p90", fmtUs(tail.p90_us)], ["p99", fmtUs(tail.p99_us)], [t("max"), fmtUs(tail.max_us)], [t("count"), String(tail.replays)]];
      const sec = this.section(t("tailTitle"), this.kv(rows));
      sec.dataset.testid = "details-tail";
      sec.dataset.flagged = String(tail.flagged);
      if (tail.flagged) sec.appendChild(text("p", t("tailFlagged"), { class: "hint flagged" }));
    }
  }

  private input(ctx: DetailsContext, it: TreeItem): void {
    if (it.inputs) {
      // A fold of inputs of one kind: each of them.
      this.header(inputCaption(it.input!.label), `${it.inputs.length} × ${t("externalInput")}`, null, ctx.theme);
      this.section(t("externalInput"), this.kv(it.inputs.map((x) => [`%${x.id}`, `${x.shape} · ${x.dtype || "–"}`])));
      const outs = ctx.adj.outputs.get(it.key) ?? [];
      const ul = h("ul", { class: "links" });
      for (const k of outs) ul.appendChild(h("li", {}, this.nodeLink(ctx, k)));
      this.section(`${t("consumers")} (${outs.length})`, ul);
      return;
    }
    const x = it.input!;
    this.header(x.label ? inputCaption(x.label) : x.id, `%${x.id}`, null, ctx.theme);
    const rows: [string, string][] = [
      [t("inputKind"), x.kind],
      [t("output"), `${x.shape} · ${x.dtype}`],
    ];
    if (typeof x.layer === "number") rows.push([t("producedBy"), t("layerTitle", { n: x.layer })]);
    this.section(t("externalInput"), this.kv(rows));
    const outs = ctx.adj.outputs.get(it.key) ?? [];
    const ul = h("ul", { class: "links" });
    for (const k of outs) ul.appendChild(h("li", {}, this.nodeLink(ctx, k)));
    this.section(`${t("consumers")} (${outs.length})`, ul);
  }

  private group(ctx: DetailsContext, it: TreeItem): void {
    const title = groupTitle(it);
    this.header(title, it.key.slice(2), it.depth >= 2 ? topGroup(ctx.h, it) : null, ctx.theme);
    const open = ctx.expanded.has(it.key);
    const btn = h("button", { class: "btn", type: "button", "data-testid": "details-toggle" });
    btn.textContent = open ? t("collapse") : t("expand");
    btn.addEventListener("click", () => ctx.onToggle(it.key));
    const layerTime = it.layer !== null ? ctx.h.layerTimeUs.get(it.layer) ?? 0 : 0;
    const rows: [string, string | Node][] = [[t("nodeCount"), String(it.nodeCount)]];
    // Without a trace the kernel count is unknown, not zero: the summary says "no trace" once.
    if (ctx.hasTrace && ctx.h.traced) rows.push([t("kernelCount"), String(it.kernelCount)]);
    if (ctx.hasTrace) rows.push([t("gpuTime"), `${fmtUs(it.timeUs)}${layerTime > 0 && it.depth > 1 ? ` (${fmtPct(it.timeUs / layerTime)})` : ""}`]);
    this.section(t("groupDetails"), this.kv(rows), btn);
    // Hottest nodes inside.
    const ops: TreeItem[] = [];
    const stack = [it.key];
    while (stack.length) {
      const k = stack.pop()!;
      const c = ctx.h.items.get(k)!;
      if (c.kind === "op") ops.push(c);
      else stack.push(...c.children);
    }
    ops.sort((a, b) => b.timeUs - a.timeUs || a.order - b.order);
    const ul = h("ul", { class: "links" });
    for (const o of ops.slice(0, 12)) {
      const li = h("li", {}, this.nodeLink(ctx, o.key));
      if (o.timeUs > 0) li.appendChild(text("span", ` ${fmtUs(o.timeUs)}`, { class: "tag" }));
      ul.appendChild(li);
    }
    this.section(`${t("children")} (${ops.length})`, ul);
  }

  private breakdown(ctx: DetailsContext, layer: number): void {
    const sec = breakdownSection(ctx, layer);
    if (sec) this.el.appendChild(sec);
  }

  private summary(ctx: DetailsContext): void {
    const single = ctx.layers.length === 1 ? ctx.layers[0] : null;
    this.header(single ? t("layerTitle", { n: single.layer }) : t("stageSummary"), single ? single.kind : `${ctx.layers.length} × ${t("layer").toLowerCase()}`, null, ctx.theme);
    this.el.appendChild(text("p", t("selectHint"), { class: "hint" }));
    if (!ctx.hasTrace) {
      this.el.appendChild(text("p", t("noTrace"), { class: "hint" }));
    }
    let nodes = 0;
    for (const L of ctx.layers) nodes += L.nodes.length;
    const rows: [string, string][] = [[t("nodeCount"), String(nodes)]];
    const ts = single?.trace_summary;
    if (ts) {
      rows.push([t("totalDuration"), fmtUs(ts.total_duration_us)]);
      rows.push([t("kernelCount"), String(ts.kernel_count)]);
      rows.push([t("streams"), String(ts.num_streams)]);
    }
    this.section(single ? t("layerSummary") : t("stageSummary"), this.kv(rows));
    if (single) this.breakdown(ctx, single.layer);
    // Time per group (sum over loaded layers).
    const groups = new Map<string, number>();
    for (const L of ctx.layers) for (const n of L.nodes) groups.set(n.group, (groups.get(n.group) ?? 0) + (n.time_us || 0));
    // One layer: the trace summary's groups, with the kernels no node claimed, so that the
    // shares are of the layer's GPU time (the sum of its kernels) as everywhere else.
    if (ts?.groups && Object.keys(ts.groups).length) {
      groups.clear();
      for (const [g, us] of Object.entries(ts.groups)) if (us > 0) groups.set(g, us);
    }
    const layersUs = [...groups.values()].reduce((a, b) => a + b, 0);
    // A whole stage's time includes what runs outside the layers (embedding, lm head...): its
    // own row, and every share is of the whole.
    const outside = !single && ctx.outsideUs !== null && layersUs > 0 ? ctx.outsideUs : null;
    const total = layersUs + (outside ?? 0);
    if (total > 0) {
      const tb = h("div", { class: "bars" });
      const rows: [string, number, string, string][] = [...groups].sort((a, b) => b[1] - a[1])
        .map(([g, us]) => [g, us, groupColor(g, ctx.theme).bar, ""]);
      if (outside !== null) rows.push([t("outsideLayers"), outside, outsideColor(ctx.theme), "details-outside"]);
      for (const [g, us, colour, testid] of rows) {
        const row = h("div", testid ? { class: "barrow", "data-testid": testid } : { class: "barrow" });
        const lbl = text("span", g, { class: "blabel" });
        const bar = h("span", { class: "bar" });
        const fill = h("span", { class: "fill" });
        fill.style.width = `${((us / total) * 100).toFixed(2)}%`;
        fill.style.background = colour;
        bar.appendChild(fill);
        row.append(lbl, bar, text("span", `${fmtUs(us)} · ${fmtPct(us / total)}`, { class: "bval" }));
        tb.appendChild(row);
      }
      this.section(t("perGroup"), tb);
    }
    if (ts?.streams?.length) {
      const tb = h("div", { class: "bars" });
      for (const st of ts.streams) {
        const row = h("div", { class: "barrow" });
        // Of the layer's span (its first kernel's start to its last one's end on any stream), as
        // the timeline's lanes of the layer say it.
        const span = ts.span_us > 0 ? ts.span_us : st.span_us;
        const share = span > 0 ? st.busy_us / span : 0;
        const bar = h("span", { class: "bar" });
        const fill = h("span", { class: "fill stream" });
        fill.style.width = `${(share * 100).toFixed(2)}%`;
        bar.appendChild(fill);
        row.append(text("span", shortStream(st.stream), { class: "blabel mono" }), bar,
          text("span", `${t("busyOfLayer", { pct: fmtPct(share, 0) })} · ${t("idle", { us: fmtUs(st.gaps_us) })}`, { class: "bval" }));
        tb.appendChild(row);
      }
      this.section(t("streams"), tb);
    }
    if (ts?.unmapped?.length) {
      const ul = h("ul", { class: "plain" });
      for (const u of ts.unmapped) {
        const li = h("li");
        li.append(text("code", u.kernel, { class: "wrap" }), text("span", ` ${fmtUs(u.duration_us)} — ${u.reason}`, { class: "dim" }));
        ul.appendChild(li);
      }
      this.section(t("unmapped"), ul);
    }
  }
}

/** A layer's GPU time by group and by category, its overlap and critical path, from the report. */
function breakdownSection(ctx: DetailsContext, layer: number): HTMLElement | null {
  const L = ctx.report?.layers.get(layer);
  if (!L) return null;
  const sec = h("section", { class: "sec", "data-testid": "details-breakdown" }, text("h3", t("reportBreakdown")));
  const total = L.gpu_time_us;
  const rows = (items: { name: string; us: number; colour: string; attr: string }[]) => {
    const tb = h("div", { class: "bars" });
    for (const x of items) {
      const row = h("div", { class: "barrow", [x.attr]: x.name, "data-us": x.us });
      const bar = h("span", { class: "bar" });
      const fill = h("span", { class: "fill" });
      fill.style.width = `${total > 0 ? ((x.us / total) * 100).toFixed(2) : 0}%`;
      fill.style.background = x.colour;
      bar.appendChild(fill);
      row.append(text("span", x.name, { class: "blabel" }), bar, text("span", `${fmtUs(x.us)}${total > 0 ? ` · ${fmtPct(x.us / total)}` : ""}`, { class: "bval" }));
      tb.appendChild(row);
    }
    return tb;
  };
  sec.appendChild(text("h4", t("reportByGroup")));
  sec.appendChild(rows(L.groups.map((g) => ({ name: g.group, us: g.gpu_time_us, colour: groupColor(g.group, ctx.theme).bar, attr: "data-group" }))));
  sec.appendChild(text("h4", t("reportByCategory")));
  sec.appendChild(rows(L.categories.map((c) => ({ name: c.category, us: c.gpu_time_us, colour: categoryColor(c.category, ctx.theme), attr: "data-category" }))));
  const o = L.overlap;
  if (o.communication_us > 0) sec.appendChild(text("p", t("reportOverlap", { comm: fmtUs(o.communication_us), hidden: fmtUs(o.hidden_us), exposed: fmtUs(o.exposed_us) }), { class: "hint" }));
  const cp = L.critical_path;
  if (cp.steps.length) sec.appendChild(text("p", t("reportCritical", { busy: fmtUs(cp.busy_us), wait: fmtUs(cp.wait_us), span: fmtUs(cp.span_us) }), { class: "hint" }));
  return sec;
}

function topGroup(hh: Hierarchy, it: TreeItem): string {
  let cur: TreeItem | undefined = it;
  while (cur && cur.depth > 2) cur = cur.parent ? hh.items.get(cur.parent) : undefined;
  return cur?.name ?? "other";
}

export { isGroupKey };
