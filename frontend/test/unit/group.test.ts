import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { layoutGroup, type GOptions } from "../../src/layout/group";

const OPT: GOptions = { nodeSep: 10, rankSep: 20, edgeSep: 4 };

function noOverlaps(r: ReturnType<typeof layoutGroup>, nodes: { id: string; w: number; h: number }[]) {
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

function inside(r: ReturnType<typeof layoutGroup>, nodes: { id: string; w: number; h: number }[]) {
  for (const n of nodes) {
    const p = r.pos.get(n.id)!;
    assert.ok(p.x - n.w / 2 >= -1e-6 && p.x + n.w / 2 <= r.w + 1e-6, `${n.id} x inside`);
    assert.ok(p.y - n.h / 2 >= -1e-6 && p.y + n.h / 2 <= r.h + 1e-6, `${n.id} y inside`);
  }
}

describe("group layout (dagre)", () => {
  it("puts targets below sources and keeps boxes apart", () => {
    const nodes = ["a", "b", "c", "d", "e"].map((id) => ({ id, w: 40 + (id.charCodeAt(0) % 3) * 20, h: 20 }));
    const edges = [{ from: "a", to: "b" }, { from: "a", to: "c" }, { from: "b", to: "d" }, { from: "c", to: "d" }, { from: "a", to: "e" }, { from: "e", to: "d" }];
    const r = layoutGroup(nodes, edges, OPT);
    for (const e of edges) assert.ok(r.pos.get(e.from)!.y < r.pos.get(e.to)!.y, `${e.from}->${e.to}`);
    noOverlaps(r, nodes);
    inside(r, nodes);
    assert.ok(r.w > 0 && r.h > 0);
  });

  it("separates ranks by rankSep and reports each node's row", () => {
    const nodes = [{ id: "a", w: 30, h: 40 }, { id: "b", w: 30, h: 20 }, { id: "c", w: 30, h: 20 }];
    const r = layoutGroup(nodes, [{ from: "a", to: "b" }, { from: "a", to: "c" }], OPT);
    assert.deepEqual(r.rank.get("a"), { top: 0, bottom: 40 });
    assert.deepEqual(r.rank.get("b"), r.rank.get("c"));
    assert.equal(r.rank.get("b")!.top, 40 + OPT.rankSep);
    assert.equal(r.h, 40 + OPT.rankSep + 20);
  });

  it("routes long edges beside the rows they pass and ends on the node borders", () => {
    const nodes = ["a", "b", "c", "d"].map((id) => ({ id, w: 60, h: 30 }));
    const r = layoutGroup(nodes, [{ from: "a", to: "b" }, { from: "b", to: "c" }, { from: "c", to: "d" }, { from: "a", to: "d" }], OPT);
    const pts = r.edges.get("a\u0000d")!;
    assert.ok(pts.length >= 6, "long edge has bends");
    assert.equal(pts[0].y, r.pos.get("a")!.y + 15);
    assert.equal(pts.at(-1)!.y, r.pos.get("d")!.y - 15);
    for (const id of ["b", "c"]) {
      const b = r.pos.get(id)!;
      for (const p of pts) if (Math.abs(p.y - b.y) < 15) assert.ok(Math.abs(p.x - b.x) >= 30, `bend beside ${id}`);
    }
    // Every segment within a row is vertical: no diagonal crosses a box.
    for (let i = 1; i < pts.length; i++) {
      const [p, q] = [pts[i - 1], pts[i]];
      if (p.x !== q.x) for (const id of ["b", "c"]) {
        const row = r.rank.get(id)!;
        assert.ok(Math.max(p.y, q.y) <= row.top + 1e-6 || Math.min(p.y, q.y) >= row.bottom - 1e-6, "diagonal outside rows");
      }
    }
  });

  it("spreads the ports of several edges along a box's side", () => {
    const nodes = ["a", "b", "c", "d"].map((id) => ({ id, w: 80, h: 20 }));
    const r = layoutGroup(nodes, [{ from: "a", to: "b" }, { from: "a", to: "c" }, { from: "a", to: "d" }], OPT);
    const xs = ["b", "c", "d"].map((t) => r.edges.get(`a\u0000${t}`)![0].x);
    assert.equal(new Set(xs).size, 3);
    const order = ["b", "c", "d"].sort((p, q) => r.pos.get(p)!.x - r.pos.get(q)!.x);
    const sorted = order.map((t) => r.edges.get(`a\u0000${t}`)![0].x);
    assert.deepEqual(sorted, [...sorted].sort((p, q) => p - q), "ports in the order of their targets");
  });

  it("survives cycles, self loops, parallel edges and unknown ends", () => {
    const nodes = ["a", "b", "c"].map((id) => ({ id, w: 30, h: 20 }));
    const r = layoutGroup(nodes, [{ from: "a", to: "b" }, { from: "a", to: "b" }, { from: "b", to: "c" }, { from: "c", to: "a" }, { from: "a", to: "a" }, { from: "a", to: "zz" }], OPT);
    assert.equal(r.pos.size, 3);
    assert.equal(r.edges.size, 3);
    const back = r.edges.get("c\u0000a")!;
    const [c, a] = [r.pos.get("c")!, r.pos.get("a")!];
    assert.ok(c.y > a.y, "c below a");
    assert.equal(back[0].y, c.y - 10, "reversed edge leaves c at its top");
    assert.equal(back.at(-1)!.y, a.y + 10, "…and enters a at its bottom");
    noOverlaps(r, nodes);
  });

  it("lays out an empty or single-node graph", () => {
    assert.equal(layoutGroup([], [], OPT).w, 0);
    const r = layoutGroup([{ id: "x", w: 50, h: 10 }], [], OPT);
    assert.deepEqual(r.pos.get("x"), { x: 25, y: 5 });
    assert.equal(r.w, 50);
    assert.equal(r.h, 10);
  });

  it("removes avoidable crossings", () => {
    const nodes = ["a1", "a2", "b1", "b2", "c1", "c2"].map((id) => ({ id, w: 30, h: 20 }));
    const edges = [{ from: "a1", to: "b2" }, { from: "a2", to: "b1" }, { from: "b1", to: "c1" }, { from: "b2", to: "c2" }, { from: "a1", to: "c2" }];
    const r = layoutGroup(nodes, edges, OPT);
    const x = (id: string) => r.pos.get(id)!.x;
    assert.equal(Math.sign(x("a1") - x("a2")), Math.sign(x("b2") - x("b1")));
  });

  it("keeps boxes apart and inside the content for every ranker", () => {
    const nodes = Array.from({ length: 30 }, (_, i) => ({ id: `n${i}`, w: 30 + (i % 5) * 10, h: 20 }));
    const edges = Array.from({ length: 45 }, (_, i) => ({ from: `n${(i * 7) % 30}`, to: `n${(i * 13 + 5) % 30}` }));
    for (const ranker of ["network-simplex", "tight-tree", "longest-path"] as const) {
      const r = layoutGroup(nodes, edges, { ...OPT, ranker });
      noOverlaps(r, nodes);
      inside(r, nodes);
      assert.equal(r.edges.size, new Set(edges.filter((e) => e.from !== e.to).map((e) => `${e.from}>${e.to}`)).size);
    }
  });

  it("is deterministic", () => {
    const nodes = Array.from({ length: 40 }, (_, i) => ({ id: `n${i}`, w: 30 + (i % 5) * 10, h: 20 }));
    const edges = Array.from({ length: 60 }, (_, i) => ({ from: `n${(i * 7) % 40}`, to: `n${(i * 13 + 5) % 40}` }));
    const a = layoutGroup(nodes, edges, OPT);
    const b = layoutGroup(nodes, edges, OPT);
    assert.deepEqual([...a.pos], [...b.pos]);
    assert.deepEqual([...a.edges], [...b.edges]);
    noOverlaps(a, nodes);
  });
});
