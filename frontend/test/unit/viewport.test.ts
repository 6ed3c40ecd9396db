import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { keepInView, keepWholeAcross, showLeftEdge, zoomCentre } from "../../src/graph/viewport";

const W = 1100;
const H = 560;
const onScreen = (v: { x: number; y: number; k: number }, b: { x: number; y: number; w: number; h: number }) => ({
  x0: b.x * v.k + v.x, y0: b.y * v.k + v.y, x1: (b.x + b.w) * v.k + v.x, y1: (b.y + b.h) * v.k + v.y,
});

describe("keepInView (a toggled group stays on screen)", () => {
  it("keeps the top-left where it was when the group fits from there", () => {
    const v = keepInView({ x: -40, y: 10, k: 1 }, { x: 500, y: 300, w: 300, h: 120 }, { x: 460, y: 310 }, W, H);
    assert.deepEqual(onScreen(v, { x: 500, y: 300, w: 300, h: 120 }), { x0: 460, y0: 310, x1: 760, y1: 430 });
    assert.equal(v.k, 1);
  });

  it("moves a group the least that brings all of it into the view", () => {
    const b = { x: 500, y: 300, w: 400, h: 200 };
    const s = onScreen(keepInView({ x: 0, y: 0, k: 1 }, b, { x: 900, y: 500 }, W, H), b);
    assert.deepEqual(s, { x0: W - 16 - 400, y0: H - 16 - 200, x1: W - 16, y1: H - 16 });
  });

  it("brings back a group that was off screen (far below the view)", () => {
    const b = { x: -170, y: 3489, w: 223, h: 44 };
    const v = keepInView({ x: -1356, y: 16, k: 1 }, b, { x: -1526, y: 3505 }, W, H);
    const s = onScreen(v, b);
    assert.ok(s.x0 >= 16 && s.x1 <= W - 16 && s.y0 >= 16 && s.y1 <= H - 16, JSON.stringify(s));
  });

  it("fits a group grown larger than the view, zooming out no further than minK", () => {
    const b = { x: 1000, y: 2000, w: 1500, h: 600 };
    const v = keepInView({ x: 0, y: 0, k: 1 }, b, { x: 300, y: 200 }, W, H, 0.5);
    assert.ok(v.k < 1 && v.k >= 0.5);
    const s = onScreen(v, b);
    assert.ok(s.x0 >= 16 - 1e-6 && s.x1 <= W - 16 + 1e-6 && s.y0 >= 16 - 1e-6 && s.y1 <= H - 16 + 1e-6, JSON.stringify(s));
    // Far larger (an unrolled loop of 63 steps): the zoom stops at minK and the top-left shows.
    const big = { x: -170, y: 3489, w: 6626, h: 4362 };
    const v2 = keepInView({ x: 0, y: 0, k: 1 }, big, { x: -170, y: 3489 }, W, H, 0.75);
    assert.equal(v2.k, 0.75);
    const s2 = onScreen(v2, big);
    assert.equal(s2.x0, 16);
    assert.equal(s2.y0, 16);
  });

  it("raises a far-out zoom to minK (an expanded group shows its nodes), keeps it when minK is 0", () => {
    const b = { x: 0, y: 0, w: 200, h: 100 };
    assert.equal(keepInView({ x: 0, y: 0, k: 0.2 }, b, { x: 50, y: 50 }, W, H, 0.75).k, 0.75);
    assert.equal(keepInView({ x: 0, y: 0, k: 0.2 }, b, { x: 50, y: 50 }, W, H, 0).k, 0.2);
    // Zoomed in beyond minK: the zoom is kept while the group fits.
    assert.equal(keepInView({ x: 0, y: 0, k: 2 }, b, { x: 50, y: 50 }, W, H, 0.75).k, 2);
  });
});

describe("the layer's left edge (never an empty pane)", () => {
  it("holds a graph that fits across wholly in view, and leaves a wider one alone", () => {
    // 400 px wide at k 1 in a 1100 px view, pushed 900 px right: back to the right margin.
    assert.equal(keepWholeAcross({ x: 900, y: 0, k: 1 }, 0, 400, W).x, W - 16 - 400);
    assert.equal(keepWholeAcross({ x: -300, y: 0, k: 1 }, 0, 400, W).x, 16);
    const wide = { x: -500, y: 3, k: 1 };
    assert.equal(keepWholeAcross(wide, 0, 3000, W), wide);
  });

  it("zooms in from the centre while the left edge stays at the margin or more", () => {
    assert.equal(zoomCentre(null, 1.25, W), W / 2);
    assert.equal(zoomCentre(600, 1.25, W), W / 2);
    // Edge at 100 px: the centre moves left just enough for the edge to end at 16 px.
    const cx = zoomCentre(100, 1.25, W);
    assert.ok(Math.abs(cx - (cx - 100) * 1.25 - 16) < 1e-9);
    // Zooming out never moves it out: the centre is kept.
    assert.equal(zoomCentre(100, 0.8, W), W / 2);
  });

  it("brings the edge in, keeping a box's left part in view and its top in place", () => {
    const keep = { x: 500, y: 900, w: 300, h: 100 };
    const v = showLeftEdge({ x: -400, y: -700, k: 1 }, 40, keep, W, 0.75);
    assert.equal(v.k, 1);
    assert.equal(40 * v.k + v.x, 16);
    assert.equal(keep.y * v.k + v.y, 200);
    // Too far right at k 1: zoomed out for both, but not below 0.75 unless forced.
    const far = { x: 2000, y: 0, w: 600, h: 100 };
    const z = showLeftEdge({ x: -1800, y: 0, k: 1 }, 0, far, W, 0.75);
    assert.ok(z.k >= 0.3 && z.k < 1);
    assert.equal(z.x, 16);
    const s = onScreen(z, far);
    assert.ok(s.x0 < W - 16 && s.x0 >= 16);
    const keepIt = { x: -1800, y: 0, k: 1 };
    assert.equal(showLeftEdge(keepIt, 0, { x: 8000, y: 0, w: 100, h: 20 }, W, 0.75, false), keepIt);
    // In view already: the same view.
    const inView = { x: 0, y: 0, k: 1 };
    assert.equal(showLeftEdge(inView, 40, keep, W, 0.75), inView);
  });
});
