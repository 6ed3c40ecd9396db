import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { clearLayoutCache, layoutGraph } from "../../src/layout/engine";
import { buildLayoutRequest } from "../../src/layout/request";
import { buildHierarchy, expandedToDepth, groupKey, layerPhases, maxGroupDepth, toggleGroup } from "../../src/model/hierarchy";
import { visibleGraph } from "../../src/model/visible";
import { loadLayer, miniLayer } from "./helpers";
import type { Group, SubGroup } from "../../src/api/contract";

describe("hierarchical layout of a 300-node layer", () => {
  const h = buildHierarchy([loadLayer("dsv3_decode", 1)]);
  const ex = expandedToDepth(h, maxGroupDepth(h) + 1);
  const v = visibleGraph(h, ex);
  clearLayoutCache();
  const { req, labels } = buildLayoutRequest(h, v, 1);
  const r = layoutGraph(req);
  const box = new Map(r.boxes.map((b) => [b.key, b]));

  it("places every visible leaf and group with its requested size", () => {
    for (const k of v.leaves) {
      const b = box.get(k)!;
      assert.ok(b, k);
      assert.equal(b.w, labels.get(k)!.width);
      assert.equal(b.h, labels.get(k)!.height);
    }
    for (const c of v.containers.slice(1)) assert.ok(box.get(c.key), c.key);
    assert.equal(r.id, 1);
  });

  it("keeps children inside their group's box, below its header", () => {
    for (const c of v.containers.slice(1)) {
      const p = box.get(c.key)!;
      for (const ch of c.children) {
        const b = box.get(ch)!;
        assert.ok(b.x >= p.x - 1e-6 && b.x + b.w <= p.x + p.w + 1e-6, `${ch} x in ${c.key}`);
        assert.ok(b.y >= p.y + 20 && b.y + b.h <= p.y + p.h + 1e-6, `${ch} y in ${c.key}`);
      }
    }
  });

  it("does not overlap siblings", () => {
    for (const c of v.containers) {
      const bs = c.children.map((k) => box.get(k)!);
      for (let i = 0; i < bs.length; i++) {
        for (let j = i + 1; j < bs.length; j++) {
          const a = bs[i];
          const b = bs[j];
          const overlap = a.x < b.x + b.w - 0.5 && b.x < a.x + a.w - 0.5 && a.y < b.y + b.h - 0.5 && b.y < a.y + a.h - 0.5;
          assert.ok(!overlap, `${a.key} / ${b.key}`);
        }
      }
    }
  });

  it("routes every edge from its source's bottom to its target's top", () => {
    assert.equal(r.edges.length, v.edges.length);
    const byId = new Map(v.edges.map((e) => [e.id, e]));
    for (const e of r.edges) {
      const ve = byId.get(e.id)!;
      const s = box.get(ve.from)!;
      const t = box.get(ve.to)!;
      const n = e.points.length;
      assert.ok(n >= 4 && n % 2 === 0);
      const [x0, y0, x1, y1] = [e.points[0], e.points[1], e.points[n - 2], e.points[n - 1]];
      const onBorder = (b: typeof s, x: number, y: number) => x >= b.x - 1 && x <= b.x + b.w + 1 && (Math.abs(y - b.y) < 1 || Math.abs(y - b.y - b.h) < 1);
      assert.ok(onBorder(s, x0, y0), `${e.id} starts on ${ve.from}`);
      assert.ok(onBorder(t, x1, y1), `${e.id} ends on ${ve.to}`);
      assert.ok(Number.isFinite(e.labelX) && Number.isFinite(e.labelY));
    }
  });

  it("weighs edges from external inputs less than the layer's own dataflow", () => {
    const fromInput = req.edges.filter((e) => e.from.startsWith("x:"));
    assert.ok(fromInput.length > 0);
    for (const e of fromInput) assert.equal(e.count, v.edges.find((x) => x.id === e.id)!.count * 0.5);
  });

  it("reuses cached group layouts when one group is collapsed", () => {
    const v2 = visibleGraph(h, toggleGroup(ex, groupKey(1, "moe", "moe_router")));
    const r2 = layoutGraph(buildLayoutRequest(h, v2, 2).req);
    assert.ok(r2.stats.cached >= v2.containers.length - 3, `${r2.stats.cached}/${v2.containers.length}`);
    const r3 = layoutGraph(buildLayoutRequest(h, v, 3).req);
    assert.equal(r3.stats.cached, r3.stats.containers);
    assert.deepEqual(r3.boxes, r.boxes);
  });
});

/** Whether segment p-q passes through the inside of box b (shrunk by m). */
function crosses(p: { x: number; y: number }, q: { x: number; y: number }, b: { x: number; y: number; w: number; h: number }, m = 2): boolean {
  const [x0, y0, x1, y1] = [b.x + m, b.y + m, b.x + b.w - m, b.y + b.h - m];
  if (x1 <= x0 || y1 <= y0) return false;
  // Liang-Barsky clipping.
  let t0 = 0;
  let t1 = 1;
  const dx = q.x - p.x;
  const dy = q.y - p.y;
  for (const [pp, qq] of [[-dx, p.x - x0], [dx, x1 - p.x], [-dy, p.y - y0], [dy, y1 - p.y]]) {
    if (pp === 0) {
      if (qq < 0) return false;
    } else {
      const r = qq / pp;
      if (pp < 0) t0 = Math.max(t0, r);
      else t1 = Math.min(t1, r);
      if (t0 > t1) return false;
    }
  }
  return true;
}

describe("edge routing across groups", () => {
  it("never runs an edge through a box other than its own ends (300-node layer)", () => {
    const h = buildHierarchy([loadLayer("dsv3_decode", 1)]);
    const v = visibleGraph(h, expandedToDepth(h, maxGroupDepth(h) + 1));
    clearLayoutCache();
    const r = layoutGraph(buildLayoutRequest(h, v, 1).req);
    const leaves = new Set(v.leaves);
    const leafBoxes = r.boxes.filter((b) => leaves.has(b.key));
    const ends = new Map(v.edges.map((e) => [e.id, [e.from, e.to]]));
    const bad: string[] = [];
    for (const e of r.edges) {
      const own = new Set(ends.get(e.id));
      for (let i = 2; i < e.points.length; i += 2) {
        const p = { x: e.points[i - 2], y: e.points[i - 1] };
        const q = { x: e.points[i], y: e.points[i + 1] };
        for (const b of leafBoxes) if (!own.has(b.key) && crosses(p, q, b)) bad.push(`${e.id} through ${b.key}`);
      }
    }
    assert.deepEqual(bad, []);
  });

  it("routes an edge between groups that form a cycle upwards, from the source's top to the target's bottom", () => {
    // norm holds n1 and n2, and n3 joins them (so one box); mla sits between them:
    // norm -> mla -> norm. (An edge into n2 alone would not merge: n2 is where norm re-enters.)
    const L = miniLayer(0, [["n1", "norm", null, ["x"]], ["m1", "mla", null, ["n1"]], ["m2", "mla", null, ["m1"]], ["n2", "norm", null, ["m2", "n1"]], ["n3", "norm", null, ["n2", "n1"]], ["o1", "moe", null, ["n3"]]], ["x"]);
    const h = buildHierarchy([L]);
    const v = visibleGraph(h, expandedToDepth(h, maxGroupDepth(h) + 1));
    clearLayoutCache();
    const r = layoutGraph(buildLayoutRequest(h, v, 1).req);
    const box = new Map(r.boxes.map((b) => [b.key, b]));
    assert.equal(r.edges.length, v.edges.length);
    let upward = 0;
    for (const e of r.edges) {
      const ve = v.edges.find((x) => x.id === e.id)!;
      const [s, t] = [box.get(ve.from)!, box.get(ve.to)!];
      const n = e.points.length;
      const [x0, y0, x1, y1] = [e.points[0], e.points[1], e.points[n - 2], e.points[n - 1]];
      assert.ok(x0 >= s.x - 1 && x0 <= s.x + s.w + 1 && x1 >= t.x - 1 && x1 <= t.x + t.w + 1, e.id);
      if (s.y > t.y + t.h) {
        upward++;
        assert.ok(Math.abs(y0 - s.y) < 1, `${e.id} leaves its source at the top`);
        assert.ok(Math.abs(y1 - (t.y + t.h)) < 1, `${e.id} enters its target at the bottom`);
      } else {
        assert.ok(Math.abs(y0 - (s.y + s.h)) < 1, `${e.id} leaves its source at the bottom`);
        assert.ok(Math.abs(y1 - t.y) < 1, `${e.id} enters its target at the top`);
      }
    }
    assert.ok(upward >= 1, "the cycle makes one edge go up");
  });

  it("lays out structurally equal groups of different layers once", () => {
    const spec: [string, string, string | null, string[], number?][] = [["a", "norm", null, ["x"]], ["b", "mla", "q_branch", ["a"]], ["c", "mla", "q_branch", ["b"]], ["d", "mla", null, ["c", "a"]], ["e", "moe", null, ["d"]]];
    const rename = (l: number) => spec.map(([id, g, s, ins]) => [`${id}${l}`, g, s, ins.map((i) => (i === "x" ? "x" : `${i}${l}`))] as [string, Group, SubGroup | null, string[]]);
    const h0 = buildHierarchy([miniLayer(0, rename(0), ["x"])]);
    const h5 = buildHierarchy([miniLayer(5, rename(5), ["x"])]);
    clearLayoutCache();
    const r0 = layoutGraph(buildLayoutRequest(h0, visibleGraph(h0, expandedToDepth(h0, 9)), 1).req);
    const r5 = layoutGraph(buildLayoutRequest(h5, visibleGraph(h5, expandedToDepth(h5, 9)), 2).req);
    assert.ok(r0.stats.cached < r0.stats.containers);
    assert.equal(r5.stats.cached, r5.stats.containers);
    assert.deepEqual(r5.boxes.map((b) => [b.x, b.y, b.w, b.h]), r0.boxes.map((b) => [b.x, b.y, b.w, b.h]));
  });
});

describe("group phases", () => {
  it("splits the input and post-attention norms linked by the residual edge", () => {
    // The fused input norm's residual output feeds the post-attention norm directly, and
    // attention sits between them: two norm boxes, so the group graph has no cycle.
    const L = miniLayer(0, [["in_norm", "norm", null, ["x"]], ["resid", "norm", null, ["in_norm"]], ["q", "mla", null, ["in_norm"]], ["attn", "mla", null, ["q"]], ["post_norm", "norm", null, ["attn", "resid"]], ["moe", "moe", null, ["post_norm"]]], ["x"]);
    const phases = layerPhases(L);
    assert.equal(phases.get("in_norm")![0], 0);
    assert.equal(phases.get("resid")![0], 0);
    assert.equal(phases.get("post_norm")![0], 1);
  });
});
