import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { buildHierarchy, expandedToDepth, groupKey, inputKey, layerKey, maxGroupDepth, opKey, SCENE } from "../../src/model/hierarchy";
import { EDGE_LABEL_CHARS, edgeLabel, visibleGraph } from "../../src/model/visible";
import { loadLayer, miniLayer } from "./helpers";

describe("visibleGraph", () => {
  const L = miniLayer(3, [
    ["n1", "norm", null, ["x"], 1],
    ["q1", "mla", "q_branch", ["n1"], 2],
    ["q2", "mla", "q_branch", ["q1"], 2],
    ["k1", "mla", "kv_branch", ["n1"], 3],
    ["at", "mla", null, ["q2", "k1", "x"], 10],
    ["o1", "other", null, ["at", "x"], 1],
  ], ["x"]);
  const h = buildHierarchy([L]);

  it("shows every node when everything is expanded", () => {
    const v = visibleGraph(h, expandedToDepth(h, maxGroupDepth(h) + 1));
    assert.equal(v.leaves.filter((k) => k.startsWith("n:")).length, 6);
    assert.equal(v.edges.length, h.edges.length);
    assert.equal(v.containers[0].key, SCENE);
  });

  it("aggregates edges between collapsed groups and drops internal ones", () => {
    const ex = expandedToDepth(h, 2); // layer open, groups collapsed
    const v = visibleGraph(h, ex);
    const mla = groupKey(3, "mla");
    assert.ok(v.leaves.includes(mla));
    assert.equal(v.rep.get(opKey("q1")), mla);
    const fromX = v.edges.find((e) => e.from === inputKey("x") && e.to === mla)!;
    assert.equal(fromX.count, 1);
    const n2m = v.edges.find((e) => e.from === groupKey(3, "norm") && e.to === mla)!;
    assert.equal(n2m.count, 2, "n1->q1 and n1->k1 merge");
    assert.equal(edgeLabel(n2m), "8x16 ×2");
    // A long symbolic shape is elided in the middle.
    const long = "s44x4x1x((s70 + (Mod(64 - (Mod(s70, 64)), 64)))//64)x64";
    const lab = edgeLabel({ ...n2m, count: 1, shapes: [long] });
    assert.equal(lab.length, EDGE_LABEL_CHARS);
    assert.ok(lab.startsWith("s44x4x1x((s") && lab.endsWith("64)x64") && lab.includes("…"), lab);
    assert.ok(!v.edges.some((e) => e.from === e.to), "no self loops");
  });

  it("collapsing the layer leaves one box", () => {
    const v = visibleGraph(h, new Set([SCENE]));
    assert.deepEqual(v.leaves.filter((k) => k.startsWith("g:")), [layerKey(3)]);
    assert.equal(v.rep.get(opKey("at")), layerKey(3));
  });

  it("keeps sub-group expansion when a parent is collapsed", () => {
    const ex = new Set([SCENE, layerKey(3), groupKey(3, "mla", "q_branch")]);
    const v = visibleGraph(h, ex);
    assert.equal(v.rep.get(opKey("q1")), groupKey(3, "mla"));
  });
});

describe("visibleGraph on the 300-node fixture", () => {
  it("conserves the underlying edge count across any depth", () => {
    const h = buildHierarchy([loadLayer("dsv3_decode", 1)]);
    for (const d of [1, 2, 3, 4]) {
      const v = visibleGraph(h, expandedToDepth(h, d));
      let internal = 0;
      for (const e of h.edges) if (v.rep.get(e.from) === v.rep.get(e.to)) internal++;
      const sum = v.edges.reduce((a, e) => a + e.count, 0);
      assert.equal(sum + internal, h.edges.length, `depth ${d}`);
    }
  });
});
