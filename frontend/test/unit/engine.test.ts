import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { clearLayoutCache, layoutGraph } from "../../src/layout/engine";
import { buildLayoutRequest } from "../../src/layout/request";
import { buildHierarchy, expandedToDepth, groupKey, maxGroupDepth, toggleGroup } from "../../src/model/hierarchy";
import { visibleGraph } from "../../src/model/visible";
import { loadLayer } from "./helpers";

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
