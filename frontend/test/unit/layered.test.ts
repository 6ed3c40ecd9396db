import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { bilayerCrossings, layered, pav } from "../../src/layout/layered";

const OPT = { nodeSep: 10, rankSep: 20, edgeSep: 4 };

function noOverlaps(r: ReturnType<typeof layered>, nodes: { id: string; w: number; h: number }[]) {
  const boxes = nodes.map((n) => ({ ...n, ...r.pos.get(n.id)! }));
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i];
      const b = boxes[j];
      const ox = Math.abs(a.x - b.x) < (a.w + b.w) / 2 - 1e-6;
      const oy = Math.abs(a.y - b.y) < (a.h + b.h) / 2 - 1e-6;
      assert.ok(!(ox && oy), `${a.id} overlaps ${b.id}`);
    }
  }
}

describe("layered layout", () => {
  it("puts targets below sources and keeps boxes apart", () => {
    const nodes = ["a", "b", "c", "d", "e"].map((id) => ({ id, w: 40 + id.charCodeAt(0) % 3 * 20, h: 20 }));
    const edges = [{ from: "a", to: "b" }, { from: "a", to: "c" }, { from: "b", to: "d" }, { from: "c", to: "d" }, { from: "a", to: "e" }, { from: "e", to: "d" }];
    const r = layered(nodes, edges, OPT);
    for (const e of edges) assert.ok(r.pos.get(e.from)!.y < r.pos.get(e.to)!.y, `${e.from}->${e.to}`);
    noOverlaps(r, nodes);
    assert.ok(r.w > 0 && r.h > 0);
    for (const n of nodes) {
      const p = r.pos.get(n.id)!;
      assert.ok(p.x - n.w / 2 >= -1e-6 && p.x + n.w / 2 <= r.w + 1e-6);
    }
  });

  it("routes long edges through their own slots and ends on the node borders", () => {
    const nodes = ["a", "b", "c", "d"].map((id) => ({ id, w: 60, h: 30 }));
    const r = layered(nodes, [{ from: "a", to: "b" }, { from: "b", to: "c" }, { from: "c", to: "d" }, { from: "a", to: "d" }], OPT);
    const pts = r.edges.get("a\u0000d")!;
    assert.ok(pts.length >= 6, "long edge has bends");
    assert.equal(pts[0].y, r.pos.get("a")!.y + 15);
    assert.equal(pts.at(-1)!.y, r.pos.get("d")!.y - 15);
    const mid = pts.slice(2, -2);
    const b = r.pos.get("b")!;
    for (const p of mid) if (Math.abs(p.y - b.y) < 15) assert.ok(Math.abs(p.x - b.x) >= 30, "dummy beside b");
  });

  it("survives cycles, self loops and unknown ends", () => {
    const nodes = ["a", "b", "c"].map((id) => ({ id, w: 30, h: 20 }));
    const r = layered(nodes, [{ from: "a", to: "b" }, { from: "b", to: "c" }, { from: "c", to: "a" }, { from: "a", to: "a" }, { from: "a", to: "zz" }], OPT);
    assert.equal(r.pos.size, 3);
    assert.equal(r.edges.size, 3);
    const back = r.edges.get("c\u0000a")!;
    assert.ok(back[0].y > back.at(-1)!.y, "reversed edge still goes from c to a");
    noOverlaps(r, nodes);
  });

  it("lays out an empty or single-node graph", () => {
    assert.equal(layered([], [], OPT).w, 0);
    const r = layered([{ id: "x", w: 50, h: 10 }], [], OPT);
    assert.deepEqual(r.pos.get("x"), { x: 25, y: 5 });
  });

  it("removes avoidable crossings", () => {
    // two chains drawn crossed in input order: a1->b2, a2->b1
    const nodes = ["a1", "a2", "b1", "b2", "c1", "c2"].map((id) => ({ id, w: 30, h: 20 }));
    const edges = [{ from: "a1", to: "b2" }, { from: "a2", to: "b1" }, { from: "b1", to: "c1" }, { from: "b2", to: "c2" }, { from: "a1", to: "c2" }];
    const r = layered(nodes, edges, OPT);
    const x = (id: string) => r.pos.get(id)!.x;
    assert.equal(Math.sign(x("a1") - x("a2")), Math.sign(x("b2") - x("b1")));
  });

  it("is deterministic", () => {
    const nodes = Array.from({ length: 40 }, (_, i) => ({ id: `n${i}`, w: 30 + (i % 5) * 10, h: 20 }));
    const edges = Array.from({ length: 60 }, (_, i) => ({ from: `n${(i * 7) % 40}`, to: `n${(i * 13 + 5) % 40}` }));
    const a = layered(nodes, edges, OPT);
    const b = layered(nodes, edges, OPT);
    assert.deepEqual([...a.pos], [...b.pos]);
    noOverlaps(a, nodes);
  });
});

describe("helpers", () => {
  it("pav solves isotonic least squares", () => {
    assert.deepEqual([...pav([1, 3, 2, 4], [1, 1, 1, 1])], [1, 2.5, 2.5, 4]);
    assert.deepEqual([...pav([5, 1], [1, 3])], [2, 2]);
    assert.deepEqual([...pav([], [])], []);
  });

  it("counts bilayer crossings", () => {
    const V = [
      { order: 0, down: [3] }, { order: 1, down: [2] }, { order: 2, down: [] },
      { order: 0, down: [] }, { order: 1, down: [] },
    ];
    // upper [0,1], lower [2(order0?),...]: build explicit
    const U = [{ order: 0, down: [3] }, { order: 1, down: [2] }, { order: 0, down: [] }, { order: 1, down: [] }];
    assert.equal(bilayerCrossings([0, 1], [2, 3], U), 1);
    const U2 = [{ order: 0, down: [2] }, { order: 1, down: [3] }, { order: 0, down: [] }, { order: 1, down: [] }];
    assert.equal(bilayerCrossings([0, 1], [2, 3], U2), 0);
    assert.equal(bilayerCrossings([], [2], V), 0);
  });
});
