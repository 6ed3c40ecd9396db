import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CompareResponse } from "../../src/api/types";
import {
  applyManualPairs, buildCompareModel, formatPairs, parsePairs, defaultPair, deltaBadge, deltaRows, followView, keyForRel, listedNodes, mirrorExpanded, nextSort, nodeDelta,
  relGroupPath, sortDeltaRows, statusByKey, stepIndex, topNodeDeltas,
} from "../../src/compare/model";
import { buildHierarchy, expandedToDepth, SCENE } from "../../src/model/hierarchy";
import { aggregateStatus, countsAttr, countsBadge, COMPARE_STATUSES, stripSegments, visibleCounts } from "../../src/model/status";
import { visibleGraph } from "../../src/model/visible";
import { HOSTILE } from "./hostile";
import { miniLayer } from "./helpers";

// Layer 3 (A) and layer 10 (B): norm -> attention (q, k) -> moe (router, experts).
const A = miniLayer(3, [
  ["rms", "norm", null, ["x"], 2],
  ["q", "mla", "q_branch", ["rms"], 5],
  ["k", "mla", "kv_branch", ["rms"], 4],
  ["attn", "mla", null, ["q", "k"], 10],
  ["gate", "moe", "moe_router", ["attn"], 1],
  ["topk", "moe", "moe_router", ["gate"], 1],
  ["experts", "moe", "moe_experts", ["topk"], 30],
], ["x"]);
const B = miniLayer(10, [
  ["rms_b", "norm", null, ["y"], 2],
  ["q_b", "mla", "q_branch", ["rms_b"], 5],
  ["attn_b", "mla", null, ["q_b"], 8],
  ["gate_b", "moe", "moe_router", ["attn_b"], 1],
  ["experts_b", "moe", "moe_experts", ["gate_b"], 36],
  ["extra_b", "moe", "moe_experts", ["experts_b"], 3],
], ["y"]);

const RES: CompareResponse = {
  a: { run: "r", stage: 3, layer: 3, time_us: 53 },
  b: { run: "r", stage: 3, layer: 10, time_us: 55 },
  matches: [
    { a: "rms", b: "rms_b", status: "same", a_time_us: 2, b_time_us: 2, delta_us: 0 },
    { a: "q", b: "q_b", status: "same", a_time_us: 5, b_time_us: 5, delta_us: 0 },
    { a: "attn", b: "attn_b", status: "changed", changes: ["inputs"], a_time_us: 10, b_time_us: 8, delta_us: -2 },
    { a: "gate", b: "gate_b", status: "same", a_time_us: 1, b_time_us: 1, delta_us: 0.01 },
    { a: "experts", b: "experts_b", status: "changed", changes: ["shape"], a_time_us: 30, b_time_us: 36, delta_us: 6 },
  ],
  only_a: ["k", "topk"],
  only_b: ["extra_b"],
  counts: { same: 3, changed: 2, only_a: 2, only_b: 1 },
  groups: [
    { group: "moe", a_us: 32, b_us: 40, delta_us: 8, delta_pct: 25 },
    { group: "mla", a_us: 19, b_us: 13, delta_us: -6, delta_pct: -31.6 },
    { group: "norm", a_us: 2, b_us: 2, delta_us: 0, delta_pct: 0 },
    { group: "mamba", a_us: 0, b_us: 1, delta_us: 1, delta_pct: null },
  ],
  layer: { a_us: 53, b_us: 55, delta_us: 2, delta_pct: 3.8 },
};

describe("comparison view model: statuses", () => {
  it("gives every node of each side its status, as the API lists them", () => {
    const m = buildCompareModel(RES);
    assert.deepEqual(m.counts, RES.counts);
    assert.equal(m.status.a.get("rms"), "same");
    assert.equal(m.status.a.get("attn"), "changed");
    assert.equal(m.status.b.get("attn_b"), "changed");
    assert.equal(m.status.a.get("k"), "only_a");
    assert.equal(m.status.b.get("extra_b"), "only_b");
    assert.equal(m.status.a.size, A.nodes.length);
    assert.equal(m.status.b.size, B.nodes.length);
    assert.equal(m.partner.a.get("experts"), "experts_b");
    assert.equal(m.partner.b.get("experts_b"), "experts");
    assert.equal(nodeDelta(m, "b", "experts_b"), 6);
    assert.equal(nodeDelta(m, "a", "k"), null);
  });

  it("counts what it is given even when the API's counts disagree, and ignores duplicates", () => {
    const res = { ...RES, only_a: ["k", "topk", "k"], counts: { same: 0, changed: 0, only_a: 0, only_b: 0 } };
    const m = buildCompareModel(res);
    assert.equal(m.counts.only_a, 2);
    assert.equal(m.counts.same, 3);
  });

  it("maps statuses to hierarchy keys, ignoring ids the layer does not have", () => {
    const m = buildCompareModel({ ...RES, only_a: [...RES.only_a, "ghost"] });
    const h = buildHierarchy([A]);
    const st = statusByKey(m, "a", h);
    assert.equal(st.get("n:k"), "only_a");
    assert.equal(st.has("n:ghost"), false);
    assert.equal(st.size, A.nodes.length);
  });

  it("colours nodes, not groups: groups get counts of the statuses inside them", () => {
    const m = buildCompareModel(RES);
    const h = buildHierarchy([A]);
    const agg = aggregateStatus(h, statusByKey(m, "a", h));
    assert.deepEqual(agg.get("g:L3/moe/moe_router"), { same: 1, only_a: 1 });
    assert.deepEqual(agg.get("g:L3/moe"), { same: 1, only_a: 1, changed: 1 });
    assert.deepEqual(agg.get("g:L3/mla"), { same: 1, only_a: 1, changed: 1 });
    assert.deepEqual(agg.get("g:L3"), { same: 3, changed: 2, only_a: 2 });
    assert.equal(countsBadge(agg.get("g:L3/moe"), COMPARE_STATUSES), "~1 −1");
    assert.equal(countsBadge(agg.get("g:L3/norm"), COMPARE_STATUSES), "");
    assert.equal(countsAttr(agg.get("g:L3"), COMPARE_STATUSES), "same:3,changed:2,only_a:2");
    // Collapsed to groups: what the visible boxes show adds up to the layer's counts.
    const vis = visibleGraph(h, expandedToDepth(h, 2));
    const shown = visibleCounts(vis, agg);
    const total: Record<string, number> = {};
    for (const k of vis.leaves) for (const [s, n] of Object.entries(shown.get(k) ?? {})) total[s] = (total[s] ?? 0) + (n ?? 0);
    assert.deepEqual(total, { same: 3, changed: 2, only_a: 2 });
    assert.ok(shown.has("g:L3"));
  });

  it("splits a status strip proportionally", () => {
    const segs = stripSegments({ same: 2, changed: 1, only_a: 1 }, COMPARE_STATUSES, 100);
    assert.deepEqual(segs.map((s) => [s.status, s.x, s.w]), [["same", 0, 50], ["changed", 50, 25], ["only_a", 75, 25]]);
    assert.deepEqual(stripSegments(undefined, COMPARE_STATUSES, 100), []);
  });

  it("writes duration delta badges, quiet below the noise floor", () => {
    const fmt = (us: number) => `${us} µs`;
    assert.deepEqual(deltaBadge(6, fmt), { text: "+6 µs", tone: "slower" });
    assert.deepEqual(deltaBadge(-2, fmt), { text: "−2 µs", tone: "faster" });
    assert.equal(deltaBadge(0.01, fmt), null);
    assert.equal(deltaBadge(null, fmt), null);
    assert.equal(deltaBadge(Number.NaN, fmt), null);
  });
});

describe("comparison view model: delta table", () => {
  it("has the per-group rows and the whole layer", () => {
    const { groups, whole } = deltaRows(RES);
    assert.equal(groups.length, 4);
    assert.deepEqual(whole, { group: "", whole: true, a: 53, b: 55, delta: 2, pct: 3.8 });
  });

  it("sorts by size of the change by default (faster or slower), largest first", () => {
    const rows = sortDeltaRows(deltaRows(RES).groups);
    assert.deepEqual(rows.map((r) => r.group), ["moe", "mla", "mamba", "norm"]);
  });

  it("sorts by Δ% with missing percentages last, both ways", () => {
    const { groups } = deltaRows(RES);
    assert.deepEqual(sortDeltaRows(groups, { key: "pct", dir: -1 }).map((r) => r.group), ["mla", "moe", "norm", "mamba"]);
    assert.deepEqual(sortDeltaRows(groups, { key: "pct", dir: 1 }).map((r) => r.group), ["norm", "moe", "mla", "mamba"]);
    assert.deepEqual(sortDeltaRows(groups, { key: "group", dir: 1 }).map((r) => r.group), ["mamba", "mla", "moe", "norm"]);
    assert.deepEqual(sortDeltaRows(groups, { key: "b", dir: -1 }).map((r) => r.group), ["moe", "mla", "norm", "mamba"]);
  });

  it("cycles sort direction per column", () => {
    let s = nextSort({ key: "delta", dir: -1 }, "delta");
    assert.deepEqual(s, { key: "delta", dir: 1 });
    s = nextSort(s, "pct");
    assert.deepEqual(s, { key: "pct", dir: -1 });
    assert.deepEqual(nextSort(s, "group"), { key: "group", dir: 1 });
  });

  it("computes a missing percentage from A, and never divides by zero", () => {
    const res = { ...RES, groups: [{ group: "x", a_us: 4, b_us: 5, delta_us: 1, delta_pct: null as number | null }], layer: { a_us: 0, b_us: 0, delta_us: 0, delta_pct: null } };
    const { groups, whole } = deltaRows(res);
    assert.equal(groups[0].pct, 25);
    assert.equal(whole.pct, null);
  });

  it("lists the largest node changes", () => {
    assert.deepEqual(topNodeDeltas(RES, 5).map((m) => m.a), ["experts", "attn"]);
    assert.deepEqual(topNodeDeltas(RES, 1).map((m) => m.a), ["experts"]);
  });
});

describe("comparison view model: lists, sync, defaults", () => {
  it("lists unmatched and changed nodes in graph order, with labels, as text", () => {
    const m = buildCompareModel(RES);
    const l = listedNodes(m, A, B);
    assert.deepEqual(l.onlyA.map((x) => x.id), ["k", "topk"]);
    assert.deepEqual(l.onlyB.map((x) => [x.id, x.side, x.group]), [["extra_b", "b", "moe"]]);
    assert.deepEqual(l.changed.map((x) => x.id), ["attn", "experts"]);
    // Without layer documents, ids stand in for labels.
    const l2 = listedNodes(buildCompareModel({ ...RES, only_a: [HOSTILE] }), null, null);
    assert.equal(l2.onlyA[0].label, HOSTILE);
  });

  it("steps through a list, wrapping", () => {
    assert.equal(stepIndex(3, -1, 1), 0);
    assert.equal(stepIndex(3, -1, -1), 2);
    assert.equal(stepIndex(3, 2, 1), 0);
    assert.equal(stepIndex(3, 0, -1), 2);
    assert.equal(stepIndex(0, 0, 1), -1);
  });

  it("finds the same group in another layer by its path inside the layer", () => {
    assert.equal(relGroupPath("g:L3/moe~2/moe_router"), "moe~2/moe_router");
    assert.equal(relGroupPath("g:L12"), "");
    assert.equal(relGroupPath("g:"), null);
    assert.equal(relGroupPath("n:mm_3"), null);
    const hb = buildHierarchy([B]);
    assert.equal(keyForRel(hb, "moe/moe_router"), "g:L10/moe/moe_router");
    assert.equal(keyForRel(hb, ""), "g:L10");
    assert.equal(keyForRel(hb, "mla/kv_branch"), null);
  });

  it("mirrors expanded groups onto the other pane", () => {
    const ha = buildHierarchy([A]);
    const hb = buildHierarchy([B]);
    const expA = new Set([SCENE, "g:L3", "g:L3/mla", "g:L3/mla/q_branch", "g:L3/moe"]);
    const allB = expandedToDepth(hb, 9);
    const out = mirrorExpanded(expA, ha, hb, allB);
    assert.ok(out.has(SCENE) && out.has("g:L10") && out.has("g:L10/mla") && out.has("g:L10/moe"));
    assert.ok(!out.has("g:L10/norm"), "collapsed on the left, collapsed on the right");
    assert.ok(!out.has("g:L10/moe/moe_router"));
    // A group only B has keeps B's own state.
    const hb2 = buildHierarchy([miniLayer(10, [["z", "mamba", "mamba_ssm", [], 1]])]);
    const out2 = mirrorExpanded(expA, ha, hb2, new Set([SCENE, "g:L10/mamba/mamba_ssm"]));
    assert.ok(out2.has("g:L10/mamba/mamba_ssm"));
    assert.ok(out2.has("g:L10"));
  });

  it("moves the other pane by the same screen-space zoom and pan", () => {
    const from = { x: 10, y: 20, k: 1 };
    // Zoom ×2 about screen point (100, 100): x' = 100 - (100 - 10) * 2.
    const to = { x: -80, y: -60, k: 2 };
    const other = { x: 50, y: 0, k: 0.5 };
    const o = followView(from, to, other);
    assert.equal(o.k, 1);
    // The same screen point (100, 100) stays fixed in the other pane too.
    const wx = (100 - other.x) / other.k;
    assert.equal(wx * o.k + o.x, 100);
    const wy = (100 - other.y) / other.k;
    assert.equal(wy * o.k + o.y, 100);
    // A pure pan moves it by the same pixels.
    assert.deepEqual(followView({ x: 0, y: 0, k: 1 }, { x: 7, y: -3, k: 1 }, other), { x: 57, y: -3, k: 0.5 });
  });

  it("picks a useful default pair", () => {
    const runs = [
      { run: "dec", model: "dsv3", default_stage: 3, stages: [{ index: 0 }, { index: 3 }], layers: [{ layer: 3, kind: "moe" }, { layer: 4, kind: "moe" }] },
      { run: "unfused", model: "dsv3", default_stage: 0, stages: [{ index: 0 }], layers: [{ layer: 3, kind: "moe" }] },
      { run: "llama", model: "llama", default_stage: 0, stages: [{ index: 0 }], layers: [{ layer: 0, kind: "dense" }, { layer: 1, kind: "dense" }] },
    ];
    // Another run of the same model: before/after a change.
    assert.deepEqual(defaultPair({ run: "dec", stage: 3, layer: 3 }, runs), { a: { run: "dec", stage: 3, layer: 3 }, b: { run: "unfused", stage: 0, layer: 3 } });
    // No such run: the previous stage on the left.
    assert.deepEqual(defaultPair({ run: "dec", stage: 3, layer: 4 }, runs), { a: { run: "dec", stage: 0, layer: 4 }, b: { run: "dec", stage: 3, layer: 4 } });
    // One stage only: another layer of the same kind.
    assert.deepEqual(defaultPair({ run: "llama", stage: 0, layer: 0 }, runs), { a: { run: "llama", stage: 0, layer: 0 }, b: { run: "llama", stage: 0, layer: 1 } });
  });
});

describe("comparison view model: manual matching", () => {
  it("turns a hand-made pair of unmatched nodes into a match", () => {
    const res = applyManualPairs(RES, [["topk", "extra_b"]], A, B);
    assert.deepEqual(res.only_a, ["k"]);
    assert.deepEqual(res.only_b, []);
    assert.deepEqual(res.counts, { same: 3, changed: 3, only_a: 1, only_b: 0 });
    const m = res.matches.find((x) => x.manual)!;
    assert.deepEqual([m.a, m.b, m.status, m.delta_us], ["topk", "extra_b", "changed", 2]);
    assert.deepEqual(m.changes, ["op"]);
    // The model sees it like any match: statuses, partners, delta.
    const model = buildCompareModel(res);
    assert.equal(model.partner.a.get("topk"), "extra_b");
    assert.equal(model.status.b.get("extra_b"), "changed");
    assert.equal(nodeDelta(model, "a", "topk"), 2);
    // The group and layer totals do not depend on matching.
    assert.deepEqual(res.groups, RES.groups);
    assert.equal(RES.only_a.length, 2, "the API answer is not modified");
  });

  it("marks identical nodes as same, and ignores pairs that do not fit", () => {
    const A2 = miniLayer(3, [["u", "mla", null, []]]);
    const B2 = miniLayer(3, [["u2", "mla", null, []]]);
    B2.nodes[0].op = A2.nodes[0].op;
    const base: CompareResponse = { ...RES, matches: [], only_a: ["u"], only_b: ["u2"], counts: { same: 0, changed: 0, only_a: 1, only_b: 1 } };
    assert.equal(applyManualPairs(base, [["u", "u2"]], A2, B2).matches[0].status, "same");
    const res = applyManualPairs(RES, [["rms", "extra_b"], ["k", "nope"], ["k", "extra_b"], ["topk", "extra_b"]], A, B);
    assert.deepEqual(res.matches.filter((x) => x.manual).map((x) => [x.a, x.b]), [["k", "extra_b"]]);
    assert.equal(applyManualPairs(RES, [], A, B), RES);
  });

  it("writes pairs into the URL and reads them back", () => {
    const pairs: [string, string][] = [["a_1", "b_2"], ["x", "y"]];
    assert.equal(formatPairs(pairs), "a_1>b_2,x>y");
    assert.deepEqual(parsePairs(formatPairs(pairs)), pairs);
    assert.deepEqual(parsePairs(">x,y>,,ok>fine"), [["ok", "fine"]]);
    assert.deepEqual(parsePairs(null), []);
  });
});
