import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  ancestors, buildHierarchy, expandedToDepth, groupKey, inputKey, layerKey, layerPhases, maxGroupDepth, opKey, publicId,
  revealKey, SCENE, splitPhases, toggleGroup,
} from "../../src/model/hierarchy";
import { loadLayer, miniLayer } from "./helpers";

describe("buildHierarchy on the DeepSeek-V3 fixture", () => {
  const L = loadLayer("dsv3_decode", 1);
  const h = buildHierarchy([L]);

  it("has every node once, under layer > group > (sub-group)", () => {
    assert.equal(h.opKeys.length, L.nodes.length);
    for (const n of L.nodes) {
      const it = h.items.get(opKey(n.id))!;
      assert.ok(it, n.id);
      const anc = ancestors(h, it.key);
      assert.equal(anc[0], SCENE);
      assert.equal(anc[1], layerKey(1));
      assert.ok(h.items.get(anc[2])!.name === n.group, `${n.id} in ${anc[2]}`);
      if (n.sub_group) assert.equal(h.items.get(anc[3])!.name, n.sub_group);
      assert.equal(anc.length, n.sub_group ? 4 : 3);
    }
  });

  it("aggregates time, node and kernel counts", () => {
    // The layer's GPU time is the sum of its kernels (the trace summary's), as everywhere else.
    const total = L.trace_summary?.total_duration_us ?? L.nodes.reduce((a, n) => a + n.time_us, 0);
    const layer = h.items.get(layerKey(1))!;
    assert.ok(Math.abs(layer.timeUs - total) < 1e-6);
    assert.equal(layer.nodeCount, 300);
    assert.equal(layer.kernelCount, L.nodes.reduce((a, n) => a + n.kernels.length, 0));
    assert.ok(Math.abs((h.layerTimeUs.get(1) ?? 0) - total) < 1e-6);
    const moe = h.items.get(groupKey(1, "moe"))!;
    const moeNodes = L.nodes.filter((n) => n.group === "moe");
    assert.equal(moe.nodeCount, moeNodes.length);
  });

  it("makes external inputs distinct input items with their labels, inside the layer using them", () => {
    const kindOf = (x: { kind: string; label: string }) => (x.kind && x.kind !== "unknown" ? x.kind : x.label);
    const perKind = new Map<string, number>();
    for (const x of L.external_inputs) perKind.set(kindOf(x), (perKind.get(kindOf(x)) ?? 0) + 1);
    for (const x of L.external_inputs) {
      // Inputs of one kind fold into one item (see the next test); single ones stay themselves.
      const key = h.alias.get(inputKey(x.id)) ?? inputKey(x.id);
      const it = h.items.get(key)!;
      assert.equal(it.kind, "input");
      assert.equal(it.parent, layerKey(1));
      assert.equal(it.depth, 2);
      assert.equal(perKind.get(kindOf(x))! > 1, h.alias.has(inputKey(x.id)));
      if (it.inputs) assert.ok(it.inputs.some((m) => m.id === x.id));
      else assert.equal(it.input!.label, x.label);
    }
    assert.ok(h.edges.some((e) => e.from === (h.alias.get(inputKey("position_ids")) ?? inputKey("position_ids"))));
  });

  it("folds many external inputs of one kind into one input item with a count", () => {
    const x = (id: string, label: string) => ({ id, label, shape: "3", dtype: "torch.int32", kind: "", layer: null });
    const meta = ["batch_info_host", "cu_seqlen_host", "cu_num_pages", "cache_loc", "last_page_len", "seq_len_host", "a", "b", "c", "d"];
    const doc = {
      run: "r", stage: 0, rank: null, layer: 0, kind: "attention+mlp", attention: "", trace_summary: null, doubts: [],
      source_file: "001_export_export_to_gm.txt", module: "(root)", group_counts: { attention: 1 },
      nodes: [{ id: "attn", op: "attention", label: "attention", node_kind: "call" as const, shape: "1", dtype: "", group: "attention" as const, sub_group: null, stream: "main" as const, args: "", line: 1, inputs: [...meta, "pos"], weights: [], kernels: [], time_us: 0 }],
      edges: [...meta, "pos"].map((m) => ({ from: m, to: "attn", shape: "3" })),
      external_inputs: [...meta.map((m) => x(m, "batch metadata")), x("pos", "position ids")],
    };
    const hh = buildHierarchy([doc]);
    const inputs = [...hh.items.values()].filter((it) => it.kind === "input");
    assert.equal(inputs.length, 2);
    const fold = inputs.find((it) => it.inputs)!;
    assert.equal(fold.inputs!.length, 10);
    assert.equal(fold.input!.label, "batch metadata");
    assert.deepEqual(hh.edges.filter((e) => e.from === fold.key).map((e) => e.to), ["n:attn"]);
    assert.ok(hh.items.has(inputKey("pos")));
  });

  it("splits a group that sits on both sides of another (input and post-attention norm)", () => {
    assert.ok(h.items.has(groupKey(1, "norm")));
    assert.ok(h.items.has(groupKey(1, "norm", null, 1)));
    assert.equal(h.items.get(groupKey(1, "norm", null, 1))!.phase, 1);
    // begin/end aux-stream markers around the kv branch
    assert.ok(h.items.has(groupKey(1, "mla", "aux_stream", 0, 1)));
    assert.equal(publicId(groupKey(1, "norm", null, 1)), "L1/norm~2");
  });

  it("expands to a depth and reveals hidden keys", () => {
    const d2 = expandedToDepth(h, 2);
    assert.ok(d2.has(layerKey(1)));
    assert.ok(!d2.has(groupKey(1, "moe")));
    assert.equal(maxGroupDepth(h), 3);
    const k = opKey(L.nodes.find((n) => n.sub_group === "moe_router")!.id);
    const r = revealKey(h, d2, k);
    assert.ok(r.has(groupKey(1, "moe")) && r.has(groupKey(1, "moe", "moe_router")));
    assert.ok(!d2.has(groupKey(1, "moe")), "revealKey does not mutate");
    const t = toggleGroup(r, groupKey(1, "moe"));
    assert.ok(!t.has(groupKey(1, "moe")) && t.has(groupKey(1, "moe", "moe_router")));
    assert.ok(toggleGroup(t, SCENE).has(SCENE));
  });
});

describe("buildHierarchy across layers", () => {
  const a = miniLayer(0, [["a1", "norm", null, ["x"], 1], ["a2", "mla", null, ["a1", "pos"], 2], ["a3", "other", null, ["a2", "x"], 1]], ["x", "pos"]);
  const b = miniLayer(1, [["b1", "norm", null, ["a3"], 1], ["b2", "mla", null, ["b1", "pos"], 5]], ["a3", "pos"]);
  b.edges.push({ from: "pos", to: "b2", shape: "1x8" });
  const h = buildHierarchy([b, a]);

  it("orders layers, links them with real edges and shares inputs", () => {
    assert.deepEqual(h.layers, [0, 1]);
    assert.ok(h.edges.some((e) => e.from === opKey("a3") && e.to === opKey("b1")));
    assert.ok(!h.items.has(inputKey("a3")), "an input that a loaded layer defines is not an input item");
    assert.ok(h.items.has(inputKey("x")));
    const pos = [...h.items.values()].filter((i) => i.kind === "input" && i.input?.id === "pos");
    assert.equal(pos.length, 1);
    assert.equal(pos[0].parent, SCENE, "an input shared by two layers sits above them");
    assert.equal(h.items.get(inputKey("x"))!.parent, layerKey(0), "an input of one layer sits in it");
    const dup = h.edges.filter((e) => e.from === inputKey("pos") && e.to === opKey("b2"));
    assert.equal(dup.length, 1, "duplicate edges are merged");
  });

  it("keeps a separate time per layer", () => {
    assert.equal(h.layerTimeUs.get(0), 4);
    assert.equal(h.layerTimeUs.get(1), 6);
  });
});

describe("splitPhases", () => {
  const succ = new Map<string, string[]>([["n1", ["a1"]], ["a1", ["n2"]], ["n2", ["m1"]], ["x", ["n3"]]]);
  const label = (id: string) => (id.startsWith("n") ? "norm" : id.startsWith("a") ? "attn" : id.startsWith("m") ? "moe" : null);

  it("puts parts reached through another group into a later phase", () => {
    const p = splitPhases(["n1", "a1", "n2", "m1"], label, succ);
    assert.equal(p.get("n1") ?? 0, 0);
    assert.equal(p.get("n2"), 1);
    assert.equal(p.get("a1") ?? 0, 0);
  });

  it("keeps unrelated parts together", () => {
    const p = splitPhases(["n1", "a1", "n3", "x"], label, succ);
    assert.equal(p.get("n3") ?? 0, 0);
    assert.equal(p.get("n1") ?? 0, 0);
  });

  it("gives no phase to a single connected group", () => {
    const L = miniLayer(0, [["n1", "norm", null, []], ["n2", "norm", null, ["n1"]], ["a1", "mla", null, ["n2"]]]);
    const ph = layerPhases(L);
    for (const v of ph.values()) assert.deepEqual(v, [0, 0]);
  });
});
