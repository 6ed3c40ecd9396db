import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Diff, LayerBreakdown, Report } from "../../src/api/types";
import {
  categoryColor, categoryOrder, diffModel, diffRun, diffWhere, findingTarget, flaggedNodes, hostShown, reportIndex, rooflineOf, tailOf, timelineMarks, timingModel,
} from "../../src/timing/model";

function layer(n: number | null, cats: Record<string, number>, extra: Partial<LayerBreakdown> = {}): LayerBreakdown {
  const total = Object.values(cats).reduce((a, b) => a + b, 0);
  return {
    layer: n, kind: n === null ? "outside" : "mla+moe", gpu_time_us: total, memory_us: cats.memory ?? 0, span_us: total + 1,
    groups: [{ group: "moe", gpu_time_us: total }],
    categories: Object.entries(cats).map(([category, us]) => ({ category, gpu_time_us: us, share: us / total })),
    streams: [],
    overlap: { compute_us: 10, communication_us: 0, hidden_us: 0, exposed_us: 0, overlap_share: null, exposed: [] },
    critical_path: { span_us: 0, busy_us: 0, wait_us: 0, streams: {}, steps: [] },
    ...extra,
  };
}

/** A report as api/report answers it: two layers (given out of order), work outside them. */
function report(): Report {
  const comm = layer(3, { communication: 10, shared_experts: 12 }, {
    overlap: { compute_us: 12, communication_us: 10, hidden_us: 4, exposed_us: 6, overlap_share: 0.4, exposed: [{ kernel_id: 2, stream: "s66", start_us: 12, end_us: 18 }] },
    critical_path: { span_us: 18, busy_us: 10, wait_us: 8, streams: { s66: 10 }, steps: [{ kernel_id: 2, stream: "s66", start_us: 8, end_us: 18, wait_us: 8 }] },
  });
  return {
    run: "r", stage: 2, phase: "decode",
    step: { gpu_time_us: 40, memory_us: 1, span_us: 30, busy_us: 28, idle_us: 2, kernel_count: 4, memory_op_count: 1, replays: 100 },
    categories: [
      { category: "shared_experts", gpu_time_us: 17, share: 0.425 },
      { category: "communication", gpu_time_us: 10, share: 0.25 },
      { category: "memory", gpu_time_us: 1, share: 0.025 },
      { category: "gemm", gpu_time_us: 5, share: 0.125 },
    ],
    groups: [{ group: "moe", gpu_time_us: 40 }],
    streams: [{ stream: "s65", label: "GPU 0 · stream 65", kernel_count: 2, busy_us: 20, span_us: 20, idle_us: 10 }],
    layers: [comm, layer(1, { shared_experts: 5, memory: 1, norm: 2 }, {
      critical_path: { span_us: 8, busy_us: 8, wait_us: 0, streams: {}, steps: [{ kernel_id: 7, stream: "s65", start_us: 0, end_us: 8, wait_us: 0 }] },
    })],
    outside: layer(null, { gemm: 5 }),
    tails: [
      { layer: 3, node: "shared_up", replays: 100, p50_us: 12, p90_us: 12.2, p99_us: 19, max_us: 21, flagged: true, kernels: [] },
      { layer: 1, node: "steady", replays: 100, p50_us: 5, p90_us: 5.1, p99_us: 5.2, max_us: 6, flagged: false, kernels: [] },
      { layer: null, node: "lm_head", replays: 100, p50_us: 5, p90_us: 8, p99_us: 12, max_us: 13, flagged: true, kernels: [] },
    ],
    gpu: { name: null, source: "none", entry: null, peak_tflops: {}, peak_tbs: null },
    roofline: [{ layer: 3, node: "shared_up", op: "aten.mm.default", time_us: 12, flops: 1e8, bytes: 3e7, formula: "gemm 2*M*N*K", intensity: 3.3, achieved_tflops: 9.8, achieved_tbs: 2.5, bound: "memory", achieved_bus_gbs: null, world_size: null, sizes: [], peak_share: 0.73, reason: null }],
    dims: {},
    trace_dims: null,
    host: { runtime_recorded: false, launches: null, graph_launches: null, sync_calls: null, sync_us: null, gaps: [], idle_us: 2, explained_us: 0, copies: null },
    findings: [
      { kind: "tail", message: "shared_up (layer 3): p99 19 µs", layer: 3, node: "shared_up", time_at_stake_us: 7 },
      { kind: "exposed_communication", message: "layer 3: 6 µs", layer: 3, node: null, time_at_stake_us: 6 },
      { kind: "idle", message: "GPU idle", layer: null, node: null, time_at_stake_us: 2 },
    ],
    notes: [],
    ranks: [],
    stragglers: [],
  };
}

describe("timing model", () => {
  it("stacks each layer's own categories in the step's order, memory last, outside after the layers", () => {
    const m = timingModel(report());
    assert.deepEqual(m.order, ["shared_experts", "communication", "gemm", "norm", "memory"]);
    assert.deepEqual(m.bars.map((b) => b.layer), [1, 3, null]);
    const l1 = m.bars[0];
    assert.deepEqual(l1.segments.map((s) => [s.category, s.us, s.start]), [["shared_experts", 5, 0], ["norm", 2, 5], ["memory", 1, 7]]);
    // A bar's total is the layer's own gpu_time_us, never a sum made here.
    assert.equal(l1.total, 8);
    assert.equal(m.max, 22);
    assert.deepEqual(m.rows.map((r) => [r.layer, r.gpuUs, r.exposedUs, r.categories.get("shared_experts") ?? null]), [[1, 8, 0, 5], [3, 22, 6, 12], [null, 5, 0, null]]);
  });

  it("shows the step's memory operations apart from its categories", () => {
    const m = timingModel(report());
    assert.deepEqual(m.categories.map((c) => c.category), ["shared_experts", "communication", "gemm"]);
    assert.deepEqual(m.memory, { us: 1, count: 1, share: 0.025 });
  });

  it("ranks findings as the report does; those with a layer lead there", () => {
    const m = timingModel(report());
    assert.deepEqual(m.findings.map((f) => [f.rank, f.finding.kind, f.target]), [
      [1, "tail", { layer: 3, node: "shared_up" }], [2, "exposed_communication", { layer: 3, node: null }], [3, "idle", null]]);
    assert.equal(findingTarget({ kind: "idle", message: "", layer: 0, node: null, time_at_stake_us: 1 })?.layer, 0);
  });

  it("keeps flagged tails, layers with communication and a host side only when recorded", () => {
    const m = timingModel(report());
    assert.deepEqual(m.tails.map((x) => x.node), ["shared_up", "lm_head"]);
    assert.deepEqual(m.overlap.map((o) => [o.layer, o.overlap.exposed_us]), [[3, 6]]);
    assert.equal(m.host, null);
    const h = report().host;
    assert.equal(hostShown({ ...h, runtime_recorded: true }) !== null, true);
    assert.equal(hostShown({ ...h, copies: [] }) !== null, true);
  });

  it("orders categories a layer adds after the step's", () => {
    const r = report();
    r.layers.push(layer(5, { ssm: 3 }));
    assert.deepEqual(categoryOrder(r), ["shared_experts", "communication", "gemm", "norm", "ssm", "memory"]);
  });

  it("colours known categories fixed and others stably", () => {
    assert.equal(categoryColor("attention", "light"), categoryColor("attention", "light"));
    assert.notEqual(categoryColor("attention", "light"), categoryColor("attention", "dark"));
    assert.equal(categoryColor("my_cat", "light"), categoryColor("my_cat", "light"));
    assert.match(categoryColor("my_cat", "dark"), /^hsl\(/);
  });
});

describe("timing figures in the layer view", () => {
  it("finds a node's tail and the flagged nodes of the shown layers", () => {
    const idx = reportIndex(report());
    assert.equal(tailOf(idx, 3, "shared_up")?.p99_us, 19);
    assert.equal(tailOf(idx, 1, "shared_up"), null);
    assert.equal(tailOf(idx, null, "lm_head")?.p90_us, 8);
    assert.equal(tailOf(null, 3, "shared_up"), null);
    assert.deepEqual([...flaggedNodes(idx, [3])], ["shared_up"]);
    assert.deepEqual([...flaggedNodes(idx, [1])], []);
    assert.deepEqual([...flaggedNodes(null, [3])], []);
    assert.equal(rooflineOf(idx, 3, "shared_up")?.bound, "memory");
    assert.equal(rooflineOf(idx, 1, "shared_up"), null);
  });

  it("gives the timeline the report's kernel ids: one layer's, or every layer's and outside", () => {
    const idx = reportIndex(report());
    assert.deepEqual(timelineMarks(idx, 3), { path: [2], exposed: [{ kernel_id: 2, stream: "s66", start_us: 12, end_us: 18 }] });
    assert.deepEqual(timelineMarks(idx, 9), { path: [], exposed: [] });
    assert.deepEqual(timelineMarks(idx, "all").path.sort(), [2, 7]);
    assert.deepEqual(timelineMarks(null, 3), { path: [], exposed: [] });
  });
});

describe("timing diff", () => {
  const d: Diff = {
    a_run: "a", b_run: "b", gate_pct: 5, verdict: "regression",
    step: { level: "step", layer: null, group: null, node: null, a_us: 22, b_us: 24.5, delta_us: 2.5, delta_pct: 11.4, noise_us: 0.5 },
    regressions: [{ level: "node", layer: 3, group: "moe", node: "shared_up", a_us: 12, b_us: 14.5, delta_us: 2.5, delta_pct: 20.8, noise_us: 0.3 }],
    improvements: [],
    notes: [],
  };

  it("keeps the verdict and the entries as api/diff lists them", () => {
    const m = diffModel(d);
    assert.equal(m.verdict, "regression");
    assert.equal(m.gatePct, 5);
    assert.equal(m.regressions[0].delta_us, 2.5);
    assert.equal(diffWhere(m.regressions[0], (n) => `L${n}`, "step", "outside"), "L3 · moe · %shared_up");
    assert.equal(diffWhere(m.step, (n) => `L${n}`, "step", "outside"), "step");
    assert.equal(diffWhere({ ...m.step, level: "group", group: "other" }, (n) => `L${n}`, "step", "outside"), "outside · other");
  });

  it("diffs against the comparison's B run only when it is another run", () => {
    const side = (run: string) => ({ run, stage: 0, layer: 0 });
    assert.equal(diffRun("a", { b: side("b") }), "b");
    assert.equal(diffRun("a", { b: side("a") }), null);
    assert.equal(diffRun("a", null), null);
    assert.equal(diffRun(null, { b: side("b") }), null);
  });
});
