import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { LayerNode, LayerResponse } from "../../src/api/types";
import { buildHierarchy, defaultExpanded, MAX_OPEN_CHILDREN } from "../../src/model/hierarchy";
import { findRepeats, MIN_RUN_NODES, type SeqNode, type WorkCounter } from "../../src/model/repeats";

/** An unrolled loop: `pre` nodes, then `steps` copies of a 5-node step carrying a state. */
function unrolled(steps: number, pre = 3): SeqNode[] {
  const seq: SeqNode[] = [];
  for (let i = 0; i < pre; i++) seq.push({ op: `pre${i}`, inputs: i ? [i - 1] : [-1] });
  let state = pre - 1;
  const inv = pre - 1; // a loop-invariant tensor every step reads
  for (let s = 0; s < steps; s++) {
    const b = seq.length;
    seq.push({ op: "getitem", inputs: [inv] });
    seq.push({ op: "mul", inputs: [b, state] });
    seq.push({ op: "exp", inputs: [b + 1] });
    seq.push({ op: "matmul", inputs: [b + 2, inv] });
    seq.push({ op: "add", inputs: [b + 3, state] });
    state = b + 4;
  }
  seq.push({ op: "post", inputs: [state] });
  return seq;
}

describe("repeated blocks", () => {
  it("folds a 64-step unrolled loop into one run of 64 blocks", () => {
    const seq = unrolled(64);
    const runs = findRepeats(seq);
    assert.deepEqual(runs, [{ start: 3, period: 5, count: 64 }]);
  });

  it("does not fold blocks whose wiring differs, nor runs below the minimum", () => {
    const seq = unrolled(8);
    // Step 5 reads the invariant tensor in its mul instead of the state: a different structure.
    seq[3 + 5 * 5 + 1] = { op: "mul", inputs: [3 + 5 * 5, 2] };
    const runs = findRepeats(seq);
    for (const r of runs) assert.ok(r.start + r.period * r.count <= 3 + 5 * 5 + 1 || r.start > 3 + 5 * 5 + 1, JSON.stringify(r));
    assert.deepEqual(findRepeats(unrolled(2)), []);
    assert.deepEqual(findRepeats([]), []);
  });

  it("is linear: doubling the input at most about doubles the work", () => {
    // Work counted in elementary steps (positions, candidate periods, node offsets compared), not
    // time: speed is measured in frontend/bench/repeats.mjs.
    const work = (seq: SeqNode[]) => {
      const w: WorkCounter = { steps: 0 };
      findRepeats(seq, MIN_RUN_NODES, w);
      return w.steps;
    };
    // An unrolled loop (one long run), and the same steps with every fourth one rewired (many
    // short runs and near misses: blocks whose ops match but whose wiring does not).
    const rewired = (steps: number) => {
      const seq = unrolled(steps);
      for (let s = 3; s < steps; s += 4) seq[3 + s * 5 + 1] = { op: "mul", inputs: [3 + s * 5, 2] };
      return seq;
    };
    // One op throughout, each node reading an earlier one picked by a fixed pseudo-random walk:
    // every window hashes alike and each candidate is refuted by its wiring.
    const irregular = (steps: number) => {
      const seq: SeqNode[] = [];
      let r = 12345;
      for (let i = 0; i < steps * 5 + 4; i++) {
        r = (Math.imul(r, 1103515245) + 12345) >>> 0;
        seq.push({ op: "add", inputs: i ? [r % i] : [-1] });
      }
      return seq;
    };
    assert.deepEqual(findRepeats(unrolled(20000)), [{ start: 3, period: 5, count: 20000 }]);
    for (const make of [unrolled, rewired, irregular]) {
      const small = work(make(10000));
      const big = work(make(20000));
      assert.ok(big <= 2.1 * small, `${make.name}: ${small} steps for 50,000 nodes, ${big} for 100,000`);
      // A few steps per node, whatever the size.
      assert.ok(big <= 8 * make(20000).length, `${make.name}: ${big} steps for 100,000 nodes`);
    }
  });

  it("wraps a run in a fold group that opens collapsed; big groups open collapsed too", () => {
    const seq = unrolled(64);
    const nodes: LayerNode[] = seq.map((s, i) => ({
      id: `n${i}`, op: s.op, label: s.op, node_kind: "call", shape: "4x8", dtype: "torch.bfloat16", group: "gdn",
      sub_group: "gdn_delta_rule", stream: "main", args: "", line: i + 1, inputs: s.inputs.filter((j) => j >= 0).map((j) => `n${j}`), weights: [], kernels: [], time_us: 0,
    }));
    const edges = nodes.flatMap((n) => n.inputs.map((f) => ({ from: f, to: n.id, shape: "4x8" })));
    const doc: LayerResponse = {
      run: "r", stage: 0, rank: null, layer: 0, kind: "gdn", attention: "", source_file: "001_export_export_to_gm.txt", module: "(root)",
      nodes, edges, external_inputs: [], group_counts: { gdn: nodes.length }, trace_summary: null, doubts: [],
    };
    const h = buildHierarchy([doc]);
    const sub = h.items.get("g:L0/gdn/gdn_delta_rule")!;
    assert.equal(sub.children.length, 3 + 1 + 1);
    const fold = h.items.get("g:L0/gdn/gdn_delta_rule/*1")!;
    assert.deepEqual(fold.repeat, { count: 64, period: 5 });
    assert.equal(fold.nodeCount, 320);
    assert.equal(h.items.get("n:n3")!.parent, fold.key);
    const exp = defaultExpanded(h);
    assert.ok(exp.has(sub.key) && !exp.has(fold.key));
    // Without the fold, the sub-group would have more than MAX_OPEN_CHILDREN children: collapsed.
    const flat: LayerResponse = { ...doc, nodes: nodes.map((n, i) => ({ ...n, op: `op${i}` })) };
    const h2 = buildHierarchy([flat]);
    assert.ok(h2.items.get("g:L0/gdn/gdn_delta_rule")!.children.length > MAX_OPEN_CHILDREN);
    assert.ok(!defaultExpanded(h2).has("g:L0/gdn/gdn_delta_rule"));
  });
});
