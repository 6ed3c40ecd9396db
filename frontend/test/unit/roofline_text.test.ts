import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { NodeRoofline } from "../../src/api/types";
import { boundText, rateText, sizesText } from "../../src/timing/roofline_text";

function roof(extra: Partial<NodeRoofline>): NodeRoofline {
  return {
    layer: 0, node: "n", op: "aten.linear.default", time_us: 10, flops: null, bytes: null, formula: "", intensity: null,
    achieved_tflops: null, achieved_tbs: null, bound: null, achieved_bus_gbs: null, world_size: null, sizes: [], peak_share: null, reason: null,
    ...extra,
  };
}

describe("roofline text", () => {
  it("says where each symbolic size came from", () => {
    const r = roof({
      sizes: [
        { symbol: "s70", value: 1024, source: "dim", detail: "--dim s70=1024" },
        { symbol: "s44", value: 2, source: "trace", detail: "aten::linear at linear (layer 0)" },
        { symbol: "s3", value: null, source: "unknown", detail: "the trace records no input shapes" },
      ],
    });
    assert.equal(sizesText(r), "s70 = 1024 (--dim)\ns44 = 2 (trace: aten::linear at linear (layer 0))\ns3 = ? (unknown: the trace records no input shapes)");
    assert.equal(sizesText(roof({})), "");
  });

  it("shows a collective's bus bandwidth and bound", () => {
    const ar = roof({ bound: "communication", bytes: 86016, achieved_bus_gbs: 4.3008, world_size: 4 });
    assert.equal(rateText(ar), "4.3 GB/s bus");
    assert.equal(boundText(ar.bound), "communication");
    assert.equal(rateText(roof({ bound: "memory", achieved_tbs: 2.4528 })), "2.453");
    assert.equal(boundText(null), "–");
  });
});
