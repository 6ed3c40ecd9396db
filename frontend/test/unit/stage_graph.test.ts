import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { StageGraphResponse, StageLayer } from "../../src/api/types";
import { BOX_X, GAP, LANE_X, LONG_EDGE_PX, longEdges, stageLayout, unbundledEdges, weightRole, type StageOpen } from "../../src/overview/stage_model";

/** A Qwen3-Next-like stage: layer 0, (gdn, gdn, gdn, attention) blocks, RoPE read by every attention layer. */
function stage(n = 48): StageGraphResponse {
  const layers: StageLayer[] = [];
  for (let i = 0; i < n; i++) {
    const attn = i % 4 === 3;
    layers.push({
      layer: i, kind: attn ? "attention+moe" : "gdn+moe", attention: attn ? "attention" : null, node_count: attn ? 137 : 1028,
      gpu_time_us: null, same_as: i > 3 ? (attn ? 3 : 1) : i === 2 ? 1 : null, group_counts: attn ? { norm: 20, attention: 75, moe: 42 } : { norm: 20, gdn: 966, moe: 42 },
      groups: {}, shared: [], doubtful: false,
    });
  }
  const attn = layers.filter((L) => L.attention).map((L) => L.layer);
  const shared = [
    { id: "size", kind: "shape", label: "shape value", shape: "?", source: null, layers: layers.map((L) => L.layer) },
    { id: "cos", kind: "rope", label: "RoPE cache", shape: "s0x4", source: null, layers: attn },
    { id: "mod_1", kind: "residual", label: "Layer 0 residual output", shape: "?", source: 0, layers: layers.slice(2).map((L) => L.layer) },
  ];
  for (const s of shared) for (const l of s.layers) layers[l].shared.push(s.id);
  return {
    run: "q", stage: 0, layers,
    folds: [{ first: 1, last: 2, period: 1, count: 2 }, { first: 4, last: n - 1, period: 4, count: (n - 4) / 4 }],
    before: [
      { id: "input_ids", label: "placeholder", op: "placeholder", node_kind: "placeholder", shape: "s0", weights: [], time_us: 0 },
      { id: "size", label: "sym_size", op: "aten.sym_size.int", node_kind: "call", shape: "?", weights: [], time_us: 0 },
      { id: "embedding", label: "embedding", op: "aten.embedding.default", node_kind: "call", shape: "s0x64", weights: ["model_embed_tokens_weight"], time_us: 0 },
      { id: "cos", label: "cos", op: "aten.cos.default", node_kind: "call", shape: "s0x4", weights: [], time_us: 0 },
    ],
    after: [
      { id: "lm", label: "linear", op: "aten.linear.default", node_kind: "call", shape: "s0x128", weights: ["lm_head_weight"], time_us: 0 },
      { id: "output", label: "output", op: "output", node_kind: "output", shape: "", weights: [], time_us: 0 },
    ],
    shared, outside_gpu_time_us: null,
  };
}

const closed: StageOpen = { folds: new Set(), layers: new Set(), parts: new Set() };

describe("whole-stage graph layout", () => {
  it("draws 48 layers as the parts, single layers and folds, chained top-down", () => {
    const l = stageLayout(stage(), closed);
    assert.deepEqual(l.items.map((i) => i.key), ["before", "L0", "F1", "L3", "F4", "after"]);
    assert.equal(l.items[4].rows[0].text, "Layers 4-47 ×11 ≡");
    assert.match(l.items[4].rows[1].text, /3 × gdn\+moe, attention\+moe/);
    assert.deepEqual(l.items[4].stripe, ["gdn+moe", "gdn+moe", "gdn+moe", "attention+moe"]);
    for (let i = 1; i < l.items.length; i++) assert.equal(l.items[i].y, l.items[i - 1].y + l.items[i - 1].h + GAP);
    assert.equal(l.edges.filter((e) => e.kind === "chain").length, 5);
    // The input part is named by its inputs, weights and what it makes for the layers.
    assert.deepEqual(l.items[0].rows.slice(2).map((r) => r.text), ["input_ids", "shape value", "embedding (embed_tokens)", "RoPE cache"]);
  });

  it("bundles the shared inputs on one lane: a stop per box, no long edge", () => {
    const g = stage();
    const l = stageLayout(g, closed);
    assert.equal(unbundledEdges(g), 48 + 12 + 46);
    assert.equal(longEdges(l), 0);
    assert.ok(l.lane);
    assert.deepEqual(l.lane.sources.map((s) => [s.key, s.ids]), [["before", ["size", "cos"]], ["L0", ["mod_1"]]]);
    assert.deepEqual(l.lane.ports.map((s) => s.key), ["L0", "F1", "L3", "F4"]);
    assert.deepEqual(l.lane.ports.find((p) => p.key === "F4")?.ids, ["size", "cos", "mod_1"]);
    for (const e of l.edges.filter((x) => x.kind !== "chain")) {
      assert.equal(e.y1, e.y2);
      assert.equal(Math.abs(e.x2 - e.x1), BOX_X - LANE_X);
    }
  });

  it("opens a fold into its layers under a header, a layer into its groups, a part into its nodes", () => {
    const g = stage();
    const l = stageLayout(g, { folds: new Set([4]), layers: new Set([3]), parts: new Set(["after"]) });
    const keys = l.items.map((i) => i.key);
    assert.deepEqual(keys.slice(0, 6), ["before", "L0", "F1", "L3", "H4", "L4"]);
    assert.equal(keys.length, 5 + 44 + 1);
    assert.deepEqual(l.items.filter((i) => i.inFold).map((i) => i.layers[0]), Array.from({ length: 44 }, (_, i) => i + 4));
    const l3 = l.items[3];
    assert.deepEqual(l3.rows.filter((r) => r.cls === "group").map((r) => r.group), ["norm", "attention", "moe"]);
    assert.equal(l.brackets.length, 1);
    assert.equal(l.items[l.items.length - 1].rows.length, 2 + 2);   // every node of the output part
    // Still one lane, 44 more ports, no long edge.
    assert.equal(longEdges(l), 0);
    assert.equal(l.lane?.ports.length, 3 + 44);
    assert.ok(l.height > 44 * (50 + GAP));
  });

  it("says what a layer costs, or that there is no trace", () => {
    const g = stage(8);
    g.layers[0].gpu_time_us = 412.5;
    g.layers[0].groups = { gdn: 400, moe: 12.5 };
    const l = stageLayout(g, { folds: new Set(), layers: new Set([0, 3]), parts: new Set() });
    const rows = l.items.find((i) => i.key === "L0")!.rows.map((r) => r.text);
    assert.equal(rows[1], "1028 nodes · GPU 413 µs");
    assert.ok(rows.some((r) => r.startsWith("gdn · ") && r.includes("97.0%")));
    assert.match(l.items.find((i) => i.key === "L3")!.rows[1].text, /no trace/);
  });

  it("names weights by their role and finds long edges", () => {
    assert.equal(weightRole("model_embed_tokens_weight"), "embed_tokens");
    assert.equal(weightRole("lm_head_weight"), "lm_head");
    const l = stageLayout(stage(), closed);
    l.edges.push({ from: "before", to: "L3", kind: "port", x1: 0, y1: 0, x2: 0, y2: LONG_EDGE_PX + 1 });
    assert.equal(longEdges(l), 1);
  });
});
