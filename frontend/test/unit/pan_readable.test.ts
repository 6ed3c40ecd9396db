import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { panToReadable, readableInView, readableShiftsDown } from "../../src/graph/camera";
import type { GraphData } from "../../src/graph/scene";

const W = 400;
const H = 300;

/** A drawn layer of op nodes and groups (key, kind, depth, box; `open`: groups drawn open). */
function data(boxes: [string, "op" | "group", number, number, number, number, number][], open: string[] = []): GraphData {
  const items = new Map(boxes.map(([key, kind, depth]) => [key, { key, kind, depth }]));
  return {
    h: { items },
    vis: { containers: open.map((key) => ({ key })), leaves: [] },
    layout: { boxes: boxes.map(([key, , , x, y, w, h]) => ({ key, x, y, w, h })), width: 3000, height: 3000 },
    labels: new Map(),
    headers: new Map(),
  } as unknown as GraphData;
}

describe("panToReadable (a pane that follows a zoom and shows no text)", () => {
  it("moves the least, at the same zoom, to the nearest node's text", () => {
    const d = data([["n:far", "op", 3, 1000, 500, 200, 40], ["n:farther", "op", 3, 2400, 2000, 200, 40]]);
    const v = { x: 0, y: 0, k: 1 };
    assert.equal(readableInView(d, v, W, H), false);
    const p = panToReadable(d, v, W, H);
    assert.ok(p);
    assert.equal(p.k, 1);
    assert.equal(readableInView(d, p, W, H), true);
    // The node's text is placed inside the view, some of it showing (not at the right border).
    const sx = (1000 + 10) * p.k + p.x;
    const sy = (500 + 18) * p.k + p.y;
    assert.ok(sx >= 24 && sx <= W - 100 && sy >= 24 && sy <= H - 40, JSON.stringify({ sx, sy }));
  });

  it("finds nothing where no text reads at that zoom (only node text, far zoomed out)", () => {
    const d = data([["n:a", "op", 3, 1000, 500, 200, 40]]);
    assert.equal(panToReadable(d, { x: 0, y: 0, k: 0.1 }, W, H), null);
  });

  it("goes to a group's card when zoomed out", () => {
    const d = data([["L0", "group", 1, 0, 0, 3000, 3000], ["L0/moe", "group", 2, 1500, 1200, 1000, 800]], ["L0", "L0/moe"]);
    const v = { x: 0, y: -2000 * 0.3, k: 0.3 };
    assert.equal(readableInView(d, v, W, H), false);
    const p = panToReadable(d, v, W, H);
    assert.ok(p && p.k === 0.3 && readableInView(d, p, W, H));
  });
});

describe("readableShiftsDown (both aligned panes moved up or down alike)", () => {
  it("only moves that keep the view across where it is, the least first", () => {
    const d = data([["n:below", "op", 3, 40, 900, 200, 40], ["n:further", "op", 3, 40, 1500, 200, 40], ["n:across", "op", 3, 2000, 10, 200, 40]]);
    const v = { x: 0, y: 0, k: 1 };
    const shifts = readableShiftsDown(d, v, W, H);
    assert.equal(shifts.length, 2);
    assert.ok(Math.abs(shifts[0]) < Math.abs(shifts[1]));
    assert.equal(readableInView(d, { ...v, y: v.y + shifts[0] }, W, H), true);
  });
});
