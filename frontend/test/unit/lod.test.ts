import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { TimelineKernel } from "../../src/api/types";
import { clampView, gapAt, hitTest, lowerBound, makeLane, niceTicks, rasterize, visibleRange, zoomView } from "../../src/timeline/lod";
import { loadTimeline } from "./helpers";

const k = (id: number, start: number, dur: number): TimelineKernel => ({ id, kernel: `k${id}`, name: `k${id}`, start_us: start, duration_us: dur, layer: 0, node: `n${id}` });

describe("lanes", () => {
  const lane = makeLane("s7", "stream 7", [k(2, 30, 5), k(0, 0, 10), k(1, 12, 2), k(3, 36, 100)]);

  it("sorts kernels by start and tracks the longest duration", () => {
    assert.deepEqual([...lane.starts], [0, 12, 30, 36]);
    assert.deepEqual([...lane.ids], [0, 1, 2, 3]);
    assert.equal(lane.maxDur, 100);
    assert.equal(lane.busyUs, 117);
  });

  it("binary-searches", () => {
    assert.equal(lowerBound(lane.starts, -1), 0);
    assert.equal(lowerBound(lane.starts, 12), 1);
    assert.equal(lowerBound(lane.starts, 13), 2);
    assert.equal(lowerBound(lane.starts, 1000), 4);
  });

  it("includes a long kernel that started before the window", () => {
    const [i0, i1] = visibleRange(lane, 100, 120);
    const ids = [];
    for (let i = i0; i < i1; i++) if (lane.ends[i] >= 100) ids.push(lane.ids[i]);
    assert.deepEqual(ids, [3]);
  });

  it("hit-tests the kernel under a time, with a tolerance", () => {
    assert.equal(lane.ids[hitTest(lane, 5, 0)], 0);
    assert.equal(lane.ids[hitTest(lane, 10.8, 1.5)], 0);
    assert.equal(lane.ids[hitTest(lane, 11.5, 1)], 1);
    assert.equal(hitTest(lane, 20, 1), -1);
  });

  it("finds idle gaps", () => {
    assert.deepEqual(gapAt(lane, 20), { start: 14, end: 30 });
    assert.equal(gapAt(lane, 5), null);
    assert.equal(gapAt(lane, -5), null);
    assert.equal(gapAt(lane, 50), null, "inside the long kernel");
  });
});

describe("rasterize", () => {
  it("merges sub-pixel kernels into per-pixel coverage and keeps wide ones as bars", () => {
    // 1 px = 1 µs; kernels of 0.25 µs every 0.5 µs -> 50% coverage; one 10 µs kernel -> bar
    const ks: TimelineKernel[] = [];
    for (let i = 0; i < 40; i++) ks.push(k(i, i * 0.5, 0.25));
    ks.push(k(100, 30, 10));
    const lane = makeLane("s", "s", ks);
    const r = rasterize(lane, 0, 1, 50, 2);
    assert.deepEqual(r.bars.map((i) => lane.ids[i]), [100]);
    for (let x = 0; x < 19; x++) assert.ok(Math.abs(r.coverage[x] - 0.5) < 1e-6, `px ${x}: ${r.coverage[x]}`);
    assert.equal(r.coverage[25], 0);
    assert.ok(Math.abs(r.busyUs - (40 * 0.25 + 10)) < 1e-9);
    assert.equal(r.visible, 41);
  });

  it("clips kernels to the window and caps coverage at 1", () => {
    const lane = makeLane("s", "s", [k(0, -5, 5.5), k(1, 0.2, 0.5), k(2, 0.6, 0.9)]);
    const r = rasterize(lane, 0, 1, 3, 2);
    assert.ok(r.coverage[0] <= 1);
    assert.ok(Math.abs(r.busyUs - (0.5 + 0.5 + 0.9)) < 1e-9);
  });

  it("handles 100,000 kernels and only visits the window", () => {
    const ks: TimelineKernel[] = [];
    for (let i = 0; i < 100000; i++) ks.push(k(i, i * 2, 1));
    const lane = makeLane("s", "s", ks);
    const all = rasterize(lane, 0, 1500 / 200000, 1500);
    assert.equal(all.visible, 100000);
    assert.equal(all.bars.length, 0);
    const mean = all.coverage.reduce((a, c) => a + c, 0) / all.coverage.length;
    assert.ok(Math.abs(mean - 0.5) < 0.01, `mean coverage ${mean}`);
    const win = rasterize(lane, 100000, 10, 1000);
    assert.ok(win.visible <= 52 && win.visible >= 49, `${win.visible}`);
    assert.equal(win.bars.length, win.visible);
  });

  it("works on the fixture timeline", () => {
    const tl = loadTimeline("dsv3_decode");
    for (const s of tl.streams) {
      const lane = makeLane(s.stream, s.label, s.kernels, s.busy_share);
      const span = tl.end_us - tl.start_us;
      const r = rasterize(lane, tl.start_us, 1200 / span, 1200);
      assert.equal(r.visible, s.kernels.length);
      assert.ok(Math.abs(r.busyUs - lane.busyUs) < 1e-6);
    }
  });
});

describe("axis and view helpers", () => {
  it("makes round ticks", () => {
    assert.deepEqual(niceTicks(0, 100, 5).ticks, [0, 20, 40, 60, 80, 100]);
    const t = niceTicks(3.3, 4.1, 4);
    assert.equal(t.step, 0.2);
    assert.ok(t.ticks[0] >= 3.3 && t.ticks.at(-1)! <= 4.1 + 1e-9);
    assert.deepEqual(niceTicks(5, 5, 4).ticks, []);
  });

  it("zooms around a point and clamps", () => {
    assert.deepEqual(zoomView(0, 100, 50, 2), [25, 75]);
    assert.deepEqual(zoomView(0, 100, 0, 2), [0, 50]);
    assert.deepEqual(clampView(-10, 40, 0, 100), [0, 50]);
    assert.deepEqual(clampView(80, 130, 0, 100), [50, 100]);
    assert.deepEqual(clampView(-10, 500, 0, 100), [0, 100]);
    const [a, b] = clampView(10, 10, 0, 100, 0.5);
    assert.equal(b - a, 0.5);
  });
});
