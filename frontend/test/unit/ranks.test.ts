import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { RanksResponse } from "../../src/api/types";
import { heatColor, ranksGrid } from "../../src/ranks/model";

function layer(n: number, gpu: number, comm: number | null) {
  return { layer: n, gpu_time_us: gpu, compute_us: gpu - (comm ?? 0), noise_us: 1, communication_us: comm };
}

const RES: RanksResponse = {
  run: "tp4", stage: 3, default_rank: 0, layers: [0, 1],
  ranks: [0, 1, 2, 3].map((rank) => ({
    rank, device: rank, trace: "t.sqlite", gpu_time_us: rank === 2 ? 260 : 200, communication_us: 40,
    layers: [layer(0, 100, 20), layer(1, rank === 2 ? 160 : 100, 20)],
  })),
  stragglers: [{ rank: 2, layer: 1, excess_us: 60, compute_us: 140, others_us: 80, noise_us: 1.4 }],
  rule: "rule",
};

describe("ranks grid", () => {
  it("puts each layer's cells against the layer's median and marks stragglers", () => {
    const g = ranksGrid(RES, "gpu");
    assert.deepEqual(g.ranks, [0, 1, 2, 3]);
    assert.deepEqual(g.layers, [0, 1]);
    assert.deepEqual(g.rows[0].map((c) => c.ratio), [1, 1, 1, 1]);
    assert.equal(g.rows[1][2].ratio, 1.6);
    assert.equal(g.rows[1][2].straggler?.excess_us, 60);
    assert.equal(g.rows[1].filter((c) => c.straggler).length, 1);
    assert.ok(g.hasComm);
    assert.deepEqual(ranksGrid(RES, "comm").rows[1].map((c) => c.value), [20, 20, 20, 20]);
  });

  it("colours slower red, faster blue, the median not at all", () => {
    assert.equal(heatColor(1, false), "transparent");
    assert.equal(heatColor(null, false), "transparent");
    assert.match(heatColor(1.6, false), /^rgba\(220, 60, 40, 0\.650\)$/);
    assert.match(heatColor(0.85, true), /^rgba\(40, 110, 220, /);
  });
});
