import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { OverviewResponse, StagesResponse } from "../../src/api/types";
import { buildHierarchy } from "../../src/model/hierarchy";
import { aggregateStatus } from "../../src/model/status";
import { chartGeom, groupOrder, groupTotals, niceTicks, overviewModel, UNMAPPED } from "../../src/overview/model";
import { nextChangedStage, stageDiff, stageLists, stageStatus, stageSteps, stepStage } from "../../src/stages/model";
import { loadLayer, miniLayer } from "./helpers";

const STAGES: StagesResponse = {
  run: "r",
  layer: 2,
  stages: [
    { index: 7, file: "085_compile_compile_model.txt", stage: "compile", transform: "compile_model", node_count: 4, added: ["f"], removed: ["c", "d"], changed: ["a"] },
    { index: 0, file: "001_export_export_to_gm.txt", stage: "export", transform: "export_to_gm", node_count: 4, added: [], removed: [], changed: [] },
    { index: 3, file: "040_pattern_matcher.txt", stage: "pattern_matcher", transform: "pattern_matcher", node_count: 5, added: ["e"], removed: [], changed: [] },
    { index: 5, file: "060_sharding.txt", stage: "sharding", transform: "sharding", node_count: 5, added: [], removed: [], changed: [] },
  ],
};

describe("stage view model", () => {
  it("orders stages and counts what each transform did", () => {
    const s = stageSteps(STAGES);
    assert.deepEqual(s.map((x) => x.index), [0, 3, 5, 7]);
    assert.deepEqual(s.map((x) => [x.added, x.removed, x.changed, x.countDelta]), [[0, 0, 0, 0], [1, 0, 0, 1], [0, 0, 0, 0], [1, 2, 1, -1]]);
    assert.equal(s[3].transform, "compile_model");
    assert.deepEqual(stageSteps(null), []);
  });

  it("steps to the previous/next stage, clamped at the ends", () => {
    const s = stageSteps(STAGES);
    assert.equal(stepStage(s, 0, 1), 3);
    assert.equal(stepStage(s, 3, -1), 0);
    assert.equal(stepStage(s, 0, -1), 0);
    assert.equal(stepStage(s, 7, 1), 7);
    assert.equal(stepStage(s, 99, 1), 0);
    assert.equal(stepStage([], 4, 1), 4);
    assert.equal(nextChangedStage(s, 3, 1), 7);
    assert.equal(nextChangedStage(s, 7, -1), 3);
    assert.equal(nextChangedStage(s, 3, -1), null);
  });

  it("marks added and changed nodes in this stage, removed and changed in the previous one", () => {
    const d = stageDiff(STAGES, 7);
    assert.equal(d.prev, 5);
    const cur = miniLayer(2, [["a", "norm", null, []], ["b", "mla", null, ["a"]], ["e", "mla", null, ["b"]], ["f", "moe", null, ["e"]]]);
    const prev = miniLayer(2, [["a", "norm", null, []], ["b", "mla", null, ["a"]], ["c", "mla", "q_branch", ["b"]], ["d", "mla", "q_branch", ["c"]], ["e", "mla", null, ["d"]]]);
    const after = stageStatus(d, "after", buildHierarchy([cur]));
    assert.deepEqual(Object.fromEntries(after), { "n:a": "changed", "n:b": "same", "n:e": "same", "n:f": "added" });
    const hp = buildHierarchy([prev]);
    const before = stageStatus(d, "before", hp);
    assert.deepEqual([...before].filter(([, s]) => s !== "same"), [["n:a", "changed"], ["n:c", "removed"], ["n:d", "removed"]]);
    // The removed nodes sit in mla/q_branch: the collapsed group says so.
    assert.deepEqual(aggregateStatus(hp, before).get("g:L2/mla/q_branch"), { removed: 2 });
    const lists = stageLists(d, cur, prev);
    assert.deepEqual(lists.removed.map((x) => [x.id, x.group]), [["c", "mla"], ["d", "mla"]]);
    assert.deepEqual(lists.added.map((x) => x.id), ["f"]);
    assert.deepEqual(lists.changed.map((x) => x.id), ["a"]);
    // The first stage has nothing to compare with.
    const d0 = stageDiff(STAGES, 0);
    assert.equal(d0.prev, null);
    assert.equal(d0.removed.size, 0);
  });

  it("lists removed nodes by id when the previous layer is not loaded", () => {
    const lists = stageLists(stageDiff(STAGES, 7), null, null);
    assert.deepEqual(lists.removed.map((x) => x.label), ["c", "d"]);
  });
});

const OV: OverviewResponse = {
  run: "r",
  stage: 7,
  layers: [
    { layer: 1, kind: "dense", attention: "mla", node_count: 10, gpu_time_us: 100, groups: { mla: 60, mlp: 30, norm: 10 }, group_counts: { mla: 6, mlp: 2, norm: 2 } , same_as: null},
    { layer: 0, kind: "dense", attention: "mla", node_count: 9, gpu_time_us: 90, groups: { mla: 50, mlp: 30, norm: 10 }, group_counts: { mla: 5, mlp: 2, norm: 2 } , same_as: null},
    { layer: 2, kind: "moe", attention: "mla", node_count: 20, gpu_time_us: 210, groups: { moe: 120, mla: 60, norm: 10, [UNMAPPED]: 1 }, group_counts: { moe: 10, mla: 6, norm: 4 } , same_as: null},
    { layer: 3, kind: "moe", attention: "mla", node_count: 20, gpu_time_us: 200, groups: { moe: 100, mla: 60, norm: 10 }, group_counts: {} , same_as: null},
  ],
  none_node_count: 7,
  outside_gpu_time_us: null,
};

describe("overview model", () => {
  it("stacks GPU time by group, bottom first in palette order, unmapped on top", () => {
    const m = overviewModel(OV);
    assert.equal(m.metric, "time");
    assert.deepEqual(m.bars.map((b) => b.layer), [0, 1, 2, 3]);
    assert.deepEqual(m.groups, ["norm", "mla", "moe", "mlp", UNMAPPED]);
    const b2 = m.bars[2];
    assert.deepEqual(b2.segments.map((s) => [s.group, s.start, s.value]), [["norm", 0, 10], ["mla", 10, 60], ["moe", 70, 120], [UNMAPPED, 190, 20]]);
    assert.equal(b2.total, 210);
    // 200 µs but only 170 in groups: the rest shows as unmapped, so the bar has the layer's height.
    assert.deepEqual(m.bars[3].segments.at(-1), { group: UNMAPPED, value: 30, start: 170 });
    assert.equal(m.max, 210);
    assert.deepEqual(m.kinds, ["dense", "moe"]);
    assert.equal(m.noneNodeCount, 7);
  });

  it("stacks node counts by group without a trace", () => {
    const noTrace: OverviewResponse = { ...OV, layers: OV.layers.map((l) => ({ ...l, gpu_time_us: null, groups: {} })), none_node_count: 0 };
    const m = overviewModel(noTrace);
    assert.equal(m.metric, "nodes");
    assert.deepEqual(m.bars[0].segments.map((s) => [s.group, s.value]), [["norm", 2], ["mla", 5], ["mlp", 2]]);
    assert.equal(m.bars[0].total, 9);
    // No group counts: one "other" segment of the node count.
    assert.deepEqual(m.bars[3].segments, [{ group: "other", value: 20, start: 0 }]);
    assert.equal(overviewModel({ run: "r", stage: 0, layers: [], none_node_count: 0, outside_gpu_time_us: null }).bars.length, 0);
    assert.equal(overviewModel(null).metric, "nodes");
  });

  it("puts the GPU time outside the layers in a bar of its own, with its share of the whole", () => {
    const m = overviewModel({ ...OV, outside_gpu_time_us: 50 });
    assert.deepEqual(m.outside, { us: 50, share: 50 / 650, layersUs: 600, totalUs: 650 });
    assert.equal(m.max, 210);
    assert.equal(overviewModel({ ...OV, outside_gpu_time_us: 300 }).max, 300, "the chart's scale holds the bar");
    // Other stages and runs without a trace have none; nor has the node-count chart.
    assert.equal(overviewModel(OV).outside, null);
    assert.equal(overviewModel({ ...OV, outside_gpu_time_us: 0 }).outside, null);
    assert.equal(overviewModel({ ...OV, outside_gpu_time_us: 50 }, "nodes").outside, null);
    const noTrace: OverviewResponse = { ...OV, layers: OV.layers.map((l) => ({ ...l, gpu_time_us: null, groups: {} })) };
    assert.equal(overviewModel(noTrace).outside, null);
  });

  it("keeps unknown groups after the known ones", () => {
    assert.deepEqual(groupOrder(["zeta", UNMAPPED, "moe", "alpha", "norm"]), ["norm", "moe", "alpha", "zeta", UNMAPPED]);
  });

  it("gives the per-group totals of one layer, largest first", () => {
    const L = OV.layers[2];
    const rows = groupTotals(L);
    assert.deepEqual(rows.map((r) => r.group), ["moe", "mla", "norm", UNMAPPED]);
    assert.equal(rows[0].share, 120 / 210);
    assert.equal(rows[0].nodes, 10);
    assert.equal(rows[3].nodes, null);
    assert.deepEqual(groupTotals(null), []);
  });

  it("lays out the chart: bars in the plot, nice ticks, readable bar widths", () => {
    assert.deepEqual(niceTicks(210), [0, 100, 200, 300]);
    assert.deepEqual(niceTicks(9), [0, 2.5, 5, 7.5, 10]);
    assert.deepEqual(niceTicks(0), [0]);
    const g = chartGeom(4, 210, 1000, 300);
    assert.ok(g.barW <= 72 && g.barW > 40, "few layers: bars keep a readable width");
    assert.ok(g.barX(3) + g.barW <= g.x0 + g.w);
    assert.equal(g.scale(g.ticks.at(-1)!), g.h);
    const many = chartGeom(61, 1000, 1000, 300);
    assert.ok(many.barX(60) + many.barW <= many.x0 + many.w + 1e-9);
    assert.ok(many.barW >= 1);
  });

  it("works on a real layer document's groups", () => {
    const L = loadLayer("dsv3_decode", 1);
    const groups: Record<string, number> = {};
    for (const n of L.nodes) groups[n.group] = (groups[n.group] ?? 0) + n.time_us;
    const total = Object.values(groups).reduce((a, b) => a + b, 0);
    const m = overviewModel({ run: "r", stage: 0, layers: [{ layer: 1, kind: L.kind, attention: L.attention, node_count: L.nodes.length, gpu_time_us: total, groups, group_counts: {}, same_as: null }], none_node_count: 0, outside_gpu_time_us: null });
    assert.ok(Math.abs(m.bars[0].segments.reduce((a, s) => a + s.value, 0) - total) < 1e-6);
  });
});
